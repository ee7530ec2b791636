#include "lab/scenarios.h"

#include <fmt/format.h>

#include <functional>
#include <optional>

#include "base/strings.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"

namespace infralens::lab {

using plan::Evaluate;
using plan::Layout;
using plan::PlanRequest;
using plan::PlanResult;
using plan::RankMemory;
using plan::SearchOptions;
using plan::ZeroModelStateBytes;

const std::vector<ScenarioInfo>& Scenarios() {
  static const auto* const kScenarios = new std::vector<ScenarioInfo>{
      {"70b-on-64", "a 70B model on 64 GPUs",
       "You have 8 DGX H100 nodes (64 GPUs) and Llama-3 70B with a 4M-token batch (512 x 8192). "
       "How do you "
       "parallelise it, and why?"},
      {"dp64-oom", "why DP=64 runs out of memory",
       "A colleague runs Llama-3 70B with plain data parallelism on 64 H100s because '64 GPUs "
       "means DP=64'. Why does "
       "it crash, and by how much?"},
      {"tp-across-nodes", "TP across nodes",
       "GPT-3 175B on 8 DGX H100 nodes: why not tp=16 so that each pipeline stage is smaller? What "
       "happens to the "
       "tensor-parallel collectives?"},
      {"few-microbatches", "too few microbatches",
       "Llama-3 70B with tp=8 and pp=8 on 64 GPUs: the step takes far longer than the FLOPs say. "
       "The global batch is 8 "
       "sequences. What is wrong, and what does a batch of 64 change?"},
      {"fsdp-vs-zero1-slow-network", "FSDP versus ZeRO-1 on a slow network",
       "Llama-3 8B at 2,048 tokens per sequence on 4 DGX A100 nodes that have one 100 Gb/s NIC "
       "each. FSDP or ZeRO-1 "
       "(distributed optimizer)? "
       "Would the answer change on the standard 8 x 200 Gb/s DGX A100 network?"},
      {"moe-all-to-all", "an MoE all-to-all across nodes",
       "Mixtral 8x7B on 64 H100s with 8-way expert parallelism. With tp=2 the expert-parallel "
       "group spans two nodes; "
       "with tp=1 it fits in one. What does the all-to-all cost each way?"},
      {"long-context-cp", "long sequences and context parallelism",
       "Llama-3 8B at 131,072 tokens per sequence on 64 H100s: where does the memory go, and what "
       "does context "
       "parallelism (cp=4) buy?"},
      {"405b-on-16k", "a 405B model on 16,384 GPUs",
       "Llama-3 405B on 2,048 DGX H100 nodes (16,384 GPUs), 16M tokens per step (2048 x 8192). "
       "What layout does the "
       "planner pick, and what should the step cost?"},
  };
  return *kScenarios;
}

namespace {

StatusOr<PlanRequest> Request(std::string_view model, std::string_view cluster, int nodes,
                              int64_t batch, int64_t seq) {
  PlanRequest r;
  ASSIGN_OR_RETURN(r.model, model::FindPreset(model));
  ASSIGN_OR_RETURN(r.cluster, cluster::FindClusterPreset(cluster));
  r.cluster.num_nodes = nodes;
  RETURN_IF_ERROR(cluster::Validate(r.cluster));
  ASSIGN_OR_RETURN(r.gpu, hw::FindGpu(r.cluster.node.gpu_model));
  r.global_batch = batch;
  r.seq_len = seq;
  return r;
}

Layout MakeLayout(int tp, int pp, int dp, int cp, int ep, int zero, model::Recompute rc, int64_t mb,
                  schedule::ScheduleKind k = schedule::ScheduleKind::k1F1B) {
  return plan::LayoutOf(tp, pp, dp, cp, ep, zero, /*vpp=*/0, mb, k, rc);
}

// Evaluates a layout the scenario relies on; a preset change that breaks it is reported as such.
StatusOr<PlanResult> Run(const PlanRequest& req, const Layout& l) {
  auto r = Evaluate(req, l);
  if (!r.ok()) {
    return FailedPrecondition(fmt::format("the scenario's layout {} no longer runs for {}: {}",
                                          l.ToString(), req.model.name, r.status().message()));
  }
  return r;
}

ScenarioAnswer Answer(const ScenarioInfo& info, const PlanRequest& req, const PlanResult& chosen,
                      const PlanResult* best) {
  ScenarioAnswer a;
  a.info = info;
  a.request = req;
  a.chosen = chosen;
  a.explanation = Explain(req, chosen, best);
  a.explanation.question = info.question;
  return a;
}

using Builder = std::function<StatusOr<ScenarioAnswer>(const ScenarioInfo&, const SearchOptions&)>;

// The planner's best for a comparison: absent when nothing fits; a stopped search is the caller's
// time limit, an error.
StatusOr<std::optional<PlanResult>> BestIfAny(const PlanRequest& req, const SearchOptions& search) {
  auto best = BestPlan(req, search);
  if (best.ok()) return std::optional<PlanResult>(*std::move(best));
  if (best.status().code() == StatusCode::kResourceExhausted) return best.status();
  return std::optional<PlanResult>();
}

StatusOr<ScenarioAnswer> Best70b(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("llama3-70b", "dgx-h100", 8, 512, 8192));
  ASSIGN_OR_RETURN(PlanResult best, BestPlan(req, search));
  ScenarioAnswer a = Answer(info, req, best, &best);
  a.headline =
      fmt::format("planner's pick {}: {} per step, {:.0f} tokens/s, MFU {}, {} per GPU",
                  best.layout.ToString(), FormatSeconds(best.time.step_s), best.tokens_per_s,
                  FormatPercent(best.mfu), FormatGiB(best.memory.worst().total_bytes));
  return a;
}

StatusOr<ScenarioAnswer> Dp64(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("llama3-70b", "dgx-h100", 8, 512, 8192));
  ASSIGN_OR_RETURN(PlanResult r,
                   Run(req, MakeLayout(1, 1, 64, 1, 1, 0, model::Recompute::kFull, 1)));
  ASSIGN_OR_RETURN(std::optional<PlanResult> best, BestIfAny(req, search));
  ScenarioAnswer a = Answer(info, req, r, best ? &*best : nullptr);
  const RankMemory& w = r.memory.worst();
  const double params = w.parameters;
  const double z1 = ZeroModelStateBytes(params, 1, 64), z3 = ZeroModelStateBytes(params, 3, 64);
  a.explanation.tradeoff.sentences.push_back(
      fmt::format("Sharding is the fix, not more replicas: over the same 64 GPUs ZeRO-1 cuts the "
                  "model state to {} per GPU "
                  "(optimizer states 1/64, but BF16 weights and gradients still whole: {}), FSDP "
                  "(ZeRO-3) to {}.",
                  FormatGiB(z1), FormatGiB(w.weights_bytes + w.gradients_bytes), FormatGiB(z3)));
  a.explanation.tradeoff.numbers.push_back({"zero1_model_state_bytes", z1, "bytes"});
  a.explanation.tradeoff.numbers.push_back({"zero3_model_state_bytes", z3, "bytes"});
  a.headline = fmt::format(
      "DP=64 needs {} per GPU ({} of it model state) against {} usable: {:.1f}x too much",
      FormatGiB(w.total_bytes), FormatGiB(w.weights_bytes + w.gradients_bytes + w.optimizer_bytes),
      FormatGiB(r.memory.usable_bytes), w.total_bytes / r.memory.usable_bytes);
  return a;
}

StatusOr<ScenarioAnswer> TpAcross(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("gpt3-175b", "dgx-h100", 8, 512, 2048));
  ASSIGN_OR_RETURN(PlanResult wide,
                   Run(req, MakeLayout(16, 4, 1, 1, 1, 1, model::Recompute::kSelective, 1)));
  ASSIGN_OR_RETURN(PlanResult in,
                   Run(req, MakeLayout(8, 8, 1, 1, 1, 1, model::Recompute::kSelective, 1)));
  ASSIGN_OR_RETURN(std::optional<PlanResult> best, BestIfAny(req, search));
  ScenarioAnswer a = Answer(info, req, wide, best ? &*best : nullptr);
  a.explanation.tradeoff.sentences.push_back(
      fmt::format("Keeping TP inside a node (tp=8 pp=8, same ZeRO-1, recompute and micro-batch) "
                  "cuts TP communication from {} to "
                  "{} per step and the step from {} to {}; the deeper pipeline costs {} of bubble "
                  "instead of {}.",
                  FormatSeconds(wide.time.tp_comm_s), FormatSeconds(in.time.tp_comm_s),
                  FormatSeconds(wide.time.step_s), FormatSeconds(in.time.step_s),
                  FormatSeconds(in.time.bubble_s), FormatSeconds(wide.time.bubble_s)));
  a.explanation.tradeoff.numbers.push_back({"tp8_tp_comm_s", in.time.tp_comm_s, "s"});
  a.explanation.tradeoff.numbers.push_back({"tp8_step_s", in.time.step_s, "s"});
  a.headline = fmt::format(
      "tp=16 spends {} per step on TP collectives over the network; tp=8 inside a node {}",
      FormatSeconds(wide.time.tp_comm_s), FormatSeconds(in.time.tp_comm_s));
  return a;
}

StatusOr<ScenarioAnswer> FewMicrobatches(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("llama3-70b", "dgx-h100", 8, 8, 8192));
  const Layout l = MakeLayout(8, 8, 1, 1, 1, 1, model::Recompute::kSelective, 1);
  ASSIGN_OR_RETURN(PlanResult few, Run(req, l));
  PlanRequest more_req = req;
  more_req.global_batch = 64;
  ASSIGN_OR_RETURN(PlanResult more, Run(more_req, l));
  ScenarioAnswer a = Answer(info, req, few, nullptr);
  a.explanation.tradeoff.sentences.push_back(fmt::format(
      "With 64 sequences (m=64) the same layout idles {} of its step instead of {} (1F1B's "
      "(p-1)/(m+p-1): {} against "
      "{}), and each step does 8x the work in {} instead of {}: {:.0f} tokens/s against {:.0f}.",
      FormatPercent(more.bubble_fraction), FormatPercent(few.bubble_fraction),
      FormatPercent(ClosedFormBubble(schedule::ScheduleKind::k1F1B, 8, 1, 64)),
      FormatPercent(ClosedFormBubble(schedule::ScheduleKind::k1F1B, 8, 1, 8)),
      FormatSeconds(more.time.step_s), FormatSeconds(few.time.step_s), more.tokens_per_s,
      few.tokens_per_s));
  a.explanation.tradeoff.numbers.push_back(
      {"m64_bubble_fraction", more.bubble_fraction, "fraction"});
  a.explanation.tradeoff.numbers.push_back({"m64_tokens_per_s", more.tokens_per_s, "tokens/s"});
  a.headline = fmt::format("pp=8 with m=8 idles {} of the step; with m=64, {}",
                           FormatPercent(few.bubble_fraction), FormatPercent(more.bubble_fraction));
  return a;
}

StatusOr<ScenarioAnswer> SlowNetwork(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest fast, Request("llama3-8b", "dgx-a100", 4, 256, 2048));
  PlanRequest slow = fast;
  slow.cluster.name = "dgx-a100 with 1 x 100 Gb/s NIC per node";
  slow.cluster.node.nics_per_node = 1;
  slow.cluster.node.nic_bytes_per_s = 12.5e9;  // 100 Gb/s
  RETURN_IF_ERROR(cluster::Validate(slow.cluster));
  const Layout fsdp = MakeLayout(1, 1, 32, 1, 1, 3, model::Recompute::kSelective, 1);
  const Layout zero1 = MakeLayout(1, 1, 32, 1, 1, 1, model::Recompute::kSelective, 1);
  ASSIGN_OR_RETURN(PlanResult f_slow, Run(slow, fsdp));
  ASSIGN_OR_RETURN(PlanResult z_slow, Run(slow, zero1));
  ASSIGN_OR_RETURN(PlanResult f_fast, Run(fast, fsdp));
  ASSIGN_OR_RETURN(PlanResult z_fast, Run(fast, zero1));
  ScenarioAnswer a = Answer(info, slow, f_slow, nullptr);
  auto describe = [](const PlanResult& r) {
    return fmt::format("{} per step ({} per GPU, {} exposed communication)",
                       FormatSeconds(r.time.step_s), FormatGiB(r.memory.worst().total_bytes),
                       FormatSeconds(r.time.dp_comm_s + r.time.fsdp_comm_s));
  };
  a.explanation.tradeoff.sentences.push_back(
      fmt::format("On the 100 Gb/s network FSDP takes {}; ZeRO-1 (reduce-scatter and all-gather "
                  "once per step instead of three "
                  "passes over the weights every microbatch) takes {}. On the standard 8 x 200 "
                  "Gb/s DGX A100 network: FSDP {}, "
                  "ZeRO-1 {}.",
                  describe(f_slow), describe(z_slow), describe(f_fast), describe(z_fast)));
  a.explanation.tradeoff.numbers.push_back({"zero1_slow_step_s", z_slow.time.step_s, "s"});
  a.explanation.tradeoff.numbers.push_back({"fsdp_fast_step_s", f_fast.time.step_s, "s"});
  a.explanation.tradeoff.numbers.push_back({"zero1_fast_step_s", z_fast.time.step_s, "s"});
  a.headline = fmt::format("100 Gb/s: FSDP {} vs ZeRO-1 {} per step; 8 x 200 Gb/s: {} vs {}",
                           FormatSeconds(f_slow.time.step_s), FormatSeconds(z_slow.time.step_s),
                           FormatSeconds(f_fast.time.step_s), FormatSeconds(z_fast.time.step_s));
  return a;
}

StatusOr<ScenarioAnswer> MoeAllToAll(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("mixtral-8x7b", "dgx-h100", 8, 256, 4096));
  ASSIGN_OR_RETURN(PlanResult across,
                   Run(req, MakeLayout(2, 1, 32, 1, 8, 1, model::Recompute::kSelective, 1)));
  ASSIGN_OR_RETURN(PlanResult inside,
                   Run(req, MakeLayout(1, 1, 64, 1, 8, 1, model::Recompute::kSelective, 1)));
  ASSIGN_OR_RETURN(std::optional<PlanResult> best, BestIfAny(req, search));
  ScenarioAnswer a = Answer(info, req, across, best ? &*best : nullptr);
  a.explanation.tradeoff.sentences.push_back(fmt::format(
      "With tp=1 the 8 expert-parallel ranks share a node: the all-to-all costs {} per step "
      "instead of {}, the step "
      "{} instead of {} ({} per GPU instead of {}).",
      FormatSeconds(inside.time.ep_comm_s), FormatSeconds(across.time.ep_comm_s),
      FormatSeconds(inside.time.step_s), FormatSeconds(across.time.step_s),
      FormatGiB(inside.memory.worst().total_bytes), FormatGiB(across.memory.worst().total_bytes)));
  a.explanation.tradeoff.numbers.push_back(
      {"ep_inside_node_ep_comm_s", inside.time.ep_comm_s, "s"});
  a.explanation.tradeoff.numbers.push_back({"ep_inside_node_step_s", inside.time.step_s, "s"});
  a.headline =
      fmt::format("EP all-to-all {} per step across 2 nodes, {} inside one",
                  FormatSeconds(across.time.ep_comm_s), FormatSeconds(inside.time.ep_comm_s));
  return a;
}

StatusOr<ScenarioAnswer> LongContext(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("llama3-8b", "dgx-h100", 8, 16, 131072));
  ASSIGN_OR_RETURN(PlanResult cp4,
                   Run(req, MakeLayout(8, 1, 2, 4, 1, 1, model::Recompute::kSelective, 1)));
  ASSIGN_OR_RETURN(PlanResult cp1,
                   Run(req, MakeLayout(8, 1, 8, 1, 1, 1, model::Recompute::kSelective, 1)));
  ScenarioAnswer a = Answer(info, req, cp4, nullptr);
  a.explanation.problem.sentences.push_back(
      fmt::format("At {} tokens the activations dominate: without context parallelism (tp=8 dp=8, "
                  "same recompute) each GPU "
                  "stores {} of activations and needs {} in all against {} usable{}.",
                  req.seq_len, FormatGiB(cp1.memory.worst().activations_bytes),
                  FormatGiB(cp1.memory.worst().total_bytes), FormatGiB(cp1.memory.usable_bytes),
                  cp1.memory.fits ? "" : ": it does not fit"));
  a.explanation.tradeoff.sentences.push_back(fmt::format(
      "cp=4 divides the stored activations by 4 ({} instead of {}); it costs {} of ring exchange "
      "per step that "
      "attention does not hide, and halves data parallelism (dp=2 instead of 8).",
      FormatGiB(cp4.memory.worst().activations_bytes),
      FormatGiB(cp1.memory.worst().activations_bytes), FormatSeconds(cp4.time.cp_comm_s)));
  a.explanation.problem.numbers.push_back(
      {"cp1_activations_bytes", cp1.memory.worst().activations_bytes, "bytes"});
  a.explanation.problem.numbers.push_back(
      {"cp1_total_bytes", cp1.memory.worst().total_bytes, "bytes"});
  a.headline = fmt::format("activations per GPU: {} at cp=1 ({}), {} at cp=4",
                           FormatGiB(cp1.memory.worst().activations_bytes),
                           cp1.memory.fits ? "fits" : "does not fit",
                           FormatGiB(cp4.memory.worst().activations_bytes));
  return a;
}

StatusOr<ScenarioAnswer> Huge(const ScenarioInfo& info, const SearchOptions& search) {
  ASSIGN_OR_RETURN(PlanRequest req, Request("llama3-405b", "dgx-h100", 2048, 2048, 8192));
  ASSIGN_OR_RETURN(PlanResult best, BestPlan(req, search));
  ScenarioAnswer a = Answer(info, req, best, &best);
  a.explanation.measurement.sentences.push_back(
      "For scale: Meta reports about 400 TFLOP/s per GPU (BF16 MFU 41%) for Llama 3 405B on 16,384 "
      "H100s at "
      "8,192 tokens with TP 8, CP 1, PP 16, DP 128 (Dubey et al. 2024, Table 4); its 126 layers "
      "split over 16 "
      "pipeline ranks only unevenly (Meta gives the first and last stage fewer layers; the search "
      "counts the "
      "embedding and the loss as a layer each, as Megatron-LM's recipe does).");
  a.headline = fmt::format(
      "planner's pick {}: {} per step, {:.2f}M tokens/s, {:.0f} TFLOP/s per GPU, MFU {}",
      best.layout.ToString(), FormatSeconds(best.time.step_s), best.tokens_per_s / 1e6,
      best.model_tflops_per_gpu, FormatPercent(best.mfu));
  return a;
}

const std::vector<std::pair<std::string, Builder>>& Builders() {
  static const auto* const kBuilders = new std::vector<std::pair<std::string, Builder>>{
      {"70b-on-64", Best70b},
      {"dp64-oom", Dp64},
      {"tp-across-nodes", TpAcross},
      {"few-microbatches", FewMicrobatches},
      {"fsdp-vs-zero1-slow-network", SlowNetwork},
      {"moe-all-to-all", MoeAllToAll},
      {"long-context-cp", LongContext},
      {"405b-on-16k", Huge},
  };
  return *kBuilders;
}

}  // namespace

StatusOr<ScenarioAnswer> RunScenario(std::string_view name, const SearchOptions& search) {
  const std::string key = ToLower(Trim(name));
  for (const ScenarioInfo& info : Scenarios()) {
    if (info.name != key) continue;
    for (const auto& [n, build] : Builders()) {
      if (n == key) return build(info, search);
    }
    return Internal(fmt::format("scenario {} has no builder", key));
  }
  std::vector<std::string> names;
  for (const ScenarioInfo& info : Scenarios()) names.push_back(info.name);
  const std::string hint = ClosestMatch(key, names);
  // ‹NAME›: the scenario is the `scenarios` command's positional argument (base/status.h).
  return NotFound(fmt::format("‹NAME› '{}': no such scenario{}; one of {}", name,
                              hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                              Join(names, ", ")));
}

}  // namespace infralens::lab
