#include "trace/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/json_writer.h"
#include "trace/analysis_internal.h"
#include "trace/kernel_class.h"
#include "trace/loader.h"

namespace infralens::trace {

namespace {

using internal::Ev;
using internal::RankWork;
using internal::WindowLengths;
using Json = nlohmann::json;

// --- writing -------------------------------------------------------------------------------

void WriteStatus(JsonWriter& w, const Status& s) {
  w.BeginObject()
      .Field("code", static_cast<int64_t>(s.code()))
      .Field("message", s.message())
      .EndObject();
}

void WriteCollective(JsonWriter& w, const CollectiveSummary& c) {
  w.BeginObject().Field("kind", c.kind).Field("count", c.count).Field("time_us", c.time_us);
  w.Field("group_size", c.group_size).Field("sized", c.sized).Field("bytes", c.bytes);
  w.Field("sized_time_us", c.sized_time_us).Field("algbw_gbps", c.algbw_gbps);
  w.Field("busbw_gbps", c.busbw_gbps).EndObject();
}

// The fields Analyze fills per file (the cross-rank ones are the merge's).
void WriteRankResult(JsonWriter& w, const RankResult& r) {
  w.BeginObject();
  w.Field("world_size", r.world_size).Field("file_bytes", static_cast<int64_t>(r.file_bytes));
  w.Field("json_bytes", static_cast<int64_t>(r.json_bytes)).Field("events_total", r.events_total);
  w.Field("gpu_events_total", r.gpu_events_total);
  w.Field("gpu_events_analyzed", r.gpu_events_analyzed);
  w.Key("steps").BeginArray();
  for (const StepSummary& s : r.steps) {
    w.BeginObject().Field("number", s.number).Field("cpu_start_us", s.cpu_start_us);
    w.Field("cpu_dur_us", s.cpu_dur_us).Field("analyzed", s.analyzed);
    w.Field("gpu_events", s.gpu_events).Field("gpu_start_us", s.gpu_start_us);
    w.Field("gpu_end_us", s.gpu_end_us).EndObject();
  }
  w.EndArray();
  w.Field("steps_analyzed", r.steps_analyzed);
  w.Field("kernel_time_us", r.kernel_time_us).Field("idle_us", r.idle_us);
  w.Field("compute_us", r.compute_us).Field("non_compute_us", r.non_compute_us);
  w.Field("idle_pct", r.idle_pct).Field("compute_pct", r.compute_pct);
  w.Field("non_compute_pct", r.non_compute_pct).Field("comm_only_us", r.comm_only_us);
  w.Field("memory_only_us", r.memory_only_us).Field("comm_us", r.comm_us);
  w.Field("overlap_us", r.overlap_us).Field("overlap_pct", r.overlap_pct);
  w.Key("kernel_types").BeginArray();
  for (double t : r.kernel_types) w.Number(t);
  w.EndArray();
  w.Key("streams").BeginArray();
  for (const StreamIdle& s : r.streams) {
    w.BeginObject().Field("stream", s.stream).Field("events", s.events);
    w.Field("host_wait_us", s.host_wait_us).Field("kernel_wait_us", s.kernel_wait_us);
    w.Field("other_us", s.other_us).Field("has_host_wait", s.has_host_wait);
    w.Field("has_kernel_wait", s.has_kernel_wait).Field("has_other", s.has_other).EndObject();
  }
  w.EndArray();
  w.Key("collectives").BeginArray();
  for (const CollectiveSummary& c : r.collectives) WriteCollective(w, c);
  w.EndArray();
  w.Key("exposed_comm_us").BeginArray();
  for (const auto& [axis, us] : r.exposed_comm_us)
    w.BeginArray().String(axis).Number(us).EndArray();
  w.EndArray();
  w.Key("axis_collectives").BeginArray();
  for (const RankResult::AxisCollective& a : r.axis_collectives) {
    w.BeginObject().Field("axis", a.axis).Key("ranks").BeginArray();
    for (int64_t k : a.ranks) w.Int(k);
    w.EndArray().Key("summary");
    WriteCollective(w, a.summary);
    w.EndObject();
  }
  w.EndArray();
  w.Field("pp_annotations", r.pp_annotations);
  w.EndObject();
}

void WriteLengths(JsonWriter& w, const WindowLengths& l) {
  w.BeginArray().Number(l.compute_us).Number(l.all_us).Number(l.p2p_wait_us).EndArray();
}

void WritePeers(JsonWriter& w, const std::vector<PipePeer>& peers) {
  w.BeginArray();
  for (const PipePeer& p : peers) w.BeginArray().Bool(p.send).Int(p.peer).EndArray();
  w.EndArray();
}

// What the cross-rank parts read of RankWork (analysis_internal.h), the communication events
// with the names and collective metadata they refer to, renumbered.
void WriteWork(JsonWriter& w, const RankWork& work) {
  const RankTrace& tr = *work.trace;
  std::map<uint32_t, size_t> name_index;
  std::map<int32_t, size_t> coll_index;
  std::vector<uint32_t> names;
  std::vector<int32_t> colls;
  w.BeginObject();
  w.Key("events").BeginArray();
  for (const Ev& e : work.events) {
    if (e.cls != KernelClass::kCommunication) continue;
    auto [n, new_name] = name_index.emplace(e.name, names.size());
    if (new_name) names.push_back(e.name);
    int64_t c = -1;
    if (e.coll >= 0) {
      auto [it, new_coll] = coll_index.emplace(e.coll, colls.size());
      if (new_coll) colls.push_back(e.coll);
      c = static_cast<int64_t>(it->second);
    }
    w.BeginArray().Number(e.ts).Number(e.end).Int(static_cast<int64_t>(n->second)).Int(c);
    w.EndArray();
  }
  w.EndArray();
  w.Key("names").BeginArray();
  for (uint32_t n : names) w.String(tr.names.Get(n));
  w.EndArray();
  w.Key("collectives").BeginArray();
  for (int32_t c : colls) {
    const CollectiveMeta& m = tr.collectives[c];
    w.BeginObject().Field("kind", work.kinds[c]).Field("pg_name", m.pg_name);
    w.Field("pg_ranks", m.pg_ranks).Field("seq", m.seq).Field("src", m.src);
    w.Field("dst", m.dst).EndObject();
  }
  w.EndArray();
  w.Key("pp_by_step").BeginArray();
  for (const auto& [step, actions] : work.pp_by_step) {
    w.BeginArray().Int(step).BeginArray();
    for (const schedule::Action& a : actions) w.String(schedule::ToString(a));
    w.EndArray().EndArray();
  }
  w.EndArray();
  w.Key("step_lengths").BeginArray();
  for (const auto& [step, l] : work.step_lengths) {
    w.BeginArray().Int(step);
    WriteLengths(w, l);
    w.EndArray();
  }
  w.EndArray();
  w.Key("all_lengths");
  WriteLengths(w, work.all_lengths);
  w.Field("first_us", work.first_us).Field("last_us", work.last_us);
  // The pipeline detection's view: shared by every step, then each step's phases.
  const PipeRank& any = work.pipe_by_step.at(-1);
  w.Key("pipe").BeginObject();
  w.Field("has_autograd", any.has_autograd).Field("p2p_kernels", any.p2p_kernels);
  w.Field("p2p_without_peer", any.p2p_without_peer);
  w.Field("sendrecv_without_metadata", any.sendrecv_without_metadata);
  w.Key("transfers");
  WritePeers(w, any.transfers);
  w.Key("steps").BeginArray();
  for (const auto& [step, pr] : work.pipe_by_step) {
    w.BeginArray().Int(step).String(pr.ops).BeginArray();
    for (const auto& peers : pr.p2p) WritePeers(w, peers);
    w.EndArray().EndArray();
  }
  w.EndArray().EndObject();
  w.EndObject();
}

void WriteOptions(JsonWriter& w, const AnalysisOptions& o, const KernelClassifier& c) {
  w.BeginObject().Field("hta_compat", o.hta_compat);
  w.Field("include_last_step", o.include_last_step);
  w.Field("consecutive_kernel_delay_us", o.consecutive_kernel_delay_us);
  w.Field("comm_kernels", o.comm_pattern).Field("memory_kernels", o.memory_pattern);
  w.Field("comm_pattern", c.comm_pattern()).Field("memory_pattern", c.memory_pattern());
  w.EndObject();
}

// --- reading -------------------------------------------------------------------------------

// Thrown (and caught in AnalyzeSummaries) for a summary whose content is not what this version
// writes.
struct BadSummary {
  std::string what;
};

// Every number a summary holds is finite (JsonWriter writes a non-finite one as null): anything
// else is refused before it reaches the sorts and medians of the merge.
double Num(const Json& j) {
  if (!j.is_number()) throw BadSummary{"a finite number expected"};
  const double v = j.get<double>();
  if (!std::isfinite(v)) throw BadSummary{"a finite number expected"};
  return v;
}
int64_t Int(const Json& j) {
  if (!j.is_number_integer()) throw BadSummary{"an integer expected"};
  return j.get<int64_t>();
}
const Json& At(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw BadSummary{fmt::format("no \"{}\"", key)};
  return j.at(key);
}
const Json& Arr(const Json& j, size_t n = 0) {
  if (!j.is_array() || j.size() < n) throw BadSummary{"an array expected"};
  return j;
}
std::string Str(const Json& j) {
  if (!j.is_string()) throw BadSummary{"a string expected"};
  return j.get<std::string>();
}
bool Bool(const Json& j) {
  if (!j.is_boolean()) throw BadSummary{"true or false expected"};
  return j.get<bool>();
}
Status StatusOf(const Json& j) {
  const int64_t code = Int(At(j, "code"));
  if (code <= 0 || code > static_cast<int64_t>(StatusCode::kInternal))
    throw BadSummary{"an unknown status code"};
  return Status(static_cast<StatusCode>(code), Str(At(j, "message")));
}

CollectiveSummary ReadCollective(const Json& j) {
  CollectiveSummary c;
  c.kind = Str(At(j, "kind"));
  c.count = Int(At(j, "count"));
  c.time_us = Num(At(j, "time_us"));
  c.group_size = Int(At(j, "group_size"));
  c.sized = Int(At(j, "sized"));
  c.bytes = Num(At(j, "bytes"));
  c.sized_time_us = Num(At(j, "sized_time_us"));
  c.algbw_gbps = Num(At(j, "algbw_gbps"));
  c.busbw_gbps = Num(At(j, "busbw_gbps"));
  return c;
}

RankResult ReadRankResult(const Json& j) {
  RankResult r;
  r.world_size = Int(At(j, "world_size"));
  r.file_bytes = static_cast<uint64_t>(Int(At(j, "file_bytes")));
  r.json_bytes = static_cast<uint64_t>(Int(At(j, "json_bytes")));
  r.events_total = Int(At(j, "events_total"));
  r.gpu_events_total = Int(At(j, "gpu_events_total"));
  r.gpu_events_analyzed = Int(At(j, "gpu_events_analyzed"));
  for (const Json& s : Arr(At(j, "steps"))) {
    StepSummary x;
    x.number = Int(At(s, "number"));
    x.cpu_start_us = Num(At(s, "cpu_start_us"));
    x.cpu_dur_us = Num(At(s, "cpu_dur_us"));
    x.analyzed = Bool(At(s, "analyzed"));
    x.gpu_events = Int(At(s, "gpu_events"));
    x.gpu_start_us = Num(At(s, "gpu_start_us"));
    x.gpu_end_us = Num(At(s, "gpu_end_us"));
    r.steps.push_back(x);
  }
  r.steps_analyzed = Int(At(j, "steps_analyzed"));
  r.kernel_time_us = Num(At(j, "kernel_time_us"));
  r.idle_us = Num(At(j, "idle_us"));
  r.compute_us = Num(At(j, "compute_us"));
  r.non_compute_us = Num(At(j, "non_compute_us"));
  r.idle_pct = Num(At(j, "idle_pct"));
  r.compute_pct = Num(At(j, "compute_pct"));
  r.non_compute_pct = Num(At(j, "non_compute_pct"));
  r.comm_only_us = Num(At(j, "comm_only_us"));
  r.memory_only_us = Num(At(j, "memory_only_us"));
  r.comm_us = Num(At(j, "comm_us"));
  r.overlap_us = Num(At(j, "overlap_us"));
  r.overlap_pct = Num(At(j, "overlap_pct"));
  const Json& kt = Arr(At(j, "kernel_types"), r.kernel_types.size());
  for (size_t k = 0; k < r.kernel_types.size(); ++k) r.kernel_types[k] = Num(kt[k]);
  for (const Json& s : Arr(At(j, "streams"))) {
    StreamIdle x;
    x.stream = Int(At(s, "stream"));
    x.events = Int(At(s, "events"));
    x.host_wait_us = Num(At(s, "host_wait_us"));
    x.kernel_wait_us = Num(At(s, "kernel_wait_us"));
    x.other_us = Num(At(s, "other_us"));
    x.has_host_wait = Bool(At(s, "has_host_wait"));
    x.has_kernel_wait = Bool(At(s, "has_kernel_wait"));
    x.has_other = Bool(At(s, "has_other"));
    r.streams.push_back(x);
  }
  for (const Json& c : Arr(At(j, "collectives"))) r.collectives.push_back(ReadCollective(c));
  for (const Json& e : Arr(At(j, "exposed_comm_us")))
    r.exposed_comm_us.emplace_back(Str(Arr(e, 2)[0]), Num(e[1]));
  for (const Json& a : Arr(At(j, "axis_collectives"))) {
    RankResult::AxisCollective x;
    x.axis = Str(At(a, "axis"));
    for (const Json& k : Arr(At(a, "ranks"))) x.ranks.push_back(Int(k));
    x.summary = ReadCollective(At(a, "summary"));
    r.axis_collectives.push_back(std::move(x));
  }
  r.pp_annotations = Int(At(j, "pp_annotations"));
  return r;
}

WindowLengths ReadLengths(const Json& j) {
  Arr(j, 3);
  return {Num(j[0]), Num(j[1]), Num(j[2])};
}

std::vector<PipePeer> ReadPeers(const Json& j) {
  std::vector<PipePeer> out;
  for (const Json& p : Arr(j)) out.push_back({Bool(Arr(p, 2)[0]), Int(p[1])});
  return out;
}

// Fills `tr` (names and collective metadata of the communication events) and `w`.
void ReadWork(const Json& j, RankTrace* tr, RankWork* w) {
  for (const Json& n : Arr(At(j, "names"))) tr->names.Intern(Str(n));
  for (const Json& c : Arr(At(j, "collectives"))) {
    CollectiveMeta m;
    m.pg_name = Str(At(c, "pg_name"));
    m.pg_ranks = Str(At(c, "pg_ranks"));
    m.seq = Int(At(c, "seq"));
    m.src = Int(At(c, "src"));
    m.dst = Int(At(c, "dst"));
    tr->collectives.push_back(std::move(m));
    w->kinds.push_back(Str(At(c, "kind")));
  }
  const auto names = static_cast<int64_t>(tr->names.size());
  const auto colls = static_cast<int64_t>(tr->collectives.size());
  for (const Json& e : Arr(At(j, "events"))) {
    Arr(e, 4);
    Ev ev;
    ev.ts = Num(e[0]);
    ev.end = Num(e[1]);
    const int64_t name = Int(e[2]), coll = Int(e[3]);
    if (name < 0 || name >= names || coll < -1 || coll >= colls)
      throw BadSummary{"an event refers to no name or collective"};
    ev.name = static_cast<uint32_t>(name);
    ev.coll = static_cast<int32_t>(coll);
    ev.cls = KernelClass::kCommunication;
    ev.order = w->events.size();
    w->events.push_back(ev);
  }
  for (const Json& s : Arr(At(j, "pp_by_step"))) {
    std::vector<schedule::Action>& actions = w->pp_by_step[Int(Arr(s, 2)[0])];
    for (const Json& a : Arr(s[1])) {
      StatusOr<schedule::Action> action = schedule::ParseAction(Str(a));
      if (!action.ok()) throw BadSummary{action.status().message()};
      actions.push_back(*action);
    }
  }
  for (const Json& s : Arr(At(j, "step_lengths")))
    w->step_lengths[Int(Arr(s, 2)[0])] = ReadLengths(s[1]);
  w->all_lengths = ReadLengths(At(j, "all_lengths"));
  w->first_us = Num(At(j, "first_us"));
  w->last_us = Num(At(j, "last_us"));
  const Json& pipe = At(j, "pipe");
  PipeRank shared;
  shared.has_autograd = Bool(At(pipe, "has_autograd"));
  shared.p2p_kernels = Int(At(pipe, "p2p_kernels"));
  shared.p2p_without_peer = Int(At(pipe, "p2p_without_peer"));
  shared.sendrecv_without_metadata = Int(At(pipe, "sendrecv_without_metadata"));
  shared.transfers = ReadPeers(At(pipe, "transfers"));
  for (const Json& s : Arr(At(pipe, "steps"))) {
    Arr(s, 3);
    PipeRank& pr = w->pipe_by_step[Int(s[0])];
    pr = shared;
    pr.ops = Str(s[1]);
    for (const Json& peers : Arr(s[2])) pr.p2p.push_back(ReadPeers(peers));
    // DetectPipeline reads one list of peers per 'P' of the phases.
    if (pr.ops.find_first_not_of("FBP") != std::string::npos ||
        static_cast<size_t>(std::count(pr.ops.begin(), pr.ops.end(), 'P')) != pr.p2p.size())
      throw BadSummary{"pipeline phases that do not match their send/recv peers"};
  }
  if (!w->pipe_by_step.count(-1)) throw BadSummary{"no pipeline view of the whole trace"};
}

// One parsed summary.
struct Parsed {
  std::string label;
  Json doc;
  std::string path;
  bool read_failed = false;
  Status read_status;
  int64_t rank = -1, world_size = -1, gpu_events = 0, events_total = 0;
  std::vector<std::string> step_names;
};

Parsed Parse(const SummaryText& s) {
  Parsed p;
  p.label = s.label;
  p.doc = Json::parse(s.text);  // json::parse_error is caught by the caller
  if (!p.doc.is_object() || p.doc.value("format", "") != kSummaryFormat)
    throw BadSummary{
        fmt::format("not a trace summary (\"format\": \"{}\" expected; made by "
                    "infralens trace summarize)",
                    kSummaryFormat)};
  const int64_t version = Int(At(p.doc, "version"));
  if (version != kSummaryVersion)
    throw BadSummary{
        fmt::format("summary version {}; this infralens reads version {} (summarize "
                    "the files again)",
                    version, kSummaryVersion)};
  p.path = Str(At(p.doc, "path"));
  At(p.doc, "options");
  if (p.doc.contains("read_error")) {
    p.read_failed = true;
    p.read_status = StatusOf(p.doc.at("read_error"));
    return p;
  }
  p.rank = Int(At(p.doc, "rank"));
  p.world_size = Int(At(p.doc, "world_size"));
  p.gpu_events = Int(At(p.doc, "gpu_events"));
  p.events_total = Int(At(p.doc, "events_total"));
  for (const Json& n : Arr(At(p.doc, "step_names"))) p.step_names.push_back(Str(n));
  Arr(At(p.doc, "analyses"), 1);
  return p;
}

// The checks LoadTraces makes of each file before it is used (loader.cc's Admission), on the
// summaries' headers: the same rules, messages and order, so that the merge keeps and refuses
// the files `trace analyze` keeps and refuses.
struct Admitted {
  size_t index;  // into the parsed summaries
  int64_t rank;
};
std::vector<Admitted> Admit(const std::vector<Parsed>& parsed, LoadedTraces* loaded) {
  std::vector<Admitted> out;
  std::map<int64_t, std::string> rank_file;
  int64_t world_size = -1;
  std::string world_file;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Parsed& p = parsed[i];
    const std::string& path = p.path;
    if (p.read_failed) {
      loaded->errors.push_back({path, p.read_status});
      continue;
    }
    auto bad = [&](std::string message) {
      loaded->errors.push_back({path, InvalidArgument(std::move(message))});
    };
    if (p.gpu_events == 0) {
      bad(fmt::format(
          "{}: no GPU events ({} trace events, none with args.stream); was the profiler run with "
          "ProfilerActivity.CUDA?",
          path, p.events_total));
      continue;
    }
    int64_t rank = p.rank;
    const int64_t named = RankFromFileName(path);
    if (rank < 0) {
      if (named >= 0) {
        rank = named;
      } else if (parsed.size() == 1) {
        rank = 0;
      } else {
        bad(fmt::format(
            "{}: no distributedInfo.rank and no rank in the file name; cannot tell it from the "
            "other ranks",
            path));
        continue;
      }
    } else if (named >= 0 && named != rank) {
      bad(fmt::format(
          "{}: the file name says rank {} but distributedInfo.rank is {} (mixed-up files?)", path,
          named, rank));
      continue;
    }
    if (p.world_size > 0 && rank >= p.world_size) {
      bad(fmt::format("{}: rank {} is outside world_size {}", path, rank, p.world_size));
      continue;
    }
    if (p.world_size > 0) {
      if (world_size < 0) {
        world_size = p.world_size;
        world_file = path;
      } else if (p.world_size != world_size) {
        bad(fmt::format("{}: world_size {} differs from {} in {}; not the same job", path,
                        p.world_size, world_size, world_file));
        continue;
      }
    }
    if (auto it = rank_file.find(rank); it != rank_file.end()) {
      bad(fmt::format("{}: rank {} is already loaded from {}", path, rank, it->second));
      continue;
    }
    rank_file[rank] = path;
    out.push_back({i, rank});
  }
  std::sort(out.begin(), out.end(),
            [](const Admitted& a, const Admitted& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace

StatusOr<std::string> SummarizeRankTrace(const std::string& path, StatusOr<RankTrace> read,
                                         const AnalysisOptions& options, int indent) {
  ASSIGN_OR_RETURN(
      KernelClassifier classifier,
      KernelClassifier::Create(options.hta_compat, options.comm_pattern, options.memory_pattern));
  JsonWriter w(indent);
  w.BeginObject().Field("format", kSummaryFormat).Field("version", kSummaryVersion);
  w.Field("path", path).Key("options");
  WriteOptions(w, options, classifier);
  if (!read.ok()) {
    w.Key("read_error");
    WriteStatus(w, read.status());
    w.EndObject();
    return w.str();
  }
  const RankTrace& t = *read;
  w.Field("rank", t.rank).Field("world_size", t.world_size);
  w.Field("gpu_events", static_cast<int64_t>(t.gpu.size())).Field("events_total", t.events_total);
  // Two distinct names are enough to know the job filters by step (Analyze's rule).
  std::set<std::string> names;
  for (const Annotation& a : t.steps) {
    if (names.size() == 2) break;
    names.insert(t.names.Get(a.name));
  }
  w.Key("step_names").BeginArray();
  for (const std::string& n : names) w.String(n);
  w.EndArray();
  w.Key("analyses").BeginArray();
  const std::vector<bool> variants =
      names.size() >= 2 ? std::vector<bool>{true} : std::vector<bool>{true, false};
  for (bool filter : variants) {
    RankWork work;
    RankResult result;
    const Status st = internal::AnalyzeOneRank(t, classifier, options, filter, &work, &result);
    w.BeginObject().Field("filter_steps", filter);
    if (!st.ok()) {
      w.Key("error");
      WriteStatus(w, st);
    } else {
      w.Key("result");
      WriteRankResult(w, result);
      w.Key("work");
      WriteWork(w, work);
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

StatusOr<std::string> SummarizeTraceFile(const std::string& path, const AnalysisOptions& options,
                                         const trace::KinetoReadOptions& read, int indent) {
  return SummarizeRankTrace(path, trace::ReadKinetoTraceFile(path, read), options, indent);
}

StatusOr<TraceAnalysis> AnalyzeSummaries(const std::vector<SummaryText>& summaries,
                                         bool align_clocks) {
  if (summaries.empty()) return InvalidArgument("no trace summary given");
  std::vector<Parsed> parsed;
  parsed.reserve(summaries.size());
  for (const SummaryText& s : summaries) {
    try {
      parsed.push_back(Parse(s));
    } catch (const BadSummary& e) {
      return InvalidArgument(fmt::format("{}: {}", s.label, e.what));
    } catch (const Json::exception& e) {
      return InvalidArgument(fmt::format("{}: not a trace summary ({})", s.label, e.what()));
    }
    const Json& first = parsed.front().doc.at("options");
    if (parsed.back().doc.at("options") != first) {
      return InvalidArgument(fmt::format(
          "{}: summarised with other options than {} ({} against {}); summarise every file with "
          "the same ‹hta_compat›, ‹include_last_step› and kernel patterns",
          s.label, summaries.front().label, parsed.back().doc.at("options").dump(), first.dump()));
    }
  }
  TraceAnalysis out;
  try {
    const Json& o = parsed.front().doc.at("options");
    out.options.hta_compat = Bool(At(o, "hta_compat"));
    out.options.include_last_step = Bool(At(o, "include_last_step"));
    out.options.consecutive_kernel_delay_us = Num(At(o, "consecutive_kernel_delay_us"));
    out.options.comm_pattern = Str(At(o, "comm_kernels"));
    out.options.memory_pattern = Str(At(o, "memory_kernels"));
    out.options.align_clocks = align_clocks;
    out.comm_pattern = Str(At(o, "comm_pattern"));
    out.memory_pattern = Str(At(o, "memory_pattern"));
  } catch (const BadSummary& e) {
    return InvalidArgument(fmt::format("{}: options: {}", summaries.front().label, e.what));
  }

  LoadedTraces loaded;
  const std::vector<Admitted> admitted = Admit(parsed, &loaded);
  // The job filters by step when its files name two or more distinct steps (Analyze's rule).
  std::set<std::string> step_names;
  for (const Admitted& a : admitted) {
    const std::vector<std::string>& n = parsed[a.index].step_names;
    step_names.insert(n.begin(), n.end());
  }
  const bool filter_steps = step_names.size() >= 2;

  // The traces the work points to: names and collective metadata only. Sized first, so that the
  // pointers stay put.
  loaded.traces.resize(admitted.size());
  std::vector<RankWork> work;
  for (size_t k = 0; k < admitted.size(); ++k) {
    const Parsed& p = parsed[admitted[k].index];
    RankTrace& tr = loaded.traces[k];
    tr.path = p.path;
    tr.rank = admitted[k].rank;
    tr.world_size = p.world_size;
    try {
      const Json* analysis = nullptr;
      for (const Json& a : p.doc.at("analyses")) {
        if (Bool(At(a, "filter_steps")) == filter_steps) analysis = &a;
      }
      if (analysis == nullptr)
        throw BadSummary{fmt::format("no analysis with filter_steps {}", filter_steps)};
      if (analysis->contains("error")) {
        out.errors.push_back({p.path, StatusOf(analysis->at("error"))});
        continue;
      }
      RankWork w;
      w.trace = &tr;
      RankResult r = ReadRankResult(At(*analysis, "result"));
      r.rank = tr.rank;
      r.path = tr.path;
      ReadWork(At(*analysis, "work"), &tr, &w);
      w.steps = r.steps;
      work.push_back(std::move(w));
      out.ranks.push_back(std::move(r));
    } catch (const BadSummary& e) {
      return InvalidArgument(fmt::format("{}: {}", p.label, e.what));
    } catch (const Json::exception& e) {
      return InvalidArgument(fmt::format("{}: not a trace summary ({})", p.label, e.what()));
    }
  }
  RETURN_IF_ERROR(RequireATrace(loaded));
  internal::CrossRank(work, out);
  return WithLoadErrors(loaded, std::move(out));
}

}  // namespace infralens::trace
