// The step-time model and the search. Each term's source is named where it is computed; the
// efficiency constants are global per GPU generation (never per model or per row) and are listed
// with their provenance in docs/planner.md.
#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>

#include "plan/cpu_offload.h"
#include "plan/fp8_cast.h"
#include "plan/fsdp_copy.h"
#include "plan/fsdp_timeline.h"
#include "plan/gemm_time.h"
#include "plan/sm_contention.h"
#include "schedule/generate_cache.h"
#include "sim/simulator.h"

namespace infralens::plan {

bool RunsFp8(const PlanRequest& req) {
  return req.precision == Precision::kFp8 && req.gpu.fp8_flops_per_s > 0;
}

Layout LayoutOf(int tp, int pp, int dp, int cp, int ep, int zero_stage, int vpp,
                int64_t micro_batch, schedule::ScheduleKind schedule, model::Recompute recompute) {
  Layout l;
  l.parallel.tp = tp;
  l.parallel.pp = pp;
  l.parallel.dp = dp;
  l.parallel.cp = cp;
  l.parallel.ep = ep;
  l.parallel.zero_stage = zero_stage;
  l.parallel.vpp = vpp;
  l.parallel.sequence_parallel = tp > 1;
  l.micro_batch = micro_batch;
  l.schedule = schedule;
  l.recompute = recompute;
  return l;
}

std::string Layout::ToString() const {
  const ParallelConfig& p = parallel;
  std::string out = fmt::format("tp={} pp={}", p.tp, p.pp);
  if (p.vpp > 1) out += fmt::format(" vpp={}", p.vpp);
  out += fmt::format(" dp={}", p.dp);
  if (p.cp > 1) out += fmt::format(" cp={}", p.cp);
  if (p.ep > 1) out += fmt::format(" ep={}", p.ep);
  if (p.zero_stage > 0) out += fmt::format(" zero={}", p.zero_stage);
  if (p.sequence_parallel) out += " sp";
  if (p.first_stage_layers > 0) out += fmt::format(" first={}", p.first_stage_layers);
  if (p.last_stage_layers > 0) out += fmt::format(" last={}", p.last_stage_layers);
  if (p.embedding_in_split) out += " emb-in-split";
  if (p.loss_in_split) out += " loss-in-split";
  if (!p.layout.empty()) out += fmt::format(" layout={}", p.layout);
  out += fmt::format(" {}", model::RecomputeName(recompute));
  if (recompute == model::Recompute::kSelective && recompute_modules &&
      *recompute_modules != model::RecomputeModules{}) {
    // Megatron's names, commas between them: one word in the layout's line.
    std::string names = model::RecomputeModulesName(*recompute_modules);
    std::ranges::replace(names, ' ', ',');
    out += "=" + names;
  }
  out += fmt::format(" mb={}", micro_batch);
  if (p.pp > 1) out += fmt::format(" {}", schedule::Info(schedule).name);
  return out;
}

model::RecomputeModules RecomputeModulesOf(const PlanRequest& req, const Layout& lay) {
  return lay.recompute_modules.value_or(req.recompute_modules);
}

namespace {

// ---- Device rates ----------------------------------------------------------------------------

// Achieved rates: the datasheet peaks times the efficiencies of data/hw/efficiency.csv (each
// value's source is beside it there), or of the user's --efficiency file over it.
struct Rates {
  double peak_flops_per_s;
  GemmKernel gemm;       // the linear layers' GEMMs, at the request's precision
  GemmKernel bf16_gemm;  // BF16, for materialised attention's BMMs
  // The output layer's and the MoE router's GEMMs: BF16 where the FP8 recipe keeps them so
  // (Transformer Engine's, see RatesFor), else as `gemm`.
  GemmKernel head_gemm;
  double hbm_bytes_per_s;        // achieved
  double flash_efficiency;       // fused attention kernels over 8k keys, of the BF16 peak
  double flash_half_seq;         // their half-rate key length (AttentionSeqScale)
  double flash_half_head_dim;    // their half-rate head dimension (AttentionHeadDimScale)
  double attn_peak_flops_per_s;  // attention's own peak: BF16 (see RatesFor)
  DeviceEfficiency device;       // the table's rows for this GPU (NCCL's channels among them)
};

Rates RatesFor(const PlanRequest& req) {
  const hw::Gpu& gpu = req.gpu;
  Rates r;
  const bool fp8 = RunsFp8(req);
  r.peak_flops_per_s = fp8 ? gpu.fp8_flops_per_s : gpu.bf16_flops_per_s;
  const EfficiencyTable& table = req.efficiency ? *req.efficiency : EfficiencyTable::Builtin();
  const DeviceEfficiency e = table.For(gpu, fp8 ? Precision::kFp8 : Precision::kBf16);
  r.device = e;
  r.gemm = GemmKernelFor(gpu, e, fp8);
  r.hbm_bytes_per_s = e.hbm * gpu.hbm_bytes_per_s;
  // Attention's s-dependent products stay in BF16 under FP8 training: Transformer Engine's FP8
  // recipes cover the linear layers, and FP8 dot-product attention is opt-in
  // (TransformerConfig.fp8_dot_product_attention = False, megatron/core/transformer/
  // transformer_config.py). So attention runs at the BF16 peak and the BF16 efficiency.
  r.attn_peak_flops_per_s = gpu.bf16_flops_per_s;
  const DeviceEfficiency bf16 = table.For(gpu, Precision::kBf16);
  r.flash_efficiency = req.flash_attention_2 ? bf16.attention_fa2 : bf16.attention;
  r.flash_half_seq = req.flash_attention_2 ? bf16.attention_fa2_half_seq : bf16.attention_half_seq;
  r.flash_half_head_dim =
      req.flash_attention_2 ? bf16.attention_fa2_half_head_dim : bf16.attention_half_head_dim;
  // The output layer and the MoE router stay BF16 too: Megatron-Core's GPTModel builds the output
  // layer as tensor_parallel.ColumnParallelLinear, not a Transformer Engine module, and calls it
  // outside the decoder's fp8_autocast (megatron/core/models/gpt/gpt_model.py; the autocast wraps
  // TransformerBlock.forward, megatron/core/transformer/transformer_block.py, get_fp8_context in
  // megatron/core/fp8_utils.py, NVIDIA/Megatron-LM d98e8a6); the router's gating is a plain
  // torch linear (router_gating_linear, megatron/core/transformer/moe/router.py). torchtitan's
  // Float8 converter converts every nn.Linear its filter_fqns (default empty) does not name: as
  // the linear layers there.
  r.bf16_gemm = GemmKernelFor(gpu, bf16, false);
  r.head_gemm = req.fp8_transformer_engine ? r.bf16_gemm : r.gemm;
  return r;
}

// A stage time past the simulator's range (sim::kMaxCostMs per microbatch) comes from a constant
// so small that a time overflows: a user's efficiency row (the built-in ones are measured) or a
// link rate. The error names that input, never the simulator's own --f or --p2p, which this
// command does not take (issue 26): of the efficiencies that side of the stage uses, the one
// furthest below its built-in value. `compute` says which side overflowed.
Status StageTimeOutOfRange(const PlanRequest& req, bool compute, double worst_ms) {
  const hw::Gpu& gpu = req.gpu;
  const bool fp8 = RunsFp8(req);
  const Precision prec = fp8 ? Precision::kFp8 : Precision::kBf16;
  const EfficiencyTable& table = req.efficiency ? *req.efficiency : EfficiencyTable::Builtin();
  const DeviceEfficiency e = table.For(gpu, prec), b = EfficiencyTable::Builtin().For(gpu, prec);
  const DeviceEfficiency e16 = table.For(gpu, Precision::kBf16);
  const DeviceEfficiency b16 = EfficiencyTable::Builtin().For(gpu, Precision::kBf16);
  struct Candidate {
    const char* name;
    double value, builtin;
  };
  std::vector<Candidate> candidates;
  if (compute) {
    candidates = {{"gemm", e.gemm, b.gemm},
                  {req.flash_attention_2 ? "attention_fa2" : "attention",
                   req.flash_attention_2 ? e16.attention_fa2 : e16.attention,
                   req.flash_attention_2 ? b16.attention_fa2 : b16.attention},
                  {"hbm", e.hbm, b.hbm}};
  } else {
    // The links' rows are the user's only (0: the cluster's own value, cluster/cluster.h).
    if (e.scale_up_link > 0) candidates.push_back({"scale_up_link", e.scale_up_link, 1});
    if (e.scale_out_link > 0) candidates.push_back({"scale_out_link", e.scale_out_link, 1});
  }
  const Candidate* low = nullptr;
  for (const Candidate& c : candidates) {
    if (c.value < c.builtin && (low == nullptr || c.value / c.builtin < low->value / low->builtin))
      low = &c;
  }
  const std::string what = fmt::format(
      "a {} time of {:g} ms per microbatch on one pipeline stage, past the simulator's {:g} ms",
      compute ? "compute" : "communication", worst_ms, sim::kMaxCostMs);
  if (low != nullptr) {
    return InvalidArgument(fmt::format("‹efficiency›: {} {:g} for {} (built in: {:g}) gives {}",
                                       low->name, low->value, gpu.name, low->builtin, what));
  }
  if (!compute) {
    return InvalidArgument(
        fmt::format("‹cluster› {}: its link rates give {}", req.cluster.name, what));
  }
  return InvalidArgument(fmt::format("{} on {} gives {}: split it further (more tp, pp or GPUs)",
                                     req.model.name, gpu.name, what));
}

double MemSeconds(const Rates& r, double bytes) { return bytes / r.hbm_bytes_per_s; }

// ---- Per-layer costs --------------------------------------------------------------------------

struct LayerCost {
  double fwd_s = 0;        // compute of one forward, one microbatch
  double bwd_s = 0;        // compute of its backward (input + weight gradients)
  double wgrad_s = 0;      // the weight-gradient GEMMs, part of bwd_s (the W of split backward)
  double recompute_s = 0;  // extra forward work before backward
  double tp_fwd_s = 0, tp_bwd_s = 0, tp_recompute_s = 0;
  double ep_fwd_s = 0, ep_bwd_s = 0, ep_recompute_s = 0;
  double cp_fwd_exposed_s = 0, cp_bwd_exposed_s = 0;
  double hardware_flops = 0;  // executed per microbatch (forward, backward, recompute)
};

struct CommTimes {
  // One TP call of each role. Without SP: one all-reduce (tp_rs_s), no all-gathers. Under SP: a
  // reduce-scatter and the all-gathers of the forward (its inputs, and a recompute's) and of the
  // backward (the output gradients, the inputs gathered again), each in BF16 or in FP8 as the
  // framework casts it (CommPlanConfig::sp_gathers_fp8_*).
  double tp_rs_s = 0;
  double tp_ag_fwd_s = 0, tp_ag_bwd_s = 0;
  // The attention's own calls: its forward all-gather and its input gradient's reduce-scatter
  // in the backward. The h-wide calls above, but MLA's latents where the model has MLA
  // (kTpSpGatherLatents, kTpSpScatterLatents).
  double tp_ag_attn_fwd_s = 0, tp_rs_attn_bwd_s = 0;
  // The attention's inputs gathered again in the backward (PlanRequest::sp_backward_regather): the
  // backward's h-wide all-gather, MLA's latents where the model has MLA (kTpSpRegatherLatents).
  double tp_regather_attn_s = 0;
  double ep_call_s = 0;                                    // one all-to-all
  cluster::LinkClass ep_link = cluster::LinkClass::kNone;  // the outermost class its group crosses
  // With PlanRequest::ep_overlap: the share of a rank's forward and backward chunks that have no
  // partner to overlap with (EpUnpairedShare); 1 without the overlap.
  double ep_unpaired = 1;
  // The whole ring per layer; under PlanRequest::cp_all_gather the forward's all-gather and the
  // backward's, and one send of the K and V gradients (cp_grad_step_s, one per block).
  double cp_fwd_s = 0, cp_bwd_s = 0, cp_grad_step_s = 0;
  double p2p_s = 0;  // one PP send
};

}  // namespace

double EagerElementwiseBytesPerToken(const model::Model& m, bool moe_layer, int tp, bool sp) {
  const double h = static_cast<double>(m.hidden);
  const double t = std::max(1, tp);
  const double norms = 2 * 32.0 * h / (sp && tp > 1 ? t : 1.0);
  if (!m.gated_mlp) return norms;
  const double heads = static_cast<double>(std::max<int64_t>(1, m.num_heads));
  const double kv = m.is_mla() ? heads : static_cast<double>(m.num_kv_heads);
  const double rope = 16.0 * static_cast<double>(model::QkHeadDim(m)) * (heads + kv) / t;
  const double ffn =
      static_cast<double>(moe_layer ? m.expert_ffn_hidden * m.top_k : m.ffn_hidden) / t;
  return norms + rope + 4.0 * ffn;
}

double ProjectionGradSumBytesPerToken(const model::Model& m, bool moe_layer, bool eager) {
  const double h = static_cast<double>(m.hidden);
  const double attn = m.is_mla() ? 0 : 2;  // q, k and v: two gradients added to the first
  double mlp = 0;                          // the gate's and the up projection's: one
  if (m.gated_mlp) {
    if (!moe_layer || !m.is_moe()) {
      mlp = 1;
    } else {
      mlp = (m.num_shared_experts > 0 ? 1 : 0) + static_cast<double>(m.top_k);
    }
  }
  return (eager ? 6.0 : 2.0) * h * (attn + mlp);
}

double RopeBytesPerToken(const model::Model& m, int tp) {
  if (m.learned_positions > 0) return 0;
  const double heads = static_cast<double>(std::max<int64_t>(1, m.num_heads));
  const double kv = m.is_mla() ? heads : static_cast<double>(m.num_kv_heads);
  return 4.0 * static_cast<double>(model::QkHeadDim(m)) * (heads + kv) / std::max(1, tp);
}

namespace {

// The attention's tensors per token on one TP rank, in elements: the queries (and dq), keys,
// values, and the output (and dout). Key-value heads are the query heads under MLA (its K and V
// are expanded per head) and for a model that names no KV-head count.
struct AttentionElements {
  double q = 0, k = 0, v = 0, o = 0;
  bool gqa = false;  // fewer key-value heads than query heads
};
AttentionElements AttentionElementsPerToken(const model::Model& m, int tp) {
  const double t = std::max(1, tp);
  const double heads = static_cast<double>(std::max<int64_t>(1, m.num_heads));
  const double kv_heads =
      m.is_mla() || m.num_kv_heads <= 0 ? heads : static_cast<double>(m.num_kv_heads);
  const double qk = static_cast<double>(model::QkHeadDim(m));
  const double vd = static_cast<double>(model::VHeadDim(m));
  return {heads * qk / t, kv_heads * qk / t, kv_heads * vd / t, heads * vd / t, kv_heads < heads};
}

}  // namespace

CpRingMergeBytes CpRingMergeBytesPerToken(const model::Model& m, int tp, int cp) {
  if (cp <= 1) return {};
  const AttentionElements e = AttentionElementsPerToken(m, tp);
  const double kv = e.k + e.v, c = static_cast<double>(cp);
  // The counts are derived in planner.h, kernel by kernel of AttnFuncWithCPAndKVP2P.
  return {4 * kv + (2 + 6 * c) * e.o, (6 * c - 2) * e.q + (5 * c + 8) * kv};
}

QkvLayoutCopyBytes QkvLayoutCopyBytesPerToken(const model::Model& m, int tp, bool fused_projections,
                                              bool fused_attention, bool flash_attention_2) {
  if (!fused_projections || !fused_attention || m.is_mla()) return {};
  const auto [q, k, v, o, gqa] = AttentionElementsPerToken(m, tp);
  const bool rotary = m.learned_positions == 0;
  QkvLayoutCopyBytes b;
  b.outside_attention = gqa ? 4 * q : 0.0;
  const double layout_fwd = b.outside_attention + (rotary ? 4 * v : 0.0);
  const double split_bwd = gqa || rotary ? 4 * (q + k + v) : 0.0;
  if (!flash_attention_2) {
    b.forward = layout_fwd;
    b.backward = split_bwd;
  } else if (!gqa && !rotary && model::QkHeadDim(m) == 128 && model::VHeadDim(m) == 128) {
    b.forward = b.backward = 12 * q + 4 * o;  // _PrepareQKVForFA and the output's transpose
  } else {
    b.forward = layout_fwd + 4 * (q + k + v) + 4 * o;
    b.backward = 4 * (q + k + v) + 4 * o;
  }
  return b;
}

double EmbeddingGradBytesPerMicrobatch(const model::Model& m, int tp, int zero_stage,
                                       bool fp32_gradients) {
  const double elements =
      static_cast<double>(m.vocab) / std::max(1, tp) * static_cast<double>(m.hidden);
  const double buffer = fp32_gradients ? 4.0 : 2.0;
  const double accumulate = zero_stage >= 3 ? 0.0 : 2 * buffer + 2;
  return elements * (2 + accumulate);
}

double MoePermuteBytesPerToken(const model::Model& m, int tp, bool sp, int ep, bool hierarchical) {
  if (m.num_experts <= 0 || m.top_k <= 0) return 0;
  const double h = static_cast<double>(m.hidden);
  const double k = static_cast<double>(m.top_k);
  const double shard = sp && tp > 1 ? static_cast<double>(tp) : 1.0;
  const double permute = 4.0 * h * (k + 1) / shard;
  const bool sorted = !hierarchical && m.num_experts / std::max(1, ep) > 1;
  return permute + (sorted ? 8.0 * h * k : 0.0);
}

SpRechunkCopies SpRechunkCopiesPerLayer(const PlanRequest& req, model::Recompute recompute, int tp,
                                        bool sp) {
  SpRechunkCopies n;
  if (!req.sp_rechunk_copies || !sp || tp <= 1) return n;
  if (req.tp_overlap) {
    n.backward_scatters = req.tp_overlap_bwd_reduce_scatter ? 0 : 2;
    return n;
  }
  n.forward_gathers = n.forward_scatters = 2;
  n.backward_gathers = n.backward_scatters = 2;
  if (recompute == model::Recompute::kOpSac) n.sac_gathers = n.sac_scatters = 1;
  return n;
}

SpFp8Gathers SpGathersFp8(const PlanRequest& req, const Layout& lay) {
  const bool gathers_fp8 = RunsFp8(req) && lay.parallel.sequence_parallel && lay.parallel.tp > 1;
  return {.forward = gathers_fp8, .backward = gathers_fp8 && req.fp8_transformer_engine};
}

Fp8CastBytes Fp8CastBytesPerToken(const model::Model& m, bool moe_layer, int tp, bool sp,
                                  bool transformer_engine) {
  const double t = std::max(1, tp);
  const double h = static_cast<double>(m.hidden);
  const double heads = static_cast<double>(std::max<int64_t>(1, m.num_heads));
  const double kv = m.is_mla() ? heads : static_cast<double>(m.num_kv_heads);
  const double q = heads * static_cast<double>(model::QkHeadDim(m));
  const double kv_width = 2 * kv * static_cast<double>(model::QkHeadDim(m));
  const double copies = moe_layer ? static_cast<double>(std::max<int64_t>(1, m.top_k)) : 1.0;
  const double f = static_cast<double>(moe_layer ? m.expert_ffn_hidden : m.ffn_hidden);
  const double fc1_out = m.gated_mlp ? 2 * f : f;
  Fp8CastBytes b;
  if (!transformer_engine) {
    b.forward = 4.0 * ((h + q) + copies * (h + f)) / t;
    b.backward = 4.0 * ((q + kv_width + h) + copies * (fc1_out + h)) / t;
    return b;
  }
  const bool gathered = sp && tp > 1;
  // A norm-fed input (QKV's; FC1's in a dense layer): the norm kernel quantizes its output
  // (TE LayerNormLinear with_quantized_norm), 1 byte less than BF16 per element of the rank's
  // own tokens (1 / t of them under SP), and its FP8 transpose for the weight gradient is a
  // separate kernel, read 1 + write 1 per element of the (gathered) input (TE
  // common/normalization/rmsnorm/rmsnorm_api.cpp "Compute FP8 transpose if required"; under SP
  // layernorm_linear.py gathers the FP8 rows and makes the transpose in the backward: charged
  // with the forward here all the same).
  const double norm_fed = 2.0 * h - h / (gathered ? t : 1.0);
  // A row-parallel GEMM's output gradient (h wide): under SP each rank casts its own tokens
  // (read 2, write 1), all-gathers FP8 and transposes the gathered rows (read 1, write 1)
  // (TE module/base.py grad_output_preprocess, gather_along_first_dim with the quantizer);
  // otherwise one cast_transpose of the whole gradient, 4 bytes per element.
  const double row_grad = gathered ? 3.0 * h / t + 2.0 * h : 4.0 * h;
  if (moe_layer) {
    // Routed tokens reach the experts' grouped GEMMs as BF16 and are cast there (GroupedLinear).
    b.forward = norm_fed + 4.0 * q / t + 4.0 * copies * (h + f) / t;
    b.backward = 4.0 * (q + kv_width) / t + row_grad + 4.0 * copies * (fc1_out + h) / t;
  } else {
    b.forward = 2 * norm_fed + 4.0 * (q + f) / t;
    b.backward = 4.0 * (q + kv_width + fc1_out) / t + 2 * row_grad;
  }
  return b;
}

double Fp8WeightCastBytes(const std::vector<LinearGemm>& linears) {
  double params = 0;
  for (const LinearGemm& l : linears) {
    if (!l.router) params += LinearWeights(l);
  }
  return 4.0 * params;
}

double EpDispatchSmShare(const PlanRequest& req) {
  // Megatron-Core's transformer_config.py: moe_deepep_num_sms = 20 ("Number of SMs to use for
  // DeepEP"); HybridEP's own count has been 16, 24 or "the DeepEP default" across versions, so
  // the DeepEP figure stands for both. NCCL's all-to-all (the alltoall dispatcher) is charged
  // apart (EpSmShare).
  constexpr double kDispatchSms = 20;
  if (!req.ep_hierarchical_dispatch || req.gpu.sms <= 0) return 0;
  return std::min(1.0, kDispatchSms / req.gpu.sms);
}

namespace {

// The SMs the EP all-to-all holds while it runs beside compute: DeepEP's or HybridEP's 20
// (EpDispatchSmShare), or NCCL's channels for the alltoall dispatcher's all-to-all, which NCCL
// runs as grouped sends and receives over its channels, one CTA each (plan/sm_contention.h; the
// collective's channel counts stand in for the peer-to-peer ones, 32 and 16 in the same logs).
double EpSmShare(const PlanRequest& req, const DeviceEfficiency& device, cluster::LinkClass link) {
  return req.ep_hierarchical_dispatch ? EpDispatchSmShare(req)
                                      : CollectiveSmShare(req.gpu, device, link);
}

}  // namespace

double EpOverlapExposed(double comm_s, double compute_s, double unpaired) {
  const double u = std::clamp(unpaired, 0.0, 1.0);
  return u * comm_s + (1 - u) * std::max(0.0, comm_s - compute_s);
}

double EpUnpairedShare(int pp, int vpp, int64_t microbatches) {
  const int64_t chunks = std::max<int64_t>(1, microbatches) * std::max(1, vpp);
  // Megatron-Core's warm-up forwards on the first pipeline rank (the most):
  // (pp - 1) x 2 + (vpp - 1) x pp interleaved, pp - 1 without interleaving (schedules.py,
  // get_pp_rank_microbatches); at least the first forward and the last backward have no partner.
  const int64_t warmup =
      vpp > 1 ? int64_t{pp - 1} * 2 + int64_t{vpp - 1} * pp : int64_t{std::max(0, pp - 1)};
  return std::min(1.0,
                  static_cast<double>(std::max<int64_t>(1, warmup)) / static_cast<double>(chunks));
}

namespace {

// ZeRO-3 gathered once per step under a pipeline (PlanRequest::fsdp_once_per_step_with_pp).
bool FsdpOncePerStep(const PlanRequest& req, const Layout& lay) {
  return req.fsdp_once_per_step_with_pp && lay.parallel.zero_stage >= 3 && lay.parallel.pp > 1 &&
         lay.parallel.dp * lay.parallel.cp > 1;
}

// One call of each ZeRO-3 / FSDP kind per layer, summed over dense and expert weights, from the
// comm plan; the step's reduce-scatters; the layers gathered per microbatch (backward gathers)
// and per step (forward gathers); the largest share of the SMs one of the calls holds
// (CollectiveSmShare).
struct FsdpCalls {
  double gather_fwd_s = 0, gather_bwd_s = 0, scatter_s = 0, scatter_step_s = 0;
  int64_t layers = 0, step_layers = 0;
  double sm_share = 0;
};

FsdpCalls FsdpCallsOf(const PlanRequest& req, const DeviceEfficiency& device, const CommPlan& comm,
                      int64_t mb) {
  FsdpCalls c;
  for (const CommItem& it : comm.items) {
    switch (it.kind) {
      case CommItemKind::kFsdpReduceScatter:
        c.scatter_s += it.estimate.time_s;
        c.scatter_step_s += it.time_per_step_s;
        break;
      case CommItemKind::kFsdpGatherBackward:
        c.gather_bwd_s += it.estimate.time_s;
        c.layers = std::max<int64_t>(c.layers, it.count / std::max<int64_t>(1, mb));
        break;
      case CommItemKind::kFsdpGatherForward:
        c.gather_fwd_s += it.estimate.time_s;
        c.step_layers = std::max<int64_t>(c.step_layers, it.count);
        break;
      default:
        continue;
    }
    c.sm_share = std::max(c.sm_share, CollectiveSmShare(req.gpu, device, it.link));
  }
  return c;
}

// ZeRO-3 layer by layer (FSDP2's unit per block, Megatron FSDP's, DeepSpeed's where a layer is
// the unit): what one step exposes, and what the compute loses beside the calls it hides
// (plan/sm_contention.h). PyTorch FSDP2 prefetches the next unit's all-gather while the current
// unit computes (DeepSpeed stage3.py's prefetch does the same): in the forward a layer's gather
// hides behind the previous layer's forward (twice with full recompute, whose recomputed forward
// gathers again); in the backward the next layer's gather and the previous layer's reduce-scatter
// share the links while a layer's backward runs, so their sum must hide. Each microbatch's first
// gather has nothing to hide behind, nor has the step's last reduce-scatter.
struct FsdpCharge {
  double exposed_s = 0, contention_s = 0;
};
FsdpCharge FsdpPerLayerCharge(const FsdpCalls& c, const LayerCost& layer, bool full_recompute,
                              int64_t mb) {
  const double fwd_calls = full_recompute ? 2.0 : 1.0;
  const double per_layer = fwd_calls * std::max(0.0, c.gather_fwd_s - layer.fwd_s) +
                           std::max(0.0, c.gather_bwd_s + c.scatter_s - layer.bwd_s);
  const double n = static_cast<double>(mb) * static_cast<double>(c.layers);
  FsdpCharge out;
  out.exposed_s = n * per_layer + static_cast<double>(mb) * c.gather_fwd_s + c.scatter_s;
  out.contention_s =
      n * (fwd_calls * ContendedOverlapSeconds(c.gather_fwd_s, layer.fwd_s, c.sm_share) +
           ContendedOverlapSeconds(c.gather_bwd_s + c.scatter_s, layer.bwd_s, c.sm_share));
  return out;
}

// ZeRO-3 fetched per parameter (PlanRequest::fsdp_max_live_params, DeepSpeed): one microbatch's
// gathers and reduce-scatters over the rank's `layers` dense layers, what they leave exposed and
// what they hold the links, from the timeline of its linears (plan/fsdp_timeline.h). Each linear is
// a fetch unit: its own gather call, its GEMMs, and after the first linear the layer's other
// forward compute (the attention follows the QKV projection); in the backward, run in reverse with
// every linear gathered again, the other compute follows the output projection's (the attention's
// backward precedes the QKV's), and a reduce-scatter closes each `bucket_params` of gradients
// (DeepSpeed's reduce_bucket_size, stage3.py __add_grad_to_ipg_bucket; the rest after the last
// linear; 0: one per linear). Full recompute runs the forward's gathers a second time. `estimate`
// times calls of given parameter counts (EstimateFsdpCalls).
using FsdpCallEstimator =
    std::function<StatusOr<std::vector<FsdpCall>>(const std::vector<double>& params)>;
// What the fetch units' calls cost one microbatch: the seconds their timelines expose, and the
// seconds the calls hold the links (gathers and reduce-scatters, summed).
struct ParameterFetch {
  double exposed_s = 0, link_s = 0;
};
StatusOr<ParameterFetch> ParameterFetchSeconds(const std::vector<LinearGemm>& linears,
                                               const GemmKernel& g, double tokens,
                                               const LayerCost& layer, bool full_recompute,
                                               int64_t layers, double max_live_params,
                                               double bucket_params,
                                               const FsdpCallEstimator& estimate) {
  const size_t n = linears.size();
  if (n == 0 || layers < 1) return ParameterFetch{};
  std::vector<double> sizes;  // the linears', then each bucket's in backward order
  double fwd_gemm = 0, bwd_gemm = 0;
  std::vector<GemmTimes> times;
  for (const LinearGemm& l : linears) {
    sizes.push_back(LinearWeights(l));
    times.push_back(LinearGemmTimes(g, {l}, tokens));
    fwd_gemm += times.back().fwd_s;
    bwd_gemm += times.back().dgrad_s + times.back().wgrad_s;
  }
  std::vector<size_t> closes;  // per backward unit: the index in `sizes` of the bucket it closes
  double pending = 0;
  for (int64_t l = 0; l < layers; ++l) {
    for (size_t k = n; k-- > 0;) {
      pending += sizes[k];
      const bool last = l + 1 == layers && k == 0;
      if (pending >= bucket_params || last) {
        closes.push_back(sizes.size());
        sizes.push_back(pending);
        pending = 0;
      } else {
        closes.push_back(0);  // none (index 0 is a linear, never a bucket)
      }
    }
  }
  // Distinct sizes once: a layer's buckets repeat.
  std::vector<double> distinct = sizes;
  std::ranges::sort(distinct);
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  ASSIGN_OR_RETURN(const std::vector<FsdpCall> calls, estimate(distinct));
  auto timed = [&](double params) -> const FsdpCall& {
    return calls[static_cast<size_t>(std::ranges::lower_bound(distinct, params) -
                                     distinct.begin())];
  };
  const double fwd_rest = std::max(0.0, layer.fwd_s - fwd_gemm);
  const double bwd_rest =
      std::max(0.0, layer.bwd_s + (full_recompute ? 0.0 : layer.recompute_s) - bwd_gemm);
  std::vector<FsdpUnit> fwd, bwd;
  for (int64_t l = 0; l < layers; ++l) {
    for (size_t i = 0; i < n; ++i) {
      fwd.push_back(
          {sizes[i], timed(sizes[i]).gather_s, times[i].fwd_s + (i == 0 ? fwd_rest : 0.0), 0});
    }
  }
  size_t u = 0;
  for (int64_t l = 0; l < layers; ++l) {
    for (size_t k = n; k-- > 0; ++u) {
      FsdpUnit unit{sizes[k], timed(sizes[k]).gather_s, times[k].dgrad_s + times[k].wgrad_s, 0};
      if (k == std::min<size_t>(1, n - 1)) unit.compute_s += bwd_rest;
      if (closes[u] != 0) unit.reduce_s = timed(sizes[closes[u]]).reduce_s;
      bwd.push_back(unit);
    }
  }
  const FsdpPrefetch prefetch{max_live_params};
  const double passes = full_recompute ? 2.0 : 1.0;
  ParameterFetch out;
  out.exposed_s = passes * FsdpExposedSeconds(fwd, prefetch) + FsdpExposedSeconds(bwd, prefetch);
  const auto link_seconds = [](const std::vector<FsdpUnit>& units) {
    double sum = 0;
    for (const FsdpUnit& u : units) sum += u.gather_s + u.reduce_s;
    return sum;
  };
  out.link_s = passes * link_seconds(fwd) + link_seconds(bwd);
  return out;
}

// The GEMMs next to each of a layer's sequence-parallel collectives, as TP overlap pairs them:
// the attention's input all-gather feeds its input projections (qkv; MLA's q, q_down, q_up,
// kv_down, kv_up), its reduce-scatter drains the output projection (proj); the MLP's feed fc1
// (a MoE layer's shared expert: shared_fc1) and drain fc2 (shared_fc2). Transformer Engine's
// userbuffers overlap only its own linear modules (transformer_engine/pytorch/module/base.py
// initialize_ub: qkv, proj, fc1, fc2), PyTorch's pass only a matmul that consumes the gather or
// feeds the scatter (torch/_inductor/fx_passes/micro_pipeline_tp.py): a MoE layer's router and
// routed experts sit behind the token dispatcher, next to no TP collective.
struct TpNeighbours {
  GemmTimes attn_in, attn_out, mlp_in, mlp_out;
};
// LinearGemmTimes of the GEMMs among `linears` whose LinearGemm::name is one of `names`.
GemmTimes NamedGemmTimes(const GemmKernel& g, const std::vector<LinearGemm>& linears,
                         std::initializer_list<std::string_view> names, double tokens,
                         TpOverlapChunks chunks = {}, TpOverlapSmsTaken sms_taken = {}) {
  std::vector<LinearGemm> group;
  std::ranges::copy_if(linears, std::back_inserter(group), [&](const LinearGemm& l) {
    return std::ranges::find(names, l.name) != names.end();
  });
  return LinearGemmTimes(g, group, tokens, chunks, sms_taken);
}

TpNeighbours TpOverlapNeighbours(const GemmKernel& g, const std::vector<LinearGemm>& linears,
                                 double tokens, TpOverlapChunks chunks,
                                 TpOverlapSmsTaken sms_taken) {
  const auto times = [&](std::initializer_list<std::string_view> names) {
    return NamedGemmTimes(g, linears, names, tokens, chunks, sms_taken);
  };
  return {times({"qkv", "q", "q_down", "q_up", "kv_down", "kv_up"}), times({"proj"}),
          times({"fc1", "shared_fc1"}), times({"fc2", "shared_fc2"})};
}

// Whether `lay` recomputes `module` under selective recompute (PlanRequest::recompute_modules).
bool RecomputesSelectively(const PlanRequest& req, const Layout& lay,
                           model::RecomputeModule module) {
  return lay.recompute == model::Recompute::kSelective && RecomputeModulesOf(req, lay).has(module);
}

LayerCost CostOfLayer(const PlanRequest& req, const Layout& lay, const Rates& rates,
                      const CommTimes& comm, int64_t seq, bool moe) {
  const model::Model& m = req.model;
  const ParallelConfig& p = lay.parallel;
  const double t = p.tp;
  const double T =
      static_cast<double>(lay.micro_batch) * static_cast<double>(seq) / p.cp;  // tokens
  const double h = static_cast<double>(m.hidden);
  LayerCost c;
  // Matmuls (2 FLOPs per weight per token), split over TP, each GEMM of the layer from its own
  // (m, n, k): tiles in waves over the SMs, a memory floor for skinny shapes (plan/gemm_time.h);
  // the backward's dgrad and wgrad GEMMs with their own shapes. Routed experts run as one grouped
  // GEMM of this rank's experts over their expected rows. Under TP overlap the GEMMs next to a
  // sequence-parallel collective run in chunks of the tokens, one per step of the collective (the
  // decomposition that lets each step hide behind a chunk, see below): smaller GEMMs.
  // The router's GEMM runs at head_gemm's precision (BF16 under Transformer Engine's FP8).
  std::vector<LinearGemm> linears = LayerLinears(m, moe, p.tp, p.ep, req.fused_projections), router;
  std::ranges::copy_if(linears, std::back_inserter(router), &LinearGemm::router);
  std::erase_if(linears, [](const LinearGemm& l) { return l.router; });
  // Under TP overlap the steps each collective is split into (LinearGemmTimes): an all-gather one
  // per rank (Transformer Engine's ring exchange, num_splits tp; PyTorch's one copy per peer), a
  // reduce-scatter the framework's (PlanRequest::tp_overlap_rs_splits).
  const bool overlapped = req.tp_overlap && p.tp > 1;
  const TpOverlapChunks chunks =
      overlapped
          ? TpOverlapChunks{p.tp, req.tp_overlap_rs_splits > 0 ? req.tp_overlap_rs_splits : p.tp}
          : TpOverlapChunks{};
  // The SMs the userbuffers kernels hold from the GEMMs they overlap (PlanRequest).
  const TpOverlapSmsTaken sms_taken =
      overlapped ? TpOverlapSmsTaken{req.tp_overlap_rs_sms, req.tp_overlap_bulk_sms}
                 : TpOverlapSmsTaken{};
  GemmTimes gemms = LinearGemmTimes(rates.gemm, linears, T, chunks, sms_taken);
  const GemmTimes router_gemms = LinearGemmTimes(rates.head_gemm, router, T);
  gemms.fwd_s += router_gemms.fwd_s;
  gemms.dgrad_s += router_gemms.dgrad_s;
  gemms.wgrad_s += router_gemms.wgrad_s;
  gemms.fwd_flops += router_gemms.fwd_flops;
  const double fwd_flops = gemms.fwd_flops;
  const double fwd = gemms.fwd_s;
  const double bwd_gemm = gemms.dgrad_s + gemms.wgrad_s;
  // Attention's s-dependent products (QK^T, attention x V), fused as FlashAttention does.
  // (AttentionFlopsPerToken counts every layer and the whole s x s matrix; each layer does the
  // same share.) A fused kernel skips the blocks a causal mask hides entirely: half the products
  // (Dao 2023, FlashAttention-2 sec. 3.1.1; its benchmarks, and NeMo's FLOP calculator with
  // causal_self_attn, count causal attention as half), so the efficiency of
  // data/hw/efficiency.csv applies to that half. Materialised attention computes every score and
  // masks afterwards.
  const double attn_flops =
      T * model::AttentionFlopsPerToken(m, seq) / static_cast<double>(m.num_layers) / t;
  double attn_exec_flops = req.fused_attention && m.causal ? attn_flops / 2 : attn_flops;
  // The kernel's rate over this many keys per query: the sequence, or under context parallelism
  // a ring step's share of it (each step attends the local queries to s / cp keys); the
  // efficiency is stated over 8k keys (plan::AttentionSeqScale).
  const double attn_keys = static_cast<double>(seq) / p.cp;
  // The rate is stated at head dimension 128 (data/hw/efficiency.csv); each score's products cost
  // 2 (d_qk + d_v) FLOPs, so the head's width is their mean (MLA: (192 + 128) / 2).
  const double head_dim = static_cast<double>(model::QkHeadDim(m) + model::VHeadDim(m)) / 2;
  const double head_scale = AttentionHeadDimScale(head_dim, rates.flash_half_head_dim);
  const auto fused_seconds = [&](double flops, double keys) {
    return flops / (rates.attn_peak_flops_per_s * rates.flash_efficiency * head_scale *
                    AttentionSeqScale(keys, rates.flash_half_seq));
  };
  double attn_fwd = fused_seconds(attn_exec_flops, attn_keys);
  // Sliding-window layers (Model::sliding_window): a fused kernel visits only the key blocks
  // inside the window (FlashAttention-2's window_size, cuDNN's sliding window in Transformer
  // Engine), min(i, w) keys for query i; materialised attention computes every score and masks
  // them, so it is charged in full below. The kernel's rate is the causal kernel's over the
  // sequence whose mean keys per query match (2 w for w << s): the fixed cost per query tile is
  // amortised over far fewer keys. The layer's cost here is the mean over the model's full and
  // windowed layers (a pipeline stage's mix differs by at most one layer).
  if (const int64_t windowed = model::WindowedLayers(m);
      windowed > 0 && req.fused_attention && m.causal) {
    const double keys_per_query = model::CausalKeysPerQuery(seq, m.sliding_window);
    const double window_flops = attn_flops * keys_per_query / static_cast<double>(seq);
    const double window_s = fused_seconds(window_flops, std::min(attn_keys, 2 * keys_per_query));
    const double layers = static_cast<double>(m.num_layers);
    const double full = layers - static_cast<double>(windowed);
    attn_fwd = (full * attn_fwd + static_cast<double>(windowed) * window_s) / layers;
    attn_exec_flops =
        (full * attn_exec_flops + static_cast<double>(windowed) * window_flops) / layers;
  }
  if (!req.fused_attention) {
    // Materialised attention (Megatron-LM before FlashAttention): QK^T and attention x V as
    // batched GEMMs with the head dimension as inner size, and the s x s scores written and read
    // through HBM: QK^T writes them, the fused scale-mask-softmax reads and writes, dropout
    // reads, writes and stores a mask, attention x V reads: about 13 bytes per score.
    // The BMMs are outside Transformer Engine's FP8 linear layers: BF16. Per (sequence, head):
    // QK^T is (s / cp) x s over the head dimension, attention x V (s / cp) x d_v over s; their
    // HBM traffic is the 13 bytes per score, so only their compute time is charged here.
    const double scores = T * static_cast<double>(seq) * static_cast<double>(m.num_heads) / t;
    const double heads =
        static_cast<double>(lay.micro_batch) * static_cast<double>(m.num_heads) / t;
    const double rows = static_cast<double>(seq) / p.cp, keys = static_cast<double>(seq);
    attn_fwd = GemmComputeSeconds(rates.bf16_gemm,
                                  {rows, keys, static_cast<double>(model::QkHeadDim(m)), heads}) +
               GemmComputeSeconds(rates.bf16_gemm,
                                  {rows, static_cast<double>(model::VHeadDim(m)), keys, heads}) +
               MemSeconds(rates, 13 * scores);
  }
  // Memory-bound ops, bytes per token (Korthikanti et al. 2022 count 34 sbh bytes stored per
  // layer; the fused elementwise kernels read and write about that much): layer norms, dropout
  // and residual adds over h are replicated on every TP rank unless SP splits them; the MLP
  // activation (GeLU, or SwiGLU's gate) is split by TP.
  const double ffn_elems = static_cast<double>(moe ? m.expert_ffn_hidden * m.top_k : m.ffn_hidden);
  const double act_bytes = (m.gated_mlp ? 6.0 : 4.0) * ffn_elems / t;
  const double replicated = 22.0 * h / (p.sequence_parallel && p.tp > 1 ? t : 1.0);
  const double eager_bytes = req.eager_elementwise
                                 ? EagerElementwiseBytesPerToken(m, moe, p.tp, p.sequence_parallel)
                                 : 0.0;
  const double elementwise_fwd = MemSeconds(rates, T * (replicated + act_bytes + eager_bytes));
  // Rotary embeddings (RopeBytesPerToken): the same bytes forward and backward.
  const double rope_s = MemSeconds(rates, T * RopeBytesPerToken(m, p.tp));
  // Transformer Engine's ring attention's copies and output corrections around its kernels
  // (CpRingMergeBytesPerToken); PyTorch's all-gather path is not counted.
  const CpRingMergeBytes cp_merge =
      req.cp_all_gather ? CpRingMergeBytes{} : CpRingMergeBytesPerToken(m, p.tp, p.cp);
  const double cp_merge_fwd = MemSeconds(rates, T * cp_merge.forward);
  const double cp_merge_bwd = MemSeconds(rates, T * cp_merge.backward);
  // The fused QKV GEMM's output copied into the attention kernel's layouts
  // (QkvLayoutCopyBytesPerToken).
  const QkvLayoutCopyBytes qkv_copy = QkvLayoutCopyBytesPerToken(
      m, p.tp, req.fused_projections, req.fused_attention, req.flash_attention_2);
  const double qkv_copy_fwd = MemSeconds(rates, T * qkv_copy.forward);
  const double qkv_copy_bwd = MemSeconds(rates, T * qkv_copy.backward);
  const double qkv_copy_in_attention =
      MemSeconds(rates, T * (qkv_copy.forward - qkv_copy.outside_attention));
  // The routed tokens' permutation around the experts (MoePermuteBytesPerToken), forward and
  // backward alike; a full recompute repeats the forward's (it is in fwd_s).
  const double permute_s =
      moe ? MemSeconds(rates, T * MoePermuteBytesPerToken(m, p.tp, p.sequence_parallel, p.ep,
                                                          req.ep_hierarchical_dispatch))
          : 0.0;

  // FP8 casts of the GEMMs' inputs and output gradients (Fp8CastBytesPerToken), at HBM speed;
  // under Transformer Engine the weights' casts once per step (Fp8WeightCastBytes), a
  // microbatch's share of them here.
  double cast_fwd = 0, cast_bwd = 0, weight_cast = 0;
  const bool runs_fp8 = RunsFp8(req);
  if (runs_fp8) {
    const Fp8CastBytes cast =
        Fp8CastBytesPerToken(m, moe, p.tp, p.sequence_parallel, req.fp8_transformer_engine);
    cast_fwd = MemSeconds(rates, T * cast.forward);
    cast_bwd = MemSeconds(rates, T * cast.backward);
    if (req.fp8_transformer_engine) {
      const double mbs =
          static_cast<double>(std::max<int64_t>(1, lay.microbatches(req.global_batch)));
      weight_cast = MemSeconds(rates, Fp8WeightCastBytes(linears)) / mbs;
    }
  }
  // SP's re-chunking copies (SpRechunkCopiesPerLayer), each the gathered tensor read and written:
  // BF16 (2 bytes), but the forward's all-gathers under torchao's Float8 move FP8 (1 byte:
  // torchtitan 820504e parallelize_llama.py, "float8 all-gather with TP" through torchao's
  // Float8ColwiseParallel and PrepareFloat8ModuleInput for the tensorwise recipe). A full
  // recompute repeats the forward's through fwd_s below; op-level SAC's pair is added to its
  // recompute.
  const SpRechunkCopies rechunk =
      SpRechunkCopiesPerLayer(req, lay.recompute, p.tp, p.sequence_parallel);
  const double rechunk_s = MemSeconds(rates, 2 * T * h * kBf16Bytes);
  const SpFp8Gathers fp8_gathers = SpGathersFp8(req, lay);
  const double fp8_copy_s = MemSeconds(rates, 2 * T * h * kFp8Bytes);
  const double gather_s = fp8_gathers.forward ? fp8_copy_s : rechunk_s;
  const double bwd_gather_s = fp8_gathers.backward ? fp8_copy_s : rechunk_s;
  c.fwd_s = fwd + attn_fwd + cp_merge_fwd + qkv_copy_fwd + elementwise_fwd + rope_s + cast_fwd +
            permute_s + rechunk.forward_gathers * gather_s + rechunk.forward_scatters * rechunk_s;
  c.wgrad_s = gemms.wgrad_s;
  // dX and dW GEMMs. Attention's backward: a fused kernel recomputes the scores S = QK^T from the
  // saved logsumexp and runs five matmuls (S, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q)
  // against the forward's two, 2.5x its FLOPs (Dao 2023, FlashAttention-2 Algorithm 2; its
  // benchmarks/benchmark_flash_attention.py counts the backward as 2.5x the forward), at the
  // kernel's rate; materialised attention keeps P and runs four BMMs, 2x.
  const double attn_bwd_factor = req.fused_attention ? 2.5 : 2.0;
  // Separate projections' input gradients summed (ProjectionGradSumBytesPerToken).
  const double grad_sum_s =
      req.fused_projections
          ? 0.0
          : MemSeconds(rates, T * ProjectionGradSumBytesPerToken(m, moe, req.eager_elementwise));
  c.bwd_s = bwd_gemm + attn_bwd_factor * attn_fwd + cp_merge_bwd + qkv_copy_bwd +
            2 * elementwise_fwd + rope_s + cast_bwd + permute_s + grad_sum_s +
            rechunk.backward_gathers * bwd_gather_s + rechunk.backward_scatters * rechunk_s;
  c.hardware_flops = 3 * fwd_flops + (1 + attn_bwd_factor) * attn_exec_flops;
  if (lay.recompute == model::Recompute::kFull) {
    c.recompute_s = c.fwd_s;
    c.hardware_flops += fwd_flops + attn_exec_flops;
  } else if (lay.recompute == model::Recompute::kSelective) {
    const model::RecomputeModules mods = RecomputeModulesOf(req, lay);
    if (mods.has(model::kRecomputeCoreAttn)) {
      // The attention core (Korthikanti et al. sec. 5); FlashAttention's backward does this
      // anyway. Under context parallelism the recomputed core is the ring, its corrections
      // included, and the layout copies inside the attention module are made again.
      c.recompute_s += attn_fwd + cp_merge_fwd + qkv_copy_in_attention;
      c.hardware_flops += attn_exec_flops;
    }
    // The other modules (model::RecomputeModules): each one's forward GEMMs again (the router at
    // its own precision), and its elementwise bytes. A module's FP8 casts are not repeated here.
    const auto again = [&](std::initializer_list<std::string_view> names) {
      const GemmTimes g = NamedGemmTimes(rates.gemm, linears, names, T, chunks, sms_taken);
      const GemmTimes r = NamedGemmTimes(rates.head_gemm, router, names, T);
      c.recompute_s += g.fwd_s + r.fwd_s;
      c.hardware_flops += g.fwd_flops + r.fwd_flops;
    };
    // One norm's forward: its BF16 input read and output written (2h + 2h bytes per token),
    // sequence-split under SP.
    const double norm_s =
        MemSeconds(rates, T * 4 * h / (p.sequence_parallel && p.tp > 1 ? t : 1.0));
    const double act_s = MemSeconds(rates, T * act_bytes);
    if (!moe && mods.has(model::kRecomputeMlp)) {
      again({"fc1", "fc2"});
      c.recompute_s += norm_s + act_s;
    }
    if (moe && mods.has(model::kRecomputeMoe)) {
      again({"router", "shared_fc1", "shared_fc2", "expert_fc1", "expert_fc2"});
      c.recompute_s += act_s + permute_s;
    } else if (moe) {
      if (mods.has(model::kRecomputeSharedExperts)) again({"shared_fc1", "shared_fc2"});
      if (mods.has(model::kRecomputeMoeAct)) c.recompute_s += act_s;
    }
    if (mods.has(model::kRecomputeLayernorm)) {
      c.recompute_s += norm_s * ((moe ? 1 : 0) + (m.is_mla() ? 1 : 0));
    }
    if (m.is_mla() && mods.has(model::kRecomputeMlaUpProj)) {
      again({"q_up", "q", "kv_up"});
      c.recompute_s += rope_s;
    }
  } else if (lay.recompute == model::Recompute::kOpSac) {
    // torchtitan's op-level SAC (model.h) runs the unsaved matmuls again (wk, wo, and w3 or w2:
    // model::OpSacRecomputeFlopsPerToken) and the elementwise ops between them; the saved
    // attention output is not recomputed.
    const double flops =
        T * model::OpSacRecomputeFlopsPerToken(m) / static_cast<double>(m.num_layers) / t;
    // At the layer's GEMMs' average rate (a subset of the same GEMMs).
    c.recompute_s = (fwd_flops > 0 ? fwd * flops / fwd_flops : 0) + elementwise_fwd +
                    rechunk.sac_gathers * gather_s + rechunk.sac_scatters * rechunk_s;
    c.hardware_flops += flops;
  }
  // After the recompute: a recomputed forward finds the weights' FP8 copies cached.
  c.fwd_s += weight_cast;
  // ZeRO-3 / FSDP's copies on the compute stream (plan/fsdp_copy.h), where the framework makes
  // them and the weights are sharded: after the recompute too, since FSDP2 gathers once for the
  // recompute and the backward together (the recompute runs inside the unit's backward, after
  // its pre-backward all-gather).
  if (p.zero_stage >= 3 && p.dp * p.cp > 1 && (req.fsdp_copy_out || req.fsdp_copy_in)) {
    // The unit's weights on this rank, the router's included. Routed experts are sharded over
    // their expert-data-parallel replicas only (dp / ep x cp): with none, they stay whole on the
    // rank and nothing is gathered for them.
    const bool experts_sharded = p.dp / std::max(1, p.ep) * p.cp > 1;
    double weights = 0;
    for (const std::vector<LinearGemm>* group : {&linears, &router}) {
      for (const LinearGemm& l : *group) {
        if (experts_sharded || !l.name.starts_with("expert_")) weights += LinearWeights(l);
      }
    }
    const double reduce_bytes = req.fp32_gradients ? 4.0 : 2.0;
    const FsdpCopyBytes copy =
        FsdpOncePerStep(req, lay)
            ? FsdpCopyBytesPerLayerOncePerStep(
                  weights, req.fsdp_copy_out, req.fsdp_copy_in, reduce_bytes,
                  static_cast<double>(std::max<int64_t>(1, lay.microbatches(req.global_batch))))
            : FsdpCopyBytesPerLayer(weights, req.fsdp_copy_out, req.fsdp_copy_in, reduce_bytes);
    c.fwd_s += MemSeconds(rates, copy.forward);
    c.bwd_s += MemSeconds(rates, copy.backward);
  }
  // Communication on the critical path: TP twice per layer each way (collective engine times).
  if (p.tp > 1) {
    const double ag_f = comm.tp_ag_fwd_s, ag_b = comm.tp_ag_bwd_s, rs = comm.tp_rs_s;
    // The attention's input gather and its gradient's scatter (MLA's latents: CommTimes).
    const double ag_attn = comm.tp_ag_attn_fwd_s, rs_attn = comm.tp_rs_attn_bwd_s;
    c.tp_fwd_s = ag_attn + ag_f + 2 * rs;
    c.tp_bwd_s = 2 * ag_b + rs_attn + rs;
    // Sequence parallelism's backward as Megatron-Core and Transformer Engine run it
    // (PlanRequest::sp_backward_regather): each column-parallel linear (qkv, a dense MLP's fc1)
    // gathers its input again for its wgrad GEMM, launched before its dgrad GEMM and waited on
    // after it, and reduce-scatters its input gradient while its wgrad GEMM runs (Megatron-Core
    // tensor_parallel/layers.py backward: async_op=True, "we rely on
    // CUDA_DEVICE_MAX_CONNECTIONS=1 to ensure that the gather is scheduled before the input
    // gradient computation"; Transformer Engine layernorm_linear.py backward,
    // reduce_scatter_along_first_dim(dgrad, async_op=True) waited after the wgrad GEMM). The
    // row-parallel linears' backward all-gathers (the gradients of the forward's reduce-scatters)
    // and any other reduce-scatter stay in line.
    // The column-parallel linears that gather their inputs again, by side: the attention's (qkv;
    // MLA's up projections, on the latents) and a dense MLP's fc1. Each gather hides under its
    // own linears' dgrad GEMM and each reduce-scatter under their wgrad GEMM, never under the
    // other side's.
    std::vector<LinearGemm> col_attn, col_mlp;
    if (req.sp_backward_regather && ag_b > 0) {
      const bool mla = m.is_mla();
      std::ranges::copy_if(linears, std::back_inserter(col_attn), [mla](const LinearGemm& l) {
        return l.name == "qkv" || (mla && (l.name == "q_up" || l.name == "q" || l.name == "kv_up"));
      });
      std::ranges::copy_if(linears, std::back_inserter(col_mlp),
                           [](const LinearGemm& l) { return l.name == "fc1"; });
    }
    const double regather_attn = comm.tp_regather_attn_s;
    if (!req.tp_overlap) {
      const auto side = [&](const std::vector<LinearGemm>& col, double gather_s, double rs_s) {
        if (col.empty()) return rs_s;  // nothing gathered again: the reduce-scatter in line
        const GemmTimes cover = LinearGemmTimes(rates.gemm, col, T);
        return std::max(0.0, gather_s - cover.dgrad_s) + std::max(0.0, rs_s - cover.wgrad_s);
      };
      c.tp_bwd_s = 2 * ag_b + side(col_attn, regather_attn, rs_attn) + side(col_mlp, ag_b, rs);
    }
    if (lay.recompute == model::Recompute::kFull) c.tp_recompute_s = ag_attn + ag_f + 2 * rs;
    // op-level SAC keeps the reduce-scatter outputs but gathers the two sequence-parallel
    // inputs again: about one all-gather + reduce-scatter pair.
    if (lay.recompute == model::Recompute::kOpSac) c.tp_recompute_s = ag_f + rs;
    // Selective recompute of a dense MLP or a MoE layer gathers its sequence-parallel input
    // again and reduce-scatters its output again.
    if (RecomputesSelectively(req, lay, moe ? model::kRecomputeMoe : model::kRecomputeMlp)) {
      c.tp_recompute_s = ag_f + rs;
    }
    if (req.tp_overlap) {
      // TP communication overlapped with the GEMMs it feeds or drains (Megatron's
      // --tp-comm-overlap through Transformer Engine's userbuffers, torchtitan's async TP), each
      // collective behind its own neighbours (TpOverlapNeighbours), never behind the layer's
      // other GEMMs: the decomposition pipelines one collective with one GEMM (Wang et al.,
      // ASPLOS 2023). The SMs Transformer Engine's kernels hold while they do it are in the
      // GEMMs' time (LinearGemmTimes above).
      const TpNeighbours nb = TpOverlapNeighbours(rates.gemm, linears, T, chunks, sms_taken);
      // Split into steps, each hidden behind the GEMM chunk beside it: what stays exposed is the
      // step that cannot overlap (one of `steps`) and whatever exceeds the GEMM.
      const auto pipelined = [](double comm_s, double gemm_s, int steps) {
        return std::max(comm_s / steps, comm_s - gemm_s);
      };
      const int g_steps = chunks.gather, rs_steps = chunks.scatter;
      // Transformer Engine's bulk method (and Megatron-Core's async_op backward): the whole
      // collective runs beside the whole GEMM, exposed only beyond it.
      const auto bulk = [](double comm_s, double gemm_s) { return std::max(0.0, comm_s - gemm_s); };
      // The forward: the attention's and the MLP's input all-gathers feed their column-parallel
      // GEMMs, their reduce-scatters drain the row-parallel ones (without SP, ag is 0 and the
      // all-reduce drains the row-parallel GEMM).
      const double fwd_exposed = pipelined(ag_attn, nb.attn_in.fwd_s, g_steps) +
                                 pipelined(rs, nb.attn_out.fwd_s, rs_steps) +
                                 pipelined(ag_f, nb.mlp_in.fwd_s, g_steps) +
                                 pipelined(rs, nb.mlp_out.fwd_s, rs_steps);
      c.tp_fwd_s = fwd_exposed;
      // PyTorch's fused matmul + reduce-scatter sums the tp partials it received after its last
      // step (PlanRequest::tp_overlap_rs_reduce_after): the BF16 partials of the tokens read
      // (2 T h bytes) and this rank's shard written (2 T h / tp), on the compute stream, once per
      // fused reduce-scatter (proj's, and a dense MLP's or shared expert's fc2), again in a full
      // recompute.
      if (req.tp_overlap_rs_reduce_after && ag_f > 0) {
        const double fused = (nb.attn_out.fwd_s > 0 ? 1 : 0) + (nb.mlp_out.fwd_s > 0 ? 1 : 0);
        const double reduce_s = fused * MemSeconds(rates, kBf16Bytes * T * h * (1 + 1.0 / p.tp));
        c.fwd_s += reduce_s;
        if (lay.recompute == model::Recompute::kFull) c.recompute_s += reduce_s;
      }
      // The backward: the row-parallel GEMMs' output gradients are all-gathered into their dgrad
      // GEMMs (ring exchange in Transformer Engine, all-gather + matmul in PyTorch's pass). The
      // column-parallel side's input gradients are reduce-scattered under their wgrad GEMM by
      // Transformer Engine's bulk overlap and by Megatron-Core's async backward when it gathers
      // the input again (that gather under the dgrad GEMM); PyTorch's micro-pipeline TP
      // (PlanRequest::tp_overlap_bwd_reduce_scatter false) runs them alone.
      const auto column_side = [&](const GemmTimes& in, bool regathers, double gather_s,
                                   double rs_s) {
        const double gather = regathers ? bulk(gather_s, in.dgrad_s) : 0.0;
        const double scatter =
            req.tp_overlap_bwd_reduce_scatter || regathers ? bulk(rs_s, in.wgrad_s) : rs_s;
        return gather + scatter;
      };
      c.tp_bwd_s = pipelined(ag_b, nb.attn_out.dgrad_s, g_steps) +
                   pipelined(ag_b, nb.mlp_out.dgrad_s, g_steps) +
                   column_side(nb.attn_in, !col_attn.empty(), regather_attn, rs_attn) +
                   column_side(nb.mlp_in, !col_mlp.empty(), ag_b, rs);
      if (lay.recompute == model::Recompute::kFull) {
        c.tp_recompute_s = fwd_exposed;
      } else if (c.tp_recompute_s > 0) {
        c.tp_recompute_s = pipelined(c.tp_recompute_s, c.recompute_s, g_steps);
      }
    }
  }
  if (moe && p.ep > 1) {
    c.ep_fwd_s = 2 * comm.ep_call_s;
    c.ep_bwd_s = 2 * comm.ep_call_s;
    // A full recompute, or a selective one of the MoE layer, dispatches and combines again.
    if (lay.recompute == model::Recompute::kFull ||
        RecomputesSelectively(req, lay, model::kRecomputeMoe)) {
      c.ep_recompute_s = 2 * comm.ep_call_s;
    }
    if (comm.ep_unpaired < 1) {
      // 1F1B A2A overlap (PlanRequest::ep_overlap): a paired forward's all-to-all runs under its
      // partner backward's compute and the other way round (Megatron-Core's combined_1f1b
      // schedule); the unpaired share is exposed whole.
      const double comm_s = c.ep_fwd_s + c.ep_bwd_s + c.ep_recompute_s;
      const double exposed =
          EpOverlapExposed(comm_s, c.fwd_s + c.bwd_s + c.recompute_s, comm.ep_unpaired);
      // The all-to-all's kernels hold their SMs while they move tokens, so the compute they
      // overlap runs on the rest (EpSmShare): the hidden part costs that share of its time after
      // all.
      const double taken = (comm_s - exposed) * EpSmShare(req, rates.device, comm.ep_link);
      const double scale = comm_s > 0 ? (exposed + taken) / comm_s : 0;
      c.ep_fwd_s *= scale;
      c.ep_bwd_s *= scale;
      c.ep_recompute_s *= scale;
    }
  }
  if (p.cp > 1 && req.cp_all_gather) {
    // PyTorch's context_parallel (PlanRequest::cp_all_gather): each all-gather hides only behind
    // the first block's attention, a cp-th of the layer's (load-balanced causal blocks do equal
    // work: the local pair's causal square and each later step's half of a block pair); each
    // gradient send behind the next block's backward, the last behind nothing. A full recompute
    // gathers again, exposed as the forward's.
    const double block_fwd = attn_fwd / p.cp, block_bwd = attn_bwd_factor * attn_fwd / p.cp;
    c.cp_fwd_exposed_s = std::max(0.0, comm.cp_fwd_s - block_fwd);
    c.cp_bwd_exposed_s = std::max(0.0, comm.cp_bwd_s - block_bwd) +
                         (p.cp - 1) * std::max(0.0, comm.cp_grad_step_s - block_bwd) +
                         comm.cp_grad_step_s;
    if (lay.recompute == model::Recompute::kFull) c.cp_bwd_exposed_s += c.cp_fwd_exposed_s;
  } else if (p.cp > 1) {
    // Ring attention hides each step behind the attention of the block in hand.
    c.cp_fwd_exposed_s = std::max(0.0, comm.cp_fwd_s - attn_fwd);
    c.cp_bwd_exposed_s = std::max(0.0, comm.cp_bwd_s - 2 * attn_fwd);
  }
  return c;
}

// The output layer and loss on the last stage for T tokens: a vocab-parallel GEMM h x V/t
// (Korthikanti et al. sec. 4.3), whose backward runs two GEMMs of its own shapes, the input
// gradient (T x h over V/t) and the weight gradient (h x V/t over the T tokens: Megatron-Core's
// ColumnParallelLinear backward, tensor_parallel/layers.py, grad_output.matmul(weight) and
// grad_output.t().matmul(total_input)), and the loss's passes over the T x V/t logits as the
// framework's kernels make them (plan/loss.h).
struct OutputCost {
  double flops = 0;   // the forward GEMM's (each backward GEMM does as many)
  double gemm_s = 0;  // the forward GEMM's
  double dgrad_s = 0, wgrad_s = 0;
  double loss_fwd_s = 0, loss_bwd_s = 0;
  double fwd_s() const { return gemm_s + loss_fwd_s; }
  double bwd_s() const { return dgrad_s + wgrad_s + loss_bwd_s; }
};
OutputCost OutputLayerCost(const PlanRequest& req, const Rates& rates, double T, int tp) {
  const model::Model& m = req.model;
  const double vocab_share = static_cast<double>(m.vocab) / tp;
  const LogitBytes loss = CrossEntropyBytesPerLogit(req.cross_entropy);
  OutputCost c;
  c.flops = 2 * T * static_cast<double>(m.hidden) * vocab_share;
  const GemmShape forward{T, vocab_share, static_cast<double>(m.hidden)};
  c.gemm_s = GemmSeconds(rates.head_gemm, forward);
  c.dgrad_s = GemmSeconds(rates.head_gemm, DgradShape(forward));
  c.wgrad_s = GemmSeconds(rates.head_gemm, WgradShape(forward));
  c.loss_fwd_s = MemSeconds(rates, T * vocab_share * loss.forward);
  c.loss_bwd_s = MemSeconds(rates, T * vocab_share * loss.backward);
  return c;
}

// The input embedding's weight gradient per microbatch on the first stage
// (EmbeddingGradBytesPerMicrobatch), at HBM speed.
double EmbeddingGradSeconds(const PlanRequest& req, const Rates& rates, const Layout& lay) {
  return MemSeconds(
      rates, EmbeddingGradBytesPerMicrobatch(req.model, lay.parallel.tp, lay.parallel.zero_stage,
                                             req.fp32_gradients));
}

// Optimizer step: Adam reads and writes FP32 master weights and both moments (24 bytes) and
// reads the gradient and writes the BF16 weight (4-6 bytes) for each parameter it owns.
double OptimizerSeconds(const PlanRequest& req, const Layout& lay, const MemoryReport& mem,
                        const Rates& rates) {
  const RankMemory& worst = mem.worst();
  const double owned =
      worst.parameters / (lay.parallel.zero_stage >= 1 ? lay.parallel.dp * lay.parallel.cp : 1);
  return MemSeconds(rates, owned * (24 + 2 + (req.fp32_gradients ? 4 : 2)));
}

// What Evaluate and StepTimeLowerBound both derive from a layout: the device rates, the per-layer
// costs with communication times `ct`, the stages and their layers as Megatron-Core splits them
// (even, or the uneven forms: memory.h), and the tokens of one microbatch on one rank.
struct LayerSetup {
  Rates rates;
  LayerCost dense, moe;
  int P = 1, v = 1, S = 1;
  std::vector<int64_t> stage_layers;
  double T = 0;
};

StatusOr<LayerSetup> SetupLayers(const PlanRequest& req, const Layout& lay, const CommTimes& ct,
                                 int64_t seq) {
  const model::Model& m = req.model;
  LayerSetup ls;
  ls.rates = RatesFor(req);
  ls.dense = CostOfLayer(req, lay, ls.rates, ct, seq, false);
  ls.moe = m.is_moe() ? CostOfLayer(req, lay, ls.rates, ct, seq, true) : ls.dense;
  ls.P = lay.parallel.pp;
  ls.v = lay.parallel.vpp;
  ls.S = ls.P * ls.v;
  ASSIGN_OR_RETURN(ls.stage_layers, StageLayerCounts(m.num_layers, lay.parallel, ls.v));
  ls.T = static_cast<double>(lay.micro_batch) * static_cast<double>(seq) / lay.parallel.cp;
  return ls;
}

// Per stage and microbatch, what each action of the schedule simulator takes at least (seconds):
//   f        a forward (alone, or the forward half of an overlapped pair);
//   b        the whole backward (a B, an I and its W, or what a pair costs beyond its forward);
//   bi       the backward's part before the weight gradient (a B, an I, or a pair's remainder);
//   chain_f  a forward on the critical chain, alone or inside a pair;
//   chain_b  an input gradient (B or I) on the chain, alone or inside a pair.
struct StageBounds {
  std::vector<double> f, b, bi, chain_f, chain_b;
  explicit StageBounds(int S) : f(S), b(S), bi(S), chain_f(S), chain_b(S) {}
};

// A lower bound on the simulated makespan of `sched` with mb microbatches and `p2p` per hop
// between ranks. Per rank r with lowest stage s0, every stage runs each microbatch's forward and
// backward: busy for at least mb x (sum of its f + its stage count x its least b). Nothing on r
// starts before the forward chain of the stages below s0 ran once (head). And every F and B/I on
// r precedes the last input gradient of s0 (each is an ancestor of one of s0's), after which the
// gradient still crosses the stages below s0 (tail): the rank's F and B/I work, then the tail.
double PipelineLowerBound(const schedule::Schedule& sched, int64_t mb, const StageBounds& sb,
                          double p2p) {
  const int S = sched.num_stages();
  double lower = 0;
  for (int r = 0; r < sched.pp; ++r) {
    int lowest = S;
    int stages = 0;
    double sum_f = 0, min_b = std::numeric_limits<double>::infinity(), min_bi = min_b;
    for (int st = 0; st < S; ++st) {
      if (sched.stage_to_rank[st] != r) continue;
      lowest = std::min(lowest, st);
      ++stages;
      sum_f += sb.f[st];
      min_b = std::min(min_b, sb.b[st]);
      min_bi = std::min(min_bi, sb.bi[st]);
    }
    if (stages == 0) continue;
    double head = 0, tail = 0;
    for (int st = 0; st < lowest; ++st) {
      const double hop = sched.stage_to_rank[st] != sched.stage_to_rank[st + 1] ? p2p : 0.0;
      head += sb.chain_f[st] + hop;
      tail += sb.chain_b[st] + hop;
    }
    const double m = static_cast<double>(mb);
    lower = std::max(
        {lower, head + m * (sum_f + stages * min_b), head + m * (sum_f + stages * min_bi) + tail});
  }
  return lower;
}

// Fills the chain entries of `sb` from f, b and bi; with overlapped pairs (`pair_s[s]`: what a
// pair whose forward is stage s takes at least), a pair on the chain may be shorter than either
// half alone. Only DualPipeV's generator emits pairs (schedule/generators.cc).
void ChainBounds(const schedule::Schedule& sched, const std::vector<double>* pair_s,
                 StageBounds& sb) {
  const int S = sched.num_stages();
  std::vector<double> pair_min(static_cast<size_t>(sched.pp),
                               std::numeric_limits<double>::infinity());
  if (pair_s != nullptr) {
    for (int st = 0; st < S; ++st) {
      double& m = pair_min[static_cast<size_t>(sched.stage_to_rank[st])];
      m = std::min(m, (*pair_s)[st]);
    }
  }
  for (int st = 0; st < S; ++st) {
    const double pair = pair_min[static_cast<size_t>(sched.stage_to_rank[st])];
    sb.chain_f[st] = std::min(sb.f[st], pair);
    sb.chain_b[st] = std::min(sb.bi[st], pair);
  }
}

// The simulator sums the same terms in another order and in milliseconds: a relative margin far
// above their rounding (about 1e-16 per action) keeps a bound below the step it bounds.
constexpr double kBoundMargin = 1 - 1e-6;

// The first item of a kind (dense weights before expert weights, as BuildCommPlan adds them).
const CommItem* FindItem(const CommPlan& plan, CommItemKind kind) {
  for (const auto& it : plan.items) {
    if (it.kind == kind) return &it;
  }
  return nullptr;
}

}  // namespace

namespace {

MemoryConfig MemoryConfigFor(const PlanRequest& req, const Layout& lay);

// A recipe's offloading where Megatron-Core allows it, the user's everywhere (refused where it
// does not: EstimateMemory; where the host cannot hold it: EvaluateMemory).
int64_t OffloadLayersAsked(const PlanRequest& req, const Layout& lay) {
  const bool allowed = lay.parallel.pp == 1 && lay.recompute == model::Recompute::kNone;
  return req.cpu_offload_required || allowed ? req.cpu_offload_layers : 0;
}

// Whether the node's host memory holds the activations `mc` offloads (CheckCpuOffloadHostMemory);
// true where the memory model refuses the layout anyway (its own error says why).
bool HostHoldsOffload(const PlanRequest& req, const MemoryConfig& mc) {
  if (mc.cpu_offload_layers <= 0 || !(req.cluster.node.host_memory_bytes > 0)) return true;
  auto rep = EstimateMemory(req.model, mc);
  return !rep.ok() || CheckCpuOffloadHostMemory(mc.cpu_offload_layers, rep->worst().offloaded_bytes,
                                                req.cluster.node)
                          .ok();
}

}  // namespace

int64_t CpuOffloadLayersFor(const PlanRequest& req, const Layout& lay) {
  return MemoryConfigFor(req, lay).cpu_offload_layers;
}

namespace {

Status CheckLayout(const PlanRequest& req, const Layout& lay) {
  const ParallelConfig& p = lay.parallel;
  const int64_t gpus = int64_t{p.tp} * p.pp * p.dp * p.cp;
  if (gpus != req.gpus()) {
    return InvalidArgument(
        fmt::format("tp={} pp={} dp={} cp={} use {} GPUs, but the cluster has {}", p.tp, p.pp, p.dp,
                    p.cp, gpus, req.gpus()));
  }
  if (lay.micro_batch < 1)
    return InvalidArgument(fmt::format("‹micro_batch› {}: must be at least 1", lay.micro_batch));
  if (req.global_batch % (lay.micro_batch * p.dp) != 0 ||
      req.global_batch < lay.micro_batch * p.dp) {
    return InvalidArgument(
        fmt::format("‹global_batch› {}: must be a multiple of micro-batch x dp = {} x {} = {}",
                    req.global_batch, lay.micro_batch, p.dp, lay.micro_batch * p.dp));
  }
  return Status::Ok();
}

// The memory estimator's view of a layout as asked (vpp 0 still meaning the schedule's default).
MemoryConfig MemoryConfigFor(const PlanRequest& req, const Layout& lay) {
  MemoryConfig mc;
  mc.parallel = lay.parallel;
  mc.recompute = lay.recompute;
  mc.recompute_modules = RecomputeModulesOf(req, lay);
  mc.precision = req.precision;
  mc.fp32_gradients = req.fp32_gradients;
  mc.micro_batch = lay.micro_batch;
  mc.global_batch = req.global_batch;
  mc.seq_len = req.seq_len;
  mc.fused_attention = req.fused_attention;
  mc.sp_inputs_gathered = req.sp_inputs_gathered;
  mc.fsdp_once_per_step_with_pp = req.fsdp_once_per_step_with_pp;
  mc.fp8_transformer_engine = req.fp8_transformer_engine;
  mc.fp8_param_gather = req.fp8_param_gather;
  mc.master_weight_remainders = req.master_weight_remainders;
  mc.cpu_offload_layers = OffloadLayersAsked(req, lay);
  mc.schedule = lay.schedule;
  mc.hbm_bytes = req.gpu.hbm_bytes;
  mc.reserve_bytes = req.reserve_bytes;
  // A recipe's offloading runs only where the node's host memory holds it, as NeMo's variants
  // without it run; the user's is refused there (EvaluateMemory).
  if (!req.cpu_offload_required && !HostHoldsOffload(req, mc)) mc.cpu_offload_layers = 0;
  return mc;
}

}  // namespace

namespace {

// EvaluateMemory with the layout's memory configuration already derived (MemoryConfigFor), so
// that Evaluate derives it once.
StatusOr<PlanResult> EvaluateMemoryWith(const PlanRequest& req, const Layout& layout,
                                        const MemoryConfig& mc) {
  RETURN_IF_ERROR(CheckLayout(req, layout));
  PlanResult res;
  res.layout = layout;
  // The result names the modules it was evaluated with (Layout::ToString, exports, JSON); only
  // selective recompute reads a list.
  if (layout.recompute == model::Recompute::kSelective) {
    res.layout.recompute_modules = RecomputeModulesOf(req, layout);
  } else {
    res.layout.recompute_modules.reset();
  }
  // Memory (also validates heads, layers and experts against the degrees).
  ASSIGN_OR_RETURN(res.memory, EstimateMemory(req.model, mc));
  RETURN_IF_ERROR(CheckCpuOffloadHostMemory(mc.cpu_offload_layers,
                                            res.memory.worst().offloaded_bytes, req.cluster.node));
  res.layout.parallel.vpp = res.memory.vpp;
  return res;
}

}  // namespace

StatusOr<PlanResult> EvaluateMemory(const PlanRequest& req, const Layout& layout) {
  return EvaluateMemoryWith(req, layout, MemoryConfigFor(req, layout));
}

StatusOr<double> AverageComputeSeconds(const PlanRequest& req, const Layout& lay) {
  const int64_t seq = req.seq_len > 0 ? req.seq_len : req.model.seq_len;
  const int64_t per_step = lay.micro_batch * lay.parallel.dp;
  if (per_step < 1 || lay.parallel.pp < 1 || lay.parallel.vpp < 1) {
    return InvalidArgument("micro-batch, dp, pp and vpp must be at least 1");
  }
  ASSIGN_OR_RETURN(const LayerSetup ls, SetupLayers(req, lay, CommTimes{}, seq));
  double per_microbatch = 0;
  int64_t layer = 0;
  for (int st = 0; st < ls.S; ++st) {
    for (int64_t k = 0; k < ls.stage_layers[st]; ++k, ++layer) {
      const LayerCost& c = model::IsMoeLayer(req.model, layer) ? ls.moe : ls.dense;
      per_microbatch += c.fwd_s + c.bwd_s + c.recompute_s;
    }
  }
  return static_cast<double>(req.global_batch / per_step) * per_microbatch / ls.P;
}

StatusOr<double> StepTimeLowerBound(const PlanRequest& req, const PlanResult& mem) {
  const model::Model& m = req.model;
  const Layout& lay = mem.layout;  // vpp resolved by EvaluateMemory
  const int64_t seq = mem.memory.seq_len;
  const int64_t mb = mem.memory.microbatches;
  // The compute of each stage as Evaluate charges it, without communication (CostOfLayer's
  // communication terms are separate and non-negative, so zero times leave the compute as is).
  ASSIGN_OR_RETURN(const LayerSetup ls, SetupLayers(req, lay, CommTimes{}, seq));
  const Rates& rates = ls.rates;
  const LayerCost &dense = ls.dense, &moe = ls.moe;
  const int P = ls.P, v = ls.v, S = ls.S;
  const std::vector<int64_t>& stage_layers = ls.stage_layers;
  const double T = ls.T;
  const OutputCost out = OutputLayerCost(req, rates, T, lay.parallel.tp);
  // Per microbatch: forward; backward with recompute; the weight gradient's share of it.
  std::vector<double> f(S, 0.0), b(S, 0.0), w(S, 0.0);
  int64_t layer = 0;
  for (int st = 0; st < S; ++st) {
    for (int64_t k = 0; k < stage_layers[st]; ++k, ++layer) {
      const LayerCost& c = model::IsMoeLayer(m, layer) ? moe : dense;
      f[st] += c.fwd_s;
      b[st] += c.bwd_s + c.recompute_s;
      w[st] += c.wgrad_s;
    }
  }
  f[S - 1] += out.fwd_s();
  b[S - 1] += out.bwd_s();
  w[S - 1] += out.wgrad_s;
  const double embedding_grad_s = EmbeddingGradSeconds(req, rates, lay);
  b[0] += embedding_grad_s;
  w[0] += embedding_grad_s;
  ASSIGN_OR_RETURN(const std::shared_ptr<const schedule::Schedule> sched,
                   schedule::GenerateShared(lay.schedule, {P, v, static_cast<int>(mb)}));
  // Evaluate's stage costs add communication to these; its I is its B less this W; an overlapped
  // pair costs at least its forward stage's f + b.
  StageBounds sb(S);
  std::vector<double> pair(S);
  for (int st = 0; st < S; ++st) {
    sb.f[st] = f[st];
    sb.b[st] = b[st];
    sb.bi[st] = std::max(0.0, b[st] - w[st]);
    pair[st] = f[st] + b[st];
  }
  ChainBounds(*sched, lay.schedule == schedule::ScheduleKind::kDualPipeV ? &pair : nullptr, sb);
  return (PipelineLowerBound(*sched, mb, sb, 0.0) + OptimizerSeconds(req, lay, mem.memory, rates)) *
         kBoundMargin;
}

StatusOr<PlanResult> Evaluate(const PlanRequest& req, const Layout& layout,
                              const EvaluateOptions& opt) {
  const MemoryConfig mc = MemoryConfigFor(req, layout);
  ASSIGN_OR_RETURN(PlanResult res, EvaluateMemoryWith(req, layout, mc));
  const model::Model& m = req.model;
  Layout& lay = res.layout;
  const int64_t seq = res.memory.seq_len;
  const int64_t mb = res.memory.microbatches;

  // Communication: the collective engine on the links each group crosses, at the links'
  // efficiencies of --efficiency (scale_up_link, scale_out_link) where it has rows, else the
  // cluster's own (plan/efficiency.h). Every command that plans (plan, explain, worksheet,
  // validate, trace compare, the API) evaluates here.
  CommPlanConfig cc;
  cc.job = mc;
  cc.order = lay.order;
  cc.bucket_params = req.dp_bucket_params;
  cc.hierarchical_ep_dispatch = req.ep_hierarchical_dispatch;
  cc.sp_backward_regather = req.sp_backward_regather;
  // FP8 with sequence parallelism (CommPlanConfig::sp_gathers_fp8_*, SpGathersFp8).
  const SpFp8Gathers fp8_gathers = SpGathersFp8(req, lay);
  cc.sp_gathers_fp8_forward = fp8_gathers.forward;
  cc.sp_gathers_fp8_backward = fp8_gathers.backward;
  // DeepSpeed's per-parameter fetch (PlanRequest::fsdp_max_live_params), for dense models: MoE
  // layers' experts keep the per-layer model.
  cc.fsdp_per_parameter = req.fsdp_max_live_params > 0 && !m.is_moe();
  cc.tp_overlap = req.tp_overlap;
  cc.cp_all_gather = req.cp_all_gather;
  cc.cp_kv_repeated = req.cp_kv_repeated;
  cc.ep_overlap = req.ep_overlap && lay.schedule != schedule::ScheduleKind::kDualPipeV;
  cluster::Cluster linked = req.cluster;
  ApplyLinkEfficiency(req.efficiency ? *req.efficiency : EfficiencyTable::Builtin(), req.gpu,
                      &linked);
  ASSIGN_OR_RETURN(res.comm, BuildCommPlan(m, linked, cc));
  CommTimes ct;
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kTpAllReduce)) {
    ct.tp_rs_s = it->estimate.time_s;
  }
  if (const CommItem* rs = FindItem(res.comm, CommItemKind::kTpSpReduceScatter)) {
    ct.tp_rs_s = rs->estimate.time_s;
    const CommItem* bf16 = FindItem(res.comm, CommItemKind::kTpSpAllGather);
    const CommItem* fp8 = FindItem(res.comm, CommItemKind::kTpSpAllGatherFp8);
    const auto call_s = [&](bool in_fp8) {
      const CommItem* it = in_fp8 ? fp8 : bf16;
      return it ? it->estimate.time_s : 0.0;
    };
    ct.tp_ag_fwd_s = call_s(cc.sp_gathers_fp8_forward);
    ct.tp_ag_bwd_s = call_s(cc.sp_gathers_fp8_backward);
  }
  ct.tp_ag_attn_fwd_s = ct.tp_ag_fwd_s;
  ct.tp_rs_attn_bwd_s = ct.tp_rs_s;
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kTpSpGatherLatents)) {
    ct.tp_ag_attn_fwd_s = it->estimate.time_s;
  }
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kTpSpScatterLatents)) {
    ct.tp_rs_attn_bwd_s = it->estimate.time_s;
  }
  ct.tp_regather_attn_s = ct.tp_ag_bwd_s;
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kTpSpRegatherLatents)) {
    ct.tp_regather_attn_s = it->estimate.time_s;
  }
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kEpAllToAll)) {
    ct.ep_call_s = it->estimate.time_s;
    ct.ep_link = it->link;
    if (req.ep_overlap && lay.schedule != schedule::ScheduleKind::kDualPipeV) {
      ct.ep_unpaired = EpUnpairedShare(lay.parallel.pp, res.memory.vpp, mb);
    }
  }
  // A ring's steps add up to the layer's exchange; an all-gather is one call.
  const int cp_steps = req.cp_all_gather ? 1 : lay.parallel.cp - 1;
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kCpRingForward)) {
    ct.cp_fwd_s = it->estimate.time_s * cp_steps;
  }
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kCpRingBackward)) {
    ct.cp_bwd_s = it->estimate.time_s * cp_steps;
  }
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kCpGradRing)) {
    ct.cp_grad_step_s = it->estimate.time_s;
  }
  if (const CommItem* it = FindItem(res.comm, CommItemKind::kPpSendRecv))
    ct.p2p_s = it->estimate.time_s;

  // Per-stage costs for the schedule simulator.
  ASSIGN_OR_RETURN(const LayerSetup ls, SetupLayers(req, lay, ct, seq));
  const Rates& rates = ls.rates;
  const LayerCost &dense = ls.dense, &moe = ls.moe;
  const int P = ls.P, v = ls.v, S = ls.S;
  const std::vector<int64_t>& stage_layers = ls.stage_layers;
  std::vector<int64_t> stage_begin(static_cast<size_t>(S) + 1, 0);
  for (int st = 0; st < S; ++st) stage_begin[st + 1] = stage_begin[st] + stage_layers[st];
  const double T = ls.T;
  const OutputCost out = OutputLayerCost(req, rates, T, lay.parallel.tp);
  const double embedding_grad_s = EmbeddingGradSeconds(req, rates, lay);
  sim::Costs costs;
  costs.per_stage.resize(S);
  double hw_flops_per_mb = 0;
  struct Parts {
    double compute = 0, tp = 0, ep = 0, cp = 0;
  };
  std::vector<Parts> stage_parts(S);  // per microbatch, forward + backward
  for (int st = 0; st < S; ++st) {
    double f = 0, b = 0, w = 0;
    Parts& parts = stage_parts[st];
    for (int64_t l = stage_begin[st]; l < stage_begin[st + 1]; ++l) {
      const LayerCost& c = model::IsMoeLayer(m, l) ? moe : dense;
      f += c.fwd_s + c.tp_fwd_s + c.ep_fwd_s + c.cp_fwd_exposed_s;
      b += c.bwd_s + c.recompute_s + c.tp_bwd_s + c.tp_recompute_s + c.ep_bwd_s + c.ep_recompute_s +
           c.cp_bwd_exposed_s;
      w += c.wgrad_s;
      hw_flops_per_mb += c.hardware_flops;
      parts.compute += c.fwd_s + c.bwd_s + c.recompute_s;
      parts.tp += c.tp_fwd_s + c.tp_bwd_s + c.tp_recompute_s;
      parts.ep += c.ep_fwd_s + c.ep_bwd_s + c.ep_recompute_s;
      parts.cp += c.cp_fwd_exposed_s + c.cp_bwd_exposed_s;
    }
    if (st == 0) {
      // The input embedding's weight gradient (a weight-gradient pass, W under split backward).
      b += embedding_grad_s;
      w += embedding_grad_s;
      parts.compute += embedding_grad_s;
    }
    if (st == S - 1) {
      // (Recomputation covers the transformer layers, not the output layer.)
      f += out.fwd_s();
      b += out.bwd_s();
      w += out.wgrad_s;  // the weight gradient's GEMM
      parts.compute += out.fwd_s() + out.bwd_s();
      hw_flops_per_mb += 3 * out.flops;
    }
    sim::StageCosts& sc = costs.per_stage[st];
    sc.f_ms = f * 1e3;
    sc.b_ms = b * 1e3;
    sc.w_ms = w * 1e3;
    sc.i_ms = (b - w) * 1e3;
    // DualPipe overlaps one chunk's all-to-all with the other's compute: the pair costs F + B
    // less the communication that hides (DeepSeek-V3 report, sec. 3.2.1), less the SMs the
    // all-to-all holds from that compute (EpSmShare).
    const double hideable =
        std::min(parts.ep, parts.compute) * (1 - EpSmShare(req, rates.device, ct.ep_link));
    sc.fb_ms = (f + b - hideable) * 1e3;
  }
  costs.uniform = costs.per_stage.front();
  costs.p2p_ms = ct.p2p_s * 1e3;
  if (!sim::ValidateCosts(costs, S).ok()) {  // out of range: say which input made it so
    auto bad = [](double ms) { return !std::isfinite(ms) || ms > sim::kMaxCostMs; };
    for (int st = 0; st < S; ++st) {
      const double compute_ms = stage_parts[st].compute * 1e3;
      if (bad(compute_ms)) return StageTimeOutOfRange(req, true, compute_ms);
    }
    double worst_ms = costs.p2p_ms;
    for (const sim::StageCosts& sc : costs.per_stage)
      worst_ms = std::max({worst_ms, sc.f_ms, sc.b_ms});
    return StageTimeOutOfRange(req, false, worst_ms);
  }
  ASSIGN_OR_RETURN(const std::shared_ptr<const schedule::Schedule> shared,
                   schedule::GenerateShared(lay.schedule, {P, v, static_cast<int>(mb)}));
  const schedule::Schedule& sched = *shared;
  // The ZeRO-3 / FSDP calls and their layer-by-layer charge, for the bound and the step alike.
  const FsdpCalls fsdp = FsdpCallsOf(req, rates.device, res.comm, mb);
  const FsdpCharge fsdp_per_layer =
      FsdpPerLayerCharge(fsdp, dense, lay.recompute == model::Recompute::kFull, mb);
  if (opt.bound_s != nullptr || opt.skip_slower_than_s < std::numeric_limits<double>::infinity()) {
    // What the step takes at least, before simulating: the pipeline's stage costs on every rank
    // (PipelineLowerBound), the data-parallel collectives' own time (each is exposed at least
    // that long), the FSDP gathers the first layer of each microbatch and the last
    // reduce-scatters cannot hide behind, and the optimizer.
    StageBounds sb(S);
    std::vector<double> pair(S);
    const bool pairs = lay.schedule == schedule::ScheduleKind::kDualPipeV;
    for (int st = 0; st < S; ++st) {
      const sim::StageCosts& sc = costs.per_stage[st];
      sb.f[st] = sc.f_ms * 1e-3;
      sb.b[st] = std::min(sc.b_ms, sc.i_ms + sc.w_ms) * 1e-3;
      sb.bi[st] = std::min(sc.b_ms, sc.i_ms) * 1e-3;
      pair[st] = (sc.fb_ms >= 0 ? sc.fb_ms : sc.f_ms + sc.b_ms) * 1e-3;
      if (pairs) {
        sb.b[st] = std::min(sb.b[st], pair[st] - sb.f[st]);
        sb.bi[st] = std::min(sb.bi[st], pair[st] - sb.f[st]);
      }
    }
    ChainBounds(sched, pairs ? &pair : nullptr, sb);
    double rest = OptimizerSeconds(req, lay, res.memory, rates);
    for (const CommItem& it : res.comm.items) {
      switch (it.kind) {
        case CommItemKind::kDpParamAllGather:
          rest += it.estimate.time_s;
          break;
        case CommItemKind::kDpGradAllReduce:
        case CommItemKind::kDpGradReduceScatter:
          rest += req.overlap_grad_reduce ? it.estimate.time_s : it.time_per_step_s;
          break;
        default:
          break;
      }
    }
    // Layer by layer the FSDP term is the layer costs' alone, as Evaluate charges it below.
    // Fetched per parameter (PlanRequest::fsdp_max_live_params) the first call is a linear's,
    // smaller than the layer's gather: no FSDP term then.
    if (fsdp.layers > 0 && !cc.fsdp_per_parameter) {
      rest += fsdp_per_layer.exposed_s + fsdp_per_layer.contention_s;
    }
    // Gathered once per step (PlanRequest::fsdp_once_per_step_with_pp): the first gather, and
    // every reduce-scatter after the last backward.
    if (FsdpOncePerStep(req, lay)) rest += fsdp.gather_fwd_s + fsdp.scatter_step_s;
    const double bound = (PipelineLowerBound(sched, mb, sb, ct.p2p_s) + rest) * kBoundMargin;
    if (opt.bound_s != nullptr) *opt.bound_s = bound;
    if (bound > opt.skip_slower_than_s) {
      if (opt.skipped != nullptr) *opt.skipped = true;
      return res;
    }
  }
  if (opt.skipped != nullptr) *opt.skipped = false;
  auto simulate = [memo = opt.memo, &sched](const sim::Costs& c) {
    return memo != nullptr ? memo->Simulate(sched, c) : sim::SimulateSummary(sched, c);
  };
  sim::Costs no_p2p = costs;
  no_p2p.p2p_ms = 0;
  if (P2pBlocks(req.p2p_wait, S / P) && P > 1) {
    // Blocking send/recv (PlanRequest::p2p_wait, plan/pipeline_p2p.h): the sender's forward or
    // backward holds its rank until the transfer ends and the receiver starts when it has, so the
    // transfer moves from the edge into the sending action: a forward whose next stage is on
    // another rank, a backward (its input-gradient half under split backward) whose previous
    // stage is.
    for (int s = 0; s < S; ++s) {
      sim::StageCosts& sc = costs.per_stage[s];
      const double ahead =
          s + 1 < S && sched.stage_to_rank[s] != sched.stage_to_rank[s + 1] ? costs.p2p_ms : 0;
      const double back =
          s > 0 && sched.stage_to_rank[s] != sched.stage_to_rank[s - 1] ? costs.p2p_ms : 0;
      sc.f_ms += ahead;
      sc.b_ms += back;
      sc.i_ms += back;
      if (sc.fb_ms >= 0) sc.fb_ms += ahead + back;
    }
    costs.uniform = costs.per_stage.front();
    costs.p2p_ms = 0;
  }
  ASSIGN_OR_RETURN(sim::SimResult with_p2p, simulate(costs));
  ASSIGN_OR_RETURN(sim::SimResult without, simulate(no_p2p));
  res.pipeline_makespan_s = with_p2p.makespan_ms * 1e-3;
  res.bubble_fraction = with_p2p.bubble_fraction;

  // Attribute the makespan to the busiest pipeline rank's parts.
  int busiest = 0;
  for (int r = 0; r < P; ++r) {
    if (with_p2p.ranks[r].busy_ms > with_p2p.ranks[busiest].busy_ms) busiest = r;
  }
  StepTime& st = res.time;
  for (int s = 0; s < S; ++s) {
    if (sched.stage_to_rank[s] != busiest) continue;
    st.compute_s += stage_parts[s].compute * mb;
    st.tp_comm_s += stage_parts[s].tp * mb;
    st.ep_comm_s += stage_parts[s].ep * mb;
    st.cp_comm_s += stage_parts[s].cp * mb;
  }
  const double busy_s = with_p2p.ranks[busiest].busy_ms * 1e-3;
  // DualPipeV's overlapped pairs take less than their parts: charge the saving to EP first.
  const double parts_sum = st.compute_s + st.tp_comm_s + st.ep_comm_s + st.cp_comm_s;
  if (busy_s < parts_sum) st.ep_comm_s = std::max(0.0, st.ep_comm_s - (parts_sum - busy_s));
  st.pp_comm_s = (with_p2p.makespan_ms - without.makespan_ms) * 1e-3;
  st.bubble_s = std::max(0.0, without.makespan_ms * 1e-3 - busy_s);

  // Data-parallel communication hides behind the last microbatch's backward on each rank
  // (gradients are final only then); the remainder, and at least the last bucket, is exposed.
  double last_backward = 0, first_forward = 0;
  for (int s = 0; s < S; ++s) {
    if (sched.stage_to_rank[s] != busiest) continue;
    last_backward += costs.per_stage[s].b_ms * 1e-3;
    first_forward += costs.per_stage[s].f_ms * 1e-3;
  }
  // The share of the SMs a collective holds while it runs beside compute (plan/sm_contention.h).
  const auto sm_share = [&](const CommItem& it) {
    return CollectiveSmShare(req.gpu, rates.device, it.link);
  };
  double after_backward_s = 0;  // the step's blocking collectives between backward and optimizer
  for (const CommItem& it : res.comm.items) {
    switch (it.kind) {
      case CommItemKind::kDpParamAllGather:
        // Updated weights: gathered while the next step's first forward runs
        // (overlap_param_gather); all but the first bucket beside it.
        st.dp_comm_s += std::max(it.estimate.time_s, it.time_per_step_s - first_forward);
        st.contention_s += ContendedOverlapSeconds(it.time_per_step_s - it.estimate.time_s,
                                                   first_forward, sm_share(it));
        break;
      case CommItemKind::kDpGradAllReduce:
      case CommItemKind::kDpGradReduceScatter:
        if (req.overlap_grad_reduce) {
          // All but the last bucket beside the last backward.
          st.dp_comm_s += std::max(it.estimate.time_s, it.time_per_step_s - last_backward);
          st.contention_s += ContendedOverlapSeconds(it.time_per_step_s - it.estimate.time_s,
                                                     last_backward, sm_share(it));
        } else {
          st.dp_comm_s += it.time_per_step_s;  // reduced after the backward
        }
        break;
      case CommItemKind::kTpSpWeightGradAllReduce:
        // Once per step after the last backward, before the optimizer's reductions
        // (finalize_model_grads): nothing left to hide behind.
        st.tp_comm_s += it.time_per_step_s;
        after_backward_s += it.time_per_step_s;
        break;
      case CommItemKind::kTiedEmbeddingReduce:
        st.pp_comm_s += it.time_per_step_s;  // the same, between the pipeline's ends
        after_backward_s += it.time_per_step_s;
        break;
      default:
        break;  // on the pipeline's critical path (charged per layer above) or not timed
    }
  }
  if (fsdp.layers > 0 && cc.fsdp_per_parameter) {
    // Fetched per parameter (DeepSpeed ZeRO-3): the linears' timeline, every microbatch.
    const FsdpCallEstimator estimate = [&](const std::vector<double>& params) {
      return EstimateFsdpCalls(linked, cc, params);
    };
    ASSIGN_OR_RETURN(
        const ParameterFetch fetch,
        ParameterFetchSeconds(
            LayerLinears(m, false, lay.parallel.tp, lay.parallel.ep, req.fused_projections),
            rates.gemm, T, dense, lay.recompute == model::Recompute::kFull, fsdp.layers,
            req.fsdp_max_live_params, static_cast<double>(req.dp_bucket_params), estimate));
    st.fsdp_comm_s = static_cast<double>(mb) * fetch.exposed_s;
    // The calls' time beside the units' compute (all of it less what is exposed) holds the SMs
    // while the compute runs.
    st.contention_s +=
        static_cast<double>(mb) * fsdp.sm_share * std::max(0.0, fetch.link_s - fetch.exposed_s);
  } else if (fsdp.layers > 0) {
    st.fsdp_comm_s = fsdp_per_layer.exposed_s;
    st.contention_s += fsdp_per_layer.contention_s;
  } else if (FsdpOncePerStep(req, lay) && fsdp.step_layers > 0) {
    // Once per step under the pipeline (PlanRequest::fsdp_once_per_step_with_pp, torchtitan):
    // the first microbatch's forward gathers each layer behind the previous layer's forward (the
    // first gather has nothing to hide behind), and the reduce-scatters of every layer run after
    // the rank's last backward: nothing of its own is left to hide them.
    const double n = static_cast<double>(fsdp.step_layers);
    st.fsdp_comm_s =
        fsdp.gather_fwd_s + n * std::max(0.0, fsdp.gather_fwd_s - dense.fwd_s) + n * fsdp.scatter_s;
    st.contention_s += n * ContendedOverlapSeconds(fsdp.gather_fwd_s, dense.fwd_s, fsdp.sm_share);
  }
  st.optimizer_s = OptimizerSeconds(req, lay, res.memory, rates);
  if (mc.cpu_offload_layers > 0) {
    // Activation offloading (pp 1 and no recompute, as EstimateMemory checked): every layer on
    // the one rank, each microbatch's copies against its layers' forward and backward, the
    // output layer's and the input embedding's gradient aside (plan/cpu_offload.h).
    double f = 0, b = 0;
    for (const sim::StageCosts& sc : costs.per_stage) {
      f += sc.f_ms * 1e-3;
      b += sc.b_ms * 1e-3;
    }
    const double layers = static_cast<double>(m.num_layers);
    const double layer_f = std::max(0.0, f - out.fwd_s()) / layers;
    const double layer_b = std::max(0.0, b - out.bwd_s() - embedding_grad_s) / layers;
    const double copy_s = res.memory.worst().offloaded_bytes /
                          static_cast<double>(mc.cpu_offload_layers) /
                          (req.gpu.host_link_bytes_per_s * rates.device.host_link);
    ASSIGN_OR_RETURN(
        const CpuOffloadStall stall,
        CpuOffloadStallSeconds(m.num_layers, mc.cpu_offload_layers, layer_f, layer_b, copy_s));
    st.offload_s = static_cast<double>(mb) * (stall.forward_s + stall.backward_s);
  }
  st.step_s = res.pipeline_makespan_s + after_backward_s + st.dp_comm_s + st.fsdp_comm_s +
              st.contention_s + st.optimizer_s + st.offload_s;
  // A step that is not a finite, positive time is never a result (issue 26: no inf or nan
  // printed, no exit 0); the inputs' floors (efficiency.h, cluster::Validate) keep every term
  // finite, so this names a defect rather than a user's input.
  if (!std::isfinite(st.step_s) || !(st.step_s > 0)) {
    return Internal(
        fmt::format("{}: the step time came out {} (makespan {} s, DP {} s, FSDP {} s, "
                    "SM contention {} s, optimizer {} s, offload {} s)",
                    lay.ToString(), st.step_s, res.pipeline_makespan_s, st.dp_comm_s,
                    st.fsdp_comm_s, st.contention_s, st.optimizer_s, st.offload_s));
  }

  // Throughput and utilisation.
  const double tokens = static_cast<double>(req.global_batch) * static_cast<double>(seq);
  res.tokens_per_s = tokens / st.step_s;
  res.model_flops_per_step = model::TrainingFlopsPerStep(m, seq, req.global_batch);
  res.hardware_flops_per_step = hw_flops_per_mb * static_cast<double>(mb) * lay.parallel.dp *
                                lay.parallel.tp * lay.parallel.cp;
  const double gpus = static_cast<double>(req.gpus());
  res.model_tflops_per_gpu = res.model_flops_per_step / st.step_s / gpus / 1e12;
  res.mfu = res.model_flops_per_step / (st.step_s * gpus * rates.peak_flops_per_s);
  res.hfu = res.hardware_flops_per_step / (st.step_s * gpus * rates.peak_flops_per_s);
  return res;
}

}  // namespace infralens::plan
