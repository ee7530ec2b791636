#include "lab/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include "base/json_writer.h"
#include "plan/framework.h"
#include "plan/recompute_lists.h"
#include "plan/validate.h"

namespace infralens::lab {

using plan::CommItem;
using plan::kGiB;
using plan::ParallelConfig;
using plan::PlanRequest;
using plan::PlanResult;
using plan::Precision;
using plan::RankMemory;
using plan::Search;
using plan::SearchOptions;
using plan::SearchResult;
using plan::SplitText;
using plan::StepTime;

std::string FormatGiB(double bytes) { return fmt::format("{:.1f} GiB", bytes / kGiB); }

std::string FormatSeconds(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string FormatSize(double b) {
  if (b >= 1024.0 * 1024 * 1024 * 1024)
    return fmt::format("{:.2f} TiB", b / (1024.0 * 1024 * 1024 * 1024));
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

std::string FormatRate(double bytes_per_s) { return fmt::format("{:.0f} GB/s", bytes_per_s / 1e9); }

std::string FormatPercent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

double ParametersHeldPerGpu(const RankMemory& w, const ParallelConfig& p) {
  if (p.zero_stage < 3) return w.parameters;
  const double dense_shards = static_cast<double>(p.dp) * p.cp;
  const double expert_shards = std::max(1.0, dense_shards / std::max(1, p.ep));
  return (w.parameters - w.expert_parameters) / dense_shards + w.expert_parameters / expert_shards;
}

double ClosedFormBubble(schedule::ScheduleKind k, int p, int v, int64_t m) {
  if (p <= 1) return 0;
  const double pm1 = p - 1;
  switch (k) {
    case schedule::ScheduleKind::kGPipe:
    case schedule::ScheduleKind::k1F1B:
      return pm1 / (static_cast<double>(m) + pm1);
    case schedule::ScheduleKind::kInterleaved1F1B:
      return pm1 / (static_cast<double>(v) * static_cast<double>(m) + pm1);
    default:
      return -1;
  }
}

StatusOr<PlanResult> BestPlan(const PlanRequest& req, SearchOptions options) {
  options.top_k = 1;
  ASSIGN_OR_RETURN(SearchResult sr, Search(req, options));
  if (sr.ranked.empty()) {
    return FailedPrecondition(fmt::format("no layout of {} on {} GPUs fits ({} evaluated)",
                                          req.model.name, req.gpus(), sr.evaluated));
  }
  return sr.ranked.front();
}

namespace {

// How people name a link class: in a sentence and as a short label. A full-mesh scale-up domain
// is named apart (LinkPhrase, LinkWords).
struct LinkNaming {
  cluster::LinkClass link;
  const char* phrase;
  const char* words;
};
constexpr LinkNaming kLinkNamings[] = {
    {cluster::LinkClass::kNone, "no link (one GPU)", "no link"},
    {cluster::LinkClass::kNvLinkBridge, "the NVLink bridge of a GPU pair", "NVLink bridge"},
    {cluster::LinkClass::kScaleUp, "NVLink/NVSwitch inside a node", "NVLink/NVSwitch"},
    {cluster::LinkClass::kPcie, "PCIe inside a node", "PCIe"},
    {cluster::LinkClass::kRail, "the network on one rail (NIC, leaf switch, NIC)",
     "network, same rail"},
    {cluster::LinkClass::kSpine, "the network through the spine", "network, through the spine"}};

const LinkNaming* FindLinkNaming(cluster::LinkClass l) {
  for (const LinkNaming& n : kLinkNamings) {
    if (n.link == l) return &n;
  }
  return nullptr;
}

bool FullMeshScaleUp(const cluster::Cluster& c, cluster::LinkClass l) {
  return l == cluster::LinkClass::kScaleUp && c.node.fabric == cluster::ScaleUpFabric::kFullMesh;
}

}  // namespace

std::string LinkPhrase(const cluster::Cluster& c, cluster::LinkClass l) {
  if (FullMeshScaleUp(c, l)) return "the full-mesh scale-up links inside a node";
  const LinkNaming* n = FindLinkNaming(l);
  return n ? n->phrase : "?";
}

std::string LinkWords(const cluster::Cluster& c, cluster::LinkClass l) {
  if (FullMeshScaleUp(c, l)) return "scale-up full mesh";
  const LinkNaming* n = FindLinkNaming(l);
  return n ? n->words : "?";
}

namespace {

// Model state bytes per parameter with mixed-precision Adam (ZeRO's 2 + 2 + 12).
double StateBytesPerParam(const PlanRequest& req) { return 2 + (req.fp32_gradients ? 4 : 2) + 12; }

struct Part {
  const char* name;
  double s;
};

// Not communication: compute, slowed (plan/sm_contention.h).
constexpr const char* kContentionPart = "the compute slowed by the SMs overlapped collectives hold";

// Not communication either: copies to and from host memory (plan/cpu_offload.h).
constexpr const char* kOffloadPart = "the compute waiting for activation offloading's copies";

std::vector<Part> Overheads(const StepTime& t) {
  return {{"TP collectives on the critical path", t.tp_comm_s},
          {"the CP ring exchange not hidden by attention", t.cp_comm_s},
          {"the MoE all-to-all", t.ep_comm_s},
          {"pipeline send/recv on the critical path", t.pp_comm_s},
          {"the pipeline bubble", t.bubble_s},
          {"data-parallel communication not hidden", t.dp_comm_s},
          {"FSDP gathers not hidden", t.fsdp_comm_s},
          {kContentionPart, t.contention_s},
          {"the optimizer step", t.optimizer_s},
          {kOffloadPart, t.offload_s}};
}

// For a selective layout that does not fit: the first heavier module list (plan/recompute_lists.h)
// with which the same layout fits, and its worst rank's bytes; nullopt when none does, or when the
// framework's selective recompute takes no list.
std::optional<std::pair<model::RecomputeModules, double>> FittingHeavierList(const PlanRequest& req,
                                                                             const PlanResult& r) {
  if (r.memory.fits || r.layout.recompute != model::Recompute::kSelective) return std::nullopt;
  if (!plan::FrameworkListsRecomputeModules(req)) return std::nullopt;
  for (const model::RecomputeModules& list :
       plan::HeavierRecomputeModules(req.model, plan::RecomputeModulesOf(req, r.layout))) {
    plan::Layout heavier = r.layout;
    heavier.recompute_modules = list;
    auto m = plan::EvaluateMemory(req, heavier);
    if (m.ok() && m->memory.fits) return std::pair{list, m->memory.worst().total_bytes};
  }
  return std::nullopt;
}

void Problem(const PlanRequest& req, const PlanResult& r, Section& s) {
  const model::Model& m = req.model;
  const double params = static_cast<double>(model::CountParameters(m).total);
  const double state = params * StateBytesPerParam(req);
  const double usable = req.gpu.hbm_bytes - req.reserve_bytes;
  const double min_gpus = std::ceil(state / usable);
  s.sentences.push_back(
      fmt::format("Training {} keeps {:.0f} bytes per parameter (BF16 weights, {} gradients, FP32 "
                  "Adam master weights and "
                  "two moments): {:.3g}B parameters x {:.0f} B = {}, {:.1f}x the {} usable on one "
                  "{}, so the model state "
                  "alone must be split over at least {:.0f} GPUs before any activation is stored.",
                  m.name, StateBytesPerParam(req), req.fp32_gradients ? "FP32" : "BF16",
                  params / 1e9, StateBytesPerParam(req), FormatSize(state), state / usable,
                  FormatGiB(usable), req.gpu.name, min_gpus));
  const double peak = RunsFp8(req) ? req.gpu.fp8_flops_per_s : req.gpu.bf16_flops_per_s;
  const double ideal = r.model_flops_per_step / (peak * static_cast<double>(req.gpus()));
  s.sentences.push_back(fmt::format(
      "One step of {} x {} tokens is {} of model work; at the {:.0f} TFLOP/s peak of all {} GPUs "
      "that is {} even "
      "at 100% utilisation.",
      req.global_batch, r.memory.seq_len,
      r.model_flops_per_step >= 1e18 ? fmt::format("{:.2f} EFLOP", r.model_flops_per_step / 1e18)
                                     : fmt::format("{:.3g} PFLOP", r.model_flops_per_step / 1e15),
      peak / 1e12, req.gpus(), FormatSeconds(ideal)));
  const StepTime& t = r.time;
  if (!r.memory.fits) {
    const double need = r.memory.worst().total_bytes;
    s.sentences.push_back(
        fmt::format("This layout does not fit: pipeline rank {} needs {} per GPU against {} "
                    "usable, {} too much; memory, not "
                    "time, is the bottleneck.",
                    r.memory.worst().rank, FormatGiB(need), FormatGiB(r.memory.usable_bytes),
                    FormatGiB(need - r.memory.usable_bytes)));
    if (const auto fit = FittingHeavierList(req, r)) {
      // Megatron-Core's remedy before full recompute: recompute more modules.
      std::string flag = model::RecomputeModulesName(fit->first);
      std::ranges::replace(flag, ' ', ',');
      s.sentences.push_back(fmt::format(
          "Recomputing {} under selective recompute (--recompute-modules {}) keeps {} per GPU, "
          "which fits.",
          model::RecomputeModulesName(fit->first), flag, FormatGiB(fit->second)));
    }
  } else {
    const auto parts = Overheads(t);
    const Part* worst = &parts.front();
    for (const Part& p : parts) {
      if (p.s > worst->s) worst = &p;
    }
    s.sentences.push_back(
        fmt::format("With {} a step takes {}: compute is {} ({}); the largest overhead is {}, {} "
                    "({} of the step).",
                    r.layout.ToString(), FormatSeconds(t.step_s), FormatSeconds(t.compute_s),
                    FormatPercent(t.compute_s / t.step_s), worst->name, FormatSeconds(worst->s),
                    FormatPercent(worst->s / t.step_s)));
  }
  s.numbers = {{"parameters", params, "count"},
               {"model_state_bytes", state, "bytes"},
               {"usable_bytes_per_gpu", usable, "bytes"},
               {"min_gpus_for_model_state", min_gpus, "count"},
               {"model_flops_per_step", r.model_flops_per_step, "FLOP"},
               {"ideal_step_s", ideal, "s"},
               {"step_s", t.step_s, "s"},
               {"compute_s", t.compute_s, "s"},
               {"memory_per_gpu_bytes", r.memory.worst().total_bytes, "bytes"},
               {"fits", r.memory.fits ? 1.0 : 0.0, "bool"}};
}

void Mechanism(const PlanRequest& req, const PlanResult& r, Section& s) {
  const model::Model& m = req.model;
  const ParallelConfig& p = r.layout.parallel;
  const int gpn = req.cluster.node.gpus_per_node;
  if (p.tp > 1) {
    s.sentences.push_back(fmt::format(
        "Tensor parallelism (tp={}) shards every layer's attention and MLP weight matrices over {} "
        "GPUs (columns of "
        "the first matmul, rows of the second, Megatron's split): each GPU holds and multiplies "
        "1/{} of each "
        "layer{}.",
        p.tp, p.tp, p.tp,
        p.sequence_parallel
            ? "; sequence parallelism also splits the norms and dropout along the sequence"
            : ""));
  }
  if (p.pp > 1) {
    s.sentences.push_back(fmt::format(
        "Pipeline parallelism (pp={}{}) cuts the {} layers into {} stages ({}); each pipeline rank "
        "holds {} "
        "of them and passes activations forward and gradients back at stage boundaries ({} "
        "schedule, {} "
        "microbatches).",
        p.pp, p.vpp > 1 ? fmt::format(", vpp={}", p.vpp) : "", m.num_layers, p.pp * p.vpp,
        SplitText(m, p), p.vpp, schedule::Info(r.layout.schedule).name, r.memory.microbatches));
  }
  if (p.cp > 1) {
    s.sentences.push_back(fmt::format(
        "Context parallelism (cp={}) splits each sequence of {} tokens into {} chunks of {}; "
        "attention passes K "
        "and V around a ring of {} GPUs, and each GPU stores activations for its chunk only.",
        p.cp, r.memory.seq_len, p.cp, r.memory.seq_len / p.cp, p.cp));
  }
  if (p.ep > 1 && m.is_moe()) {
    s.sentences.push_back(
        fmt::format("Expert parallelism (ep={}) spreads the {} routed experts of each MoE layer "
                    "over {} GPUs ({} each); every "
                    "token is sent to its top-{} experts and back by all-to-all.",
                    p.ep, m.num_experts, p.ep, m.num_experts / p.ep, m.top_k));
  }
  std::string what_dp;
  switch (p.zero_stage) {
    case 0:
      what_dp = "weights, gradients and optimizer states are all replicated";
      break;
    case 1:
      what_dp =
          "optimizer states are sharded (ZeRO-1 / distributed optimizer), weights and gradients "
          "replicated";
      break;
    case 2:
      what_dp = "optimizer states and gradients are sharded (ZeRO-2), weights replicated";
      break;
    default:
      what_dp =
          "weights, gradients and optimizer states are all sharded (FSDP / ZeRO-3) and each "
          "layer's weights are gathered just before use";
      break;
  }
  if (p.dp * p.cp > 1) {
    s.sentences.push_back(fmt::format(
        "Data parallelism (dp={}) runs {} copies of {} on different sequences; across them {}.",
        p.dp, p.dp,
        p.tp * p.pp * p.cp > 1 ? fmt::format("that {}-GPU model", p.tp * p.pp * p.cp) : "the model",
        what_dp));
  } else {
    s.sentences.push_back(
        "There is no data parallelism: every GPU holds a distinct part of the model.");
  }
  const RankMemory& w = r.memory.worst();
  const int dense_shards = p.zero_stage >= 3 ? p.dp * p.cp : 1;
  const int expert_shards = p.zero_stage >= 3 ? std::max(1, p.dp * p.cp / std::max(1, p.ep)) : 1;
  const double dense = w.parameters - w.expert_parameters;
  const double held = ParametersHeldPerGpu(w, p);
  std::string sharded;
  if (dense_shards > 1) {
    sharded = w.expert_parameters > 0
                  ? fmt::format(" (1/{} of its stage's {:.3g}B dense, 1/{} of its {:.3g}B expert)",
                                dense_shards, dense / 1e9, expert_shards, w.expert_parameters / 1e9)
                  : fmt::format(" (1/{} of its stage's {:.3g}B)", dense_shards, dense / 1e9);
  }
  s.sentences.push_back(fmt::format(
      "Per GPU (pipeline rank {}, the fullest): {:.3g}B parameters{}, weights {}, gradients {}, "
      "optimizer states {}, "
      "activations {} ({} microbatch{} in flight), total {} of {} usable.",
      w.rank, held / 1e9, sharded, FormatGiB(w.weights_bytes), FormatGiB(w.gradients_bytes),
      FormatGiB(w.optimizer_bytes), FormatGiB(w.activations_bytes), w.peak_chunks,
      w.peak_chunks == 1 ? "" : "es", FormatGiB(w.total_bytes), FormatGiB(r.memory.usable_bytes)));
  if (p.tp > gpn) {
    s.sentences.push_back(
        fmt::format("tp={} is larger than a node's {} GPUs, so each TP group spans {} nodes.", p.tp,
                    gpn, p.tp / gpn));
  }
  s.numbers = {{"tp", double(p.tp), "count"},
               {"pp", double(p.pp), "count"},
               {"vpp", double(p.vpp), "count"},
               {"dp", double(p.dp), "count"},
               {"cp", double(p.cp), "count"},
               {"ep", double(p.ep), "count"},
               {"zero_stage", double(p.zero_stage), "count"},
               {"parameters_per_gpu", held, "count"},
               {"weights_bytes", w.weights_bytes, "bytes"},
               {"gradients_bytes", w.gradients_bytes, "bytes"},
               {"optimizer_bytes", w.optimizer_bytes, "bytes"},
               {"activations_bytes", w.activations_bytes, "bytes"},
               {"total_bytes", w.total_bytes, "bytes"},
               {"usable_bytes", r.memory.usable_bytes, "bytes"}};
}

// A Quantity name for a collective: snake_case ("pp ends" -> "pp_ends", "dp+cp" -> "dp_cp"), and
// unique within its section (FSDP gathers the weights twice, forward and backward: the second is
// "dp_all_gather_2").
std::string CollectiveKey(const CommItem& it, std::vector<std::string>& used) {
  std::string base = it.group + "_" + std::string(collective::CollectiveName(it.collective));
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  std::string key = base;
  for (int k = 2; std::find(used.begin(), used.end(), key) != used.end(); ++k)
    key = fmt::format("{}_{}", base, k);
  used.push_back(key);
  return key;
}

void Communication(const PlanRequest& req, const PlanResult& r, Section& s) {
  if (r.comm.items.empty()) {
    s.sentences.push_back("One GPU holds everything: no collective runs.");
    return;
  }
  double total = 0;
  std::vector<std::string> keys;
  for (const CommItem& it : r.comm.items) {
    total += it.time_per_step_s;
    s.sentences.push_back(
        fmt::format("{}: {} over {} {} GPUs crossing {}; {}, so {} calls per step of {} each, {} "
                    "per call, {} per step; overlap "
                    "{} ({}).",
                    it.name, collective::CollectiveName(it.collective), it.group, it.group_size,
                    LinkPhrase(req.cluster, it.link), it.frequency, it.count,
                    FormatSize(it.message_bytes), FormatSeconds(it.estimate.time_s),
                    FormatSeconds(it.time_per_step_s), OverlapName(it.overlap), it.overlap_note));
    const std::string key = CollectiveKey(it, keys);
    s.numbers.push_back({key + "_message_bytes", it.message_bytes, "bytes"});
    s.numbers.push_back({key + "_calls_per_step", static_cast<double>(it.count), "count"});
    s.numbers.push_back({key + "_time_per_step_s", it.time_per_step_s, "s"});
  }
  s.sentences.push_back(
      fmt::format("All of it adds up to {} per step before overlap (counts for one GPU of pipeline "
                  "rank {}); the step-time model "
                  "charges only what cannot hide behind compute (see tradeoff).",
                  FormatSeconds(total), r.comm.rank));
  s.numbers.push_back({"total_comm_time_per_step_s", total, "s"});
}

void Tradeoff(const PlanRequest& req, const PlanResult& r, const PlanResult* best, Section& s) {
  const StepTime& t = r.time;
  const ParallelConfig& p = r.layout.parallel;
  if (p.pp > 1) {
    const double closed = ClosedFormBubble(r.layout.schedule, p.pp, p.vpp, r.memory.microbatches);
    s.sentences.push_back(fmt::format(
        "Pipeline bubble: the busiest rank idles {} per step; the simulated bubble fraction is "
        "{}{}. More "
        "microbatches per step shrink it, at the price of a larger global batch or a smaller "
        "micro-batch.",
        FormatSeconds(t.bubble_s), FormatPercent(r.bubble_fraction),
        closed >= 0
            ? fmt::format(" ({}'s closed form (p-1)/({}m+p-1) with p={}, m={}{} gives {})",
                          schedule::Info(r.layout.schedule).name,
                          r.layout.schedule == schedule::ScheduleKind::kInterleaved1F1B ? "v" : "",
                          p.pp, r.memory.microbatches,
                          r.layout.schedule == schedule::ScheduleKind::kInterleaved1F1B
                              ? fmt::format(", v={}", p.vpp)
                              : "",
                          FormatPercent(closed))
            : ""));
  } else {
    s.sentences.push_back("No pipeline, so no bubble: every GPU computes the whole step.");
  }
  const double exposed =
      t.tp_comm_s + t.cp_comm_s + t.ep_comm_s + t.pp_comm_s + t.dp_comm_s + t.fsdp_comm_s;
  std::vector<std::string> parts;
  for (const Part& part : Overheads(t)) {
    if (part.s > 0 && std::string(part.name) != "the pipeline bubble" &&
        std::string(part.name) != "the optimizer step" &&
        std::string(part.name) != kContentionPart && std::string(part.name) != kOffloadPart) {
      parts.push_back(fmt::format("{} {}", part.name, FormatSeconds(part.s)));
    }
  }
  s.sentences.push_back(fmt::format("Exposed communication: {} per step ({} of the step){}{}.",
                                    FormatSeconds(exposed), FormatPercent(exposed / t.step_s),
                                    parts.empty() ? "" : ": ", fmt::join(parts, ", ")));
  if (const int64_t n = CpuOffloadLayersFor(req, r.layout); n > 0) {
    s.sentences.push_back(fmt::format(
        "Activation offloading: the first {} layers' activations, {} per microbatch, go to host "
        "memory after their forward and come back before their backward over the {} host link; "
        "the compute waits {} per step for what the copies' windows cannot hide, where "
        "recomputing them would redo their forward.",
        n, FormatGiB(r.memory.worst().offloaded_bytes), FormatRate(req.gpu.host_link_bytes_per_s),
        FormatSeconds(t.offload_s)));
  }
  const double headroom = r.memory.usable_bytes - r.memory.worst().total_bytes;
  s.sentences.push_back(fmt::format("Memory: {} per GPU of {} usable, {} {}.",
                                    FormatGiB(r.memory.worst().total_bytes),
                                    FormatGiB(r.memory.usable_bytes), FormatGiB(std::abs(headroom)),
                                    headroom >= 0 ? "to spare" : "over: it does not fit"));
  const double extra =
      r.model_flops_per_step > 0 ? r.hardware_flops_per_step / r.model_flops_per_step - 1 : 0;
  if (r.layout.recompute != model::Recompute::kNone) {
    s.sentences.push_back(
        fmt::format("Recomputation ({}) buys that memory with {} more FLOPs than the model needs "
                    "(HFU {} against MFU {}).",
                    model::RecomputeName(r.layout.recompute), FormatPercent(extra),
                    FormatPercent(r.hfu), FormatPercent(r.mfu)));
  }
  s.numbers = {{"bubble_s", t.bubble_s, "s"},
               {"bubble_fraction", r.bubble_fraction, "fraction"},
               {"exposed_comm_s", exposed, "s"},
               {"tp_comm_s", t.tp_comm_s, "s"},
               {"cp_comm_s", t.cp_comm_s, "s"},
               {"ep_comm_s", t.ep_comm_s, "s"},
               {"pp_comm_s", t.pp_comm_s, "s"},
               {"dp_comm_s", t.dp_comm_s, "s"},
               {"fsdp_comm_s", t.fsdp_comm_s, "s"},
               {"contention_s", t.contention_s, "s"},
               {"memory_headroom_bytes", headroom, "bytes"},
               {"recompute_extra_flops_fraction", extra, "fraction"}};
  if (best != nullptr && best->layout.ToString() != r.layout.ToString()) {
    const double ratio = r.time.step_s / best->time.step_s;
    s.sentences.push_back(
        fmt::format("Against the planner's best, {} ({} per step, {:.0f} tokens/s, MFU {}), this "
                    "layout {} {:.2f}x {}.",
                    best->layout.ToString(), FormatSeconds(best->time.step_s), best->tokens_per_s,
                    FormatPercent(best->mfu), r.memory.fits ? "is" : "would be, if it fit,",
                    ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "slower" : "faster"));
    s.numbers.push_back({"best_step_s", best->time.step_s, "s"});
    s.numbers.push_back({"step_time_vs_best", ratio, "ratio"});
  }
}

void Measurement(const PlanRequest& req, const PlanResult& r, Section& s) {
  s.sentences.push_back(fmt::format(
      "Profile a few steady-state steps (Nsight Systems, or the PyTorch profiler with NCCL kernels "
      "visible). "
      "Expect a step of {} ({:.0f} tokens/s, {:.1f} model TFLOP/s per GPU, MFU {} counting 6N plus "
      "attention "
      "FLOPs and not recompute); within about 10-15% confirms the model, far off means one term "
      "below is wrong.",
      FormatSeconds(r.time.step_s), r.tokens_per_s, r.model_tflops_per_gpu, FormatPercent(r.mfu)));
  // Which way the model leans for this framework and GPU, and whether the MFU is above every
  // published run on this GPU (plan/validate.h): what the expected step is worth.
  if (const plan::GroupSpread* g =
          plan::SpreadFor(plan::BuiltinGroupSpreads(), req.framework, req.gpu.name)) {
    s.sentences.push_back("What the model is worth here: " + plan::GroupSpreadText(*g) + ".");
  }
  if (const std::string above = plan::AbovePublishedText(
          plan::BuiltinPublishedMfuFor(req.gpu.name, req.precision), r.mfu);
      !above.empty()) {
    s.sentences.push_back(above +
                          ": a measured step longer than expected is the likelier outcome.");
  }
  // One line per kind of collective (first item of each group and collective).
  std::vector<std::string> seen, keys;
  for (const CommItem& it : r.comm.items) {
    const std::string key = it.group + "/" + std::string(collective::CollectiveName(it.collective));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    s.sentences.push_back(
        fmt::format("{} on {} ({} GPUs, {} messages): expect busbw near {} (nccl-tests' "
                    "convention) and {} per call; a "
                    "busbw well below that means the group crosses a slower link than {}.",
                    collective::CollectiveName(it.collective), it.group, it.group_size,
                    FormatSize(it.message_bytes), FormatRate(it.estimate.busbw_bytes_per_s),
                    FormatSeconds(it.estimate.time_s), LinkPhrase(req.cluster, it.link)));
    s.numbers.push_back(
        {CollectiveKey(it, keys) + "_busbw_bytes_per_s", it.estimate.busbw_bytes_per_s, "bytes/s"});
  }
  if (r.layout.parallel.pp > 1) {
    s.sentences.push_back(
        fmt::format("Bubble: on the busiest pipeline rank the gaps between compute kernels should "
                    "add up to about {} per step "
                    "(fraction {}); a larger idle share points at imbalance between stages or at "
                    "send/recv latency.",
                    FormatSeconds(r.time.bubble_s), FormatPercent(r.bubble_fraction)));
  }
  s.sentences.push_back(
      fmt::format("Memory: torch.cuda.max_memory_allocated should peak near {} on pipeline rank {} "
                  "(InfraLens keeps {} aside for "
                  "the CUDA context, NCCL buffers and fragmentation).",
                  FormatGiB(r.memory.worst().total_bytes), r.memory.worst().rank,
                  FormatGiB(req.reserve_bytes)));
  s.numbers.insert(s.numbers.begin(),
                   {{"expected_step_s", r.time.step_s, "s"},
                    {"expected_tokens_per_s", r.tokens_per_s, "tokens/s"},
                    {"expected_mfu", r.mfu, "fraction"},
                    {"expected_bubble_fraction", r.bubble_fraction, "fraction"},
                    {"expected_peak_memory_bytes", r.memory.worst().total_bytes, "bytes"}});
}

}  // namespace

Explanation Explain(const PlanRequest& req, const PlanResult& chosen, const PlanResult* best) {
  Explanation e;
  e.title =
      fmt::format("{} on {} x {} ({}, {} nodes of {}), global batch {} x {} tokens", req.model.name,
                  req.gpus(), req.gpu.name, req.cluster.name, req.cluster.num_nodes,
                  req.cluster.node.gpus_per_node, req.global_batch, chosen.memory.seq_len);
  e.layout = chosen.layout.ToString();
  e.planner_best = best != nullptr && best->layout.ToString() == e.layout;
  e.problem = {"problem", "Problem", {}, {}};
  e.mechanism = {"mechanism", "Mechanism", {}, {}};
  e.communication = {"communication", "Communication", {}, {}};
  e.tradeoff = {"tradeoff", "Tradeoff", {}, {}};
  e.measurement = {"measurement", "Measurement", {}, {}};
  Problem(req, chosen, e.problem);
  Mechanism(req, chosen, e.mechanism);
  Communication(req, chosen, e.communication);
  Tradeoff(req, chosen, best, e.tradeoff);
  Measurement(req, chosen, e.measurement);
  return e;
}

std::string RenderExplanationMarkdown(const Explanation& e) {
  std::string out = fmt::format("# {}\n\n", e.title);
  if (!e.question.empty()) out += fmt::format("**Question.** {}\n\n", e.question);
  out += fmt::format("**Layout.** {}{}\n", e.layout, e.planner_best ? " (the planner's best)" : "");
  for (const Section* s : e.sections()) {
    out += fmt::format("\n## {}\n\n", s->title);
    for (const auto& sentence : s->sentences) out += "- " + sentence + "\n";
  }
  return out;
}

void WriteQuantities(JsonWriter& w, std::string_view key, const std::vector<Quantity>& numbers) {
  w.Key(key).BeginArray();
  for (const Quantity& q : numbers) {
    w.BeginObject().Field("name", q.name).Field("value", q.value).Field("unit", q.unit).EndObject();
  }
  w.EndArray();
}

std::string RenderExplanationJson(const Explanation& e) {
  JsonWriter w;
  w.BeginObject();
  w.Field("title", e.title);
  if (!e.question.empty()) w.Field("question", e.question);
  w.Field("layout", e.layout).Field("planner_best", e.planner_best);
  w.Key("sections").BeginArray();
  for (const Section* s : e.sections()) {
    w.BeginObject();
    w.Field("name", s->name).Field("title", s->title);
    w.Field("sentences", s->sentences);
    WriteQuantities(w, "numbers", s->numbers);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace infralens::lab
