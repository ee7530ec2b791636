#include "trace/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "base/strings.h"
#include "trace/analysis_internal.h"

namespace infralens::trace {

using internal::Ev;
using internal::RankWork;
using internal::Span;

namespace internal {

std::vector<Span> MergeSorted(const std::vector<Span>& sorted) {
  std::vector<Span> out;
  double max_end = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < sorted.size(); ++i) {
    const Span& s = sorted[i];
    if (i == 0 || s.begin > max_end) {
      out.push_back(s);
    } else {
      out.back().end = std::max(out.back().end, s.end);
    }
    max_end = i == 0 ? s.end : std::max(max_end, s.end);
  }
  return out;
}

LaunchIndex::LaunchIndex(const RankTrace& tr) : launches_(&tr.launches) {
  // The reader's memory budget keeps launches far below 2^32 (trace/kineto_reader.h); positions
  // at or past kNoLaunch are left out.
  const size_t n = std::min<size_t>(tr.launches.size(), kNoLaunch);
  if (n == 0) return;
  int64_t lo = tr.launches[0].correlation, hi = lo;
  for (size_t i = 1; i < n; ++i) {
    lo = std::min(lo, tr.launches[i].correlation);
    hi = std::max(hi, tr.launches[i].correlation);
  }
  // The span in unsigned arithmetic: ids are any int64 (hi - lo may not fit in one).
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span < 2 * static_cast<uint64_t>(n)) {
    min_id_ = lo;
    by_id_.assign(span + 1, kNoLaunch);
    // In file order, so the last launch of an id is the one kept.
    for (size_t i = 0; i < n; ++i)
      by_id_[static_cast<uint64_t>(tr.launches[i].correlation) - static_cast<uint64_t>(lo)] =
          static_cast<uint32_t>(i);
    return;
  }
  by_corr_.resize(n);
  for (size_t i = 0; i < n; ++i) by_corr_[i] = static_cast<uint32_t>(i);
  std::sort(by_corr_.begin(), by_corr_.end(), [&tr](uint32_t a, uint32_t b) {
    const int64_t x = tr.launches[a].correlation, y = tr.launches[b].correlation;
    return x < y || (x == y && a < b);
  });
}

uint32_t LaunchIndex::Position(int64_t correlation) const {
  if (correlation == -1) return kNoLaunch;
  if (!by_id_.empty()) {
    const uint64_t at = static_cast<uint64_t>(correlation) - static_cast<uint64_t>(min_id_);
    return at < by_id_.size() ? by_id_[at] : kNoLaunch;
  }
  const std::vector<Launch>& l = *launches_;
  auto hi = std::upper_bound(by_corr_.begin(), by_corr_.end(), correlation,
                             [&l](int64_t c, uint32_t i) { return c < l[i].correlation; });
  if (hi == by_corr_.begin() || l[*(hi - 1)].correlation != correlation) return kNoLaunch;
  return *(hi - 1);
}

bool StopRequested(const AnalysisOptions& options) { return options.stop && options.stop(); }

Status StoppedStatus(const std::string& where) {
  return ResourceExhausted(fmt::format("the analysis was stopped (time limit) in {}", where));
}

double Length(const std::vector<Span>& merged) {
  double sum = 0;
  for (const Span& s : merged) sum += s.end - s.begin;
  return sum;
}

}  // namespace internal

std::string KernelTypeComboName(int mask) {
  std::vector<std::string> parts;
  if (mask & 1) parts.emplace_back("computation");
  if (mask & 2) parts.emplace_back("communication");
  if (mask & 4) parts.emplace_back("memory");
  return parts.empty() ? "none" : Join(parts, "+");
}

double BusBandwidthFactor(const std::string& kind, int64_t n) {
  if (n <= 0) return -1;
  const double nn = static_cast<double>(n);
  if (kind == "all_reduce") return 2.0 * (nn - 1) / nn;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all")
    return (nn - 1) / nn;
  if (kind == "broadcast" || kind == "reduce" || kind == "send" || kind == "recv") return 1.0;
  return -1;
}

std::string NormalizeCollectiveKind(const std::string& collective_name,
                                    const std::string& kernel_name) {
  std::string c = ToLower(collective_name);
  std::string k;
  for (char ch : c) {
    if (ch != '_') k += ch;
  }
  if (!k.empty()) {
    if (k.find("reducescatter") != std::string::npos) return "reduce_scatter";
    if (k.find("allreduce") != std::string::npos) return "all_reduce";
    if (k.find("allgather") != std::string::npos) return "all_gather";
    if (k.find("alltoall") != std::string::npos) return "all_to_all";
    if (k.find("broadcast") != std::string::npos) return "broadcast";
    if (k.find("barrier") != std::string::npos) return "barrier";
    if (k == "send" || k == "isend") return "send";
    if (k == "recv" || k == "irecv" || k == "recvanysource") return "recv";
    if (k.find("reduce") != std::string::npos) return "reduce";
    if (k.find("gather") != std::string::npos) return "gather";
    if (k.find("scatter") != std::string::npos) return "scatter";
    return c;
  }
  const std::string& n = kernel_name;
  if (n.find("ReduceScatter") != std::string::npos) return "reduce_scatter";
  if (n.find("AllReduce") != std::string::npos) return "all_reduce";
  if (n.find("AllGather") != std::string::npos) return "all_gather";
  if (n.find("AllToAll") != std::string::npos || n.find("AlltoAll") != std::string::npos)
    return "all_to_all";
  if (n.find("Broadcast") != std::string::npos) return "broadcast";
  if (n.find("SendRecv") != std::string::npos) return "send_recv";
  if (n.find("Send") != std::string::npos) return "send";
  if (n.find("Recv") != std::string::npos) return "recv";
  if (n.find("Reduce") != std::string::npos) return "reduce";
  return "other";
}

int DtypeBytes(const std::string& dtype) {
  static const auto* const kSizes = new std::unordered_map<std::string, int>{
      {"float", 4},
      {"float32", 4},
      {"double", 8},
      {"float64", 8},
      {"half", 2},
      {"float16", 2},
      {"bfloat16", 2},
      {"byte", 1},
      {"uint8", 1},
      {"char", 1},
      {"int8", 1},
      {"bool", 1},
      {"short", 2},
      {"int16", 2},
      {"int", 4},
      {"int32", 4},
      {"long", 8},
      {"int64", 8},
      {"complexfloat", 8},
      {"complexdouble", 16},
      {"float8_e4m3fn", 1},
      {"float8_e5m2", 1},
      {"float8_e4m3fnuz", 1},
      {"float8_e5m2fnuz", 1},
      {"uint16", 2},
      {"uint32", 4},
      {"uint64", 8},
  };
  auto it = kSizes->find(ToLower(dtype));
  return it == kSizes->end() ? 0 : it->second;
}

namespace {

// HTA (hta/common/trace_parser.py, JSON backend): fractional timestamps are rounded inwards to
// whole microseconds, start up and end down, "due to issue with events overlapping".
struct TimeBase {
  bool round = false;
  double Start(double ts) const { return round ? std::ceil(ts) : ts; }
  double End(double ts, double dur) const { return round ? std::floor(ts + dur) : ts + dur; }
};

// Index of the step whose CPU interval [start, start + dur) holds t, or -1.
int32_t StepAt(const std::vector<StepSummary>& steps, double t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](double v, const StepSummary& s) { return v < s.cpu_start_us; });
  if (it == steps.begin()) return -1;
  --it;
  if (t < it->cpu_start_us + it->cpu_dur_us) return static_cast<int32_t>(it - steps.begin());
  return -1;
}

// Sweeps per-class merged intervals and returns the time spent in each combination of classes.
KernelTypeTimes SweepKernelTypes(const std::vector<Span> (&merged)[3]) {
  std::vector<std::pair<double, int>> edges;
  for (int c = 0; c < 3; ++c) {
    for (const Span& s : merged[c]) {
      edges.push_back({s.begin, 1 << c});
      edges.push_back({s.end, -(1 << c)});
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  KernelTypeTimes t{};
  int running = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    running += edges[i].second;
    if (running > 0 && running < 8) t[running] += edges[i + 1].first - edges[i].first;
  }
  return t;
}

struct RankSetup {
  RankWork work;
  RankResult result;
};

Status AnalyzeRank(const RankTrace& tr, const KernelClassifier& classifier,
                   const AnalysisOptions& opt, bool filter_steps, RankSetup* out) {
  RankWork& w = out->work;
  RankResult& r = out->result;
  w.trace = &tr;
  r.rank = tr.rank;
  r.path = tr.path;
  r.world_size = tr.world_size;
  r.file_bytes = tr.file_bytes;
  r.json_bytes = tr.json_bytes;
  r.events_total = tr.events_total;
  r.gpu_events_total = static_cast<int64_t>(tr.gpu.size());
  const TimeBase tb{opt.hta_compat};

  // Steps, by CPU start.
  for (const Annotation& a : tr.steps) {
    StepSummary s;
    s.number = a.step;
    s.cpu_start_us = tb.Start(a.ts_us);
    s.cpu_dur_us = tb.End(a.ts_us, a.dur_us) - s.cpu_start_us;
    w.steps.push_back(s);
  }
  std::stable_sort(w.steps.begin(), w.steps.end(), [](const StepSummary& a, const StepSummary& b) {
    return a.cpu_start_us < b.cpu_start_us;
  });
  double last_start = -std::numeric_limits<double>::infinity();
  double last_end = -std::numeric_limits<double>::infinity();
  for (const StepSummary& s : w.steps) {
    last_start = std::max(last_start, s.cpu_start_us);
    last_end = std::max(last_end, s.cpu_start_us + s.cpu_dur_us);
  }
  for (size_t i = 0; i < w.steps.size(); ++i) {
    // The last step (by start) is dropped unless asked for, as HTA does.
    w.steps[i].analyzed =
        !filter_steps || opt.include_last_step || w.steps[i].cpu_start_us < last_start;
  }

  // The CPU launch of each correlation id (the last CPU event with that id, as HTA's join keeps),
  // looked up once per event and kept in it (Ev::launch).
  if (tr.gpu.size() >= internal::kNoLaunch) {
    return ResourceExhausted(fmt::format("{}: {} GPU events; at most {} can be analysed", tr.path,
                                         tr.gpu.size(), internal::kNoLaunch - 1));
  }
  const internal::LaunchIndex launch_index(tr);

  // Kernel class per name, computed once per distinct name.
  std::vector<int8_t> cls_of(tr.names.size(), -1);
  ReserveLarge(w.events, tr.gpu.size());  // pages never written are never resident
  const bool has_pp = !tr.pp.empty();
  // Kernels of batch_isend_irecv: no metadata, but record_param_comms send / recv before them.
  const auto batched_p2p = BatchedP2pPeers(tr);

  // Selection: which GPU events the analysis covers.
  //  HTA mode with >= 2 ProfilerSteps in the job (hta/common/trace.py
  //  _filter_irrelevant_gpu_kernels):
  //    events on a stream > 0 whose correlated CPU launch starts before the last step starts
  //    (with the last step: before it ends). Events with no CPU launch are dropped.
  //  Native mode with >= 2 steps: events whose launch (or, without one, whose own start) falls in
  //    an analysed step's CPU interval.
  //  Otherwise: every GPU event.
  for (size_t i = 0; i < tr.gpu.size(); ++i) {
    if (i % internal::kStopCheckEvents == 0 && internal::StopRequested(opt))
      return internal::StoppedStatus(tr.path);
    const GpuEvent& g = tr.gpu[i];
    Ev e;
    e.launch = launch_index.Position(g.correlation);
    const bool has = e.launch != internal::kNoLaunch;
    const double lts = has ? tb.Start(tr.launches[e.launch].ts_us) : 0;
    e.ts = tb.Start(g.ts_us);
    e.end = tb.End(g.ts_us, g.dur_us);
    e.stream = g.stream;
    e.name = g.name;
    e.coll = g.collective;
    e.order = static_cast<uint32_t>(i);
    e.step = StepAt(w.steps, has ? lts : e.ts);
    bool keep = true;
    if (filter_steps) {
      if (opt.hta_compat) {
        keep = g.stream > 0 && has && (opt.include_last_step ? lts <= last_end : lts < last_start);
      } else {
        keep = e.step >= 0 && w.steps[e.step].analyzed;
      }
    }
    if (!keep) continue;
    if (cls_of[g.name] < 0)
      cls_of[g.name] = static_cast<int8_t>(classifier.Classify(tr.names.Get(g.name), g.cat));
    e.cls = static_cast<KernelClass>(cls_of[g.name]);
    if (e.cls == KernelClass::kCommunication) {
      const std::string& kname = tr.names.Get(g.name);
      const std::string kind = NormalizeCollectiveKind(
          g.collective >= 0 ? tr.collectives[g.collective].name : "", kname);
      // A SendRecv kernel without metadata is all_to_all as often as it is a pipeline transfer:
      // it counts as p2p only in traces that carry pipelining annotations.
      e.p2p = kind == "send" || kind == "recv" ||
              (kind == "send_recv" &&
               (g.collective >= 0 || has_pp || internal::IsBatchedP2p(batched_p2p, i)));
    }
    w.events.push_back(e);
  }
  // Sort by (start, file order) in place: file order is unique, so this is the one order any
  // sort gives. The launch times are looked up again where needed (from tr.gpu[order]).
  std::sort(w.events.begin(), w.events.end(), [](const Ev& x, const Ev& y) {
    return x.ts < y.ts || (x.ts == y.ts && x.order < y.order);
  });
  if (internal::StopRequested(opt)) return internal::StoppedStatus(tr.path);
  r.gpu_events_analyzed = static_cast<int64_t>(w.events.size());
  if (w.events.empty()) {
    return FailedPrecondition(
        filter_steps
            ? fmt::format(
                  "{}: no GPU events in the analysed steps ({} steps, {} GPU events in the file); "
                  "try ‹include_last_step›",
                  tr.path, w.steps.size(), tr.gpu.size())
            : fmt::format("{}: no GPU events to analyse", tr.path));
  }

  // Steps: GPU extent of each.
  for (const Ev& e : w.events) {
    if (e.step < 0) continue;
    StepSummary& s = w.steps[e.step];
    if (s.gpu_events == 0) {
      s.gpu_start_us = e.ts;
      s.gpu_end_us = e.end;
    } else {
      s.gpu_start_us = std::min(s.gpu_start_us, e.ts);
      s.gpu_end_us = std::max(s.gpu_end_us, e.end);
    }
    ++s.gpu_events;
  }
  for (const StepSummary& s : w.steps) r.steps_analyzed += s.analyzed ? 1 : 0;

  // Temporal breakdown (HTA breakdown_analysis.py get_temporal_breakdown,
  // _get_idle_time_for_kernels).
  // The events are in start order: each union is merged as they go by, holding only the merged
  // spans per class (what the kernel-type sweep needs), not a copy of every event.
  std::vector<Span> merged[3];
  internal::SpanMerger merge_all;
  internal::SpanMerger merge_class[3] = {internal::SpanMerger(&merged[0]),
                                         internal::SpanMerger(&merged[1]),
                                         internal::SpanMerger(&merged[2])};
  for (const Ev& e : w.events) {
    merge_all.Add({e.ts, e.end});
    merge_class[static_cast<int>(e.cls)].Add({e.ts, e.end});
  }
  const double length_all = merge_all.Finish();
  double length_class[3];
  for (int c = 0; c < 3; ++c) length_class[c] = merge_class[c].Finish();
  r.kernel_time_us = merge_all.last_end() - merge_all.first_begin();
  r.idle_us = r.kernel_time_us - length_all;
  r.compute_us = length_class[0];
  r.non_compute_us = r.kernel_time_us - r.compute_us - r.idle_us;
  r.comm_us = length_class[1];
  // The classes are indexed compute 0, communication 1, memory 2, so the sweep's bitmask is
  // 1 computation, 2 communication, 4 memory.
  r.kernel_types = SweepKernelTypes(merged);
  r.overlap_us = r.kernel_types[3] + r.kernel_types[7];
  r.comm_only_us = r.kernel_types[2] + r.kernel_types[6];
  r.memory_only_us = r.kernel_types[4];
  if (r.kernel_time_us > 0) {
    r.idle_pct = 100 * r.idle_us / r.kernel_time_us;
    r.compute_pct = 100 * r.compute_us / r.kernel_time_us;
    r.non_compute_pct = 100 * r.non_compute_us / r.kernel_time_us;
  }
  r.overlap_pct = r.comm_us > 0 ? 100 * r.overlap_us / r.comm_us : -1;

  // Idle time per stream (HTA breakdown_analysis.py _analyze_idle_time_for_stream).
  // Each stream's events in start order, one pass over all of them: the previous event per stream.
  std::map<int64_t, std::pair<StreamIdle, const Ev*>> by_stream;
  // HTA joins an event without a matching CPU launch with the trace's event at index 0.
  const bool quirk = opt.hta_compat && !filter_steps && tr.first_event_kept;
  const double quirk_ts = tb.Start(tr.first_event_ts_us);
  for (const Ev& cur : w.events) {
    auto [it, first] = by_stream.try_emplace(cur.stream);
    StreamIdle& si = it->second.first;
    const Ev* prev_ev = it->second.second;
    it->second.second = &cur;
    ++si.events;
    if (first) {
      si.stream = cur.stream;
      si.has_other = true;  // the first event's (undefined) gap is filed under "other"
      continue;
    }
    {
      const Ev& prev = *prev_ev;
      const double gap = cur.ts - prev.end;
      bool runtime_known = cur.launch != internal::kNoLaunch;
      double runtime = runtime_known ? tb.Start(tr.launches[cur.launch].ts_us) : 0;
      if (!runtime_known && quirk && tr.gpu[cur.order].correlation != -1) {
        runtime_known = true;
        runtime = quirk_ts;
      }
      if (runtime_known && runtime > prev.end) {
        si.host_wait_us += gap;
        si.has_host_wait = true;
      } else if (gap < opt.consecutive_kernel_delay_us) {
        si.kernel_wait_us += gap;
        si.has_kernel_wait = true;
      } else {
        si.other_us += gap;
        si.has_other = true;
      }
    }
  }
  for (const auto& [stream, state] : by_stream) r.streams.push_back(state.first);

  // The axis label of a communication kernel: "pp" for send/recv, else the process group's
  // description without DeviceMesh's "mesh_" prefix, else "pg <name>", else "unknown".
  auto axis_label = [&tr](const Ev& e) -> std::string {
    if (e.p2p) return "pp";
    if (e.coll < 0) return "unknown";
    const CollectiveMeta& m = tr.collectives[e.coll];
    std::string desc = m.pg_desc;
    if (desc.rfind("mesh_", 0) == 0) desc = desc.substr(5);
    if (!desc.empty() && desc != "undefined") return desc;
    if (!m.pg_name.empty()) return "pg " + m.pg_name;
    return "unknown";
  };
  // Exposed communication per axis: the union of the axis' kernels minus the computation union.
  {
    std::map<std::string, std::vector<Span>> axis_spans;
    for (const Ev& e : w.events) {
      if (e.cls != KernelClass::kCommunication) continue;
      axis_spans[axis_label(e)].push_back({e.ts, e.end});
    }
    for (auto& [axis, spans] : axis_spans) {
      std::vector<Span> mg = internal::MergeSorted(spans);  // events are already in start order
      double hidden = 0;
      size_t j = 0;
      for (const Span& c : mg) {
        while (j < merged[0].size() && merged[0][j].end <= c.begin) ++j;
        for (size_t k = j; k < merged[0].size() && merged[0][k].begin < c.end; ++k) {
          hidden += std::max(
              0.0, std::min(c.end, merged[0][k].end) - std::max(c.begin, merged[0][k].begin));
        }
      }
      r.exposed_comm_us.push_back({axis, internal::Length(mg) - hidden});
    }
  }

  // Collectives per kind, and per axis label and kind.
  std::map<std::string, CollectiveSummary> kinds;
  std::map<std::pair<std::string, std::string>, RankResult::AxisCollective> by_axis;
  w.kinds.assign(tr.collectives.size(), "");
  for (const Ev& e : w.events) {
    if (e.cls != KernelClass::kCommunication) continue;
    const CollectiveMeta* m = e.coll >= 0 ? &tr.collectives[e.coll] : nullptr;
    std::string kind = NormalizeCollectiveKind(m != nullptr ? m->name : "", tr.names.Get(e.name));
    if (e.coll >= 0) w.kinds[e.coll] = kind;
    const ProcessGroup* group = nullptr;
    if (m != nullptr && !m->pg_name.empty()) {
      for (const ProcessGroup& pg : tr.process_groups) {
        if (pg.name == m->pg_name) group = &pg;
      }
    }
    int64_t n = m != nullptr ? m->group_size : -1;
    if (n <= 0 && group != nullptr)
      n = group->size > 0 ? group->size : static_cast<int64_t>(group->ranks.size());
    if (m != nullptr && (kind == "send" || kind == "recv")) n = 2;
    if (n <= 0) n = tr.world_size;
    const double dur = e.end - e.ts;
    double bytes = -1;
    if (m != nullptr) {
      const int eb = DtypeBytes(m->dtype);
      const int64_t nelems = std::max(m->in_nelems, m->out_nelems);
      if (eb > 0 && nelems >= 0 && dur > 0) bytes = static_cast<double>(nelems) * eb;
    }
    RankResult::AxisCollective& ac = by_axis[{axis_label(e), kind}];
    if (ac.axis.empty()) {
      ac.axis = axis_label(e);
      if (m != nullptr) ac.ranks = internal::ParseRankList(m->pg_ranks);
      if (ac.ranks.empty() && group != nullptr) ac.ranks = group->ranks;
      std::sort(ac.ranks.begin(), ac.ranks.end());
    }
    for (CollectiveSummary* cs : {&kinds[kind], &ac.summary}) {
      cs->kind = kind;
      ++cs->count;
      cs->time_us += dur;
      cs->group_size = std::max(cs->group_size, n);
      if (bytes >= 0) {
        ++cs->sized;
        cs->bytes += bytes;
        cs->sized_time_us += dur;
      }
    }
  }
  auto finish = [](CollectiveSummary& cs) {
    if (cs.sized > 0 && cs.sized_time_us > 0) {
      cs.algbw_gbps = cs.bytes / (cs.sized_time_us * 1e3);  // bytes per us / 1e3 = GB/s
      const double f = BusBandwidthFactor(cs.kind, cs.group_size);
      cs.busbw_gbps = f >= 0 ? cs.algbw_gbps * f : -1;
    }
  };
  for (auto& [kind, cs] : kinds) {
    finish(cs);
    r.collectives.push_back(cs);
  }
  for (auto& [key, ac] : by_axis) {
    finish(ac.summary);
    r.axis_collectives.push_back(std::move(ac));
  }
  std::stable_sort(
      r.collectives.begin(), r.collectives.end(),
      [](const CollectiveSummary& a, const CollectiveSummary& b) { return a.time_us > b.time_us; });

  // Pipelining actions ("PP:<action>", torch/distributed/pipelining/schedules.py
  // _get_profiler_function_name), per step, in start order.
  std::vector<const Annotation*> pp;
  for (const Annotation& a : tr.pp) pp.push_back(&a);
  std::stable_sort(pp.begin(), pp.end(),
                   [](const Annotation* a, const Annotation* b) { return a->ts_us < b->ts_us; });
  for (const Annotation* a : pp) {
    const int32_t s = StepAt(w.steps, tb.Start(a->ts_us));
    if (filter_steps && (s < 0 || !w.steps[s].analyzed)) continue;
    ++r.pp_annotations;
    std::string_view text(tr.names.Get(a->name));
    text.remove_prefix(3);
    auto action = schedule::ParseAction(text);
    if (!action.ok()) continue;  // SEND_F, RECV_B, UNSHARD, ...: communication and FSDP actions
    w.pp_by_step[s >= 0 ? w.steps[s].number : -1].push_back(*action);
  }
  r.steps = w.steps;

  // What the cross-rank pipeline parts need of every event, before any clock shift: the lengths
  // of each step's events (by step number) and of all of them, their extent, and the pipeline
  // detection's view of each step.
  {
    std::map<int64_t, std::vector<const Ev*>> by_number;
    std::vector<const Ev*> every;
    every.reserve(w.events.size());
    w.first_us = w.events.front().ts;
    w.last_us = w.events.front().end;
    for (const Ev& e : w.events) {
      every.push_back(&e);
      if (e.step >= 0) by_number[w.steps[e.step].number].push_back(&e);
      w.first_us = std::min(w.first_us, e.ts);
      w.last_us = std::max(w.last_us, e.end);
    }
    for (const auto& [number, events] : by_number)
      w.step_lengths[number] = internal::LengthsOf(events);
    w.all_lengths = internal::LengthsOf(every);
  }
  w.pipe_by_step = internal::PipeRanksByStep(w, tr.rank);
  return Status::Ok();
}

}  // namespace

StatusOr<TraceAnalysis> Analyze(const std::vector<RankTrace>& traces,
                                const AnalysisOptions& options) {
  return internal::AnalyzeKeepingWork(traces, options, nullptr);
}

StatusOr<TraceAnalysis> internal::AnalyzeKeepingWork(const std::vector<RankTrace>& traces,
                                                     const AnalysisOptions& options,
                                                     std::vector<RankWork>* kept) {
  ASSIGN_OR_RETURN(
      KernelClassifier classifier,
      KernelClassifier::Create(options.hta_compat, options.comm_pattern, options.memory_pattern));
  TraceAnalysis out;
  out.options = options;
  out.comm_pattern = classifier.comm_pattern();
  out.memory_pattern = classifier.memory_pattern();
  // HTA filters by step only when the job has two or more distinct ProfilerStep names.
  std::set<std::string> step_names;
  for (const RankTrace& t : traces) {
    for (const Annotation& a : t.steps) step_names.insert(t.names.Get(a.name));
  }
  const bool filter_steps = step_names.size() >= 2;
  std::vector<RankWork> local_work;
  std::vector<RankWork>& work = kept != nullptr ? *kept : local_work;
  work.clear();
  if (!options.stop && traces.size() > 1 && std::thread::hardware_concurrency() > 1) {
    // The ranks on every core at once (each rank's analysis reads only its own trace and the
    // shared classifier), kept in rank order, so the result is the sequential one. Only without
    // a stop callback: where the analysis stops, and the message naming that rank, are the
    // sequential loop's below.
    std::vector<RankSetup> setups(traces.size());
    std::vector<Status> statuses(traces.size());
    std::vector<std::exception_ptr> thrown(traces.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next.fetch_add(1); i < traces.size(); i = next.fetch_add(1)) {
        try {
          statuses[i] = AnalyzeRank(traces[i], classifier, options, filter_steps, &setups[i]);
        } catch (...) {  // rethrown below, in this thread, as the sequential loop would
          thrown[i] = std::current_exception();
        }
      }
    };
    {
      std::vector<std::jthread> pool;  // joined at the end of the scope
      const size_t threads = std::min<size_t>(traces.size(), std::thread::hardware_concurrency());
      for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
      worker();
    }
    for (size_t i = 0; i < traces.size(); ++i) {
      if (thrown[i]) std::rethrow_exception(thrown[i]);
      if (!statuses[i].ok()) {
        out.errors.push_back({traces[i].path, statuses[i]});
        continue;
      }
      work.push_back(std::move(setups[i].work));
      out.ranks.push_back(std::move(setups[i].result));
    }
  } else {
    for (const RankTrace& t : traces) {
      RankSetup setup;
      Status st = AnalyzeRank(t, classifier, options, filter_steps, &setup);
      if (internal::StopRequested(options)) return internal::StoppedStatus(t.path);
      if (!st.ok()) {
        out.errors.push_back({t.path, st});
        continue;
      }
      work.push_back(std::move(setup.work));
      out.ranks.push_back(std::move(setup.result));
    }
  }
  internal::CrossRank(work, out);
  if (internal::StopRequested(options)) return internal::StoppedStatus("the cross-rank analysis");
  out.options.stop = nullptr;  // the caller's callback is not part of the result
  return out;
}

Status internal::AnalyzeOneRank(const RankTrace& tr, const KernelClassifier& classifier,
                                const AnalysisOptions& opt, bool filter_steps, RankWork* work,
                                RankResult* result) {
  RankSetup setup;
  Status st = AnalyzeRank(tr, classifier, opt, filter_steps, &setup);
  *work = std::move(setup.work);
  *result = std::move(setup.result);
  return st;
}

void internal::CrossRank(std::vector<RankWork>& work, TraceAnalysis& out) {
  for (const RankResult& r : out.ranks) {
    for (int k = 0; k < 8; ++k) out.kernel_types[k] += r.kernel_types[k];
  }
  internal::MatchCollectives(work, out.ranks, out.cross, out.options.align_clocks);
  internal::PipelineWindows(work, out.ranks, out.pipeline);
  internal::RecoverSchedule(work, out.ranks, out.pipeline);
  internal::DetectPipelineStructure(work, out.ranks, out.pipeline);
}

}  // namespace infralens::trace
