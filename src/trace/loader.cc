#include "trace/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <new>
#include <thread>

#include "base/strings.h"

namespace infralens::trace {

namespace fs = std::filesystem;

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool LooksLikeTrace(const std::string& name) {
  return EndsWith(name, ".json") || EndsWith(name, ".gz");
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  bool stdin_named = false;
  for (const std::string& p : paths) {
    if (p == "-") {  // standard input: one file, read once
      if (stdin_named)
        return InvalidArgument("- given twice: standard input is one file; give it once");
      stdin_named = true;
      out.push_back(p);
      continue;
    }
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return NotFound(fmt::format("{}: no such file or folder", p));
    if (!fs::is_directory(st)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      std::error_code ec2;
      if (!it->is_regular_file(ec2)) continue;
      const std::string name = it->path().filename().string();
      if (LooksLikeTrace(name)) found.push_back(it->path().string());
    }
    if (ec) return IoError(fmt::format("{}: cannot list the folder ({})", p, ec.message()));
    if (found.empty())
      return InvalidArgument(
          fmt::format("{}: no trace files (*.json, *.json.gz, *.gz) in the folder", p));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

int64_t RankFromFileName(const std::string& path) {
  const std::string name = ToLower(fs::path(path).filename().string());
  for (std::string_view key : {"rank", "worker"}) {
    size_t at = name.find(key);
    while (at != std::string::npos) {
      size_t i = at + key.size();
      if (i < name.size() && (name[i] == '-' || name[i] == '_')) ++i;
      size_t j = i;
      while (j < name.size() && j - i < 9 && name[j] >= '0' && name[j] <= '9') ++j;
      if (j > i) return *ParseInt(std::string_view(name).substr(i, j - i));
      at = name.find(key, at + 1);
    }
  }
  return -1;
}

namespace {

// The checks every file passes before it is used, in file order (see LoadTraces).
class Admission {
 public:
  explicit Admission(size_t files) : files_(files) {}

  void Add(const std::string& path, StatusOr<RankTrace> read) {
    if (!read.ok()) {
      out_.errors.push_back({path, read.status()});
      return;
    }
    RankTrace t = std::move(read).value();
    auto bad = [&](std::string message) {
      out_.errors.push_back({path, InvalidArgument(std::move(message))});
    };
    if (t.gpu.empty()) {
      bad(fmt::format(
          "{}: no GPU events ({} trace events, none with args.stream); was the profiler run with "
          "ProfilerActivity.CUDA?",
          path, t.events_total));
      return;
    }
    const int64_t named = RankFromFileName(path);
    if (t.rank < 0) {
      if (named >= 0) {
        t.rank = named;
      } else if (files_ == 1) {
        t.rank = 0;
      } else {
        bad(
            fmt::format("{}: no distributedInfo.rank and no rank in the file name; cannot tell it "
                        "from the other "
                        "ranks",
                        path));
        return;
      }
    } else if (named >= 0 && named != t.rank) {
      bad(fmt::format(
          "{}: the file name says rank {} but distributedInfo.rank is {} (mixed-up files?)", path,
          named, t.rank));
      return;
    }
    if (t.world_size > 0 && t.rank >= t.world_size) {
      bad(fmt::format("{}: rank {} is outside world_size {}", path, t.rank, t.world_size));
      return;
    }
    if (t.world_size > 0) {
      if (world_size_ < 0) {
        world_size_ = t.world_size;
        world_file_ = path;
      } else if (t.world_size != world_size_) {
        bad(fmt::format("{}: world_size {} differs from {} in {}; not the same job", path,
                        t.world_size, world_size_, world_file_));
        return;
      }
    }
    if (auto it = rank_file_.find(t.rank); it != rank_file_.end()) {
      bad(fmt::format("{}: rank {} is already loaded from {}", path, t.rank, it->second));
      return;
    }
    rank_file_[t.rank] = path;
    out_.traces.push_back(std::move(t));
  }

  LoadedTraces Finish() {
    std::sort(out_.traces.begin(), out_.traces.end(),
              [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
    return std::move(out_);
  }

 private:
  size_t files_;
  LoadedTraces out_;
  std::map<int64_t, std::string> rank_file_;
  int64_t world_size_ = -1;
  std::string world_file_;
};

}  // namespace

namespace {

// Reads the files on every core, each file whole on one thread, and returns the results in file
// order, so that what is admitted (and every message) does not depend on the thread count. A
// reader's memory is bounded (trace/kineto_reader.h), so at most `threads` buffers are in flight.
std::vector<StatusOr<RankTrace>> ReadInParallel(const std::vector<std::string>& files,
                                                const trace::KinetoReadOptions& options) {
  std::vector<StatusOr<RankTrace>> out(files.size(),
                                       StatusOr<RankTrace>(InvalidArgument("unread")));
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < files.size(); i = next.fetch_add(1)) {
      try {
        out[i] = trace::ReadKinetoTraceFile(files[i], options);
      } catch (const std::bad_alloc&) {
        out[i] = ResourceExhausted(fmt::format("{}: out of memory while reading", files[i]));
      }
    }
  };
  const size_t threads =
      std::min<size_t>(files.size(), std::max(1u, std::thread::hardware_concurrency()));
  {
    std::vector<std::jthread> pool;  // joined at the end of the scope
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }
  return out;
}

}  // namespace

LoadedTraces LoadTraces(const std::vector<std::string>& files,
                        const trace::KinetoReadOptions& given) {
  // The files of one job share one memory budget (they are analysed together).
  trace::TraceMemoryBudget job_budget(given.budget_limit_bytes);
  trace::KinetoReadOptions options = given;
  if (options.budget == nullptr) options.budget = &job_budget;
  Admission admit(files.size());
  if (options.progress) {
    // A progress callback sees one file after another (the server's accounts rely on it).
    for (const std::string& path : files)
      admit.Add(path, trace::ReadKinetoTraceFile(path, options));
    return admit.Finish();
  }
  // One file: its events are parsed on a second thread while this one inflates and scans (the
  // result is the same); several: one file per thread already uses every core.
  if (files.size() == 1 && std::thread::hardware_concurrency() > 1)
    options.parse_on_second_thread = true;
  std::vector<StatusOr<RankTrace>> read = ReadInParallel(files, options);
  for (size_t i = 0; i < files.size(); ++i) admit.Add(files[i], std::move(read[i]));
  return admit.Finish();
}

LoadedTraces LoadTraceBytes(const std::vector<TraceBytes>& inputs,
                            const trace::KinetoReadOptions& given) {
  trace::TraceMemoryBudget job_budget(given.budget_limit_bytes);  // shared, as in LoadTraces
  trace::KinetoReadOptions options = given;
  if (options.budget == nullptr) options.budget = &job_budget;
  Admission admit(inputs.size());
  for (const TraceBytes& in : inputs)
    admit.Add(in.label, trace::ReadKinetoTraceBytes(in.bytes, in.label, options));
  return admit.Finish();
}

Status RequireATrace(const LoadedTraces& loaded) {
  if (!loaded.traces.empty()) return Status::Ok();
  if (loaded.errors.empty()) return InvalidArgument("no trace given");
  if (loaded.errors.size() == 1) return loaded.errors[0].status;
  return InvalidArgument(fmt::format("none of the {} files could be used; first: {}",
                                     loaded.errors.size(), loaded.errors[0].status.message()));
}

StatusOr<TraceAnalysis> WithLoadErrors(const LoadedTraces& loaded, TraceAnalysis a) {
  a.errors.insert(a.errors.begin(), loaded.errors.begin(), loaded.errors.end());
  if (a.ranks.empty()) {
    return a.errors.size() == 1
               ? a.errors[0].status
               : InvalidArgument(fmt::format("no file could be analysed; first: {}",
                                             a.errors[0].status.message()));
  }
  return a;
}

StatusOr<TraceAnalysis> AnalyzeLoaded(LoadedTraces loaded, const AnalysisOptions& options) {
  RETURN_IF_ERROR(RequireATrace(loaded));
  ASSIGN_OR_RETURN(TraceAnalysis a, Analyze(loaded.traces, options));
  return WithLoadErrors(loaded, std::move(a));
}

}  // namespace infralens::trace
