// The parallelism planner: for a model on N GPUs of a cluster, evaluate one layout (memory per GPU,
// step time broken into its parts, throughput, MFU) or search every valid layout and rank them,
// with the reasons each family of layouts won or lost. docs/planner.md derives every term.
//
// Times are seconds, sizes bytes, rates per second; FLOPs count a multiply-add as 2.
#ifndef INFRALENS_PLAN_PLANNER_H_
#define INFRALENS_PLAN_PLANNER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/model.h"
#include "plan/comm_plan.h"
#include "plan/efficiency.h"
#include "plan/loss.h"
#include "plan/memory.h"
#include "plan/pipeline_p2p.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::plan {

// What the user asks about: a model, a cluster (with its node count), the batch.
struct PlanRequest {
  model::Model model;
  hw::Gpu gpu;               // the cluster's GPU
  cluster::Cluster cluster;  // num_nodes x gpus_per_node GPUs, all used
  int64_t global_batch = 0;  // sequences per step
  int64_t seq_len = 0;       // tokens per sequence; 0: the model's
  Precision precision = Precision::kBf16;
  bool fp32_gradients = false;
  double reserve_bytes = kDefaultReserveBytes;
  // Framework behaviour that changed over time. Today's Megatron-LM, DeepSpeed and torchtitan
  // fuse attention (FlashAttention, Dao et al. 2022, in Megatron since 2023) and overlap the
  // gradient reduction with backward (Megatron's overlap_grad_reduce, 2023). Before that, the
  // s x s scores went through HBM and the data-parallel all-reduce ran after the backward.
  bool fused_attention = true;
  bool overlap_grad_reduce = true;
  // TP communication overlapped with the GEMMs (Megatron's --tp-comm-overlap, NeMo's performance
  // recipes, torchtitan's async TP): off unless the framework or the user turns it on.
  bool tp_overlap = false;
  // Under tp_overlap: whether the backward's reduce-scatters (the gradient of the sequence-
  // parallel all-gathers, after the QKV and FC1 dgrad GEMMs) are overlapped too. Transformer
  // Engine's userbuffers overlap them with the wgrad GEMMs ("bulk" qkv_wgrad, fc1_wgrad); PyTorch's
  // micro-pipeline TP (torchtitan's async TP) fuses the forward's patterns and the backward's
  // all-gather into a matmul, but not the backward's reduce-scatter, whose input is a sum of
  // matmuls: false leaves it exposed (data/frameworks/*.csv tp_overlap_backward).
  bool tp_overlap_bwd_reduce_scatter = true;
  // Under tp_overlap with tp > 1: the SMs Transformer Engine's userbuffers communication kernels
  // hold while the GEMMs they overlap run on the rest (set_sm_margin: cuBLAS is given the SM count
  // less these). tp_overlap_rs_sms: the "pipeline" method, the forward's proj and fc2 GEMMs whose
  // outputs are reduce-scattered; tp_overlap_bulk_sms: the "bulk" method, the backward's qkv and
  // fc1 dgrad and wgrad GEMMs. Transformer Engine's defaults are 16 and 16; PyTorch's async TP
  // copies through the copy engines and holds none (data/frameworks/*.csv, --tp-overlap-sms).
  // Each is kept below the GPU's SM count (plan::GemmKernelOnSms).
  int tp_overlap_rs_sms = 0;
  int tp_overlap_bulk_sms = 0;
  // Under tp_overlap with tp > 1: the steps a reduce-scatter after a row-parallel GEMM (the
  // forward's proj and fc2) is split into, each behind one chunk of that GEMM; the last stays
  // exposed. Transformer Engine's "pipeline" method splits into num_splits 4 whatever tp is
  // (transformer_engine/pytorch/module/base.py initialize_ub, get_default_config: "num_splits":
  // tp_size if method == "ring_exchange" else 4); PyTorch's fused matmul + reduce-scatter computes
  // one chunk per destination rank (torch/distributed/_symmetric_memory/__init__.py
  // _pipelined_produce_and_all2all). 0: tp steps. All-gathers always run tp steps (one per rank's
  // shard: ring exchange, or one copy per peer). data/frameworks/*.csv tp_overlap_rs_splits.
  int tp_overlap_rs_splits = 0;
  // Under tp_overlap with SP: the forward's fused matmul + reduce-scatter (after proj and fc2)
  // sums the tp partial products it received in a kernel of its own after the last step, on the
  // compute stream: it reads tp x (tokens / tp) x h partials and writes tokens / tp x h, in BF16
  // (torch/distributed/_symmetric_memory/__init__.py _fused_matmul_reduce_scatter_impl:
  // stacked_partials, then reduce_fn = torch.sum(dim=0)). false: the reduce-scatter reduces as it
  // receives (Transformer Engine's userbuffers reduce-scatter kernels). data/frameworks/*.csv
  // tp_overlap_rs_reduction.
  bool tp_overlap_rs_reduce_after = false;
  // Sequence parallelism's backward (data/frameworks/*.csv sp_backward). true ("regather"), as
  // Megatron-Core (tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication)
  // and Transformer Engine (LayerNormLinear) run it: the forward keeps each column-parallel
  // linear's input sharded, so the backward gathers it again for the wgrad GEMM, launched before
  // and hidden under the dgrad GEMM, and reduce-scatters the input gradient under the wgrad GEMM;
  // one all-gather more per column-parallel linear (qkv, fc1). false ("saved", PyTorch's DTensor):
  // autograd keeps the gathered input, and the backward's collectives run in line.
  bool sp_backward_regather = false;
  // With sequence parallelism, the column-parallel inputs kept gathered for the backward
  // (sp_backward saved: PyTorch's DTensor; MemoryConfig::sp_inputs_gathered). Neither this nor
  // sp_backward_regather (no framework named): shards kept, collectives in line.
  bool sp_inputs_gathered = false;
  // ZeRO-3 / FSDP with pp > 1 as torchtitan runs it (data/frameworks/*.csv fsdp_with_pp per_step;
  // MemoryConfig::fsdp_once_per_step_with_pp): each stage's weights gathered in the step's first
  // forward and kept until its end, the microbatches' gradients accumulated unsharded in the
  // reduce dtype and reduce-scattered once, after the last backward. false: every microbatch
  // gathers for its forward and backward and reduce-scatters after its backward.
  bool fsdp_once_per_step_with_pp = false;
  // ZeRO-3 fetched per parameter as DeepSpeed does (data/frameworks/*.csv fsdp_unit parameter):
  // each linear's weights gathered by their own call before it runs, further ones prefetched
  // while at most this many parameters are gathered and not yet released
  // (stage3_max_live_parameters); the exposure comes from that timeline (plan/fsdp_timeline.h).
  // 0: one layer at a time, the next layer prefetched (FSDP2, Megatron FSDP).
  double fsdp_max_live_params = 0;
  // How pipeline send/recv waits (plan/pipeline_p2p.h, data/frameworks/*.csv p2p_blocking).
  // Where it blocks (P2pBlocks), each stage's forward that feeds another rank, and each backward
  // that returns a gradient to one, lasts one transfer longer, and the data is there when the
  // sender finishes; elsewhere the transfer is a latency between the ranks.
  P2pWait p2p_wait = P2pWait::kOverlapped;
  // ZeRO-3 / FSDP copies on the compute stream (data/frameworks/*.csv fsdp_copies), per layer:
  // fsdp_copy_out, each gathered parameter copied out of the all-gather buffer, read and written
  // once more per forward and per backward (PyTorch FSDP2's split_with_sizes_copy, DeepSpeed's
  // torch.cat); fsdp_copy_in, each gradient copied into the reduce-scatter buffer in the reduce
  // dtype (FSDP2's chunk_cat) once per backward. Megatron FSDP's parameters view the buffer.
  bool fsdp_copy_out = false, fsdp_copy_in = false;
  // Fused attention through FlashAttention-2, as PyTorch's scaled_dot_product_attention runs it
  // (torchtitan; DeepSpeed's models), rather than Transformer Engine's cuDNN kernels (Megatron-LM,
  // NeMo): its own efficiency (data/hw/efficiency.csv, attention_fa2), lower on Hopper.
  bool flash_attention_2 = false;
  // Norms, RoPE and the SwiGLU product as PyTorch's eager kernels (torch.compile off, the
  // default of torchtitan and DeepSpeed: data/frameworks/): each op reads and writes HBM on its
  // own, with FP32 upcasts, instead of one fused kernel (EagerElementwiseBytesPerToken).
  bool eager_elementwise = false;
  // The query, key and value projections as one GEMM, and a gated MLP's gate and up projections
  // as one (Megatron-Core's linear_qkv and linear_fc1); false: each its own GEMM, as torchtitan's
  // Llama (wq, wk, wv; w1, w3) and Hugging Face's models (q_proj, k_proj, v_proj; gate_proj,
  // up_proj) build them (data/frameworks/*.csv fused_projections): the same FLOPs in smaller GEMMs
  // (plan::LayerLinears), and the backward sums the input gradients the projections return
  // (ProjectionGradSumBytesPerToken).
  bool fused_projections = true;
  // Context parallelism as PyTorch's context_parallel runs it (torchtitan; data/frameworks/*.csv
  // cp_exchange all_gather): each layer's forward all-gathers K and V over the CP group once,
  // issued before the first block's attention and waited after it (_AllGatherRotater, the default
  // rotate method), and the backward gathers them again and passes the K and V gradients around
  // the ring in FP32, one send per step, each waited one block later (_templated_ring_attention
  // _backward: dkv_rotater all-to-all, convert_to_f32), the last after the last block. false:
  // Transformer Engine's ring (Megatron-Core), K and V (and their gradients) one block per step.
  bool cp_all_gather = false;
  // K and V expanded to the query heads before the attention (torchtitan's repeat_kv ahead of
  // scaled_dot_product_attention; data/frameworks/*.csv cp_kv_heads query): context parallelism
  // moves every query head's K and V, not the GQA KV heads'.
  bool cp_kv_repeated = false;
  // The cross-entropy loss's kernels over the last stage's logits (plan/loss.h;
  // data/frameworks/*.csv cross_entropy): fused where no framework says otherwise.
  CrossEntropyKernels cross_entropy = CrossEntropyKernels::kFused;
  // Sequence parallelism over activations whose sequence is dimension 1 ([batch, seq, hidden]:
  // torchtitan's Llama, sharded Shard(1); data/frameworks/*.csv sp_sequence_dim 1). PyTorch's
  // functional collectives gather and scatter along dimension 0 only, so every SP all-gather is
  // followed, and every SP reduce-scatter preceded, by a torch.cat of the tp chunks that copies
  // the whole gathered tensor (pytorch/pytorch torch/distributed/_functional_collectives.py
  // all_gather_tensor: "if gather_dim != 0: res = torch.cat(torch.chunk(res, group_size, dim=0),
  // dim=gather_dim)"; reduce_scatter_tensor likewise; the same cat(split(...)) the
  // micro-pipeline TP pass matches, torch/_inductor/fx_passes/micro_pipeline_tp.py). Async TP's
  // fused ops take the shard restrided instead, so the copies they replace go (plan::
  // SpRechunkCopies). false: sequence-first [s, b, h] (Megatron-Core), no copy.
  bool sp_rechunk_copies = false;
  // Parameters per ZeRO 0-2 gradient bucket (CommPlanConfig::bucket_params); 0: Megatron's rule.
  int64_t dp_bucket_params = 0;
  // MoE dispatch through DeepEP / HybridEP (Megatron's flex dispatcher): once per target node over
  // scale-out, once per target GPU inside it (CommPlanConfig::hierarchical_ep_dispatch); false:
  // the alltoall dispatcher, one copy per routed (token, expert) pair.
  bool ep_hierarchical_dispatch = false;
  // The EP all-to-all of one microbatch overlapped with another microbatch's compute (Megatron's
  // --overlap-moe-expert-parallel-comm, the "1F1B A2A overlap"; Megatron-Bridge moe_a2a_overlap):
  // only the dispatches of the warm-up forwards and cool-down backwards, which have no partner,
  // and whatever exceeds the partner's compute stay exposed. DualPipeV overlaps its pairs anyway.
  bool ep_overlap = false;
  // FP8 as Transformer Engine runs it (the delayed-scaling recipe of Megatron-LM and NeMo,
  // data/frameworks/*.csv fp8_recipe): the norm kernels write the QKV and FC1 inputs in FP8,
  // weights are cast once per step, the output layer and the router stay BF16. false: torchao's
  // Float8Linear (torchtitan's tensorwise recipe): every linear input cast apart, output layer
  // and router in FP8. Only read at FP8 (Fp8CastBytesPerToken, Fp8WeightCastBytes).
  bool fp8_transformer_engine = true;
  // Under Transformer Engine's FP8 (fp8_transformer_engine at FP8): the transformer layers' weights
  // are FP8 parameters (Megatron-LM's --fp8-param-gather; NeMo's and Megatron-Bridge's FP8
  // mixed-precision presets, data/frameworks/*.csv fp8_param_gather): no BF16 copy of them
  // (MemoryConfig::fp8_param_gather), and the distributed optimizer all-gathers them in FP8.
  bool fp8_param_gather = false;
  // The optimizer keeps each BF16 weight's 16-bit remainder, not an FP32 master copy
  // (MemoryConfig::master_weight_remainders: NeMo 1.x's distributed_fused_adam); --master-weights.
  bool master_weight_remainders = false;
  // Activation offloading (plan/cpu_offload.h; Megatron-Core's --cpu-offloading-num-layers;
  // data/frameworks/recipes.csv cpu_offload_layers): the first this many transformer layers' saved
  // activations are copied to host memory after their forward and back before their backward,
  // instead of staying on the GPU (MemoryConfig::cpu_offload_layers); the compute waits for what
  // the copies' windows cannot hide (StepTime::offload_s). Megatron-Core allows it only without
  // pipeline parallelism and recomputation (CheckCpuOffload). 0: none.
  int64_t cpu_offload_layers = 0;
  // Whether the user (a flag) asked for cpu_offload_layers: then a layout Megatron-Core would
  // refuse with it is refused, and the search tries only those it allows. false (a framework's
  // recipe): the layouts that allow it offload, the others run without.
  bool cpu_offload_required = false;
  // Under Recompute::kSelective, what is recomputed (Megatron-Core's --recompute-modules; a
  // recipe's, data/frameworks/recipes.csv recompute_modules): its memory in LayerActivationBytes,
  // its time in the layer's recompute (each module's forward GEMMs, elementwise bytes and, for
  // mlp and moe, its TP collectives and all-to-alls once more). Default core_attn.
  model::RecomputeModules recompute_modules;
  // The framework whose defaults were applied (FrameworkName; "" none). The engine reads only the
  // behaviour above; this names which published runs speak for the plan (plan::SpreadFor).
  std::string framework;
  // The framework's recipe rows applied for this model, GPU and precision (their sources,
  // "; "-joined; plan/framework_recipe.h), "" when none: shown, never read by the engine.
  std::string framework_recipe;
  std::string framework_recipe_settings;  // the same rows in words: "ep_dispatcher deepep, ..."
  // The efficiency constants (plan/efficiency.h): null = the built-in table.
  std::shared_ptr<const EfficiencyTable> efficiency;
  int64_t gpus() const { return cluster.num_gpus(); }
};

// One way to run the job: everything a Megatron-LM / DeepSpeed / torchtitan config decides.
struct Layout {
  ParallelConfig
      parallel;  // tp, pp, vpp (resolved, >= 1), dp, cp, ep, zero_stage, sequence_parallel
  model::Recompute recompute = model::Recompute::kSelective;
  // Under Recompute::kSelective, what this layout recomputes (Megatron-Core's
  // --recompute-modules): nullopt, the request's (PlanRequest::recompute_modules); a search sets
  // it on the heavier lists it tries (plan/recompute_lists.h), and a result carries
  // the set it was evaluated with (RecomputeModulesOf).
  std::optional<model::RecomputeModules> recompute_modules;
  int64_t micro_batch = 1;
  schedule::ScheduleKind schedule = schedule::ScheduleKind::k1F1B;
  std::string order = std::string(cluster::kDefaultOrder);

  int64_t microbatches(int64_t global_batch) const {
    return global_batch / (micro_batch * parallel.dp);
  }
  // "tp=8 pp=4 vpp=2 dp=2 zero=1 sp selective mb=1 interleaved-1f1b"; selective recompute of other
  // modules than the attention core's names them: "selective=core_attn,mlp".
  std::string ToString() const;
};

// What `lay` recomputes under selective recompute: its own modules, else the request's.
model::RecomputeModules RecomputeModulesOf(const PlanRequest& req, const Layout& lay);

// Whether the request's GEMMs run in FP8: FP8 asked for, on a GPU with an FP8 rate (elsewhere they
// run at BF16's, and nothing is cast or gathered in FP8).
bool RunsFp8(const PlanRequest& req);

// The layout of these choices, sequence parallelism on where tp > 1; `vpp` 0: the schedule's
// default.
Layout LayoutOf(int tp, int pp, int dp, int cp, int ep, int zero_stage, int vpp,
                int64_t micro_batch, schedule::ScheduleKind schedule, model::Recompute recompute);

// The transformer layers whose activations `lay` offloads (PlanRequest::cpu_offload_layers): the
// request's where Megatron-Core allows offloading (pp 1, no recomputation) or where the user asked
// for it (cpu_offload_required; Evaluate refuses the layouts that do not allow it), else 0.
int64_t CpuOffloadLayersFor(const PlanRequest& req, const Layout& lay);

// Where one step's time goes on the critical path (the slowest pipeline rank). Parts add up to
// step_s: the pipeline makespan (compute, TP/EP/unhidden CP communication, point-to-point and
// bubble, all from the schedule simulator) plus the data-parallel communication that does not
// hide behind the last backward, plus what the compute loses to the SMs of the collectives it
// overlaps, plus the optimizer step.
struct StepTime {
  double compute_s = 0;  // matmuls, attention and memory-bound ops, recompute included
  double tp_comm_s = 0;  // TP (and SP) collectives, on the critical path
  double cp_comm_s = 0;  // CP ring exchange not hidden behind attention
  double ep_comm_s = 0;  // MoE all-to-all
  double pp_comm_s =
      0;  // point-to-point on the critical path (makespan - the same schedule at p2p 0)
  double bubble_s = 0;     // pipeline idle of the slowest rank (simulated, not a formula)
  double dp_comm_s = 0;    // gradient / parameter collectives not hidden behind compute
  double fsdp_comm_s = 0;  // ZeRO-3 / FSDP gathers not hidden behind compute
  // Compute slowed by the SMs the data-parallel and ZeRO-3 / FSDP collectives it overlaps hold
  // (plan/sm_contention.h).
  double contention_s = 0;
  double optimizer_s = 0;  // the optimizer step (memory-bound)
  // The compute waiting for activation offloading's copies (PlanRequest::cpu_offload_layers,
  // plan/cpu_offload.h), over the step's microbatches.
  double offload_s = 0;
  double step_s = 0;  // all of the above
};

struct PlanResult {
  Layout layout;
  MemoryReport memory;  // per pipeline rank; memory.fits against the GPU with the reserve
  StepTime time;
  CommPlan comm;
  double pipeline_makespan_s = 0;  // the simulated schedule, one step
  double bubble_fraction = 0;      // simulated: idle / (P x makespan)
  double tokens_per_s = 0;
  double model_flops_per_step = 0;     // 6N-style training FLOPs without recompute
  double hardware_flops_per_step = 0;  // what the GPUs execute, recompute included
  double model_tflops_per_gpu = 0;     // model FLOPs / step / GPU, in 1e12 FLOP/s
  double mfu = 0;                      // model FLOPs / (step x GPUs x peak)
  double hfu = 0;                      // hardware FLOPs / (step x GPUs x peak)
};

// The HBM bytes per token per layer a fused rotary-embedding kernel moves in the forward on one TP
// rank: it reads q and k and writes them rotated, 2 + 2 bytes per element over the rank's
// heads x QkHeadDim + kv heads x QkHeadDim elements (Megatron-Core's apply_rope_fusion through
// Transformer Engine's fused_apply_rotary_pos_emb; torchtitan's apply_rotary_emb as
// torch.compile fuses it); its backward rotates the gradient back, the same bytes. 0 for models
// with a learned position table (GPT-2/3: Model::learned_positions). Llama 3 8B at tp 1:
// 4 x 128 x (32 + 8) = 20,480.
double RopeBytesPerToken(const model::Model& m, int tp);

// The HBM bytes per token of this rank's tokens per layer that Transformer Engine's ring
// attention (context parallelism with cp_exchange ring: Megatron-Core's and NeMo's
// cp_comm_type p2p) moves outside its attention kernels on the CP rank that does the most of it
// (the last, cp - 1: every one of its steps updates the whole output; the ring's sends pace the
// other ranks to it), BF16, sbhd layout (NVIDIA/TransformerEngine 001b736
// transformer_engine/pytorch/attention.py AttnFuncWithCPAndKVP2P). Per token, on one TP rank:
// O = heads x VHeadDim / tp output (and dout) elements, Q = heads x QkHeadDim / tp query (and
// dq) elements, KV = kv_heads x (QkHeadDim + VHeadDim) / tp key and value elements (MLA: the
// query heads'). Each copy reads and writes 2 bytes per element (4), each add reads two and writes
// one (6):
//   forward: K and V concatenated into the first send buffer (4 KV); the output zero-filled
//     (2 O); each of the cp steps' partial output folded into it by one fused correction kernel
//     that reads the partial and reads and writes the output (6 O each; jit_fuser, torch.compile
//     under PyTorch >= 2.2): 4 KV + (2 + 6 cp) O;
//   backward: K and V copied into the receive buffer (4 KV); dq copied from the first step and
//     added from each later one (4 Q + 6 (cp - 1) Q); each step's dK and dV concatenated (half the
//     keys in the cp - 1 steps before the diagonal one: 2 KV each; 4 KV for it) and folded into
//     the travelling dKV (the first copied, 2 KV; the middle ones added, 3 KV each; the diagonal
//     one added over all keys, 6 KV): (6 cp - 2) Q + (5 cp + 8) KV.
// The softmax statistics' corrections (one value per head and token) are not counted, and a
// bidirectional model's steps are counted as a causal one's. A recompute of the attention core
// (selective or full) runs the forward again. 0 with cp 1.
// Llama 3 8B at tp 1, cp 2: forward 4 x 2,048 + 14 x 4,096 = 65,536; backward 10 x 4,096 +
// 18 x 2,048 = 77,824. PyTorch's context_parallel (cp_exchange all_gather) merges with its own
// ops, which torch.compile may or may not fuse: not counted.
struct CpRingMergeBytes {
  double forward = 0, backward = 0;
};
CpRingMergeBytes CpRingMergeBytesPerToken(const model::Model& m, int tp, int cp);

// The HBM bytes per token per layer, on one TP rank, that copying queries, keys and values out of
// one fused QKV GEMM's output into the layouts the attention kernels take moves
// (PlanRequest::fused_projections; Megatron-Core's layer through Transformer Engine): the GEMM
// writes [s, b, groups, (heads / groups + 2) x d] and Megatron-Core splits it into strided views
// (NVIDIA/Megatron-LM megatron/core/transformer/attention.py SelfAttention
// get_query_key_value_tensors, SplitAlongDim), so with GQA the query's reshape to [s, b, heads,
// d] copies it; rotary embeddings write new q and k, leaving v a strided view whose strides no
// longer match k's, and Transformer Engine's get_qkv_layout then makes it contiguous
// (NVIDIA/TransformerEngine 001b736 transformer_engine/pytorch/attention.py: "force q,k,v to be
// contiguous"); in the backward the split's gradient concatenates dq, dk and dv into the GEMM's
// output gradient unless the kernel wrote them as one packed buffer (MHA without rotary
// embeddings: the sbh3d layout, no copy). Transformer Engine's FlashAttention backend (`flash2`)
// also transposes q, k and v to [b, s, h, d] (one fused kernel, _PrepareQKVForFA, for the packed
// sbh3d layout at head dimension 128) and the output back, and their gradients the same way. In
// elements per token: Q = heads x QkHeadDim / tp, K = kv_heads x QkHeadDim / tp, V = kv_heads x
// VHeadDim / tp, O = heads x VHeadDim / tp; each copy reads and writes 2 bytes per element:
//   cudnn: forward 4 Q (GQA) + 4 V (rotary), backward 4 (Q + K + V) (GQA or rotary);
//   flash2, packed (MHA, learned positions, d 128): forward 12 Q + 4 O, backward the same;
//   flash2, otherwise: forward the cudnn forward + 4 (Q + K + V) + 4 O, backward
//     4 (Q + K + V) + 4 O.
// `outside_attention` is the query reshape's part (4 Q under GQA), which a selective recompute of
// the attention core does not repeat. 0 without fused projections (separate q, k and v GEMMs:
// torchtitan, Hugging Face models, whose views SDPA takes with their strides), for MLA and for
// materialised attention. Llama 3 8B at tp 1 (cudnn): forward 4 x 4,096 + 4 x 1,024 = 20,480,
// backward 4 x 6,144 = 24,576; Llama 2 7B (MHA, rotary): 16,384 and 49,152; GPT-3 175B at tp 4
// (flash2, packed): 16 x 3,072 = 49,152 each way.
struct QkvLayoutCopyBytes {
  double forward = 0, backward = 0, outside_attention = 0;
};
QkvLayoutCopyBytes QkvLayoutCopyBytesPerToken(const model::Model& m, int tp, bool fused_projections,
                                              bool fused_attention, bool flash_attention_2);

// The HBM bytes the input embedding's weight gradient moves per microbatch on the pipeline stage
// that holds it, on one TP rank (VocabParallelEmbedding: vocab / tp rows of hidden): PyTorch's
// embedding backward returns a dense gradient, zero-filled before the tokens' rows are summed into
// it (pytorch/pytorch 01b9dc5 aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu
// embedding_backward_cuda_kernel: at::zeros({num_weights, D}, grad.options()), 2 bytes per BF16
// element), and below ZeRO-3 the framework adds it into the gradient buffer it keeps across
// microbatches (Megatron-Core distributed_data_parallel.py's backward post-hook,
// param.main_grad.add_(param.grad.data): the buffer read and written at 4 bytes, FP32 gradients,
// or 2, and the gradient read at 2). The row sums over the microbatch's tokens are not counted
// (tokens x hidden, against vocab x hidden). ZeRO-3 / FSDP reduce-scatters the gradient as it is:
// the zero fill only. Llama 3 8B (128,256 x 4,096) at tp 1 with FP32 gradients:
// 525,336,576 x (2 + 10) = 6,304,038,912 bytes; at ZeRO-3, 1,050,673,152.
double EmbeddingGradBytesPerMicrobatch(const model::Model& m, int tp, int zero_stage,
                                       bool fp32_gradients);

// The HBM bytes per token per layer that PyTorch's eager elementwise kernels move in the forward
// beyond the fused kernels the step-time model charges otherwise (backward: twice this), on one
// TP rank with `tp` ranks and sequence parallelism `sp` (the norms split by tp only under SP):
//   RMSNorm, twice per layer: an FP32 upcast (2 + 4 bytes per element), the square (4 + 4), the
//     mean (4), the scaling (4 + 4), the downcast (4 + 2) and the weight (2 + 2): 36 bytes per
//     element against the fused kernel's 4, so 32 more (torch.nn.RMSNorm's composite in eager);
//   RoPE on q and k (torchtitan's apply_rotary_emb: float upcast, complex multiply, type_as):
//     20 bytes per element against 4, so 16 more, over h (1 + kv_heads / heads) elements;
//   SwiGLU's silu(x1) * x3 as two kernels: 10 bytes per element against the fused 6, 4 more
//     over the ffn width (per expert times top-k for MoE layers).
// GeLU models (LayerNorm, no RoPE) are charged the norm part only.
double EagerElementwiseBytesPerToken(const model::Model& m, bool moe_layer, int tp, bool sp);

// The HBM bytes per token per layer, in the backward only, that summing the input gradients of
// separate projections moves (PlanRequest::fused_projections false): a layer input read by
// several GEMMs gets one gradient from each (each an h-wide [tokens, h] dgrad output on every TP
// rank, before SP's reduce-scatter), and autograd adds them. The attention's input feeds q, k
// and v (2 extra gradients; MLA's projections are separate in every framework and are not
// counted), a gated MLP's input the gate and the up projection (1 extra; for an MoE layer, the
// shared experts' input, and each of the top_k routed copies). In eager PyTorch each extra
// gradient is one add kernel (autograd's InputBuffer::accumulate: read 2 + 2, write 2 bytes per
// BF16 element); compiled (`eager` false), Inductor folds the adds into the kernel that consumes
// the sum, which reads each extra gradient once (2 bytes). Llama 3 8B: eager 3 x 6 x 4,096 =
// 73,728 bytes, compiled 24,576.
double ProjectionGradSumBytesPerToken(const model::Model& m, bool moe_layer, bool eager);

// HBM bytes per token of a microbatch that an MoE layer's token permutation moves in its forward
// pass; its backward moves the same (each operation's gradient is the inverse permutation over
// the same rows: Transformer Engine's moe_permute backward runs the unpermute kernel and the
// other way round; sort_chunks_by_idxs sorts back). Activations are BF16 (2 bytes per element),
// h = hidden, k = top_k (NVIDIA/Megatron-LM core_r0.12.0 megatron/core/transformer/moe/
// token_dispatcher.py MoEAlltoAllTokenDispatcher, moe_utils.py permute / unpermute /
// sort_chunks_by_idxs, at the fused kernels' traffic, --moe-permute-fusion; unfused they move
// more):
//   permute reads each of the rank's tokens once and writes its k copies in expert order, 2h (1 +
//     k); unpermute reads the k expert outputs and writes their probability-weighted sum, 2h (k +
//     1): 4h (k + 1) over the rank's tokens, 1 / tp of them under sequence parallelism `sp`;
//   the alltoall dispatcher (`hierarchical` false) with more than one expert on the rank
//     (num_experts / ep > 1) also sorts the received copies by local expert after the
//     all-to-all and restores their order before the one back, read and write 2h each: 8hk over
//     the k copies per token the rank's experts process (with expert TP, every token's: this
//     planner splits expert GEMMs over tp, plan/gemm_time.h LayerLinears). DeepEP / HybridEP
//     (`hierarchical` true) deliver tokens that the permute then orders: no separate sort.
// 0 for a model without routed experts.
double MoePermuteBytesPerToken(const model::Model& m, int tp, bool sp, int ep, bool hierarchical);

// Under PlanRequest::sp_rechunk_copies, the SP collectives per layer and microbatch that copy the
// whole gathered [tokens, hidden] tensor once more (read and write): the forward's two
// all-gathers (of the norms' outputs) and two reduce-scatters; the backward's two reduce-scatters
// (the all-gathers' gradients) and two all-gathers (the reduce-scatters'); a full recompute the
// forward's four again, torchtitan's op-level SAC one all-gather and one reduce-scatter (its
// saved reduce-scatter outputs, as the TP time charges it). Under TP overlap (async TP) the fused
// all-gather-matmul and matmul-reduce-scatter take the shard restrided, not re-chunked: the
// forward's and the recompute's go, and the backward's all-gathers; the backward's
// reduce-scatters stay unless the overlap covers them (PlanRequest::tp_overlap_bwd_reduce_scatter).
// All 0 without SP, with tp 1, or without sp_rechunk_copies.
struct SpRechunkCopies {
  int forward_gathers = 0, forward_scatters = 0;    // a full recompute repeats these
  int backward_gathers = 0, backward_scatters = 0;  // the output gradients', the inputs' gradients
  int sac_gathers = 0, sac_scatters = 0;            // op-level SAC's recompute
};
SpRechunkCopies SpRechunkCopiesPerLayer(const PlanRequest& req, model::Recompute recompute, int tp,
                                        bool sp);

// Which of sequence parallelism's all-gathers move FP8 (1 byte per element, not BF16's 2), with
// SP at tp > 1 in an FP8 run (RunsFp8): the forward's (the norms' outputs, and a recompute's)
// under either recipe, the backward's (the output gradients) under Transformer Engine's only
// (TE distributed.py gather_along_first_dim with a quantizer; torchao's Float8 casts before the
// forward's gathers: torchtitan 820504e parallelize_llama.py, "float8 all-gather with TP"). The
// reduce-scatters stay BF16. The comm plan's items and the re-chunking copies of the gathered
// tensors (SpRechunkCopies) both take their dtype from here.
struct SpFp8Gathers {
  bool forward = false, backward = false;
};
SpFp8Gathers SpGathersFp8(const PlanRequest& req, const Layout& lay);

// The share of the GPU's SMs that DeepEP / HybridEP kernels hold while they run (20 SMs,
// Megatron-Core's moe_deepep_num_sms), so the compute they overlap loses it: 20 / 132 on an H100,
// 20 / 148 on a B200; 0 for the alltoall dispatcher or a GPU without an SM count.
double EpDispatchSmShare(const PlanRequest& req);

// 1F1B A2A overlap (PlanRequest::ep_overlap): of `comm_s` of EP all-to-all beside `compute_s` of
// the same layers' compute, the share `unpaired` (warm-up and cool-down chunks) is exposed whole
// and the rest only where it exceeds the partner's compute:
// u comm + (1 - u) max(0, comm - compute).
double EpOverlapExposed(double comm_s, double compute_s, double unpaired);
// The share of a pipeline rank's forward chunks with no backward partner under Megatron-Core's
// schedules (interleaved when vpp > 1): its warm-up count over microbatches x vpp, at least one.
double EpUnpairedShare(int pp, int vpp, int64_t microbatches);

// Evaluates one layout. InvalidArgument naming the value and the rule for layouts that cannot run
// (degrees that do not multiply to the GPU count, heads not divisible by tp, batch not divisible
// by micro-batch x dp, ...). A layout that runs out of memory is evaluated anyway
// (memory.fits == false) so that a user can see by how much.
// EvaluateOptions: what the search asks of Evaluate beyond the layout; none of it changes a value.
struct EvaluateOptions {
  // The schedule simulations are looked up here first (sim::SummaryMemo: exact, the result is
  // the same bit for bit); the search shares one among its layouts.
  sim::SummaryMemo* memo = nullptr;
  // When finite: a layout whose step provably takes longer (a lower bound from its stage costs
  // on every pipeline rank, its data-parallel collectives and its optimizer step, before any
  // simulation) is not simulated: Evaluate returns its layout, memory and communication plan
  // with no times, and sets *skipped.
  double skip_slower_than_s = std::numeric_limits<double>::infinity();
  bool* skipped = nullptr;
  double* bound_s = nullptr;  // when given: that lower bound on time.step_s, in seconds
};
StatusOr<PlanResult> Evaluate(const PlanRequest& req, const Layout& layout,
                              const EvaluateOptions& opt = {});

// The first half of Evaluate: the layout's rules and its memory (PlanResult::layout and ::memory
// filled, nothing timed). Same errors as Evaluate. The search uses it to set aside layouts that
// do not fit before anything is simulated: a layout out of memory is never ranked, and only its
// memory is reported.
StatusOr<PlanResult> EvaluateMemory(const PlanRequest& req, const Layout& layout);

// A lower bound on Evaluate(req, layout)->time.step_s from EvaluateMemory's result `mem`, without
// communication or simulation (a few microseconds): every pipeline rank runs the forward and the
// backward compute of its stages for every microbatch after the forward chain below its first
// stage, and the optimizer step follows. The search skips a layout whose bound cannot beat what it
// already holds. Errors are Evaluate's (a layout Evaluate refuses).
StatusOr<double> StepTimeLowerBound(const PlanRequest& req, const PlanResult& mem);

// The transformer layers' compute of one step averaged over the pipeline ranks, in seconds: what
// StepTimeLowerBound's busiest rank runs at least, from the layout alone (no memory estimate, no
// schedule). The search orders its memory pass by it, so that a search stopped early has looked
// at the most promising layouts. InvalidArgument when the layers do not split as asked.
StatusOr<double> AverageComputeSeconds(const PlanRequest& req, const Layout& layout);

struct SearchOptions {
  int top_k = 10;
  // Schedules to consider (empty: 1f1b, interleaved-1f1b, zb-h1, zbv, dualpipev).
  std::vector<schedule::ScheduleKind> schedules;
  // Fix a degree instead of searching it (0: search). Lets a user pin tp=8, for instance.
  int fix_tp = 0, fix_pp = 0, fix_dp = 0, fix_cp = 0, fix_ep = 0;
  // Layout options a user gave without degrees restrict the search to them (-1 / 0: search).
  int fix_zero = -1;  // 0, 1, 2 or 3
  // Without fix_zero, the ZeRO stages to try with pp = 1 and with pp > 1 (empty:
  // kSearchZeroStages): a framework's (FrameworkZeroStages).
  std::vector<int> zero_stages, zero_stages_pipelined;
  int fix_recompute = -1;  // static_cast<int>(model::Recompute)
  // The selective module list is fixed (the user's --recompute-modules, or a framework whose
  // selective recompute takes no list): the search tries the request's list only. false: it also
  // tries the heavier lists (HeavierRecomputeModules) on layouts the lighter ones do not fit.
  bool fix_recompute_modules = false;
  // The list the user named (Megatron's names, "core_attn mlp"), for Constraints(); "" when the
  // list is the framework's.
  std::string fixed_recompute_modules;
  int fix_micro_batch = 0;
  int fix_sp = -1;  // 0 or 1 (SP on every layout with tp > 1)
  // Only layouts whose tp and cp divide the sequence as torchtitan needs (TorchtitanSeqDivisor).
  bool seq_over_2_tp_cp = false;
  int fix_vpp = 0;        // chunks per pipeline rank (a layout with it has pp > 1; 0: search)
  std::string fix_order;  // the rank order (empty: Megatron's default, cluster::kDefaultOrder)
  // The user's pipeline split for every layout (which then has pp > 1): only the uneven-stage
  // fields of `split` are read (first/last stage layers, embedding/loss in the split, the layout
  // string, whose stage count fixes pp x vpp). split.uneven() false: the search's own split.
  ParallelConfig split;
  int max_micro_batch = 8;
  // "tp=8", "vpp=2", "zero=1", "recompute full", "micro-batch 2", "sp", "order pp-dp-tp",
  // "first-stage-layers 3", "schedule zbv": what the search was restricted to (empty: nothing).
  std::vector<std::string> Constraints() const;
  int threads = 0;  // 0: every core
  // Asked before each layout is simulated, and once per 256 layouts of the memory pass before;
  // true abandons the search (ResourceExhausted). The web server stops a search at its time limit
  // this way.
  std::function<bool()> stop;
  // With keep_partial, a search that `stop` ended after some layouts were evaluated ranks those
  // instead (SearchResult::partial); ResourceExhausted only when none that fit was evaluated.
  bool keep_partial = false;
  // Skip layouts whose StepTimeLowerBound cannot beat the k-th best step found so far nor their
  // family's best (the answer is the same: ranked, families and counts other than `simulated`).
  // false simulates every layout that fits, as a reference for tests and benchmarks.
  bool prune = true;
};

// Why a family of layouts lost, as data (the CLI, server and explain render it).
struct FamilyVerdict {
  std::string family;   // e.g. "pure data parallel (tp=1, pp=1)", "TP across nodes (tp > 8)"
  std::string verdict;  // e.g. "out of memory by 37.2 GiB at best (needs 113.2 GiB of 76.0)"
  int64_t candidates = 0;
  int64_t not_evaluated = 0;  // of `candidates`, left when a search was stopped (partial)
  bool has_best = false;
  PlanResult best;  // its fastest layout that fits, when has_best
};

struct SearchResult {
  std::vector<PlanResult> ranked;  // fastest first, top_k of those that fit
  int64_t evaluated = 0;           // valid layouts (memory estimated; those that fit bounded)
  int64_t simulated = 0;           // of `evaluated`, those that fit and were simulated (the rest
                                   // could not beat the ranking: SearchOptions::prune)
  int64_t pruned = 0;              // layouts refused before simulation (invalid or out of memory)
  double wall_s = 0;
  std::string winner_reason;  // why the first one won, with its numbers
  std::vector<FamilyVerdict> families;
  std::vector<std::string> constraints;  // SearchOptions::Constraints() of the search
  // Stopped early (SearchOptions::keep_partial): only evaluated + pruned of `layouts` were looked
  // at, and the ranking is the best of those.
  bool partial = false;
  int64_t layouts = 0;  // every layout the full search looks at (evaluated + pruned when whole)
};

// Called now and then with (done, total); the CLI draws a progress bar on a terminal.
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

// Searches every valid layout (under selective recompute, with the request's module list and,
// where it does not fit, the heavier lists of plan/recompute_lists.h, unless
// SearchOptions::fix_recompute_modules). FailedPrecondition, saying what is impossible and by how
// much, when nothing fits (e.g. "the smallest layout needs 812 GiB per GPU; an H100-SXM has 80").
StatusOr<SearchResult> Search(const PlanRequest& req, const SearchOptions& opt,
                              const ProgressFn& progress = {});

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_PLANNER_H_
