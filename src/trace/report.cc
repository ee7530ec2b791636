#include "trace/report.h"

#include <fmt/format.h>

#include "base/strings.h"
#include "base/table.h"

namespace infralens::trace {

std::string FormatMs(double us) { return fmt::format("{:.3f}", us / 1000.0); }

namespace {

std::string Pct(double p) { return p < 0 ? "-" : fmt::format("{:.2f}", p); }
std::string Pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.2f}", 100 * part / whole) : "-";
}
std::string Gbps(double v) { return v < 0 ? "-" : fmt::format("{:.2f}", v); }

std::string ActionList(const std::vector<schedule::Action>& actions) {
  std::vector<std::string> parts;
  for (const auto& a : actions) parts.push_back(schedule::ToString(a));
  return Join(parts, " ");
}

// The first line: ranks, definitions, and whether the last ProfilerStep was kept.
void AppendAnalysisHeading(const TraceAnalysis& a, std::string* out) {
  const AnalysisOptions& o = a.options;
  int64_t steps_total = 0;
  for (const RankResult& r : a.ranks)
    steps_total = std::max<int64_t>(steps_total, static_cast<int64_t>(r.steps.size()));
  *out += fmt::format(
      "{} rank{}; {} definitions{}; {}\n", a.ranks.size(), a.ranks.size() == 1 ? "" : "s",
      o.hta_compat ? "HTA-compatible" : "InfraLens",
      o.hta_compat ? " (--hta-compat)" : " (--hta-compat gives HTA's)",
      steps_total >= 2
          ? (o.include_last_step ? "last ProfilerStep included"
                                 : "last ProfilerStep dropped (--include-last-step keeps it)")
          : "fewer than 2 ProfilerSteps: every GPU event analysed");
}

void AppendTemporalBreakdown(const TraceAnalysis& a, std::string* out) {
  *out +=
      "\nTemporal breakdown (HTA get_temporal_breakdown): % of each rank's GPU window, first "
      "kernel start to last "
      "end\n";
  TextTable t({"rank", "steps", "events", "window ms", "idle %", "compute %", "non-compute %",
               "comm-only %", "memory-only %", "comm/comp overlap %"});
  for (const RankResult& r : a.ranks) {
    t.AddRow({std::to_string(r.rank), std::to_string(r.steps_analyzed),
              std::to_string(r.gpu_events_analyzed), FormatMs(r.kernel_time_us), Pct(r.idle_pct),
              Pct(r.compute_pct), Pct(r.non_compute_pct), Pct(r.comm_only_us, r.kernel_time_us),
              Pct(r.memory_only_us, r.kernel_time_us), Pct(r.overlap_pct)});
  }
  *out += t.Render();
}

// The pipeline (or idle) view: where it was detected, and per rank the time without compute.
void AppendPipelineView(const TraceAnalysis& a, std::string* out) {
  const PipelineResult& p = a.pipeline;
  // Time without computation is a pipeline "bubble" only in a pipeline; otherwise it is "idle".
  const std::string term = p.GapTerm();
  if (p.detected) {
    *out +=
        fmt::format("\nPipeline detected from {}: {}\nschedule: {}{}\n", p.source, p.detect_note,
                    p.schedule_name, p.schedule_note.empty() ? "" : " (" + p.schedule_note + ")");
  } else {
    *out += fmt::format("\nNo pipeline: {}\n",
                        p.detect_note.empty() ? "no send/recv kernels" : p.detect_note);
  }
  *out += fmt::format(
      "\n{}: time without a compute kernel, over {} shared by all ranks ({} window{}, "
      "mean {} ms);\n"
      "{} = pure idle + waiting inside send/recv kernels\n",
      p.detected ? "Pipeline view" : "Idle view (not a pipeline)",
      p.has_steps ? "step windows" : "the analysed span", p.windows, p.windows == 1 ? "" : "s",
      FormatMs(p.step_time_us), term);
  std::vector<std::string> head = {"rank",       "window ms",        "no compute %", "pure idle %",
                                   "p2p wait %", "other comm/mem %", term + " %"};
  if (p.detected) head.insert(head.begin() + 1, "stage");
  TextTable pt(head);
  for (const RankResult& r : a.ranks) {
    const double other = r.no_compute_us - r.pure_idle_us - r.p2p_wait_us;
    std::vector<std::string> row = {std::to_string(r.rank),
                                    FormatMs(r.pipeline_window_us),
                                    Pct(r.no_compute_us, r.pipeline_window_us),
                                    Pct(r.pure_idle_us, r.pipeline_window_us),
                                    Pct(r.p2p_wait_us, r.pipeline_window_us),
                                    Pct(other, r.pipeline_window_us),
                                    Pct(r.bubble_pct)};
    if (p.detected) row.insert(row.begin() + 1, r.stage >= 0 ? std::to_string(r.stage) : "-");
    pt.AddRow(row);
  }
  *out += pt.Render();
  *out += fmt::format(
      "measured {} {:.2f}% of ranks x window (pure idle {:.2f}%, p2p wait {:.2f}%)\n", term,
      100 * p.bubble_fraction, 100 * p.pure_idle_fraction, 100 * p.p2p_wait_fraction);
}

// Without PP: annotations, the forwards and backwards each rank ran, in order.
void AppendForwardBackwardOrders(const TraceAnalysis& a, std::string* out) {
  const PipelineResult& p = a.pipeline;
  if (p.detected && p.source != "PP: annotations") {
    bool any = false;
    for (const RankResult& r : a.ranks) any |= !r.fb_actions.empty();
    if (any) {
      *out +=
          p.detected_matches.empty()
              ? "forwards and backwards per rank, in order (numbered as they ran):\n"
              : "forwards and backwards per rank, in order (labels of " + p.schedule_name + "):\n";
      for (const RankResult& r : a.ranks) {
        if (r.fb_actions.empty()) continue;
        std::string list = Join(r.fb_actions, " ");
        if (list.size() > 200) list = list.substr(0, 197) + "...";
        *out += fmt::format("  stage {} (rank {}): {}\n", r.stage, r.rank, list);
      }
    }
  }
}

void AppendRecoveredSchedule(const TraceAnalysis& a, std::string* out) {
  const PipelineResult& p = a.pipeline;
  if (!p.recover_note.empty() || p.recovered) {
    *out += "\nPipeline schedule recovered from PP: annotations";
    *out += p.recovered
                ? fmt::format(" ({} ranks, {} stages, {} microbatches): {}\n", p.schedule.pp,
                              p.schedule.num_stages(), p.schedule.microbatches, p.recover_note)
                : fmt::format(": {}\n", p.recover_note);
    if (p.recovered) {
      for (size_t i = 0; i < p.schedule.ranks.size(); ++i) {
        *out += fmt::format("  pp rank {} (rank {}): {}\n", i, p.pp_rank_of[i],
                            ActionList(p.schedule.ranks[i]));
      }
    }
  }
}

void AppendKernelTypes(const TraceAnalysis& a, std::string* out) {
  double kt_total = 0;
  for (double v : a.kernel_types) kt_total += v;
  *out += "\nKernel types, all ranks (HTA get_gpu_kernel_breakdown)\n";
  TextTable kt({"kernel type", "time ms", "%"});
  kt.SetAlign(0, TextTable::Align::kLeft);
  for (int mask : {1, 2, 4, 3, 5, 6, 7}) {
    if (a.kernel_types[mask] == 0 && mask != 1 && mask != 2 && mask != 4) continue;
    kt.AddRow({KernelTypeComboName(mask), FormatMs(a.kernel_types[mask]),
               Pct(a.kernel_types[mask], kt_total)});
  }
  *out += kt.Render();
}

void AppendStreamIdle(const TraceAnalysis& a, std::string* out) {
  const AnalysisOptions& o = a.options;
  *out += fmt::format(
      "\nIdle time between kernels per stream (HTA get_idle_time_breakdown; kernel wait < {:g} "
      "us)\n",
      o.consecutive_kernel_delay_us);
  TextTable st({"rank", "stream", "events", "idle ms", "host wait %", "kernel wait %", "other %"});
  for (const RankResult& r : a.ranks) {
    for (const StreamIdle& s : r.streams) {
      const double total = s.total_us();
      st.AddRow({std::to_string(r.rank), std::to_string(s.stream), std::to_string(s.events),
                 FormatMs(total), s.has_host_wait ? Pct(s.host_wait_us, total) : "-",
                 s.has_kernel_wait ? Pct(s.kernel_wait_us, total) : "-", Pct(s.other_us, total)});
    }
  }
  *out += st.Render();
}

void AppendCollectivesPerRank(const TraceAnalysis& a, std::string* out) {
  *out +=
      "\nCollectives per rank (achieved bandwidth over the kernels whose size is known; busbw as "
      "nccl-tests)\n";
  TextTable ct({"rank", "kind", "count", "time ms", "GB", "algbw GB/s", "busbw GB/s", "group"});
  ct.SetAlign(1, TextTable::Align::kLeft);
  for (const RankResult& r : a.ranks) {
    for (const CollectiveSummary& c : r.collectives) {
      ct.AddRow({std::to_string(r.rank), c.kind, std::to_string(c.count), FormatMs(c.time_us),
                 c.sized > 0 ? fmt::format("{:.3f}", c.bytes / 1e9) : "-", Gbps(c.algbw_gbps),
                 Gbps(c.busbw_gbps), c.group_size > 0 ? std::to_string(c.group_size) : "-"});
    }
  }
  *out += ct.rows() > 0 ? ct.Render() : "(no communication kernels)\n";
}

void AppendCrossRankCollectives(const TraceAnalysis& a, std::string* out) {
  const CrossRankResult& x = a.cross;
  if (a.ranks.size() >= 2) {
    *out +=
        "\nCollectives across ranks: wait = until the last participant starts, transfer = from "
        "then to the end\n";
    if (x.instances + x.p2p_instances > 0) {
      *out += fmt::format(
          "{} collectives and {} send/recv pairs matched across ranks (by {}), {} unmatched\n",
          x.instances, x.p2p_instances, x.method, x.unmatched);
    }
    if (x.instances > 0) {
      TextTable xt({"rank", "matched", "wait ms", "transfer ms", "last to arrive",
                    "delay caused ms", "clock offset us"});
      for (const RankResult& r : a.ranks) {
        xt.AddRow({std::to_string(r.rank), std::to_string(r.coll_matched), FormatMs(r.coll_wait_us),
                   FormatMs(r.coll_transfer_us), std::to_string(r.coll_last_arrivals),
                   FormatMs(r.coll_delay_caused_us), fmt::format("{:.1f}", r.clock_offset_us)});
      }
      *out += xt.Render();
      std::vector<std::string> names;
      for (int64_t s : x.stragglers) names.push_back(std::to_string(s));
      *out += names.empty() ? "stragglers: none stands out\n"
                            : "stragglers: rank " + Join(names, ", rank ") +
                                  " (last to arrive for most of the wait)\n";
    }
    if (!x.note.empty()) *out += "note: " + x.note + "\n";
  }
}

// Each stream's idle time between kernels.
void WriteRankStreamsJson(JsonWriter& w, const RankResult& r) {
  w.Key("streams").BeginArray();
  for (const StreamIdle& s : r.streams) {
    w.BeginObject();
    w.Field("stream", s.stream);
    w.Field("events", s.events);
    w.Key("host_wait_us");
    s.has_host_wait ? w.Number(s.host_wait_us) : w.Null();
    w.Key("kernel_wait_us");
    s.has_kernel_wait ? w.Number(s.kernel_wait_us) : w.Null();
    w.Field("other_us", s.other_us);
    w.Field("idle_us", s.total_us());
    w.EndObject();
  }
  w.EndArray();
}

// The rank's collectives by kind, with their achieved bandwidths when sized.
void WriteRankCollectivesJson(JsonWriter& w, const RankResult& r) {
  w.Key("collectives").BeginArray();
  for (const CollectiveSummary& c : r.collectives) {
    w.BeginObject();
    w.Field("kind", c.kind);
    w.Field("count", c.count);
    w.Field("time_us", c.time_us);
    w.Field("group_size", c.group_size);
    w.Field("sized", c.sized);
    w.Key("bytes");
    c.sized > 0 ? w.Number(c.bytes) : w.Null();
    w.Key("algbw_gbps");
    c.algbw_gbps >= 0 ? w.Number(c.algbw_gbps) : w.Null();
    w.Key("busbw_gbps");
    c.busbw_gbps >= 0 ? w.Number(c.busbw_gbps) : w.Null();
    w.EndObject();
  }
  w.EndArray();
}

// One rank's object: its file, breakdowns, pipeline view, streams, collectives and actions.
void WriteRankAnalysisJson(JsonWriter& w, const RankResult& r) {
  w.BeginObject();
  w.Field("rank", r.rank);
  w.Field("file", r.path);
  w.Field("world_size", r.world_size);
  w.Field("file_bytes", static_cast<int64_t>(r.file_bytes));
  w.Field("json_bytes", static_cast<int64_t>(r.json_bytes));
  w.Field("trace_events", r.events_total);
  w.Field("gpu_events", r.gpu_events_total);
  w.Field("gpu_events_analyzed", r.gpu_events_analyzed);
  w.Field("steps", static_cast<int64_t>(r.steps.size()));
  w.Field("steps_analyzed", r.steps_analyzed);
  w.Field("kernel_time_us", r.kernel_time_us);
  w.Field("idle_us", r.idle_us);
  w.Field("compute_us", r.compute_us);
  w.Field("non_compute_us", r.non_compute_us);
  w.Field("comm_only_us", r.comm_only_us);
  w.Field("memory_only_us", r.memory_only_us);
  w.Field("idle_pct", r.idle_pct);
  w.Field("compute_pct", r.compute_pct);
  w.Field("non_compute_pct", r.non_compute_pct);
  w.Key("overlap_pct");
  if (r.overlap_pct < 0) {
    w.Null();
  } else {
    w.Number(r.overlap_pct);
  }
  w.Field("comm_us", r.comm_us);
  w.Field("overlap_us", r.overlap_us);
  w.Field("pipeline_window_us", r.pipeline_window_us);
  w.Field("no_compute_us", r.no_compute_us);
  w.Field("pure_idle_us", r.pure_idle_us);
  w.Field("p2p_wait_us", r.p2p_wait_us);
  w.Field("bubble_us", r.bubble_us);
  w.Field("bubble_pct", r.bubble_pct);
  w.Field("stage", r.stage);
  w.Key("forwards");
  r.forwards >= 0 ? w.Int(r.forwards) : w.Null();
  w.Key("backwards");
  r.backwards >= 0 ? w.Int(r.backwards) : w.Null();
  w.Field("fb_actions", r.fb_actions);
  w.Key("kernel_types").BeginObject();
  for (int mask = 1; mask < 8; ++mask) w.Field(KernelTypeComboName(mask), r.kernel_types[mask]);
  w.EndObject();
  WriteRankStreamsJson(w, r);
  WriteRankCollectivesJson(w, r);
  w.Key("cross_rank").BeginObject();
  w.Field("matched", r.coll_matched);
  w.Field("wait_us", r.coll_wait_us);
  w.Field("transfer_us", r.coll_transfer_us);
  w.Field("last_arrivals", r.coll_last_arrivals);
  w.Field("delay_caused_us", r.coll_delay_caused_us);
  w.Field("clock_offset_us", r.clock_offset_us);
  w.EndObject();
  w.Key("pp_actions").BeginArray();
  for (const auto& act : r.pp_actions) w.String(schedule::ToString(act));
  w.EndArray();
  w.EndObject();
}

// The cross-rank matching of collectives: how, how many, and the stragglers.
void WriteCrossRankJson(JsonWriter& w, const CrossRankResult& x) {
  w.Key("cross_rank").BeginObject();
  w.Field("method", x.method);
  w.Field("instances", x.instances);
  w.Field("p2p_instances", x.p2p_instances);
  w.Field("unmatched", x.unmatched);
  w.Field("stragglers", x.stragglers);
  w.Field("note", x.note);
  w.EndObject();
}

// The pipeline: its windows and fractions, detection, chains and the recovered schedule.
void WritePipelineJson(JsonWriter& w, const TraceAnalysis& a) {
  const PipelineResult& p = a.pipeline;
  w.Key("pipeline").BeginObject();
  w.Field("windows_from_steps", p.has_steps);
  w.Field("windows", p.windows);
  w.Field("window_us", p.window_us);
  w.Field("step_time_us", p.step_time_us);
  w.Field("bubble_fraction", p.bubble_fraction);
  w.Field("pure_idle_fraction", p.pure_idle_fraction);
  w.Field("p2p_wait_fraction", p.p2p_wait_fraction);
  w.Field("detected", p.detected);
  w.Field("gap_term", p.GapTerm());
  w.Field("source", p.source);
  w.Field("detect_note", p.detect_note);
  w.Field("schedule", p.schedule_name);
  w.Field("schedule_note", p.schedule_note);
  w.Key("stages").BeginArray();
  for (const RankResult& r : a.ranks) w.Int(r.stage);
  w.EndArray();
  w.Key("chains").BeginArray();
  for (const auto& chain : p.chains) {
    w.BeginArray();
    for (int64_t r : chain) w.Int(r);
    w.EndArray();
  }
  w.EndArray();
  if (p.detected_pp > 0) {
    w.Field("detected_pp", static_cast<int64_t>(p.detected_pp));
    w.Field("detected_vpp", static_cast<int64_t>(p.detected_vpp));
    w.Field("detected_microbatches", static_cast<int64_t>(p.detected_microbatches));
  }
  w.Field("recovered", p.recovered);
  w.Field("note", p.recover_note);
  if (p.recovered) {
    w.Field("pp", p.schedule.pp)
        .Field("vpp", p.schedule.vpp)
        .Field("microbatches", p.schedule.microbatches);
    w.Field("matches", p.matches);
    w.Key("ranks").BeginArray();
    for (size_t i = 0; i < p.schedule.ranks.size(); ++i) {
      w.BeginObject();
      w.Field("pp_rank", static_cast<int64_t>(i));
      w.Field("rank", p.pp_rank_of[i]);
      w.Key("actions").BeginArray();
      for (const auto& act : p.schedule.ranks[i]) w.String(schedule::ToString(act));
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace

std::string AnalysisText(const TraceAnalysis& a) {
  std::string out;
  AppendAnalysisHeading(a, &out);
  AppendTemporalBreakdown(a, &out);
  AppendPipelineView(a, &out);
  AppendForwardBackwardOrders(a, &out);
  AppendRecoveredSchedule(a, &out);
  AppendKernelTypes(a, &out);
  AppendStreamIdle(a, &out);
  AppendCollectivesPerRank(a, &out);
  AppendCrossRankCollectives(a, &out);
  return out;
}

void WriteAnalysisJson(JsonWriter& w, const TraceAnalysis& a) {
  const AnalysisOptions& o = a.options;
  w.BeginObject();
  w.Field("mode", o.hta_compat ? "hta-compat" : "native");
  w.Field("include_last_step", o.include_last_step);
  w.Field("consecutive_kernel_delay_us", o.consecutive_kernel_delay_us);
  w.Field("align_clocks", o.align_clocks);
  w.Field("comm_kernels", a.comm_pattern);
  w.Field("memory_kernels", a.memory_pattern);
  w.Field("time_unit", "us");
  w.Key("ranks").BeginArray();
  for (const RankResult& r : a.ranks) WriteRankAnalysisJson(w, r);
  w.EndArray();
  w.Key("kernel_types").BeginObject();
  for (int mask = 1; mask < 8; ++mask) w.Field(KernelTypeComboName(mask), a.kernel_types[mask]);
  w.EndObject();
  WriteCrossRankJson(w, a.cross);
  WritePipelineJson(w, a);
  w.Key("errors").BeginArray();
  for (const FileError& e : a.errors) {
    w.BeginObject().Field("file", e.path).Field("message", e.status.message()).EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace infralens::trace
