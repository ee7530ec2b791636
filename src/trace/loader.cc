#include "trace/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

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
  for (const std::string& p : paths) {
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

LoadedTraces LoadTraces(const std::vector<std::string>& files,
                        const io::KinetoReadOptions& options) {
  LoadedTraces out;
  std::map<int64_t, std::string> rank_file;
  int64_t world_size = -1;
  std::string world_file;
  for (const std::string& path : files) {
    auto read = io::ReadKinetoTraceFile(path, options);
    if (!read.ok()) {
      out.errors.push_back({path, read.status()});
      continue;
    }
    RankTrace t = std::move(read).value();
    auto bad = [&](std::string message) {
      out.errors.push_back({path, InvalidArgument(std::move(message))});
    };
    if (t.gpu.empty()) {
      bad(fmt::format(
          "{}: no GPU events ({} trace events, none with args.stream); was the profiler run with "
          "ProfilerActivity.CUDA?",
          path, t.events_total));
      continue;
    }
    const int64_t named = RankFromFileName(path);
    if (t.rank < 0) {
      if (named >= 0) {
        t.rank = named;
      } else if (files.size() == 1) {
        t.rank = 0;
      } else {
        bad(
            fmt::format("{}: no distributedInfo.rank and no rank in the file name; cannot tell it "
                        "from the other "
                        "ranks",
                        path));
        continue;
      }
    } else if (named >= 0 && named != t.rank) {
      bad(fmt::format(
          "{}: the file name says rank {} but distributedInfo.rank is {} (mixed-up files?)", path,
          named, t.rank));
      continue;
    }
    if (t.world_size > 0 && t.rank >= t.world_size) {
      bad(fmt::format("{}: rank {} is outside world_size {}", path, t.rank, t.world_size));
      continue;
    }
    if (t.world_size > 0) {
      if (world_size < 0) {
        world_size = t.world_size;
        world_file = path;
      } else if (t.world_size != world_size) {
        bad(fmt::format("{}: world_size {} differs from {} in {}; not the same job", path,
                        t.world_size, world_size, world_file));
        continue;
      }
    }
    if (auto it = rank_file.find(t.rank); it != rank_file.end()) {
      bad(fmt::format("{}: rank {} is already loaded from {}", path, t.rank, it->second));
      continue;
    }
    rank_file[t.rank] = path;
    out.traces.push_back(std::move(t));
  }
  std::sort(out.traces.begin(), out.traces.end(),
            [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace infralens::trace
