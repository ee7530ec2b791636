// Memory per GPU for training one model under a parallel layout: weights, gradients, optimizer
// states and activations, per pipeline rank and for the worst rank, against the GPU's HBM.
//
// Model states follow ZeRO (Rajbhandari et al. 2020, sec. 3.1 and 5.1): mixed-precision Adam keeps
// 2 bytes of BF16/FP16 weights, 2 bytes of gradients and K = 12 bytes of optimizer state (FP32
// master weights, momentum, variance) per parameter; stage 1 shards the optimizer states over the
// data-parallel ranks, stage 2 also the gradients, stage 3 also the weights. Megatron's
// distributed optimizer is stage 1; FSDP (full sharding) is stage 3.
// Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"), Table 2, generalised to GQA, gated MLPs, MoE and MLA (see
// LayerActivationBytes and docs/memory.md), times the microbatches each pipeline rank holds at
// once under the chosen schedule (from the schedule engine, not a closed form).
// All sizes are bytes (doubles; whole numbers except where a 1/t split leaves a fraction).
#ifndef INFRALENS_PLAN_MEMORY_H_
#define INFRALENS_PLAN_MEMORY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "plan/parallel_config.h"
#include "schedule/schedule.h"

namespace infralens::plan {

// The transformer layers of each pipeline stage, in model order (stage s is chunk s / pp of rank
// s % pp, as the looped schedules place them), as Megatron-Core splits them
// (megatron/core/transformer/transformer_block.py, get_num_layers_to_build): evenly, L / (pp v);
// with --first/--last-stage-layers the first and last pipeline ranks hold those and the other
// ranks split the rest evenly; with the embedding and/or loss in the split, each counts as a
// layer, (L + e + l) / pp per rank, and the first (last) chunk builds one layer fewer. Each rank's
// layers split evenly over its v chunks. InvalidArgument naming the flags and the rule otherwise.
StatusOr<std::vector<int64_t>> StageLayerCounts(int64_t num_layers, const ParallelConfig& p,
                                                int vpp);
// "4 layers per stage", or "7, 14 x 8, 7 layers per stage".
std::string StageSplitText(const std::vector<int64_t>& counts);
// StageSplitText of the model's layers under `p` (p.vpp chunks per rank, 1 when 0); the error
// message when they do not split.
std::string SplitText(const model::Model& m, const ParallelConfig& p);

struct MemoryConfig {
  ParallelConfig parallel;
  model::Recompute recompute = model::Recompute::kNone;
  // Under selective recompute, the modules recomputed (Megatron-Core's --recompute-modules).
  model::RecomputeModules recompute_modules;
  Precision precision = Precision::kBf16;
  bool fp32_gradients = false;  // Megatron accumulates gradients in FP32 main_grad: 4 bytes, not 2
  int64_t micro_batch = 1;      // sequences per microbatch
  int64_t global_batch = 0;     // sequences per step; 0: micro_batch x dp x 2pp (m = 2 pp)
  int64_t seq_len = 0;          // tokens per sequence; 0: the model's
  // Fused attention (FlashAttention) stores no s x s scores; today's Megatron-Core, NeMo,
  // torchtitan and DeepSpeed all run it by default (PlanRequest::fused_attention).
  bool fused_attention = true;
  // Sequence parallelism as PyTorch's DTensor runs it (data/frameworks/*.csv sp_backward saved,
  // torchtitan): autograd keeps each column-parallel linear's all-gathered input for its
  // backward, where Megatron-Core keeps the shard and gathers it again (LayerActivationBytes).
  bool sp_inputs_gathered = false;
  // ZeRO-3 with pp > 1 as torchtitan runs it (PlanRequest::fsdp_once_per_step_with_pp): each
  // rank holds its stage's weights gathered (2 bytes per parameter) and their gradients
  // accumulated unsharded in the reduce dtype (4 bytes under FP32 gradients, else 2) through the
  // step, beside the shards.
  bool fsdp_once_per_step_with_pp = false;
  // FP8 as Transformer Engine runs it (PlanRequest::fp8_transformer_engine; read only at FP8):
  // each linear keeps its FP8 input for the backward (LayerActivationBytes fp8_saved_inputs) and
  // each weight a persistent FP8 copy and FP8 transpose, 2 bytes per transformer-layer
  // parameter. false: torchao's Float8Linear, which saves BF16 inputs and keeps no FP8 weights.
  bool fp8_transformer_engine = true;
  // Transformer Engine's FP8 weights as the parameters themselves (PlanRequest::fp8_param_gather;
  // read only with fp8_transformer_engine at FP8): the transformer layers' linears hold FP8
  // weights and their FP8 transposes, 2 bytes per parameter, and no BF16 copy; the distributed
  // optimizer's FP32 main weights remain.
  bool fp8_param_gather = false;
  // The optimizer's master weights as each BF16 weight's low 16 bits rather than an FP32 copy
  // (PlanRequest::master_weight_remainders): apex's DistributedFusedAdam with
  // store_param_remainders, which NeMo 1.x's distributed_fused_adam sets under BF16 O2
  // (nemo/collections/nlp/models/language_modeling/megatron_base_model.py setup_optimization:
  // optimizer dtype FP32, model dtype BF16: store_params False, store_param_remainders True; with
  // fp8_params it stores FP32 params instead). Optimizer states 10 bytes per parameter (remainder
  // 2, exp_avg 4, exp_avg_sq 4), not 12; not with FP8 parameters.
  bool master_weight_remainders = false;
  // Activation offloading (PlanRequest::cpu_offload_layers, plan/cpu_offload.h): the first this
  // many transformer layers' activations go to host memory, so the GPU holds the others' (as
  // Transformer Engine's default synchronisation keeps layers - offloaded layers at the forward's
  // end, transformer_engine/pytorch/cpu_offload.py _default_offload_sync_init). Only with pp 1 and
  // no recomputation (CheckCpuOffload): InvalidArgument otherwise.
  int64_t cpu_offload_layers = 0;
  schedule::ScheduleKind schedule = schedule::ScheduleKind::k1F1B;
  double hbm_bytes = 0;  // device memory; 0: no fits/does-not-fit verdict
  double reserve_bytes = kDefaultReserveBytes;
};

// FP8 as Transformer Engine runs it (precision FP8 and fp8_transformer_engine), and with its FP8
// weights as the parameters (and fp8_param_gather): the memory model and the comm plan read these.
inline bool TransformerEngineFp8(const MemoryConfig& c) {
  return c.precision == Precision::kFp8 && c.fp8_transformer_engine;
}
inline bool Fp8Parameters(const MemoryConfig& c) {
  return TransformerEngineFp8(c) && c.fp8_param_gather;
}
// The master weights kept as BF16 remainders (master_weight_remainders), which FP8 parameters
// overrule (NeMo then stores FP32 params).
inline bool MasterWeightRemainders(const MemoryConfig& c) {
  return c.master_weight_remainders && !Fp8Parameters(c);
}

struct RankMemory {
  int rank = 0;
  std::vector<int> stages;       // pipeline stages (chunks) this rank holds
  int64_t layers = 0;            // transformer layers over all its chunks
  int64_t moe_layers = 0;        // of which MoE layers
  bool embedding = false;        // holds stage 0 (input embedding)
  bool output_layer = false;     // holds the last stage (final norm, output layer, loss)
  double parameters = 0;         // parameters held, after TP and EP splits, before ZeRO sharding
  double expert_parameters = 0;  // the routed experts' share of `parameters` (split over TP x EP)
  // The transformer layers' share of `parameters` (experts included): the weights Transformer
  // Engine runs in FP8, all but the embedding, the output layer and the final norm.
  double layer_parameters = 0;
  int peak_chunks = 0;  // most chunk activations alive at once (sim::PeakActivations)
  // Activation bytes of one microbatch that offloading copies to host memory and back
  // (MemoryConfig::cpu_offload_layers), not among activations_bytes; 0 without.
  double offloaded_bytes = 0;
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes = 0,
         total_bytes = 0;
};

struct MemoryReport {
  int vpp = 1;               // resolved chunks per rank
  int64_t microbatches = 0;  // m = global_batch / (micro_batch x dp)
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  int64_t gpus = 0;               // tp x pp x dp x cp
  std::vector<RankMemory> ranks;  // one per pipeline rank
  int worst_rank = 0;             // largest total_bytes
  double usable_bytes = 0;        // hbm_bytes - reserve_bytes
  bool fits = true;               // worst total <= usable (true when no HBM size was given)
  const RankMemory& worst() const { return ranks[static_cast<size_t>(worst_rank)]; }
};

// Validates the layout against the model (InvalidArgument naming the value and the rule: TP must
// divide the attention and KV heads, layers must split into pp x vpp chunks, ...), builds the
// pipeline schedule with m microbatches and returns the per-rank memory.
StatusOr<MemoryReport> EstimateMemory(const model::Model& m, const MemoryConfig& c);

// --- Closed forms, exposed for the tests and the docs ---

// ZeRO's model-state bytes per GPU for `params` parameters at `stage` over `dp` ranks with
// 2 + 2 + 12 bytes per parameter (Rajbhandari et al. 2020, Figure 1 and sec. 5.1).
double ZeroModelStateBytes(double params, int stage, int dp);

// Korthikanti et al. 2022, Table 2: activation bytes of one GPT transformer layer for a
// microbatch (s tokens, b sequences, hidden h, a heads, tensor parallel t):
//   no recompute, TP only:     s b h (10 + 24/t + 5 a s/(h t))
//   no recompute, TP + SP:     s b h (34/t + 5 a s/(h t))
//   selective, TP only:        s b h (10 + 24/t)
//   selective, TP + SP:        s b h (34/t)
//   full:                      s b h (2)            (t = 1 is "no parallelism")
double KorthikantiLayerActivationBytes(int64_t s, int64_t b, int64_t h, int64_t a, int t, bool sp,
                                       model::Recompute r);

// The same accounting for any model layer (GQA, gated MLP, MoE, MLA): bytes one microbatch leaves
// stored in one layer (dense or MoE), at sequence `seq` split over `cp`. Equals
// KorthikantiLayerActivationBytes for a GPT layer with dropout and materialized attention
// (except full recompute with SP, which splits the stored layer input over t, as Megatron does).
// Dropout-aware: a model without hidden dropout stores no residual dropout masks (h + h bytes per
// token), without attention dropout no score mask or dropout output (2 a s^2 b of the 5).
// `fused_attention` (FlashAttention-2, Dao 2023, Algorithm 1): the s x s scores are never stored;
// the forward keeps the output and one FP32 log-sum-exp per query row and head (4 a s b bytes),
// and the backward recomputes the scores block by block.
// `sp_inputs_gathered` (PyTorch's DTensor, MemoryConfig::sp_inputs_gathered): under sequence
// parallelism with tp > 1 and no or selective recompute, the inputs of the column-parallel linears
// (qkv, unless MLA; a dense layer's fc1) are kept as gathered, 2h bytes per token each, not 2h /
// tp.
// `fp8_saved_inputs` (Transformer Engine at FP8, MemoryConfig::fp8_transformer_engine): the
// linears keep their inputs as the FP8 casts their forward GEMMs read, 1 byte per element: the
// attention's and a dense MLP's norm outputs, the context fed to the output projection (beside
// the BF16 context a fused attention without recompute keeps), the product fed to the down
// projection, the tokens dispatched to each expert. Ignored under full recompute and op-sac.
// `modules` (read under Recompute::kSelective; model::RecomputeModules): what each of
// Megatron-Core's
// --recompute-modules leaves unstored. core_attn: the log-sum-exp (or the scores); mlp (dense
// layers): the fused norm's output and the MLP's inner activations; moe: everything of a MoE
// layer's experts, shared experts and router beyond its input; shared_experts: theirs; moe_act:
// the experts' BF16 activation output (not under FP8, whose down projection keeps its own cast);
// layernorm: the outputs of the norms that are their own module, a MoE layer's pre-MLP norm and
// MLA's input norm (BF16 only there); mla_up_proj: Q, K and V.
double LayerActivationBytes(const model::Model& m, bool moe_layer, int64_t seq, int64_t micro_batch,
                            int tp, int cp, bool sp, model::Recompute r,
                            bool fused_attention = false, bool sp_inputs_gathered = false,
                            bool fp8_saved_inputs = false, model::RecomputeModules modules = {});

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_MEMORY_H_
