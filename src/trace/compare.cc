#include "trace/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "base/table.h"
#include "cluster/placement.h"
#include "model/model.h"
#include "plan/cpu_offload.h"
#include "plan/framework.h"
#include "trace/report.h"

namespace infralens::trace {

namespace {

using nlohmann::json;

std::optional<double> Num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// A field of a JSON object, or a default when absent or of another type (json::value would throw
// on another type: a prediction file is the user's, and any of its fields may be anything).
std::string Str(const json& o, const char* k, const std::string& dflt = {}) {
  auto it = o.find(k);
  return it != o.end() && it->is_string() ? it->get<std::string>() : dflt;
}
int64_t Int(const json& o, const char* k) {
  auto v = Num(o, k);
  return v && *v >= 0 && *v < 9e15 ? static_cast<int64_t>(*v) : 0;
}
// A count no greater than what the planner's data allows (behaviour.tp_overlap_*_sms up to
// plan::kMaxTpOverlapSms, tp_overlap_rs_splits up to plan::kMaxTpOverlapSplits); 0 when absent.
int IntAtMost(const json& o, const char* k, int most) {
  return static_cast<int>(std::min<int64_t>(Int(o, k), most));
}
bool Bool(const json& o, const char* k, bool dflt) {
  auto it = o.find(k);
  return it != o.end() && it->is_boolean() ? it->get<bool>() : dflt;
}

double UnitToUs(const std::string& unit) {
  if (unit == "s") return 1e6;
  if (unit == "us") return 1;
  if (unit == "ns") return 1e-3;
  return 1e3;  // "ms", the schedule engine's default
}

StatusOr<Prediction> ReadScheduleJson(const json& j, const std::string& label) {
  Prediction p;
  p.format = "schedule";
  p.name = Str(j, "schedule", "schedule");
  const double scale = UnitToUs(Str(j, "time_unit", "ms"));
  const double makespan = *Num(j, "makespan");
  p.step_time_us = makespan * scale;
  p.bubble_fraction = Num(j, "bubble_fraction");
  const json& ranks = j["ranks"];
  for (const json& r : ranks) {
    if (!r.is_object())
      return InvalidArgument(fmt::format("{}: \"ranks\" holds a non-object", label));
    auto idle = Num(r, "idle");
    p.rank_bubble_fraction.push_back(idle && makespan > 0 ? *idle / makespan : 0);
  }
  auto it = j.find("actions");
  if (it != j.end() && it->is_array()) {
    struct Timed {
      double start;
      size_t order;
      schedule::Action a;
    };
    std::vector<std::vector<Timed>> per_rank(p.rank_bubble_fraction.size());
    size_t n = 0;
    for (const json& a : *it) {
      if (!a.is_object())
        return InvalidArgument(fmt::format("{}: \"actions\" holds a non-object", label));
      auto rank = Num(a, "rank"), stage = Num(a, "stage"), mb = Num(a, "microbatch"),
           start = Num(a, "start");
      const std::string type = Str(a, "type");
      if (!rank || !stage || !mb || !start || *rank < 0 ||
          *rank >= static_cast<double>(per_rank.size())) {
        return InvalidArgument(
            fmt::format("{}: actions[{}] lacks rank, stage, type, microbatch or start", label, n));
      }
      schedule::Action act;
      if (type == "F")
        act = schedule::Action::F(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "B")
        act = schedule::Action::B(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "I")
        act = schedule::Action::I(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "W")
        act = schedule::Action::W(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "FB") {
        auto bs = Num(a, "b_stage"), bm = Num(a, "b_microbatch");
        if (!bs || !bm)
          return InvalidArgument(
              fmt::format("{}: actions[{}]: an FB pair needs b_stage, b_microbatch", label, n));
        act = schedule::Action::FB(static_cast<int>(*stage), static_cast<int>(*mb),
                                   static_cast<int>(*bs), static_cast<int>(*bm));
      } else {
        return InvalidArgument(
            fmt::format("{}: actions[{}]: unknown type '{}'", label, n, Excerpt(type)));
      }
      per_rank[static_cast<size_t>(*rank)].push_back({*start, n, act});
      ++n;
    }
    for (auto& list : per_rank) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Timed& x, const Timed& y) { return x.start < y.start; });
      std::vector<schedule::Action> order;
      for (const Timed& t : list) order.push_back(t.a);
      p.actions.push_back(std::move(order));
    }
  }
  return p;
}

// The planner's format (`infralens plan --json`, src/cli/plan_output.cc): step_time_s (or _ms,
// _us), bubble_fraction and exposed_comm_s (or _ms, _us): {"dp": 0.012, "tp": 0.004, "pp": 0.001}.
StatusOr<Prediction> ReadPlanJson(const json& j, const std::string& label) {
  Prediction p;
  p.format = "plan";
  p.name = Str(j, "name", "plan");
  for (auto [key, scale] :
       {std::pair{"step_time_s", 1e6}, {"step_time_ms", 1e3}, {"step_time_us", 1.0}}) {
    if (auto v = Num(j, key)) p.step_time_us = *v * scale;
  }
  p.bubble_fraction = Num(j, "bubble_fraction");
  for (auto [key, scale] :
       {std::pair{"exposed_comm_s", 1e6}, {"exposed_comm_ms", 1e3}, {"exposed_comm_us", 1.0}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_object())
      return InvalidArgument(fmt::format("{}: \"{}\" must be an object of axis: time", label, key));
    for (auto& [axis, v] : it->items()) {
      if (!v.is_number())
        return InvalidArgument(fmt::format("{}: {}.{} is not a number", label, key, Excerpt(axis)));
      p.exposed_comm_us[axis] = v.get<double>() * scale;
    }
  }
  // The terms, the layout and the communication items (src/request/plan_output.cc).
  if (auto it = j.find("breakdown_s"); it != j.end() && it->is_object()) {
    for (auto& [term, v] : it->items()) {
      if (v.is_number()) p.terms_us[term] = v.get<double>() * 1e6;
    }
  }
  if (auto it = j.find("parallel"); it != j.end() && it->is_object()) {
    for (const char* axis : {"tp", "pp", "vpp", "dp", "cp", "ep"}) {
      auto v = Num(*it, axis);
      if (!v) continue;
      if (*v < 1 || *v > 1 << 20 || *v != std::floor(*v))
        return InvalidArgument(
            fmt::format("{}: parallel.{} is {}: expected a whole number from 1", label, axis, *v));
      p.degrees[axis] = static_cast<int>(*v);
    }
    if (auto o = it->find("order"); o != it->end() && o->is_string())
      p.order = o->get<std::string>();
  }
  {
    Prediction::Rebuild& rb = p.rebuild;
    rb.recompute = Str(j, "recompute");
    rb.recompute_modules = Str(j, "recompute_modules");
    rb.schedule = Str(j, "schedule");
    rb.micro_batch = Int(j, "micro_batch");
    rb.mfu = Num(j, "mfu").value_or(0);
    if (auto it = j.find("parallel"); it != j.end() && it->is_object()) {
      rb.zero = static_cast<int>(std::min<int64_t>(Int(*it, "zero"), 3));
      rb.sequence_parallel = Bool(*it, "sequence_parallel", false);
      rb.first_stage_layers =
          static_cast<int>(std::min<int64_t>(Int(*it, "first_stage_layers"), 1 << 20));
      rb.last_stage_layers =
          static_cast<int>(std::min<int64_t>(Int(*it, "last_stage_layers"), 1 << 20));
      rb.embedding_in_split = Bool(*it, "embedding_in_split", false);
      rb.loss_in_split = Bool(*it, "loss_in_split", false);
      rb.stage_layout = Str(*it, "stage_layout");
    }
  }
  if (auto it = j.find("comm"); it != j.end() && it->is_array()) {
    for (const json& c : *it) {
      if (!c.is_object()) continue;
      Prediction::Comm pc;
      pc.name = Str(c, "communication");
      pc.group = Str(c, "group");
      pc.collective = Str(c, "collective");
      pc.link = Str(c, "link");
      pc.group_size = static_cast<int64_t>(Num(c, "group_size").value_or(0));
      pc.message_bytes = Num(c, "message_bytes").value_or(0);
      pc.count_per_step = Num(c, "count_per_step").value_or(0);
      pc.time_per_step_us = Num(c, "time_per_step_s").value_or(0) * 1e6;
      p.comm.push_back(std::move(pc));
    }
  }
  return p;
}

// The request a plan was made for (`plan --json` writes it beside "plan"): what rebuilds it.
void ReadPlanRequest(const json& r, Prediction::Rebuild* out) {
  Prediction::Rebuild& rb = *out;
  rb.model = Str(r, "model");
  rb.cluster = Str(r, "cluster");
  rb.gpu = Str(r, "gpu");
  rb.precision = Str(r, "precision");
  rb.nodes = Int(r, "nodes");
  rb.gpus = Int(r, "gpus");
  rb.global_batch = Int(r, "global_batch");
  rb.seq = Int(r, "seq");
  if (auto e = r.find("efficiency"); e != r.end() && e->is_object()) {
    rb.gemm = Num(*e, "gemm").value_or(0);
    rb.gemm_half_dim = Num(*e, "gemm_half_dim").value_or(0);
    rb.attention_eff = Num(*e, "attention").value_or(0);
    rb.attention_fa2 = Num(*e, "attention_fa2").value_or(0);
    rb.attention_half_seq = Num(*e, "attention_half_seq").value_or(0);
    rb.attention_fa2_half_seq = Num(*e, "attention_fa2_half_seq").value_or(0);
    rb.hbm = Num(*e, "hbm").value_or(0);
  }
  if (auto b = r.find("behaviour"); b != r.end() && b->is_object()) {
    plan::FrameworkBehaviour& fb = rb.behaviour;
    const std::string attention = Str(*b, "attention");
    fb.fused_attention = attention != "materialized";
    fb.flash_attention_2 = attention == "flash2";
    rb.causal = Bool(*b, "causal", true);
    fb.overlap_grad_reduce = Bool(*b, "dp_overlap", true);
    fb.tp_overlap = Bool(*b, "tp_overlap", false);
    fb.tp_overlap_bwd_reduce_scatter = Str(*b, "tp_overlap_backward") != "gather";
    fb.tp_overlap_rs_sms = IntAtMost(*b, "tp_overlap_rs_sms", plan::kMaxTpOverlapSms);
    fb.tp_overlap_bulk_sms = IntAtMost(*b, "tp_overlap_bulk_sms", plan::kMaxTpOverlapSms);
    fb.tp_overlap_rs_splits = IntAtMost(*b, "tp_overlap_rs_splits", plan::kMaxTpOverlapSplits);
    fb.tp_overlap_rs_reduce_after = Str(*b, "tp_overlap_rs_reduction") == "after";
    fb.sp_backward_regather = Str(*b, "sp_backward") == "regather";
    fb.sp_inputs_gathered = Str(*b, "sp_backward") == "saved";
    // The data file's word (no, yes, single_chunk); plans written by earlier versions hold
    // booleans (p2p_blocking, p2p_blocking_single_chunk).
    if (StatusOr<plan::P2pWait> w = plan::ParseP2pWait(Str(*b, "p2p_blocking")); w.ok()) {
      fb.p2p_wait = *w;
    } else if (Bool(*b, "p2p_blocking", false)) {
      fb.p2p_wait = plan::P2pWait::kBlocking;
    } else if (Bool(*b, "p2p_blocking_single_chunk", false)) {
      fb.p2p_wait = plan::P2pWait::kBlockingSingleChunk;
    }
    fb.fsdp_once_per_step_with_pp = Str(*b, "fsdp_with_pp") == "per_step";
    fb.fsdp_max_live_params = std::max(0.0, Num(*b, "fsdp_max_live_params").value_or(0));
    const std::string copies = Str(*b, "fsdp_copies");
    fb.fsdp_copy_out = copies == "gather" || copies == "gather_and_reduce";
    fb.fsdp_copy_in = copies == "gather_and_reduce";
    fb.ep_hierarchical_dispatch = Str(*b, "ep_dispatcher") == "hierarchical";
    fb.ep_overlap = Bool(*b, "ep_overlap", false);
    fb.fp8_transformer_engine = Bool(*b, "fp8_transformer_engine", true);
    fb.fp8_param_gather = Bool(*b, "fp8_param_gather", false);
    // Plans written before the field existed ran every layer's projections fused.
    fb.fused_projections = Bool(*b, "fused_projections", true);
    fb.master_weight_remainders = Str(*b, "master_weights") == "bf16_remainders";
    fb.cp_all_gather = Str(*b, "cp_exchange") == "all_gather";
    fb.cp_kv_repeated = Str(*b, "cp_kv_heads") == "query";
    fb.cpu_offload_layers = IntAtMost(*b, "cpu_offload_layers", plan::kMaxCpuOffloadLayers);
    // Plans written before the field existed recomputed the attention core alone; a value that
    // does not parse keeps that default.
    if (auto mods = model::ParseRecomputeModules(Str(*b, "recompute_modules")); mods.ok()) {
      fb.recompute_modules = *mods;
    }
    fb.eager_elementwise = Bool(*b, "eager_elementwise", false);
    rb.cross_entropy = Str(*b, "cross_entropy");
    fb.sp_rechunk_copies = Num(*b, "sp_sequence_dim").value_or(0) == 1;
    fb.dp_bucket_params = static_cast<int64_t>(Num(*b, "dp_bucket_params").value_or(0));
    rb.has_fp32_gradients = b->contains("fp32_gradients");
    fb.fp32_grads = Bool(*b, "fp32_gradients", false);
  }
}

// The planner's communication groups ("tp", "dp+cp", "edp", ...; src/plan/comm_plan.cc) to the
// axis whose time they are charged to (planner.cc: every "dp"/"edp" group is DP).
std::string AxisOfPlanGroup(const std::string& group) {
  if (group.rfind("dp", 0) == 0 || group.rfind("edp", 0) == 0) return "dp";
  for (const char* a : {"tp", "cp", "ep", "pp"}) {
    if (group.rfind(a, 0) == 0) return a;
  }
  return group;
}

// Forward or backward, as a trace without PP: annotations shows an action
// (trace/pipeline_detect.h): 'F', 'B', or '?' for the split and overlapped kinds it cannot see.
char FbLetter(schedule::ActionType t) {
  return t == schedule::ActionType::kForward    ? 'F'
         : t == schedule::ActionType::kBackward ? 'B'
                                                : '?';
}

// The planner's term that holds an axis' exposed communication.
std::string TermOfAxis(const std::string& axis) { return axis + "_comm"; }

std::string Value(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  // Values that round to zero print as 0, never as "-0.00".
  const double x = std::abs(*v) < (unit == "%" ? 5e-3 : 5e-4) ? 0.0 : *v;
  return unit == "%" ? fmt::format("{:.2f}", x) : fmt::format("{:.3f}", x);
}

}  // namespace

StatusOr<Prediction> ReadPrediction(std::string_view text, const std::string& label) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(fmt::format("{}: not valid JSON", label));
  if (!j.is_object()) return InvalidArgument(fmt::format("{}: expected a JSON object", label));
  if (Num(j, "makespan") && j.contains("ranks") && j["ranks"].is_array())
    return ReadScheduleJson(j, label);
  if (j.contains("step_time_s") || j.contains("step_time_ms") || j.contains("step_time_us"))
    return ReadPlanJson(j, label);
  // `infralens plan --json`: one evaluated layout under "plan", or a search's ranked "plans"
  // (the first, the planner's pick).
  const json* body = nullptr;
  if (j.contains("plan") && j["plan"].is_object()) {
    body = &j["plan"];
  } else if (j.contains("plans") && j["plans"].is_array() && !j["plans"].empty() &&
             j["plans"][0].is_object()) {
    body = &j["plans"][0];
  }
  if (body != nullptr) {
    ASSIGN_OR_RETURN(Prediction p, ReadPlanJson(*body, label));
    if (j.contains("request") && j["request"].is_object())
      ReadPlanRequest(j["request"], &p.rebuild);
    return p;
  }
  return InvalidArgument(
      fmt::format("{}: neither a schedule prediction (makespan, bubble_fraction, ranks: `infralens "
                  "schedule ‹json›`) nor a plan "
                  "(step_time_s, bubble_fraction, exposed_comm_s)",
                  label));
}

std::string PlanAxisOfGroup(const std::string& label, const std::vector<int64_t>& ranks,
                            const Prediction& plan) {
  using cluster::Axis;
  if (label == "pp") return "pp";  // send/recv kernels (analysis.cc labels them so)
  if (!ranks.empty()) {
    cluster::Degrees d;
    int64_t world = 1;
    for (Axis a : cluster::kAllAxes) {
      auto it = plan.degrees.find(std::string(cluster::AxisName(a)));
      d[a] = it == plan.degrees.end() ? 1 : it->second;
      world *= d[a];
    }
    auto placement = cluster::Placement::Make(
        d, plan.order.empty() ? cluster::kDefaultOrder : std::string_view(plan.order), world);
    if (placement.ok() && ranks.back() < world && ranks.front() >= 0) {
      std::vector<int64_t> members;
      // Single axes first, then the unions Megatron reduces gradients over.
      const std::vector<std::pair<std::vector<Axis>, std::string>> sets = {
          {{Axis::kTp}, "tp"},
          {{Axis::kCp}, "cp"},
          {{Axis::kEp}, "ep"},
          {{Axis::kDp}, "dp"},
          {{Axis::kPp}, "pp"},
          {{Axis::kEp, Axis::kDp}, "dp"},
          {{Axis::kCp, Axis::kDp}, "dp"},
          {{Axis::kCp, Axis::kEp, Axis::kDp}, "dp"}};
      for (const auto& [axes, name] : sets) {
        placement->GroupRanksOver(axes, ranks.front(), &members);
        if (members.size() > 1 && members == ranks) return name;
      }
    }
  }
  // By name: DeviceMesh dimension names (torchtitan's parallel_dims.py) and Megatron-Core's
  // group_desc strings (megatron/core/parallel_state.py, initialize_model_parallel).
  std::string l = ToLower(label);
  static const auto* const kNames = new std::vector<std::pair<std::string, std::string>>{
      {"tp", "tp"},
      {"cp", "cp"},
      {"ep", "ep"},
      {"pp", "pp"},
      {"dp", "dp"},
      {"dp_shard", "dp"},
      {"dp_replicate", "dp"},
      {"dp_shard_cp", "dp"},
      {"dp_cp", "dp"},
      {"tensor_model_parallel_group", "tp"},
      {"context_parallel_group", "cp"},
      {"expert_model_parallel_group", "ep"},
      {"pipeline_model_parallel_group", "pp"},
      {"data_parallel_group", "dp"},
      {"data_parallel_group_with_cp", "dp"},
      {"expert_data_parallel_group", "dp"},
      {"intra_partial_data_parallel_group_with_cp", "dp"},
  };
  for (const auto& [name, axis] : *kNames) {
    if (l == name) return axis;
  }
  return "";
}

namespace {

// The three largest differences between a plan's terms and the measured ones, each with its
// likely cause.
std::vector<TermDifference> LargestDifferences(const Prediction& p, const TraceAnalysis& a,
                                               const std::vector<CompareRow>& term_rows,
                                               const std::vector<std::string>& term_names) {
  std::vector<TermDifference> diffs;
  for (size_t i = 0; i < term_rows.size(); ++i) {
    const CompareRow& r = term_rows[i];
    if (!r.predicted || !r.measured) continue;
    diffs.push_back({term_names[i], *r.predicted, *r.measured, ""});
  }
  std::stable_sort(
      diffs.begin(), diffs.end(), [](const TermDifference& x, const TermDifference& y) {
        return std::abs(x.measured_ms - x.predicted_ms) > std::abs(y.measured_ms - y.predicted_ms);
      });
  if (diffs.size() > 3) diffs.resize(3);
  for (TermDifference& d : diffs) {
    const double delta = d.measured_ms - d.predicted_ms;
    const std::string more = delta >= 0 ? "slower" : "faster";
    if (d.term == "compute") {
      d.cause = fmt::format(
          "the kernels ran {} than the efficiency constants say: fit them to this trace with "
          "`infralens trace calibrate` (needs record_shapes=True)",
          more);
    } else if (d.term == "bubble") {
      d.cause =
          "idle time on the ranks: uneven stages, a different schedule or microbatch count, or "
          "host-side stalls";
    } else if (d.term == "optimizer") {
      d.cause = "the optimizer step";
    } else {
      // A communication term: its collectives' bus bandwidth, measured vs predicted, on the link
      // the plan puts them on (nccl-tests' busbw: algbw x the kind's factor).
      const std::string axis = d.term.substr(0, d.term.find('_'));
      std::string best;
      double best_time = -1;
      for (const Prediction::Comm& c : p.comm) {
        if (AxisOfPlanGroup(c.group) != axis || c.count_per_step <= 0 || c.time_per_step_us <= 0)
          continue;
        const double per_call_us = c.time_per_step_us / c.count_per_step;
        const double f = BusBandwidthFactor(c.collective, std::max<int64_t>(c.group_size, 1));
        const double predicted_busbw = f >= 0 ? c.message_bytes / (per_call_us * 1e3) * f : -1;
        // The measured collectives of this kind on groups of this axis, time-weighted over ranks.
        double bytes = 0, time_us = 0;
        int64_t n = 0;
        for (const RankResult& rr : a.ranks) {
          for (const RankResult::AxisCollective& ac : rr.axis_collectives) {
            if (ac.summary.kind != c.collective || ac.summary.sized == 0) continue;
            if (PlanAxisOfGroup(ac.axis, ac.ranks, p) != axis) continue;
            bytes += ac.summary.bytes;
            time_us += ac.summary.sized_time_us;
            n = std::max(n, ac.summary.group_size);
          }
        }
        if (time_us <= 0 || predicted_busbw <= 0 || c.time_per_step_us <= best_time) continue;
        const double measured_busbw = bytes / (time_us * 1e3) * BusBandwidthFactor(c.collective, n);
        best_time = c.time_per_step_us;
        best = fmt::format("{} measured {:.0f} GB/s busbw vs {:.0f} predicted on the {} links",
                           c.collective, measured_busbw, predicted_busbw, c.link);
      }
      if (d.measured_ms == 0 && d.predicted_ms > 0) {
        d.cause = fmt::format(
            "no {} communication was measured: the traces may not be of this layout", axis);
        continue;
      }
      d.cause = best.empty() ? fmt::format(
                                   "{} communication ran {} than predicted (the trace "
                                   "records no message sizes to compare bandwidth)",
                                   axis, more)
                             : best;
    }
  }
  return diffs;
}

// Per pipeline rank, the analysed ranks (indexes into a.ranks) its bubble row is over: the
// PP: annotations' mapping when the schedule was recovered from them; else the rank at stage k
// of each chain of send/recv peers (trace/pipeline_detect.h), a row the mean over the chains
// (data-parallel replicas run the same schedule, so their stages are alike); else, with no
// pipeline in the traces, the loaded ranks in rank order.
std::vector<std::vector<size_t>> MapComparedPipelineRanks(const TraceAnalysis& a,
                                                          const std::map<int64_t, size_t>& index_of,
                                                          Comparison::PipelineMapping* mapping) {
  const PipelineResult& pl = a.pipeline;
  std::vector<std::vector<size_t>> results_of_pp;
  mapping->chains_found = static_cast<int64_t>(pl.chains.size());
  if (pl.recovered) {
    mapping->source = "PP: annotations";
    for (int64_t global : pl.pp_rank_of) {
      if (auto it = index_of.find(global); it != index_of.end())
        results_of_pp.push_back({it->second});
    }
  } else {
    for (const std::vector<int64_t>& chain : pl.chains) {
      const bool loaded =
          std::all_of(chain.begin(), chain.end(), [&](int64_t r) { return index_of.count(r) > 0; });
      if (!loaded || chain.empty()) continue;
      if (!mapping->chains.empty() && chain.size() != mapping->chains[0].size()) continue;
      mapping->chains.push_back(chain);
    }
    if (!mapping->chains.empty()) {
      mapping->source = "send/recv peers";
      results_of_pp.resize(mapping->chains[0].size());
      for (const std::vector<int64_t>& chain : mapping->chains) {
        for (size_t k = 0; k < chain.size(); ++k) results_of_pp[k].push_back(index_of.at(chain[k]));
      }
    }
  }
  if (mapping->source.empty()) {
    for (size_t i = 0; i < a.ranks.size(); ++i) results_of_pp.push_back({i});
  }
  return results_of_pp;
}

// One bubble row per pipeline rank, predicted against the mean of the analysed ranks it maps to.
void AddPipelineRankBubbleRows(const Prediction& p, const TraceAnalysis& a,
                               const std::vector<std::vector<size_t>>& results_of_pp,
                               Comparison* c) {
  const size_t n = std::max(p.rank_bubble_fraction.size(), results_of_pp.size());
  for (size_t k = 0; k < n; ++k) {
    std::optional<double> pred, meas;
    if (k < p.rank_bubble_fraction.size()) pred = 100 * p.rank_bubble_fraction[k];
    std::string label = fmt::format("bubble, pipeline rank {}", k);
    if (k < results_of_pp.size()) {
      const std::vector<size_t>& of = results_of_pp[k];
      double sum = 0;
      std::vector<std::string> globals;
      for (size_t i : of) {
        sum += a.ranks[i].bubble_pct;
        globals.push_back(std::to_string(a.ranks[i].rank));
      }
      meas = sum / static_cast<double>(of.size());
      label += of.size() == 1 ? fmt::format(" (rank {})", globals[0])
                              : fmt::format(" (ranks {}: mean)", Join(globals, ", "));
    }
    c->rows.push_back({label, "%", pred, meas});
  }
  if (p.rank_bubble_fraction.size() != results_of_pp.size() && !p.rank_bubble_fraction.empty()) {
    c->notes.push_back(fmt::format("the prediction has {} pipeline ranks, the traces {}",
                                   p.rank_bubble_fraction.size(), results_of_pp.size()));
  }
}

// The note that says where the pipeline ranks of the rows came from.
void NotePipelineMapping(const Prediction& p, const PipelineResult& pl, Comparison* c) {
  const Comparison::PipelineMapping& mapping = c->mapping;
  if (mapping.source == "PP: annotations") {
    c->notes.push_back("pipeline ranks mapped from the traces' PP: annotations");
  } else if (mapping.source == "send/recv peers") {
    std::vector<std::string> listed;
    for (const auto& chain : mapping.chains) {
      std::vector<std::string> r;
      for (int64_t g : chain) r.push_back(std::to_string(g));
      listed.push_back(Join(r, " -> "));
    }
    std::string note = fmt::format(
        "pipeline ranks recovered from send/recv peers: pipeline rank k is the rank at stage k of "
        "{}",
        mapping.chains.size() == 1
            ? fmt::format("the chain {}", listed[0])
            : fmt::format("each of {} chains ({}); a bubble row is the mean over them, the action "
                          "order is checked on the first",
                          mapping.chains.size(), Join(listed, "; ")));
    const int64_t left_out = mapping.chains_found - static_cast<int64_t>(mapping.chains.size());
    if (left_out > 0) {
      note += fmt::format(
          "; {} more chain{} left out (a rank not loaded, or a length other than the first's)",
          left_out, left_out == 1 ? "" : "s");
    }
    c->notes.push_back(note);
  } else if (!p.rank_bubble_fraction.empty()) {
    c->notes.push_back(fmt::format(
        "{} ({}): the per-pipeline-rank rows are the loaded ranks in rank order",
        pl.detected ? "the pipeline's ranks could not be mapped" : "no pipeline in the traces",
        pl.detect_note.empty() ? std::string("no PP: annotations, no send/recv chain")
                               : pl.detect_note));
  }
}

// Exposed communication per axis, mean over ranks (the rows of a prediction without terms).
void AddExposedCommRows(const Prediction& p, const TraceAnalysis& a, Comparison* c) {
  const PipelineResult& pl = a.pipeline;
  std::map<std::string, double> measured_axis;
  const double per =
      static_cast<double>(a.ranks.size()) * static_cast<double>(std::max<int64_t>(1, pl.windows));
  for (const RankResult& r : a.ranks) {
    for (const auto& [axis, us] : r.exposed_comm_us) measured_axis[axis] += us / per;
  }
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> axes;
  for (const auto& [axis, us] : p.exposed_comm_us) axes[axis].first = us / 1000.0;
  for (const auto& [axis, us] : measured_axis) axes[axis].second = us / 1000.0;
  for (const auto& [axis, pm] : axes) {
    c->rows.push_back({fmt::format("exposed communication, {} (per step, mean of ranks)", axis),
                       "ms", pm.first, pm.second});
  }
}

// A plan's terms as the traces measured them, summed over ranks (per step each): compute is the
// union of computation kernels, an axis' communication what of its kernels no computation hid,
// the bubble the time with no GPU event at all (waiting inside send/recv is the pp term).
std::map<std::string, double> MeasuredPlanTermsUs(const Prediction& p, const TraceAnalysis& a) {
  const PipelineResult& pl = a.pipeline;
  std::map<std::string, double> measured;
  for (const RankResult& r : a.ranks) {
    const double steps = static_cast<double>(std::max<int64_t>(1, r.steps_analyzed));
    measured["compute"] += r.compute_us / steps;
    measured["bubble"] += r.pure_idle_us / std::max<int64_t>(1, pl.windows);
    for (const auto& [label, us] : r.exposed_comm_us) {
      std::vector<int64_t> group;
      for (const RankResult::AxisCollective& ac : r.axis_collectives) {
        if (ac.axis == label && !ac.ranks.empty()) group = ac.ranks;
      }
      std::string axis = PlanAxisOfGroup(label, group, p);
      measured[axis.empty() ? "unplaced_comm" : TermOfAxis(axis)] += us / steps;
    }
  }
  return measured;
}

// A plan's terms, one by one: what each rank spent per step, mean over ranks, with the largest
// differences and their causes.
void AddPlanTermRows(const Prediction& p, const TraceAnalysis& a, Comparison* c) {
  const PipelineResult& pl = a.pipeline;
  std::map<std::string, double> measured = MeasuredPlanTermsUs(p, a);
  const double ranks = static_cast<double>(a.ranks.size());
  // The planner charges DP and ZeRO-3/FSDP separately; the trace sees one DP group.
  std::map<std::string, double> predicted = p.terms_us;
  predicted["dp_comm"] += predicted["fsdp_comm"];
  predicted.erase("fsdp_comm");
  // The compute slowed beside overlapped collectives (plan/sm_contention.h) is computation
  // kernels running longer: the trace counts it as compute.
  if (auto it = predicted.find("contention"); it != predicted.end()) {
    predicted["compute"] += it->second;
    predicted.erase(it);
  }
  // The compute stream waiting for activation offloading's copies (plan/cpu_offload.h) runs no
  // kernel: the trace counts it as idle, with the bubble.
  if (auto it = predicted.find("offload"); it != predicted.end()) {
    predicted["bubble"] += it->second;
    predicted.erase(it);
  }
  std::vector<CompareRow> term_rows;
  std::vector<std::string> term_names;
  for (const char* term :
       {"compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble", "dp_comm", "optimizer"}) {
    std::optional<double> pr, me;
    if (auto it = predicted.find(term); it != predicted.end()) pr = it->second / 1000.0;
    if (std::string(term) != "optimizer" && ranks > 0) me = measured[term] / ranks / 1000.0;
    std::string label = std::string(term) == "dp_comm" ? "term: dp_comm (with FSDP)"
                                                       : fmt::format("term: {}", term);
    // Idle, not bubble, when the traces hold no pipeline (PipelineResult::GapTerm).
    if (std::string(term) == "bubble" && !pl.detected) label = "term: bubble (idle)";
    term_rows.push_back({label, "ms", pr, me});
    term_names.push_back(term);
  }
  if (measured.count("unplaced_comm") && ranks > 0) {
    term_rows.push_back({"term: communication on no axis of the plan", "ms", 0.0,
                         measured["unplaced_comm"] / ranks / 1000.0});
    term_names.push_back("unplaced_comm");
    c->notes.push_back(
        "some communication ran on groups that match no axis of the plan's layout (by ranks or "
        "by name): check that the plan's degrees and rank order are the job's");
  }
  c->largest = LargestDifferences(p, a, term_rows, term_names);
  c->rows.insert(c->rows.end(), term_rows.begin(), term_rows.end());
  c->notes.push_back(
      "the optimizer step is not measured: its kernels carry no mark that tells them apart");
  int64_t gpus = 1;
  for (const auto& [axis, n] : p.degrees) {
    if (axis != "vpp") gpus *= n;
  }
  if (!p.degrees.empty() && gpus != static_cast<int64_t>(a.ranks.size())) {
    c->notes.push_back(fmt::format(
        "the plan's layout has {} GPUs and {} ranks' traces were read: the measured terms are "
        "the mean over those ranks",
        gpus, a.ranks.size()));
  }
}

// Pipeline rank k's predicted action order against the one the traces show (`got`).
OrderCheck CheckPipelineRankOrder(const Prediction& p, size_t k, int64_t rank,
                                  const std::vector<std::string>& got) {
  OrderCheck oc;
  oc.pp_rank = static_cast<int>(k);
  oc.rank = rank;
  std::vector<std::string> want;
  if (k < p.actions.size()) {
    for (const schedule::Action& act : p.actions[k]) want.push_back(schedule::ToString(act));
  }
  oc.same = want == got;
  if (!oc.same) {
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    oc.first_difference = static_cast<int64_t>(i);
    oc.predicted_action = i < want.size() ? want[i] : "";
    oc.measured_action = i < got.size() ? got[i] : "";
  }
  return oc;
}

// The order recovered from PP: annotations, rank by rank.
void CompareAnnotatedOrder(const Prediction& p, const PipelineResult& pl, Comparison* c) {
  for (size_t k = 0; k < std::max(p.actions.size(), pl.schedule.ranks.size()); ++k) {
    std::vector<std::string> got;
    if (k < pl.schedule.ranks.size()) {
      for (const schedule::Action& act : pl.schedule.ranks[k])
        got.push_back(schedule::ToString(act));
    }
    c->order.push_back(
        CheckPipelineRankOrder(p, k, k < pl.pp_rank_of.size() ? pl.pp_rank_of[k] : -1, got));
  }
}

// The order along the first chain of send/recv peers. The detection saw forwards and backwards in
// order; their stage and microbatch labels are those of the generated schedule with that order
// (pipeline_detect.cc), in the same vocabulary as the prediction's.
void ComparePeerOrder(const Prediction& p, const TraceAnalysis& a,
                      const std::map<int64_t, size_t>& index_of, Comparison* c) {
  static const auto* const kEmpty = new std::vector<std::string>();
  const PipelineResult& pl = a.pipeline;
  c->mapping.schedule = pl.schedule_name;
  const std::vector<int64_t>& chain = c->mapping.chains[0];
  for (size_t k = 0; k < std::max(p.actions.size(), chain.size()); ++k) {
    const std::vector<std::string>& got =
        k < chain.size() ? a.ranks[index_of.at(chain[k])].fb_actions : *kEmpty;
    c->order.push_back(CheckPipelineRankOrder(p, k, k < chain.size() ? chain[k] : -1, got));
    if (c->order.back().same || k >= p.actions.size()) continue;
    // What the trace shows is only forward or backward; when those agree, the difference is
    // in labels the detection took from the matched schedule, not in what ran.
    std::string want_fb, got_fb;
    for (const schedule::Action& act : p.actions[k]) want_fb += FbLetter(act.type);
    for (const std::string& text : got) {
      auto act = schedule::ParseAction(text);
      got_fb += act.ok() ? FbLetter(act->type) : '?';
    }
    if (want_fb == got_fb) {
      c->notes.push_back(fmt::format(
          "pipeline rank {}: the same forward/backward order as predicted; the stage and "
          "microbatch labels differ, and the trace's are those of the matched schedule \"{}\", "
          "not observed",
          k, pl.schedule_name));
    }
  }
}

// Why the traces' pipeline gave no order to compare with.
std::string OrderNotComparedNote(const PipelineResult& pl) {
  if (pl.source == "PP: annotations") {
    return "action order not compared: " + (pl.recover_note.empty()
                                                ? std::string("the schedule was not recovered")
                                                : pl.recover_note);
  }
  if (!pl.detected) {
    return "action order not compared: the traces hold no pipeline: " +
           (pl.detect_note.empty() ? std::string("no PP: annotations") : pl.detect_note);
  }
  return "action order not compared: no schedule recovered from send/recv peers: " +
         (pl.schedule_note.empty() ? std::string("unknown") : pl.schedule_note);
}

// Action order, in the schedule engine's vocabulary (schedule::ToString, PyTorch's "1F3").
void CompareActionOrder(const Prediction& p, const TraceAnalysis& a,
                        const std::map<int64_t, size_t>& index_of, Comparison* c) {
  const PipelineResult& pl = a.pipeline;
  const Comparison::PipelineMapping& mapping = c->mapping;
  const bool by_peers = mapping.source == "send/recv peers" && pl.source == "send/recv peers" &&
                        pl.schedule_name != "unknown" && !pl.chains.empty() &&
                        mapping.chains[0] == pl.chains[0];
  // A trace without PP: annotations shows each rank's work as forwards and backwards only
  // (pipeline_detect.h): a prediction that splits backwards into I and W, or overlaps an F with
  // a B (zero-bubble schedules, DualPipeV), has no order it could be checked against.
  const bool split_or_fused = std::any_of(p.actions.begin(), p.actions.end(), [](const auto& r) {
    return std::any_of(r.begin(), r.end(),
                       [](const schedule::Action& act) { return FbLetter(act.type) == '?'; });
  });
  if (pl.recovered) {
    CompareAnnotatedOrder(p, pl, c);
  } else if (by_peers && split_or_fused) {
    c->notes.push_back(fmt::format(
        "action order not compared: the prediction splits backwards into input and weight "
        "gradients (I, W) or overlaps forwards with backwards, which a trace without PP: "
        "annotations shows as forward and backward work only (its order reads as \"{}\")",
        pl.schedule_name));
  } else if (by_peers) {
    ComparePeerOrder(p, a, index_of, c);
  } else {
    c->notes.push_back(OrderNotComparedNote(pl));
  }
}

}  // namespace

Comparison Compare(const Prediction& p, const TraceAnalysis& a) {
  Comparison c;
  c.prediction = p;
  const PipelineResult& pl = a.pipeline;
  std::optional<double> step_ms;
  if (pl.windows > 0) step_ms = pl.step_time_us / 1000.0;
  c.rows.push_back({"step time", "ms",
                    p.step_time_us ? std::optional<double>(*p.step_time_us / 1000.0) : std::nullopt,
                    step_ms});
  c.rows.push_back(
      {"bubble", "%",
       p.bubble_fraction ? std::optional<double>(100 * *p.bubble_fraction) : std::nullopt,
       std::optional<double>(100 * pl.bubble_fraction)});
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < a.ranks.size(); ++i) index_of[a.ranks[i].rank] = i;
  AddPipelineRankBubbleRows(p, a, MapComparedPipelineRanks(a, index_of, &c.mapping), &c);
  NotePipelineMapping(p, pl, &c);
  if (p.terms_us.empty()) AddExposedCommRows(p, a, &c);
  if (p.format == "plan" && !p.terms_us.empty()) AddPlanTermRows(p, a, &c);
  if (!p.actions.empty()) CompareActionOrder(p, a, index_of, &c);
  if (p.format == "schedule") {
    c.notes.push_back(
        "the schedule's times are in its cost units: pass measured per-action costs (--f, --b, "
        "...) in "
        "ms to compare step time");
  }
  return c;
}

std::string ComparisonText(const Comparison& c) {
  std::string out =
      fmt::format("predicted ({} \"{}\") vs measured\n", c.prediction.format, c.prediction.name);
  TextTable t({"metric", "predicted", "measured", "measured - predicted", "unit"});
  t.SetAlign(4, TextTable::Align::kLeft);
  for (const CompareRow& r : c.rows) {
    std::string diff = r.predicted && r.measured ? Value(*r.measured - *r.predicted, r.unit) : "-";
    t.AddRow({r.metric, Value(r.predicted, r.unit), Value(r.measured, r.unit), diff, r.unit});
  }
  out += t.Render();
  if (!c.order.empty()) {
    out += c.mapping.source == "send/recv peers"
               ? fmt::format(
                     "\naction order, predicted vs recovered from send/recv peers (labels of the "
                     "matched schedule \"{}\")\n",
                     c.mapping.schedule)
               : "\naction order, predicted vs recovered from PP: annotations\n";
    for (const OrderCheck& o : c.order) {
      if (o.same) {
        out += fmt::format("  pipeline rank {} (rank {}): same\n", o.pp_rank, o.rank);
      } else {
        out += fmt::format(
            "  pipeline rank {} (rank {}): differs at action #{}: predicted {}, ran {}\n",
            o.pp_rank, o.rank, o.first_difference,
            o.predicted_action.empty() ? "(end)" : o.predicted_action,
            o.measured_action.empty() ? "(end)" : o.measured_action);
      }
    }
  }
  if (!c.largest.empty()) {
    out += "\nlargest differences\n";
    for (const TermDifference& d : c.largest) {
      out += fmt::format("  {}: measured {:.3f} ms vs {:.3f} predicted ({:+.3f}): {}\n", d.term,
                         d.measured_ms, d.predicted_ms, d.measured_ms - d.predicted_ms, d.cause);
    }
  }
  const Comparison::Recalibration& rc = c.recalibration;
  if (rc.done) {
    out += fmt::format(
        "\nrecalibrated with this trace, the prediction for this layout is {:.3f} ms per step "
        "(was {:.3f}), MFU {:.1f}% (was {:.1f}%)\n",
        rc.new_step_time_ms, rc.step_time_ms, 100 * rc.new_mfu, 100 * rc.mfu);
  } else if (!rc.why_not.empty()) {
    out += "\nnot recalibrated: " + rc.why_not + "\n";
  }
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  return out;
}

void WriteComparisonJson(JsonWriter& w, const Comparison& c) {
  w.BeginObject();
  w.Key("prediction")
      .BeginObject()
      .Field("format", c.prediction.format)
      .Field("name", c.prediction.name)
      .EndObject();
  w.Key("rows").BeginArray();
  for (const CompareRow& r : c.rows) {
    w.BeginObject();
    w.Field("metric", r.metric);
    w.Field("unit", r.unit);
    w.Key("predicted");
    r.predicted ? w.Number(*r.predicted) : w.Null();
    w.Key("measured");
    r.measured ? w.Number(*r.measured) : w.Null();
    w.EndObject();
  }
  w.EndArray();
  w.Key("order").BeginArray();
  for (const OrderCheck& o : c.order) {
    w.BeginObject();
    w.Field("pp_rank", o.pp_rank).Field("rank", o.rank).Field("same", o.same);
    if (!o.same) {
      w.Field("first_difference", o.first_difference);
      w.Field("predicted", o.predicted_action).Field("measured", o.measured_action);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("pipeline_mapping").BeginObject();
  w.Key("source");
  c.mapping.source.empty() ? w.Null() : w.String(c.mapping.source);
  w.Key("chains").BeginArray();
  for (const auto& chain : c.mapping.chains) {
    w.BeginArray();
    for (int64_t r : chain) w.Int(r);
    w.EndArray();
  }
  w.EndArray();
  w.Field("chains_found", c.mapping.chains_found);
  if (!c.mapping.schedule.empty()) w.Field("schedule", c.mapping.schedule);
  w.EndObject();
  w.Key("largest_differences").BeginArray();
  for (const TermDifference& d : c.largest) {
    w.BeginObject();
    w.Field("term", d.term)
        .Field("predicted_ms", d.predicted_ms)
        .Field("measured_ms", d.measured_ms);
    w.Field("cause", d.cause);
    w.EndObject();
  }
  w.EndArray();
  w.Key("recalibrated").BeginObject();
  w.Field("done", c.recalibration.done);
  if (c.recalibration.done) {
    w.Field("step_time_ms", c.recalibration.step_time_ms)
        .Field("new_step_time_ms", c.recalibration.new_step_time_ms);
    w.Field("mfu", c.recalibration.mfu).Field("new_mfu", c.recalibration.new_mfu);
  } else if (!c.recalibration.why_not.empty()) {
    w.Field("why_not", c.recalibration.why_not);
  }
  w.EndObject();
  w.Field("notes", c.notes);
  w.EndObject();
}

}  // namespace infralens::trace
