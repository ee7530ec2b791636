#include "request/plan_output.h"

#include <fmt/format.h>

#include "base/strings.h"
#include "base/table.h"
#include "cluster/cluster.h"
#include "plan/validate.h"

namespace infralens::request {

namespace {

std::string GiB1(double bytes) { return fmt::format("{:.1f}", bytes / plan::kGiB); }
std::string Sec(double s) { return fmt::format("{:.3f}", s); }
std::string Pct(double f) { return fmt::format("{:.1f}%", 100 * f); }

// What a plan's step time is worth: the spread of every built-in published run, then that of the
// runs closest to this job (its framework on its GPU, plan::SpreadFor), one line each.
std::string SpreadLines(const plan::PlanRequest& req, double mfu) {
  std::string out;
  if (const std::string u = plan::SpreadText(plan::BuiltinSpread()); !u.empty()) out += u + "\n";
  if (const plan::GroupSpread* g =
          plan::SpreadFor(plan::BuiltinGroupSpreads(), req.framework, req.gpu.name)) {
    out += "  of which " + plan::GroupSpreadText(*g) + "\n";
  }
  // A plan (or a search's winner) above what any published run on this GPU reached: said, with
  // the best run, so that the number is read as the model's and not as a promise.
  const std::string above =
      plan::AbovePublishedText(plan::BuiltinPublishedMfuFor(req.gpu.name, req.precision), mfu);
  if (!above.empty()) out += above + "\n";
  return out;
}

std::string RequestLine(const plan::PlanRequest& req) {
  const int64_t seq = req.seq_len > 0 ? req.seq_len : req.model.seq_len;
  return fmt::format("{} on {} x {} ({}, {} node{}); global batch {} x {} tokens; {}{}\n",
                     req.model.name, req.gpus(), req.gpu.name, req.cluster.name,
                     req.cluster.num_nodes, req.cluster.num_nodes == 1 ? "" : "s", req.global_batch,
                     seq, plan::PrecisionName(req.precision),
                     req.fp32_gradients ? ", FP32 gradients" : "");
}

void Breakdown(const plan::PlanResult& r, TextTable& t) {
  const plan::StepTime& s = r.time;
  const std::pair<const char*, double> parts[] = {
      {"compute (matmuls, attention, memory-bound ops, recompute)", s.compute_s},
      {"TP / SP collectives (critical path)", s.tp_comm_s},
      {"CP ring exchange not hidden", s.cp_comm_s},
      {"EP all-to-all", s.ep_comm_s},
      {"pipeline send/recv on the critical path", s.pp_comm_s},
      {"pipeline bubble (simulated, busiest rank)", s.bubble_s},
      {"DP communication not hidden", s.dp_comm_s},
      {"FSDP gathers not hidden", s.fsdp_comm_s},
      {"compute slowed by the SMs overlapped collectives hold", s.contention_s},
      {"optimizer step", s.optimizer_s}};
  for (const auto& [name, v] : parts) {
    t.AddRow({name, Sec(v), Pct(v / s.step_s)});
  }
  // Only where activations are offloaded (PlanRequest::cpu_offload_layers).
  if (r.memory.worst().offloaded_bytes > 0) {
    t.AddRow({"compute waiting for activation offloading's copies", Sec(s.offload_s),
              Pct(s.offload_s / s.step_s)});
  }
  t.AddRow({"step", Sec(s.step_s), "100.0%"});
}

}  // namespace

std::string PlanResultText(const plan::PlanRequest& req, const plan::PlanResult& r, bool markdown) {
  std::string out = RequestLine(req);
  out += fmt::format("layout: {} (order {})\n", r.layout.ToString(), r.layout.order);
  // Selective recompute of more or other than the attention core (plan::RecomputeModulesOf).
  if (const model::RecomputeModules mods = plan::RecomputeModulesOf(req, r.layout);
      r.layout.recompute == model::Recompute::kSelective && mods != model::RecomputeModules{}) {
    out += fmt::format("selective recompute of: {}\n", model::RecomputeModulesName(mods));
  }
  if (!req.framework_recipe_settings.empty()) {
    // The framework's recipe for this model and GPU (plan/framework_recipe.h), where no flag
    // overrode it: the reader sees why, say, DeepEP was charged.
    out += fmt::format("{}'s recipe for {} on {} ({}): {} (data/frameworks/recipes.csv)\n",
                       req.framework, req.model.name, req.gpu.name,
                       plan::PrecisionName(req.precision), req.framework_recipe_settings);
  }
  if (auto f = plan::ParseFramework(req.framework); f.ok()) {
    // An explicit layout the framework cannot run is still predicted, and says so.
    const plan::ParallelConfig& p = r.layout.parallel;
    const std::string cannot = plan::FrameworkCannotRun(*f, r.layout.schedule, p.pp, p.zero_stage,
                                                        int64_t{p.dp} * p.cp > 1);
    if (!cannot.empty()) {
      out += fmt::format("framework: {}; predicted as given (data/frameworks/{}.csv)\n", cannot,
                         req.framework);
    }
  }
  out += "\n";
  out += fmt::format(
      "step {:.3f} s; {:.0f} tokens/s; {:.1f} model TFLOP/s per GPU; MFU {:.1f}%, HFU {:.1f}%; "
      "{} microbatches; pipeline idle {:.1f}% of P x makespan (all ranks)\n",
      r.time.step_s, r.tokens_per_s, r.model_tflops_per_gpu, 100 * r.mfu, 100 * r.hfu,
      r.memory.microbatches, 100 * r.bubble_fraction);
  out += SpreadLines(req, r.mfu);
  out += fmt::format("memory: worst pipeline rank {} holds {} GiB of {} GiB usable: {}\n\n",
                     r.memory.worst_rank, GiB1(r.memory.worst().total_bytes),
                     GiB1(r.memory.usable_bytes), r.memory.fits ? "fits" : "DOES NOT FIT");
  TextTable t({"where the step goes", "seconds", "share"});
  Breakdown(r, t);
  out += markdown ? t.RenderMarkdown() : t.Render();
  TextTable mem({"pipeline rank", "weights GiB", "grads GiB", "optimizer GiB", "activations GiB",
                 "total GiB"});
  for (const auto& rm : r.memory.ranks) {
    mem.AddRow({std::to_string(rm.rank), GiB1(rm.weights_bytes), GiB1(rm.gradients_bytes),
                GiB1(rm.optimizer_bytes), GiB1(rm.activations_bytes), GiB1(rm.total_bytes)});
  }
  out += '\n';
  out += markdown ? mem.RenderMarkdown() : mem.Render();
  TextTable comm({"communication", "group", "link", "calls/step", "per step s", "overlap"});
  comm.SetAlign(1, TextTable::Align::kLeft);
  comm.SetAlign(2, TextTable::Align::kLeft);
  comm.SetAlign(5, TextTable::Align::kLeft);
  for (const auto& it : r.comm.items) {
    comm.AddRow({it.name, fmt::format("{} ({})", it.group, it.group_size),
                 std::string(cluster::LinkClassName(it.link)), std::to_string(it.count),
                 Sec(it.time_per_step_s), plan::OverlapName(it.overlap)});
  }
  out += '\n';
  out += markdown ? comm.RenderMarkdown() : comm.Render();
  return out;
}

void WriteParallelFields(JsonWriter& w, const plan::ParallelConfig& p, int vpp) {
  w.Field("tp", p.tp).Field("pp", p.pp).Field("vpp", vpp).Field("dp", p.dp).Field("cp", p.cp);
  w.Field("ep", p.ep).Field("zero", p.zero_stage).Field("sequence_parallel", p.sequence_parallel);
}

void WritePlanJson(JsonWriter& w, const plan::PlanResult& r) {
  const plan::ParallelConfig& p = r.layout.parallel;
  w.BeginObject();
  w.Field("layout", r.layout.ToString());
  w.Key("parallel").BeginObject();
  WriteParallelFields(w, p, p.vpp);
  w.Field("order", r.layout.order);
  // Uneven stages (plan::StageLayerCounts): 0 / false / "" when the split is even.
  w.Field("first_stage_layers", p.first_stage_layers)
      .Field("last_stage_layers", p.last_stage_layers)
      .Field("embedding_in_split", p.embedding_in_split)
      .Field("loss_in_split", p.loss_in_split)
      .Field("stage_layout", p.layout);
  w.EndObject();
  w.Field("recompute", model::RecomputeName(r.layout.recompute));
  // Under selective recompute, the modules this layout recomputes (a search's heavier lists
  // differ from the request's behaviour.recompute_modules); "" otherwise.
  w.Field("recompute_modules", r.layout.recompute_modules
                                   ? model::RecomputeModulesName(*r.layout.recompute_modules)
                                   : std::string());
  w.Field("micro_batch", r.layout.micro_batch);
  w.Field("schedule", schedule::Info(r.layout.schedule).name);
  w.Field("microbatches", r.memory.microbatches);
  w.Field("step_time_s", r.time.step_s);
  w.Key("breakdown_s").BeginObject();
  w.Field("compute", r.time.compute_s)
      .Field("tp_comm", r.time.tp_comm_s)
      .Field("cp_comm", r.time.cp_comm_s);
  w.Field("ep_comm", r.time.ep_comm_s)
      .Field("pp_comm", r.time.pp_comm_s)
      .Field("bubble", r.time.bubble_s);
  w.Field("dp_comm", r.time.dp_comm_s)
      .Field("fsdp_comm", r.time.fsdp_comm_s)
      .Field("contention", r.time.contention_s)
      .Field("optimizer", r.time.optimizer_s)
      .Field("offload", r.time.offload_s);
  w.EndObject();
  // What no compute hides, per axis: the trace comparison reads this (infralens trace compare).
  w.Key("exposed_comm_s").BeginObject();
  w.Field("tp", r.time.tp_comm_s).Field("cp", r.time.cp_comm_s).Field("ep", r.time.ep_comm_s);
  w.Field("pp", r.time.pp_comm_s).Field("dp", r.time.dp_comm_s + r.time.fsdp_comm_s);
  w.EndObject();
  w.Field("pipeline_makespan_s", r.pipeline_makespan_s);
  w.Field("bubble_fraction", r.bubble_fraction);
  w.Field("tokens_per_s", r.tokens_per_s);
  w.Field("model_flops_per_step", r.model_flops_per_step);
  w.Field("hardware_flops_per_step", r.hardware_flops_per_step);
  w.Field("model_tflops_per_gpu", r.model_tflops_per_gpu);
  w.Field("mfu", r.mfu).Field("hfu", r.hfu);
  w.Key("memory").BeginObject();
  w.Field("fits", r.memory.fits).Field("worst_rank", r.memory.worst_rank);
  w.Field("total_bytes", r.memory.worst().total_bytes).Field("usable_bytes", r.memory.usable_bytes);
  // Activations in host memory per microbatch (activation offloading), not among the GPU's bytes.
  w.Field("offloaded_bytes", r.memory.worst().offloaded_bytes);
  w.Key("ranks").BeginArray();
  for (const auto& rm : r.memory.ranks) {
    w.BeginObject();
    w.Field("rank", rm.rank)
        .Field("weights_bytes", rm.weights_bytes)
        .Field("gradients_bytes", rm.gradients_bytes);
    w.Field("optimizer_bytes", rm.optimizer_bytes).Field("activations_bytes", rm.activations_bytes);
    w.Field("total_bytes", rm.total_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.Key("comm").BeginArray();
  for (const auto& it : r.comm.items) {
    w.BeginObject();
    w.Field("communication", it.name).Field("group", it.group).Field("group_size", it.group_size);
    w.Field("collective", collective::CollectiveName(it.collective))
        .Field("link", cluster::LinkClassName(it.link));
    w.Field("message_bytes", it.message_bytes).Field("count_per_step", it.count);
    w.Field("time_per_step_s", it.time_per_step_s).Field("overlap", plan::OverlapName(it.overlap));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

namespace {
void WriteRequestJson(JsonWriter& w, const plan::PlanRequest& req) {
  w.Key("request").BeginObject();
  w.Field("model", req.model.name).Field("gpu", req.gpu.name).Field("cluster", req.cluster.name);
  w.Field("gpus", req.gpus())
      .Field("nodes", req.cluster.num_nodes)
      .Field("global_batch", req.global_batch);
  w.Field("seq", req.seq_len > 0 ? req.seq_len : req.model.seq_len);
  w.Field("precision", plan::PrecisionName(req.precision));
  // The efficiency constants the step time used (data/hw/efficiency.csv, or --efficiency over it).
  const plan::EfficiencyTable& table =
      req.efficiency ? *req.efficiency : plan::EfficiencyTable::Builtin();
  const plan::DeviceEfficiency e = table.For(req.gpu, req.precision);
  w.Key("efficiency").BeginObject();
  w.Field("gemm", e.gemm).Field("gemm_half_dim", e.gemm_half_dim);
  w.Field("attention", e.attention).Field("attention_fa2", e.attention_fa2);
  w.Field("attention_half_seq", e.attention_half_seq)
      .Field("attention_fa2_half_seq", e.attention_fa2_half_seq);
  w.Field("attention_half_head_dim", e.attention_half_head_dim)
      .Field("attention_fa2_half_head_dim", e.attention_fa2_half_head_dim);
  w.Field("hbm", e.hbm).Field("gemm_from", e.origin);
  // The links' efficiencies the communication used: --efficiency's scale_up_link and
  // scale_out_link rows where it has them, else the cluster's (plan::ApplyLinkEfficiency).
  cluster::Cluster linked = req.cluster;
  plan::ApplyLinkEfficiency(table, req.gpu, &linked);
  w.Field("scale_up_link", linked.node.scale_up_efficiency)
      .Field("scale_out_link", linked.node.nic_efficiency);
  auto from = [&](const std::string& origin) {
    return origin.empty() ? "cluster " + req.cluster.name : origin;
  };
  w.Field("scale_up_link_from", from(e.scale_up_link_origin))
      .Field("scale_out_link_from", from(e.scale_out_link_origin));
  w.EndObject();
  // What the framework does (--framework and its overrides; docs/planner.md).
  w.Key("behaviour").BeginObject();
  w.Field("attention", !req.fused_attention    ? "materialized"
                       : req.flash_attention_2 ? "flash2"
                                               : "cudnn");
  w.Field("causal", req.model.causal)
      .Field("dp_overlap", req.overlap_grad_reduce)
      .Field("tp_overlap", req.tp_overlap)
      .Field("tp_overlap_backward", req.tp_overlap_bwd_reduce_scatter ? "all" : "gather")
      .Field("tp_overlap_rs_sms", req.tp_overlap_rs_sms)
      .Field("tp_overlap_bulk_sms", req.tp_overlap_bulk_sms)
      .Field("tp_overlap_rs_splits", req.tp_overlap_rs_splits)
      .Field("tp_overlap_rs_reduction", req.tp_overlap_rs_reduce_after ? "after" : "in_kernel")
      .Field("sp_backward", req.sp_backward_regather ? "regather"
                            : req.sp_inputs_gathered ? "saved"
                                                     : "in_line")
      .Field("p2p_blocking", plan::P2pWaitName(req.p2p_wait))
      .Field("fsdp_with_pp", req.fsdp_once_per_step_with_pp ? "per_step" : "per_microbatch")
      .Field("fsdp_max_live_params", req.fsdp_max_live_params)
      .Field("fsdp_copies", !req.fsdp_copy_out ? "none"
                            : req.fsdp_copy_in ? "gather_and_reduce"
                                               : "gather")
      .Field("fp32_gradients", req.fp32_gradients)
      .Field("eager_elementwise", req.eager_elementwise)
      .Field("cross_entropy", plan::CrossEntropyKernelsName(req.cross_entropy))
      .Field("sp_sequence_dim", req.sp_rechunk_copies ? 1 : 0)
      .Field("dp_bucket_params", req.dp_bucket_params)
      .Field("ep_dispatcher", req.ep_hierarchical_dispatch ? "hierarchical" : "alltoall")
      .Field("ep_overlap", req.ep_overlap)
      .Field("fp8_transformer_engine", req.fp8_transformer_engine)
      .Field("fp8_param_gather", req.fp8_param_gather)
      .Field("fused_projections", req.fused_projections)
      .Field("master_weights", req.master_weight_remainders ? "bf16_remainders" : "fp32")
      .Field("cp_exchange", req.cp_all_gather ? "all_gather" : "ring")
      .Field("cp_kv_heads", req.cp_kv_repeated ? "query" : "kv")
      .Field("cpu_offload_layers", req.cpu_offload_layers)
      .Field("recompute_modules", model::RecomputeModulesName(req.recompute_modules))
      .Field("framework_recipe", req.framework_recipe);
  w.EndObject();
  w.EndObject();
  // What a predicted step time is worth: the spread of the built-in published runs.
  const plan::ErrorSpread& u = plan::BuiltinSpread();
  w.Key("uncertainty").BeginObject();
  w.Field("published_runs", u.rows).Field("median_abs_error", u.median_abs);
  w.Field("p80_abs_error", u.p80_abs).Field("predicted_fast", u.predicted_fast);
  if (const plan::GroupSpread* g =
          plan::SpreadFor(plan::BuiltinGroupSpreads(), req.framework, req.gpu.name)) {
    // The narrowest group of those runs with this framework and GPU (plan::SpreadFor).
    w.Key("group").BeginObject();
    w.Field("framework", g->framework).Field("gpu", g->gpu);
    w.Field("published_runs", g->spread.rows).Field("median_error", g->median_error);
    w.Field("median_abs_error", g->spread.median_abs).Field("p80_abs_error", g->spread.p80_abs);
    w.Field("predicted_fast", g->spread.predicted_fast);
    w.EndObject();
  }
  if (const plan::PublishedMfu* b = plan::BuiltinPublishedMfuFor(req.gpu.name, req.precision)) {
    // The best MFU a published run on this GPU at this precision reached (plan::PublishedMfu).
    w.Key("published_best").BeginObject();
    w.Field("gpu", b->gpu).Field("precision", b->precision).Field("published_runs", b->runs);
    w.Field("best_mfu", b->best_mfu).Field("best_run", b->best_run);
    w.EndObject();
  }
  w.EndObject();
  w.Field("units", "seconds, bytes; TFLOP/s = 1e12 FLOP/s");
}
}  // namespace

std::string PlanResultJsonDocument(const plan::PlanRequest& req, const plan::PlanResult& r,
                                   int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  WriteRequestJson(w, req);
  w.Key("plan");
  WritePlanJson(w, r);
  w.EndObject();
  return w.str();
}

std::string SearchText(const plan::PlanRequest& req, const plan::SearchResult& sr, bool explain,
                       bool markdown) {
  std::string out = RequestLine(req);
  out += fmt::format(
      "searched {} layouts in {:.2f} s: {} evaluated ({} simulated; the others out of memory or "
      "bounded below the ranking), {} refused (invalid degrees or batch)\n",
      sr.evaluated + sr.pruned, sr.wall_s, sr.evaluated, sr.simulated, sr.pruned);
  if (sr.partial) {
    out += fmt::format(
        "partial: the search stopped after {} of {} layouts; these are the fastest of those, and a "
        "layout it did not reach may be faster\n",
        sr.evaluated + sr.pruned, sr.layouts);
  }
  if (!sr.constraints.empty())
    out += fmt::format("searched only: {}\n", Join(sr.constraints, ", "));
  out += SpreadLines(req, sr.ranked.empty() ? 0.0 : sr.ranked.front().mfu);
  out += "\n";
  TextTable t({"#", "layout", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "mem GiB", "bubble",
               "exposed comm s"});
  t.SetAlign(1, TextTable::Align::kLeft);
  for (size_t i = 0; i < sr.ranked.size(); ++i) {
    const plan::PlanResult& r = sr.ranked[i];
    const plan::StepTime& s = r.time;
    t.AddRow(
        {std::to_string(i + 1), r.layout.ToString(), Sec(s.step_s),
         fmt::format("{:.0f}", r.tokens_per_s), fmt::format("{:.1f}", r.model_tflops_per_gpu),
         Pct(r.mfu), GiB1(r.memory.worst().total_bytes), Pct(r.bubble_fraction),
         Sec(s.tp_comm_s + s.cp_comm_s + s.ep_comm_s + s.pp_comm_s + s.dp_comm_s + s.fsdp_comm_s)});
  }
  out += markdown ? t.RenderMarkdown() : t.Render();
  const plan::PlanResult& win = sr.ranked.front();
  TextTable b({"where the winner's step goes", "seconds", "share"});
  Breakdown(win, b);
  out += '\n';
  out += markdown ? b.RenderMarkdown() : b.Render();
  if (explain) {
    out += "\nwhy the winner won: " + sr.winner_reason + "\n\nwhy the others lost:\n";
    for (const auto& f : sr.families) {
      out += fmt::format("  {} ({} layouts): {}\n", f.family, f.candidates, f.verdict);
    }
  }
  return out;
}

std::string SearchJsonDocument(const plan::PlanRequest& req, const plan::SearchResult& sr,
                               int indent) {
  JsonWriter w(indent);
  w.BeginObject();
  WriteRequestJson(w, req);
  w.Field("evaluated", sr.evaluated).Field("refused", sr.pruned).Field("wall_s", sr.wall_s);
  w.Field("simulated", sr.simulated);
  w.Field("partial", sr.partial).Field("layouts", sr.layouts);
  w.Key("constraints").BeginArray();
  for (const auto& c : sr.constraints) w.String(c);
  w.EndArray();
  w.Key("plans").BeginArray();
  for (const auto& r : sr.ranked) WritePlanJson(w, r);
  w.EndArray();
  w.Key("explanation").BeginObject();
  w.Field("winner", sr.winner_reason);
  w.Key("families").BeginArray();
  for (const auto& f : sr.families) {
    w.BeginObject();
    w.Field("family", f.family).Field("layouts", f.candidates).Field("verdict", f.verdict);
    if (f.has_best)
      w.Field("best_layout", f.best.layout.ToString())
          .Field("best_step_time_s", f.best.time.step_s);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return w.str();
}

}  // namespace infralens::request
