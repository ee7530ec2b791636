#include "plan/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "base/strings.h"
#include "plan/cpu_offload.h"
#include "plan/layer_layout.h"
#include "schedule/action.h"
#include "schedule/generate_cache.h"
#include "sim/simulator.h"

namespace infralens::plan {

using model::Model;
using model::Recompute;

// ZeRO (Rajbhandari et al. 2020), Figure 1: per GPU, P_os = (2 + 2 + K) Psi with optimizer states
// sharded, P_os+g = 2 Psi + (2 + K) Psi / N_d, P_os+g+p = (2 + 2 + K) Psi / N_d, K = 12.
double ZeroModelStateBytes(double params, int stage, int dp) {
  const double n = static_cast<double>(dp);
  const double w = 2 * params, g = 2 * params, o = 12 * params;
  switch (stage) {
    case 0:
      return w + g + o;
    case 1:
      return w + g + o / n;
    case 2:
      return w + (g + o) / n;
    default:
      return (w + g + o) / n;
  }
}

double KorthikantiLayerActivationBytes(int64_t s, int64_t b, int64_t h, int64_t a, int t, bool sp,
                                       Recompute r) {
  const double sbh = static_cast<double>(s) * static_cast<double>(b) * static_cast<double>(h);
  const double td = static_cast<double>(t);
  const double score =
      5.0 * static_cast<double>(a) * static_cast<double>(s) / (static_cast<double>(h) * td);
  switch (r) {
    case Recompute::kFull:
      return sbh * 2;
    case Recompute::kSelective:
      return sp ? sbh * 34 / td : sbh * (10 + 24 / td);
    case Recompute::kNone:
    case Recompute::kOpSac:  // not a form of Korthikanti et al.'s: LayerActivationBytes has it
      break;
  }
  return sp ? sbh * (34 / td + score) : sbh * (10 + 24 / td + score);
}

namespace {

// Bytes per token stored by one MLP of inner width f, beyond its input: Korthikanti et al. count
// 8sbh + 8sbh = 4f bytes for f = 4h (the GeLU's input and output, both BF16). A gated MLP stores
// the gate and up projections (the activation's two inputs, 2f + 2f) and the product fed to the
// down projection (2f): 6f. The input (2h) is counted with the layer. `input_b`: bytes per
// element of the down projection's saved input (2 BF16; 1 when Transformer Engine keeps its FP8
// cast, LayerActivationBytes).
double MlpBytesPerToken(const Model& m, int64_t f, double input_b) {
  return ((m.gated_mlp ? 4.0 : 2.0) + input_b) * static_cast<double>(f);
}

}  // namespace

// Korthikanti et al. 2022, sec. 4.1, per token of one layer (BF16, 2 bytes per element):
//   replicated across TP ranks unless SP splits them (10h): the two norms' inputs (4h), the
//   attention input (2h) and MLP input (2h), the two dropout masks (h + h, one byte each);
//   split by TP (24h for GPT): Q and K (4h) and V (2h) kept for the attention core, the context
//   fed to the output projection (2h), the MLP's inner activations (16h for f = 4h);
//   and per sequence the attention core, 5 a s^2 b: softmax output (2), its dropout mask (1) and
//   dropout output (2) per score, split by TP (heads) and dropped by selective recompute.
// Generalisation (ours, see docs/memory.md): Q is 2 a d_qk, K and V are 2 g d_qk and 2 g d_v (g KV
// heads; MLA materialises a heads), the context 2 a d_v; MLA also keeps its compressed latents
// (q_lora in and out of its norm, kv_lora + rope, kv_lora normalised), replicated. A MoE layer
// keeps, split like the MLP: the tokens dispatched to each of its top-k experts (2h each), each
// expert's inner activations, the experts' outputs for the weighted combine (2h each) and the
// shared experts' inner activations; replicated: FP32 router logits (4E).
double LayerActivationBytes(const Model& m, bool moe_layer, int64_t seq, int64_t micro_batch,
                            int tp, int cp, bool sp, Recompute r, bool fused_attention,
                            bool sp_inputs_gathered, bool fp8_saved_inputs,
                            model::RecomputeModules modules) {
  const double t = static_cast<double>(tp);
  const double s_local = static_cast<double>(seq) / static_cast<double>(cp);
  const double tokens = s_local * static_cast<double>(micro_batch);
  const double h = static_cast<double>(m.hidden);
  if (r == Recompute::kFull) {
    // Only the layer's input survives the forward (Korthikanti Table 2: 2sbh); with SP it is the
    // sequence-split input (Megatron checkpoints the SP-sharded hidden states).
    return tokens * 2 * h / (sp ? t : 1.0);
  }
  const double a = static_cast<double>(m.num_heads);
  const double dqk = static_cast<double>(model::QkHeadDim(m)),
               dv = static_cast<double>(model::VHeadDim(m));
  const double kv_heads = m.is_mla() ? a : static_cast<double>(m.num_kv_heads);
  if (r == Recompute::kOpSac) {
    // torchtitan's op-level SAC (model.h): what a block keeps per token, BF16 unless noted:
    // the block's input (h; sequence-sharded under TP, whose plan always runs the norms
    // sequence-parallel), the saved odd-numbered matmul outputs wq (a d_qk), wv (g d_v), w1 (f)
    // and, for a gated MLP, w2 (h: the row-parallel partial sum before its reduce-scatter, so not
    // split by TP), the fused attention's output (a d_v) and FP32 log-sum-exp (4a), and under TP
    // the outputs of the two reduce-scatters (h/t each). Dense layers only: the MoE blocks'
    // grouped matmuls follow other rules.
    const double f = static_cast<double>(m.ffn_hidden);
    double per_token = 2 * h / t + 2 * (a * dqk + kv_heads * dv + a * dv + f) / t + 4 * a / t;
    if (m.gated_mlp) per_token += 2 * h;
    if (tp > 1) per_token += 2 * (2 * h / t);
    return tokens * per_token;
  }
  // Transformer Engine under FP8 (MemoryConfig::fp8_saved_inputs) keeps each linear's input for
  // its wgrad GEMM as the FP8 cast the forward GEMM read, 1 byte per element, and frees the BF16
  // tensor when nothing else holds it (transformer_engine/pytorch/module/linear.py _Linear.forward:
  // saved_inputmat is the FP8 inputmat or its FP8 transpose; layernorm_linear.py saves the FP8
  // ln_out). Those inputs: the attention's (QKV, or MLA's down projections) and a dense MLP's
  // norm outputs, the context fed to the output projection, the product fed to the down
  // projection, the tokens dispatched to each expert. Not the norms' inputs, Q K V (the attention
  // runs in BF16), the activation's inputs, or an MoE layer's norm output (the router reads it
  // in BF16).
  const double in_b = fp8_saved_inputs ? 1.0 : 2.0;
  // 4h norm inputs, 2h attention input, 2h MLP input, and the two residual dropout masks (h + h,
  // one byte each) only when the model trains with hidden dropout (Korthikanti sec. 4.1 counts
  // them because GPT does; Llama, Mixtral and DeepSeek set it to 0).
  const bool moe = moe_layer && m.is_moe();
  double replicated =
      4 * h + in_b * h + (moe ? 2.0 : in_b) * h + (m.hidden_dropout > 0 ? 2 * h : 0);
  // Selective recomputation's modules (model::RecomputeModules); none under Recompute::kNone.
  const model::RecomputeModules recomputed =
      r == Recompute::kSelective ? modules : model::RecomputeModules{0};
  const bool core_recomputed = recomputed.has(model::kRecomputeCoreAttn);
  // The context: one BF16 tensor that the output projection keeps and, without recompute, a fused
  // attention's backward reads too. Under FP8 the projection keeps its FP8 cast instead; the
  // attention's BF16 output then stays beside it only when a fused attention without recompute
  // holds it (FlashAttention's backward reads O).
  const double context_b =
      !fp8_saved_inputs ? 2.0 : (!core_recomputed && fused_attention ? 3.0 : 1.0);
  double split = 2 * a * dqk + 2 * kv_heads * dqk + 2 * kv_heads * dv + context_b * a * dv;
  if (m.is_mla()) {
    replicated += 4.0 * static_cast<double>(m.q_lora_rank) +
                  2.0 * static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim) +
                  2.0 * static_cast<double>(m.kv_lora_rank);
  }
  if (moe) {
    const double k = static_cast<double>(m.top_k);
    const double shared = static_cast<double>(m.num_shared_experts) *
                          MlpBytesPerToken(m, m.shared_expert_ffn_hidden, in_b);
    if (!recomputed.has(model::kRecomputeMoe)) {
      // moe_act discards the experts' activation output, the BF16 product fed to the down
      // projection (Megatron-Core experts.py: CheckpointWithoutOutput around the activation);
      // under FP8 the projection keeps its own FP8 cast, which stays.
      const double act_out = recomputed.has(model::kRecomputeMoeAct) && !fp8_saved_inputs
                                 ? 2.0 * static_cast<double>(m.expert_ffn_hidden)
                                 : 0.0;
      split += k * (in_b * h + MlpBytesPerToken(m, m.expert_ffn_hidden, in_b) - act_out + 2 * h);
      if (!recomputed.has(model::kRecomputeSharedExperts)) split += shared;
      replicated += 4.0 * static_cast<double>(m.num_experts);
    }
    // The pre-MLP norm is its own module in a MoE layer (the router reads its BF16 output):
    // layernorm discards that output.
    if (recomputed.has(model::kRecomputeLayernorm)) replicated -= 2 * h;
  } else if (recomputed.has(model::kRecomputeMlp)) {
    // The MLP checkpointed from the layer's residual stream: Transformer Engine's fused norm
    // output (the MLP's input) and its inner activations are made again in the backward.
    replicated -= in_b * h;
  } else {
    split += MlpBytesPerToken(m, m.ffn_hidden, in_b);
  }
  if (m.is_mla()) {
    // mla_up_proj discards the up projections' outputs with their RoPE: the attention's Q, K, V.
    if (recomputed.has(model::kRecomputeMlaUpProj)) {
      split -= 2 * a * dqk + 2 * kv_heads * dqk + 2 * kv_heads * dv;
    }
    // MLA's input norm is its own module (its down projections are plain linears): layernorm
    // discards its BF16 output; under FP8 the projections keep their own FP8 casts.
    if (recomputed.has(model::kRecomputeLayernorm) && !fp8_saved_inputs) replicated -= 2 * h;
  }
  double per_token = sp ? (replicated + split) / t : replicated + split / t;
  if (sp && tp > 1 && sp_inputs_gathered) {
    // DTensor keeps the gathered inputs of the column-parallel linears (qkv; a dense MLP's fc1)
    // for their backward: 2h each instead of its sequence shard 2h / t.
    const double gathered = (m.is_mla() ? 0.0 : 1.0) + (moe ? 0.0 : 1.0);
    per_token += gathered * in_b * h * (1 - 1 / t);
  }
  double bytes = tokens * per_token;
  if (!core_recomputed) {
    const double b = static_cast<double>(micro_batch);
    if (fused_attention) {
      // FlashAttention keeps one FP32 log-sum-exp per local query row and head.
      bytes += 4.0 * a * s_local * b / t;
    } else {
      // Scores of the local queries against every key (s/cp x s per head): the softmax output
      // (2 bytes), and with attention dropout its mask (1) and output (2).
      const double per_score = m.attention_dropout > 0 ? 5.0 : 2.0;
      bytes += per_score * a * s_local * static_cast<double>(seq) * b / t;
    }
  }
  return bytes;
}

StatusOr<std::vector<int64_t>> StageLayerCounts(int64_t num_layers, const ParallelConfig& p,
                                                int vpp) {
  const int pp = p.pp, v = std::max(1, vpp);
  const int64_t L = num_layers, S = int64_t{pp} * v;
  if (!p.uneven()) {
    if (L % S != 0) {
      return InvalidArgument(fmt::format(
          "‹pp› {} ‹vpp› {}: the {} layers do not split evenly into pp*vpp = {} chunks (uneven "
          "stages: ‹first_stage_layers›/‹last_stage_layers›, or ‹embedding_in_split› "
          "‹loss_in_split›)",
          pp, v, L, S));
    }
    return std::vector<int64_t>(static_cast<size_t>(S), L / S);
  }
  if (pp < 2) return InvalidArgument("uneven pipeline stages: need ‹pp› 2 or more");
  if (!p.layout.empty()) {
    if (p.first_stage_layers > 0 || p.last_stage_layers > 0 || p.embedding_in_split ||
        p.loss_in_split) {
      return InvalidArgument(
          "‹layout› and ‹first_stage_layers›/‹last_stage_layers›/‹embedding_in_split›/"
          "‹loss_in_split›: give one form (Megatron-Core takes one)");
    }
    return ParseLayerLayout(p.layout, L, S);
  }
  const bool first_last = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  if (first_last && (p.embedding_in_split || p.loss_in_split)) {
    // Megatron-Core asserts the same ("Does not support standalone embedding stage and standalone
    // loss stage with uneven pp").
    return InvalidArgument(
        "‹first_stage_layers›/‹last_stage_layers› and ‹embedding_in_split›/‹loss_in_split›: give "
        "one form (Megatron-Core takes one)");
  }
  std::vector<int64_t> per_rank(static_cast<size_t>(pp));
  if (first_last) {
    int64_t rest = L;
    int left = pp;
    for (int n : {p.first_stage_layers, p.last_stage_layers}) {
      if (n < 0 || n > L) {
        return InvalidArgument(
            fmt::format("‹first_stage_layers›/‹last_stage_layers› {}: must be 1..{}", n, L));
      }
      if (n > 0) {
        rest -= n;
        --left;
      }
    }
    if (rest < 0 || (left == 0 && rest != 0) || (left > 0 && (rest < left || rest % left != 0))) {
      return InvalidArgument(fmt::format(
          "‹first_stage_layers› {} ‹last_stage_layers› {}: the other {} layers do not split "
          "evenly over the other {} pipeline ranks",
          p.first_stage_layers, p.last_stage_layers, rest, left));
    }
    const int64_t middle = left > 0 ? rest / left : 0;
    std::fill(per_rank.begin(), per_rank.end(), middle);
    if (p.first_stage_layers > 0) per_rank.front() = p.first_stage_layers;
    if (p.last_stage_layers > 0) per_rank.back() = p.last_stage_layers;
  } else {
    const int64_t units = L + (p.embedding_in_split ? 1 : 0) + (p.loss_in_split ? 1 : 0);
    if (units % pp != 0) {
      return InvalidArgument(fmt::format(
          "‹embedding_in_split›/‹loss_in_split›: {} layers and {} counted as layers do not split "
          "evenly over pp = {}",
          L, units - L, pp));
    }
    std::fill(per_rank.begin(), per_rank.end(), units / pp);
  }
  std::vector<int64_t> counts(static_cast<size_t>(S));
  for (int r = 0; r < pp; ++r) {
    if (per_rank[static_cast<size_t>(r)] % v != 0) {
      return InvalidArgument(fmt::format(
          "‹vpp› {}: pipeline rank {} holds {} layers, which do not split evenly over its {} "
          "chunks",
          v, r, per_rank[static_cast<size_t>(r)], v));
    }
    for (int c = 0; c < v; ++c) {
      counts[static_cast<size_t>(int64_t{c} * pp + r)] = per_rank[static_cast<size_t>(r)] / v;
    }
  }
  if (p.embedding_in_split) --counts.front();
  if (p.loss_in_split) --counts.back();
  for (int64_t n : counts) {
    if (n < 0) {
      return InvalidArgument(
          "‹embedding_in_split›/‹loss_in_split›: a chunk would hold fewer than 0 layers");
    }
  }
  return counts;
}

std::string SplitText(const Model& m, const ParallelConfig& p) {
  auto counts = StageLayerCounts(m.num_layers, p, std::max(1, p.vpp));
  return counts.ok() ? StageSplitText(*counts) : counts.status().message();
}

std::string StageSplitText(const std::vector<int64_t>& counts) {
  if (counts.empty()) return "";
  bool even = true;
  for (int64_t n : counts) even = even && n == counts.front();
  if (even) return fmt::format("{} layers per stage", counts.front());
  std::vector<std::string> runs;
  size_t i = 0;
  while (i < counts.size()) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    runs.push_back(j - i == 1 ? std::to_string(counts[i])
                              : fmt::format("{} x {}", j - i, counts[i]));
    i = j;
  }
  return Join(runs, ", ") + " layers per stage";
}

namespace {

constexpr int kMaxDegree = 1 << 16;
constexpr int64_t kMaxMicrobatches = 1 << 16;
constexpr int64_t kMaxMicroBatch = 1 << 20;

Status CheckRange(const char* flag, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    return InvalidArgument(fmt::format("{} {}: must be between {} and {}", flag, v, lo, hi));
  return Status::Ok();
}

Status CheckDivides(const char* flag, int64_t t, int64_t n, const std::string& what) {
  if (t > n) return InvalidArgument(fmt::format("{} {}: larger than the {} {}", flag, t, n, what));
  if (n % t != 0)
    return InvalidArgument(fmt::format("{} {}: does not divide the {} {}", flag, t, n, what));
  return Status::Ok();
}

Status ValidateLayout(const Model& m, const MemoryConfig& c, int vpp, int64_t seq) {
  const ParallelConfig& p = c.parallel;
  RETURN_IF_ERROR(CheckRange("‹tp›", p.tp, 1, kMaxDegree));
  RETURN_IF_ERROR(CheckRange("‹pp›", p.pp, 1, kMaxDegree));
  RETURN_IF_ERROR(CheckRange("‹dp›", p.dp, 1, kMaxDegree));
  RETURN_IF_ERROR(CheckRange("‹cp›", p.cp, 1, kMaxDegree));
  RETURN_IF_ERROR(CheckRange("‹ep›", p.ep, 1, kMaxDegree));
  RETURN_IF_ERROR(CheckRange("‹zero›", p.zero_stage, 0, 3));
  RETURN_IF_ERROR(CheckRange("‹micro_batch›", c.micro_batch, 1, kMaxMicroBatch));
  RETURN_IF_ERROR(CheckRange("‹seq›", seq, 1, int64_t{1} << 24));
  RETURN_IF_ERROR(CheckRange("‹vpp›", vpp, 1, kMaxDegree));
  const std::string& name = m.name;
  // Megatron splits attention by heads: each TP rank needs whole query heads and whole KV groups.
  RETURN_IF_ERROR(CheckDivides("‹tp›", p.tp, m.num_heads, "attention heads of " + name));
  if (!m.is_mla()) {
    RETURN_IF_ERROR(CheckDivides("‹tp›", p.tp, m.num_kv_heads,
                                 "KV heads of " + name + " (each TP rank needs whole KV groups)"));
  }
  if (model::NumMoeLayers(m) < m.num_layers && m.ffn_hidden % p.tp != 0) {
    return InvalidArgument(fmt::format("‹tp› {}: does not divide the FFN hidden size {} of {}",
                                       p.tp, m.ffn_hidden, name));
  }
  if (m.is_moe() && m.expert_ffn_hidden % p.tp != 0) {
    return InvalidArgument(
        fmt::format("‹tp› {}: does not divide the expert FFN hidden size {} of {}", p.tp,
                    m.expert_ffn_hidden, name));
  }
  if (p.uneven() && schedule::Info(c.schedule).v_shape) {
    return InvalidArgument(fmt::format(
        "uneven pipeline stages with ‹schedule› {}: Megatron-Core's forms are for the looped "
        "schedules; the V-shaped ones split evenly",
        schedule::Info(c.schedule).name));
  }
  auto counts = StageLayerCounts(m.num_layers, p, vpp);
  if (!counts.ok()) {
    if (!p.uneven()) {
      return InvalidArgument(
          fmt::format("‹pp› {} ‹vpp› {}: the {} layers of {} do not split evenly into "
                      "pp*vpp = {} chunks (uneven stages: ‹first_stage_layers› and "
                      "‹last_stage_layers›, or ‹embedding_in_split› and ‹loss_in_split›)",
                      p.pp, vpp, m.num_layers, name, int64_t{p.pp} * vpp));
    }
    return counts.status();
  }
  if (c.recompute == Recompute::kOpSac && m.is_moe()) {
    return InvalidArgument(fmt::format(
        "‹recompute› op-sac: modelled for dense models (torchtitan's Llama blocks); {} has "
        "experts: use selective or full",
        name));
  }
  if (p.ep > 1) {
    if (!m.is_moe())
      return InvalidArgument(fmt::format("‹ep› {}: {} has no experts; use ‹ep› 1", p.ep, name));
    RETURN_IF_ERROR(CheckDivides("‹ep›", p.ep, m.num_experts, "experts of " + name));
    const int64_t dcp = int64_t{p.dp} * p.cp;
    if (dcp % p.ep != 0) {
      return InvalidArgument(
          fmt::format("‹ep› {}: must divide dp*cp = {} (expert-parallel ranks are drawn from the "
                      "data- and context-parallel ranks)",
                      p.ep, dcp));
    }
  }
  // Context parallelism's load-balanced causal split cuts each sequence into 2 cp chunks, rank r
  // keeping chunks r and 2 cp - 1 - r: Megatron-LM asserts seq_length % (2 cp) == 0
  // (megatron/training/arguments.py validate_args, 000c4ac), torchtitan seq_len % (tp x 2 cp)
  // (ParallelDims.seq_len_divisor, v0.2.2); the search offers only such cp (search.cc).
  if (p.cp > 1 && seq % (2 * int64_t{p.cp}) != 0) {
    return InvalidArgument(fmt::format(
        "‹cp› {}: the sequence length {} does not split into 2 x cp = {} load-balanced chunks "
        "(Megatron-LM and torchtitan need a multiple of 2 x cp)",
        p.cp, seq, 2 * int64_t{p.cp}));
  }
  if (p.sequence_parallel && (seq / p.cp) % p.tp != 0) {
    return InvalidArgument(
        fmt::format("‹sp›: the {} tokens per context-parallel rank do not split evenly over "
                    "‹tp› {}",
                    seq / p.cp, p.tp));
  }
  return Status::Ok();
}

// Peak of the bytes alive on one rank when each (stage, microbatch) activation of stage s weighs
// stage_bytes[s], with the lifetimes sim::PeakActivations uses: allocated at F, freed at B or at
// W (I keeps it for W); an overlapped F+B allocates before it frees.
double PeakBytes(const std::vector<schedule::Action>& actions,
                 const std::vector<double>& stage_bytes) {
  double live = 0, peak = 0;
  for (const schedule::Action& a : actions) {
    switch (a.type) {
      case schedule::ActionType::kForward:
        live += stage_bytes[static_cast<size_t>(a.stage)];
        peak = std::max(peak, live);
        break;
      case schedule::ActionType::kBackward:
      case schedule::ActionType::kBackwardWeight:
        live -= stage_bytes[static_cast<size_t>(a.stage)];
        break;
      case schedule::ActionType::kBackwardInput:
        break;
      case schedule::ActionType::kOverlapFB:
        live += stage_bytes[static_cast<size_t>(a.stage)];
        peak = std::max(peak, live);
        live -= stage_bytes[static_cast<size_t>(a.b_stage)];
        break;
    }
  }
  return peak;
}

}  // namespace

namespace {

// sim::PeakActivations of a shared schedule, remembered for the last schedule this thread asked
// about: a search estimates the memory of up to nine layouts per schedule one after another, and
// the scan over every action cost as much as the rest of the estimate. The schedule is named by
// its owner (a weak pointer, whose control block outlives the schedule, so a new schedule at the
// same address is never mistaken for it) and keeps nothing alive.
const std::vector<int>& PeakActivationsOf(const std::shared_ptr<const schedule::Schedule>& s) {
  struct Last {
    std::weak_ptr<const schedule::Schedule> schedule;
    std::vector<int> peaks;
  };
  thread_local Last last;
  const bool same =
      !last.schedule.owner_before(s) && !s.owner_before(last.schedule) && !last.schedule.expired();
  if (!same) {
    last.peaks = sim::PeakActivations(*s);
    last.schedule = s;
  }
  return last.peaks;
}

// The batch: global batch (default: 2 x pp microbatches) and the microbatches it makes per step.
Status SetBatch(const MemoryConfig& c, MemoryReport* rep) {
  const ParallelConfig& p = c.parallel;
  const int64_t per_step =
      c.micro_batch * p.dp;  // sequences per microbatch across data parallelism
  rep->global_batch = c.global_batch == 0 ? per_step * 2 * p.pp : c.global_batch;
  if (rep->global_batch < 1 || rep->global_batch % per_step != 0) {
    return InvalidArgument(
        fmt::format("‹global_batch› {}: must be a positive multiple of micro-batch x dp = {}",
                    rep->global_batch, per_step));
  }
  rep->microbatches = rep->global_batch / per_step;
  if (rep->microbatches > kMaxMicrobatches) {
    return InvalidArgument(
        fmt::format("‹global_batch› {}: gives {} microbatches per step (global / (micro-batch x "
                    "dp)); at most {}",
                    rep->global_batch, rep->microbatches, kMaxMicrobatches));
  }
  return Status::Ok();
}

// The pipeline schedule of the report's microbatches.
StatusOr<std::shared_ptr<const schedule::Schedule>> MemorySchedule(const MemoryConfig& c,
                                                                   const MemoryReport& rep) {
  const ParallelConfig& p = c.parallel;
  auto sched =
      schedule::GenerateShared(c.schedule, {p.pp, rep.vpp, static_cast<int>(rep.microbatches)});
  if (!sched.ok()) {
    return InvalidArgument(
        fmt::format("‹schedule› {} with {} microbatches (global batch {} / (micro-batch {} x dp "
                    "{})): {}",
                    schedule::Info(c.schedule).name, rep.microbatches, rep.global_batch,
                    c.micro_batch, p.dp, sched.status().message()));
  }
  return sched;
}

// The layers of each stage: stage st holds layers [begin[st], begin[st + 1]).
struct MemoryStages {
  std::vector<int64_t> layers;
  std::vector<int64_t> begin;
};

StatusOr<MemoryStages> LayOutMemoryStages(const Model& m, const ParallelConfig& p, int vpp,
                                          int num_stages) {
  MemoryStages stages;
  ASSIGN_OR_RETURN(stages.layers, StageLayerCounts(m.num_layers, p, vpp));
  stages.begin.assign(static_cast<size_t>(num_stages) + 1, 0);
  for (int st = 0; st < num_stages; ++st) {
    stages.begin[static_cast<size_t>(st) + 1] =
        stages.begin[static_cast<size_t>(st)] + stages.layers[static_cast<size_t>(st)];
  }
  return stages;
}

// The per-rank estimate once the schedule and the stages are known: what every rank's parts
// share (the model, the configuration, the bytes of each kind of layer and of each stage).
class RankMemoryEstimator {
 public:
  RankMemoryEstimator(const Model& m, const MemoryConfig& c, const schedule::Schedule& s,
                      int64_t seq, MemoryStages stages)
      : m_(m), c_(c), s_(s), stages_(std::move(stages)) {
    LayerKinds(seq);
    StageActivations(seq);
  }

  RankMemory Estimate(int r, int peak_chunks) const {
    RankMemory rm;
    rm.rank = r;
    rm.peak_chunks = peak_chunks;
    const RankParameters params = Parameters(r, &rm);
    ModelStateBytes(params, &rm);
    rm.activations_bytes = PeakBytes(s_.ranks[static_cast<size_t>(r)], stage_bytes_);
    rm.offloaded_bytes = offloaded_bytes_;
    // Full recompute rebuilds one layer's activations at a time during its backward; op-level
    // SAC rebuilds the part of one layer it did not save (bounded by the same figure).
    if (c_.recompute == Recompute::kFull || c_.recompute == Recompute::kOpSac) {
      rm.activations_bytes += params.full_layer;
    }
    // Selective recompute's modules beyond the attention core rebuild what they left unstored,
    // one layer at a time, during that layer's backward.
    rm.activations_bytes += params.rebuilt_layer;
    rm.total_bytes =
        rm.weights_bytes + rm.gradients_bytes + rm.optimizer_bytes + rm.activations_bytes;
    return rm;
  }

 private:
  // A rank's parameters after TP and EP splits.
  struct RankParameters {
    double dense = 0, expert = 0;
    double layer_dense = 0;  // the transformer layers' share of `dense`, for the FP8 copy
    double full_layer = 0;   // the largest of its layers' activations without recompute
    // Under selective recompute, the most one of its layers' modules beyond the attention core
    // leave unstored (MemoryConfig::recompute_modules): 0 with Megatron-Core's default.
    double rebuilt_layer = 0;
  };

  // A layer's bytes and parameters depend only on whether it is an MoE layer: computed once per
  // kind ([0] dense, [1] MoE), not per layer (a search estimates tens of thousands of layouts).
  // FP8 as Transformer Engine runs it: the linears' inputs kept in FP8 (LayerActivationBytes) and
  // an FP8 copy and transpose of the weights (ModelStateBytes). torchao's Float8Linear keeps
  // neither: it saves BF16 inputs (torchao/float8/float8_linear.py matmul_with_hp_or_float8_args:
  // save_for_backward(input_hp, ...)) and casts the weights in every forward.
  bool TransformerEngineFp8() const { return plan::TransformerEngineFp8(c_); }

  void LayerKinds(int64_t seq) {
    const ParallelConfig& p = c_.parallel;
    for (int moe = 0; moe < (m_.is_moe() ? 2 : 1); ++moe) {
      layer_bytes_[moe] = LayerActivationBytes(
          m_, moe == 1, seq, c_.micro_batch, p.tp, p.cp, p.sequence_parallel, c_.recompute,
          c_.fused_attention, c_.sp_inputs_gathered, TransformerEngineFp8(), c_.recompute_modules);
      layer_full_bytes_[moe] = LayerActivationBytes(
          m_, moe == 1, seq, c_.micro_batch, p.tp, p.cp, p.sequence_parallel, Recompute::kNone,
          c_.fused_attention, c_.sp_inputs_gathered, TransformerEngineFp8());
      layer_rebuilt_bytes_[moe] = 0;
      if (c_.recompute == Recompute::kSelective &&
          c_.recompute_modules != model::RecomputeModules{}) {
        layer_rebuilt_bytes_[moe] =
            std::max(0.0, LayerActivationBytes(m_, moe == 1, seq, c_.micro_batch, p.tp, p.cp,
                                               p.sequence_parallel, Recompute::kSelective,
                                               c_.fused_attention, c_.sp_inputs_gathered,
                                               TransformerEngineFp8()) -
                              layer_bytes_[moe]);
      }
      layer_params_[moe] = moe == 1 ? model::MoeLayerParams(m_) : model::DenseLayerParams(m_);
    }
  }

  // Activation bytes per stage and microbatch, and each stage's largest layer without recompute.
  void StageActivations(int64_t seq) {
    const ParallelConfig& p = c_.parallel;
    const int num_stages = s_.num_stages();
    const double tp = p.tp;
    const double h = static_cast<double>(m_.hidden), V = static_cast<double>(m_.vocab);
    const double sp_div = p.sequence_parallel ? tp : 1.0;
    const double tokens = static_cast<double>(seq) / p.cp * static_cast<double>(c_.micro_batch);
    stage_bytes_.assign(static_cast<size_t>(num_stages), 0.0);
    stage_full_layer_.assign(static_cast<size_t>(num_stages), 0.0);
    stage_rebuilt_layer_.assign(static_cast<size_t>(num_stages), 0.0);
    for (int st = 0; st < num_stages; ++st) {
      for (int64_t l = stages_.begin[st]; l < stages_.begin[st + 1]; ++l) {
        const int moe = model::IsMoeLayer(m_, l) ? 1 : 0;
        // Offloaded (MemoryConfig::cpu_offload_layers, pp 1): the first layers' activations are
        // in host memory by the forward's end, where the peak is.
        if (l < c_.cpu_offload_layers) {
          offloaded_bytes_ += layer_bytes_[moe];
          continue;
        }
        stage_bytes_[st] += layer_bytes_[moe];
        stage_full_layer_[st] = std::max(stage_full_layer_[st], layer_full_bytes_[moe]);
        stage_rebuilt_layer_[st] = std::max(stage_rebuilt_layer_[st], layer_rebuilt_bytes_[moe]);
      }
    }
    // Megatron-LM theoretical_memory_usage.py (compute_activation_memory): the embedding's input
    // (8 bytes per token) and dropout mask (1 byte per element, only with hidden dropout), both
    // split by t under SP.
    stage_bytes_[0] += (8 * tokens + (m_.hidden_dropout > 0 ? tokens * h : 0.0)) / sp_div;
    // Korthikanti et al. sec. 4.3: the final norm's input and the output layer's input (2sbh
    // each, split by t under SP) and FP32 logits for the cross-entropy loss, 4sbV/t
    // (vocab-parallel).
    stage_bytes_[static_cast<size_t>(num_stages - 1)] +=
        4 * tokens * h / sp_div + 4 * tokens * V / tp;
  }

  // The stages and layers rank r holds, and their parameters with the embedding's and the
  // output layer's.
  RankParameters Parameters(int r, RankMemory* rm) const {
    const ParallelConfig& p = c_.parallel;
    const int num_stages = s_.num_stages();
    const double tp = p.tp;
    const double h = static_cast<double>(m_.hidden), V = static_cast<double>(m_.vocab);
    const int first_rank = s_.stage_to_rank[0],
              last_rank = s_.stage_to_rank[static_cast<size_t>(num_stages - 1)];
    RankParameters params;
    for (int st = 0; st < num_stages; ++st) {
      if (s_.stage_to_rank[static_cast<size_t>(st)] != r) continue;
      rm->stages.push_back(st);
      rm->layers += stages_.layers[static_cast<size_t>(st)];
      params.full_layer = std::max(params.full_layer, stage_full_layer_[static_cast<size_t>(st)]);
      params.rebuilt_layer =
          std::max(params.rebuilt_layer, stage_rebuilt_layer_[static_cast<size_t>(st)]);
      for (int64_t l = stages_.begin[st]; l < stages_.begin[st + 1]; ++l) {
        const int moe = model::IsMoeLayer(m_, l) ? 1 : 0;
        rm->moe_layers += moe;
        const model::LayerParams& lp = layer_params_[moe];  // model::LayerParamsAt(m, l)
        // Megatron's theoretical_memory_usage.py splits the whole layer over TP; experts over
        // TP x EP (expert tensor parallelism = TP). MLA's down projections stay whole on every
        // TP rank (model::MlaDownProjectionParams: Megatron-Core duplicates them).
        params.dense += static_cast<double>(lp.attention + lp.mlp + lp.norms - mla_whole_) / tp +
                        static_cast<double>(mla_whole_);
        params.expert += static_cast<double>(lp.routed_experts) / (tp * p.ep);
      }
    }
    params.layer_dense = params.dense;
    rm->embedding = r == first_rank;
    rm->output_layer = r == last_rank;
    if (rm->embedding) {
      // The token table is split over TP (vocab-parallel); a learned position table is not.
      params.dense += V * h / tp + static_cast<double>(m_.learned_positions) * h;
    }
    if (rm->output_layer) {
      params.dense += m_.layernorm ? 2 * h : h;  // final norm
      // An untied output layer, or the tied table's copy Megatron keeps on the last stage when it
      // is not on the first stage's rank (gradients all-reduced between the two).
      if (!m_.tied_embeddings || r != first_rank) params.dense += V * h / tp;
    }
    rm->parameters = params.dense + params.expert;
    rm->expert_parameters = params.expert;
    rm->layer_parameters = params.layer_dense + params.expert;
    return params;
  }

  // Weights, gradients and optimizer states, each sharded over data parallelism from its ZeRO
  // stage on.
  void ModelStateBytes(const RankParameters& params, RankMemory* rm) const {
    const ParallelConfig& p = c_.parallel;
    // Per-parameter bytes (ZeRO sec. 3.1; FP32 gradients as Megatron's main_grad).
    const double weight_b = 2, grad_b = c_.fp32_gradients ? 4 : 2;
    // Adam's FP32 master weight, exp_avg and exp_avg_sq (12), or the master weight as the BF16
    // weight's 16-bit remainder (MemoryConfig::master_weight_remainders: 2 + 8).
    const double opt_b = MasterWeightRemainders(c_) ? 10 : 12;
    // The FP8 weight copy: Transformer Engine casts each weight once per step into persistent
    // FP8 buffers, the weight and its transpose (weight1_fp8, weight1_t_fp8: the wgrad and dgrad
    // GEMMs need the other layout), kept across the step's microbatches (Megatron-Core passes
    // is_first_microbatch); torchao's Float8Linear casts in every forward and keeps nothing.
    const double fp8_copy_b = TransformerEngineFp8() ? 2 : 0;
    // With the FP8 weights as the parameters (MemoryConfig::fp8_param_gather: Megatron-LM's
    // pretrain_gpt.py model_provider builds the GPTModel inside Transformer Engine's
    // fp8_model_init(enabled=True, preserve_high_precision_init_val=True) under
    // --fp8-param-gather) the layers' linears keep no BF16 copy: the FP8 weight and its transpose
    // are all they hold, and the distributed optimizer's FP32 main weights the rest.
    const double layer_weight_b = Fp8Parameters(c_) ? 0 : weight_b;
    const double dense_shards =
        static_cast<double>(p.dp) * p.cp;              // ranks holding the same dense weights
    const double expert_shards = dense_shards / p.ep;  // ranks holding the same experts
    const int z = p.zero_stage;
    auto shard = [&](double bytes_per_param, int from_stage) {
      return params.dense * bytes_per_param / (z >= from_stage ? dense_shards : 1.0) +
             params.expert * bytes_per_param / (z >= from_stage ? expert_shards : 1.0);
    };
    const double layer_params = params.layer_dense / (z >= 3 ? dense_shards : 1.0) +
                                params.expert / (z >= 3 ? expert_shards : 1.0);
    rm->weights_bytes =
        shard(weight_b, 3) + (fp8_copy_b - (weight_b - layer_weight_b)) * layer_params;
    rm->gradients_bytes = shard(grad_b, 2);
    rm->optimizer_bytes = shard(opt_b, 1);
    if (z >= 3 && p.pp > 1 && c_.fsdp_once_per_step_with_pp) {
      // torchtitan's FSDP under a pipeline (MemoryConfig::fsdp_once_per_step_with_pp): the stage's
      // sharded weights stay gathered and their gradients accumulate unsharded through the step
      // (FSDP2's unsharded_accumulated_grad in the reduce dtype), beside the shards.
      const double gathered =
          (dense_shards > 1 ? params.dense : 0.0) + (expert_shards > 1 ? params.expert : 0.0);
      rm->weights_bytes += gathered * weight_b;
      rm->gradients_bytes += gathered * grad_b;
    }
  }

  const Model& m_;
  const MemoryConfig& c_;
  const schedule::Schedule& s_;
  const MemoryStages stages_;
  double layer_bytes_[2] = {0, 0}, layer_full_bytes_[2] = {0, 0};
  double layer_rebuilt_bytes_[2] = {0, 0};  // RankParameters::rebuilt_layer, per kind
  model::LayerParams layer_params_[2] = {};
  std::vector<double> stage_bytes_;          // activation bytes per stage and microbatch
  std::vector<double> stage_full_layer_;     // one layer, no recompute
  std::vector<double> stage_rebuilt_layer_;  // one layer's modules beyond the attention core
  double offloaded_bytes_ = 0;               // per microbatch (MemoryConfig::cpu_offload_layers)
  const int64_t mla_whole_ = model::MlaDownProjectionParams(m_);  // per layer, on every TP rank
};

}  // namespace

StatusOr<MemoryReport> EstimateMemory(const Model& m, const MemoryConfig& c) {
  RETURN_IF_ERROR(model::Validate(m));
  const ParallelConfig& p = c.parallel;
  const int vpp = p.vpp == 0 ? schedule::Info(c.schedule).default_vpp : p.vpp;
  const int64_t seq = c.seq_len == 0 ? m.seq_len : c.seq_len;
  RETURN_IF_ERROR(ValidateLayout(m, c, vpp, seq));
  RETURN_IF_ERROR(
      CheckCpuOffload(c.cpu_offload_layers, m.num_layers, p.pp, c.recompute != Recompute::kNone));

  MemoryReport rep;
  rep.vpp = vpp;
  rep.seq_len = seq;
  rep.gpus = int64_t{p.tp} * p.pp * p.dp * p.cp;
  RETURN_IF_ERROR(SetBatch(c, &rep));
  // The schedule decides how many microbatches each rank holds at once.
  ASSIGN_OR_RETURN(const std::shared_ptr<const schedule::Schedule> sched, MemorySchedule(c, rep));
  const std::vector<int>& peak_chunks = PeakActivationsOf(sched);
  ASSIGN_OR_RETURN(MemoryStages stages, LayOutMemoryStages(m, p, vpp, sched->num_stages()));
  const RankMemoryEstimator estimator(m, c, *sched, seq, std::move(stages));

  rep.ranks.resize(static_cast<size_t>(p.pp));
  for (int r = 0; r < p.pp; ++r) {
    rep.ranks[static_cast<size_t>(r)] = estimator.Estimate(r, peak_chunks[static_cast<size_t>(r)]);
    if (rep.ranks[static_cast<size_t>(r)].total_bytes > rep.worst().total_bytes) {
      rep.worst_rank = r;
    }
  }
  rep.usable_bytes = c.hbm_bytes - c.reserve_bytes;
  rep.fits = c.hbm_bytes <= 0 || rep.worst().total_bytes <= rep.usable_bytes;
  return rep;
}

}  // namespace infralens::plan
