// Training frameworks as data: what Megatron-LM, Megatron-DeepSpeed, DeepSpeed, NeMo, torchtitan
// and MegaScale do by default, one file each under data/frameworks/ (key, value, source: the
// framework's file and version), built into the binary. plan, validate and the design page use
// these values wherever the user (a flag) or the run (a CSV cell) says nothing.
#ifndef INFRALENS_PLAN_FRAMEWORK_H_
#define INFRALENS_PLAN_FRAMEWORK_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "plan/loss.h"
#include "plan/memory.h"
#include "plan/planner.h"
#include "schedule/schedule.h"

namespace infralens::plan {

enum class Framework {
  kMegatronLm,
  kMegatronDeepSpeed,
  kDeepSpeed,
  kTorchtitan,
  kNemo,
  kMegaScale,
  kOther
};
StatusOr<Framework> ParseFramework(std::string_view name);
const char* FrameworkName(Framework f);

// What one run does, resolved for a ZeRO stage and a precision (FrameworkDefaults), then
// overridden by the user's flags or the CSV's cells.
struct FrameworkBehaviour {
  bool fused_attention = true;
  bool overlap_grad_reduce = true;
  bool tp_overlap = false;  // TP collectives overlapped with the GEMMs (PlanRequest)
  bool tp_overlap_bwd_reduce_scatter = true;  // PlanRequest::tp_overlap_bwd_reduce_scatter
  bool flash_attention_2 = false;             // PlanRequest::flash_attention_2
  // Under tp_overlap: the SMs Transformer Engine's userbuffers kernels hold away from the GEMMs
  // they overlap (PlanRequest::tp_overlap_rs_sms, tp_overlap_bulk_sms).
  int tp_overlap_rs_sms = 0, tp_overlap_bulk_sms = 0;
  // Under tp_overlap: the steps of the forward's reduce-scatters
  // (PlanRequest::tp_overlap_rs_splits; 0: tp).
  int tp_overlap_rs_splits = 0;
  // Under tp_overlap: the fused reduce-scatter sums its partials after its last step
  // (PlanRequest::tp_overlap_rs_reduce_after).
  bool tp_overlap_rs_reduce_after = false;
  // Sequence parallelism's backward as Megatron-Core and Transformer Engine run it: each
  // column-parallel input gathered again under its dgrad GEMM, its gradient reduce-scattered under
  // its wgrad GEMM (PlanRequest::sp_backward_regather).
  bool sp_backward_regather = false;
  // Sequence parallelism as PyTorch's DTensor runs it: the column-parallel inputs kept gathered
  // for the backward (PlanRequest::sp_inputs_gathered).
  bool sp_inputs_gathered = false;
  bool fp32_grads = false;  // gradients kept and reduced in FP32 (PlanRequest)
  // Sequence parallelism whenever tp > 1, whatever else the run says (NeMo's recipes,
  // torchtitan's TP plan); false: only where asked (Megatron-LM's --sequence-parallel).
  bool sp_with_tp = false;
  // Norms, SwiGLU, RoPE and residual adds as PyTorch's eager kernels (no torch.compile):
  // PlanRequest::eager_elementwise.
  bool eager_elementwise = false;
  // The loss's kernels over the logits (PlanRequest::cross_entropy).
  CrossEntropyKernels cross_entropy = CrossEntropyKernels::kFused;
  // SP's collectives along the sequence as dimension 1 (PlanRequest::sp_rechunk_copies).
  bool sp_rechunk_copies = false;
  P2pWait p2p_wait = P2pWait::kOverlapped;  // how send/recv waits (PlanRequest::p2p_wait)
  // ZeRO-3 / FSDP with pp > 1: weights gathered once per step and kept, gradients reduce-scattered
  // once after the last microbatch (PlanRequest::fsdp_once_per_step_with_pp).
  bool fsdp_once_per_step_with_pp = false;
  // ZeRO-3 fetched per parameter with at most this many gathered and not yet released
  // (PlanRequest::fsdp_max_live_params, DeepSpeed's stage3_max_live_parameters); 0: one layer at
  // a time, the next one prefetched.
  double fsdp_max_live_params = 0;
  // ZeRO-3 / FSDP copies on the compute stream (PlanRequest::fsdp_copy_out, fsdp_copy_in).
  bool fsdp_copy_out = false, fsdp_copy_in = false;
  int64_t dp_bucket_params = 0;  // ZeRO 0-2 gradient bucket; 0: Megatron's max(4e7, 1e6 dp)
  // MoE: DeepEP/HybridEP's hierarchical dispatch (PlanRequest::ep_hierarchical_dispatch) and the
  // all-to-all overlapped with another microbatch's compute (PlanRequest::ep_overlap).
  bool ep_hierarchical_dispatch = false;
  bool ep_overlap = false;
  // PlanRequest::fp8_transformer_engine: fp8_recipe "delayed" (or "none": Transformer Engine is
  // the user's choice) against torchao's "tensorwise".
  bool fp8_transformer_engine = true;
  bool fp8_param_gather = false;          // PlanRequest::fp8_param_gather
  bool fused_projections = true;          // PlanRequest::fused_projections
  bool master_weight_remainders = false;  // PlanRequest::master_weight_remainders
  // PlanRequest::cp_all_gather, cp_kv_repeated.
  bool cp_all_gather = false, cp_kv_repeated = false;
  // Layers whose activations go to host memory (PlanRequest::cpu_offload_layers): a recipe's
  // (data/frameworks/recipes.csv cpu_offload_layers), never a framework default.
  int64_t cpu_offload_layers = 0;
  bool cpu_offload_required = false;  // PlanRequest::cpu_offload_required (the user's flag)
  // Under selective recompute, its modules (PlanRequest::recompute_modules): a recipe's
  // (data/frameworks/recipes.csv recompute_modules) or the user's, else Megatron-Core's default.
  model::RecomputeModules recompute_modules;

  bool operator==(const FrameworkBehaviour&) const = default;
};

// The data file of one framework, parsed (kOther: every default of FrameworkBehaviour, every
// schedule). Values in the file's words for the JSON and the docs.
struct FrameworkData {
  Framework framework = Framework::kOther;
  std::string attention = "cudnn";  // cudnn | flash2
  bool overlap_grad_reduce = true, overlap_grad_reduce_zero3 = true, tp_overlap = false;
  std::string tp_overlap_backward = "all";  // all | gather (the backward's reduce-scatter exposed)
  int tp_overlap_rs_sms = 0, tp_overlap_bulk_sms = 0;  // 0 to kMaxTpOverlapSms
  int tp_overlap_rs_splits = 0;  // 1 to kMaxTpOverlapSplits; 0 ("tp"): one per TP rank
  std::string tp_overlap_rs_reduction = "in_kernel";  // in_kernel | after
  std::string sp_backward;  // regather | saved (ApplySpBackward); "" (kOther): neither
  bool grad_reduce_fp32_bf16 = false, grad_reduce_fp32_fp8 = false;
  bool sp_always = false, eager_elementwise = false;
  P2pWait p2p_wait = P2pWait::kOverlapped;                          // no | yes | single_chunk
  CrossEntropyKernels cross_entropy = CrossEntropyKernels::kFused;  // fused | unfused | eager
  bool fp8_param_gather = false;  // FP8 weights as the parameters under FP8 (yes | no)
  bool fused_projections = true;  // q, k, v as one GEMM, gate and up as one (yes | no)
  bool cp_all_gather = false;     // cp_exchange: ring | all_gather
  bool cp_kv_repeated = false;    // cp_kv_heads: kv | query
  // Whether its selective recompute takes a list of modules (Megatron-Core's
  // --recompute-modules), so that a search may try heavier lists (yes | no).
  bool recompute_modules_list = false;
  int sp_sequence_dim = 0;  // 0 ([s, b, h]: Megatron-Core) | 1 ([b, s, h]: torchtitan)
  std::vector<schedule::ScheduleKind> schedules;  // empty: every schedule
  // The ZeRO stages it implements (0 data parallel, 1 optimizer states sharded, 2 and gradients,
  // 3 and weights), without pipeline parallelism and with it (DeepSpeed's PipelineEngine refuses
  // stages 2 and 3); ascending, each once. Empty (kOther): kSearchZeroStages.
  std::vector<int> zero_stages, zero_stages_pipelined;
  int64_t dp_bucket_params = 0;                          // 0: Megatron's rule
  std::string fsdp_unit = "layer", fp8_recipe = "none";  // fsdp_unit: block | layer | parameter
  int64_t fsdp_max_live_params = 0;  // fsdp_unit parameter: its live bound; else 0 ("none")
  std::string fsdp_copies = "none";  // none | gather | gather_and_reduce
  std::string fsdp_with_pp = "per_microbatch";  // per_microbatch | per_step
  std::string ep_dispatcher = "alltoall";       // alltoall | deepep | hybridep
  bool ep_overlap = false;
  // What a pipelined run the user or the row says nothing more about runs. pipeline_chunks: the
  // model chunks per pipeline rank (1: plain 1F1B, no interleaving); 0 ("search"): not fixed by
  // the framework, every depth the layers allow is tried. pipeline_microbatches_per_rank: the
  // microbatches of a step are this many times the pipeline ranks (torchtitan: as many as the
  // ranks), so the micro-batch is the local batch over them; 0 ("search"): not fixed.
  int pipeline_chunks = 0;
  int pipeline_microbatches_per_rank = 0;
};
// The most SMs a tp_overlap_*_sms value may name (data files, recipes, --tp-overlap-sms); the
// planner keeps at least one SM for the GEMM on any GPU.
inline constexpr int kMaxTpOverlapSms = 256;
// The most steps a tp_overlap_rs_splits value may name (a TP group is at most a 64-GPU NVLink
// domain here).
inline constexpr int kMaxTpOverlapSplits = 64;
// An SM count from 0 to kMaxTpOverlapSms, or nullopt for anything else.
std::optional<int> ParseSmCount(std::string_view value);
// "N" or "RS,BULK" (SMs, each 0 to kMaxTpOverlapSms): InvalidArgument naming the value otherwise.
StatusOr<std::pair<int, int>> ParseTpOverlapSms(std::string_view value);

// Whether an ep_dispatcher value ("alltoall", "deepep", "hybridep") dispatches hierarchically
// (once per target node, then once per target GPU); InvalidArgument for any other value.
StatusOr<bool> EpDispatcherIsHierarchical(std::string_view value);

// Parses one framework file (key,value,source; '#' comment lines): InvalidArgument naming the
// origin, line and key for an unknown or missing key, a bad value or an empty source.
StatusOr<FrameworkData> ParseFrameworkData(Framework f, std::string_view csv,
                                           std::string_view origin);
// The built-in file of `f` (data/frameworks/NAME.csv), parsed once.
const FrameworkData& BuiltinFrameworkData(Framework f);
std::string_view BundledFrameworkCsv(Framework f);  // its text (kOther: empty)

// Sets every field of `req` that a FrameworkBehaviour decides (attention, overlaps, SP's backward,
// FSDP's copies and granularity, the loss, the MoE dispatch, the FP8 recipe, ...), as `b` has it.
// Not fp32_gradients: plan ORs the user's --fp32-grads into the framework's choice, validate takes
// the row's.
void ApplyBehaviour(const FrameworkBehaviour& b, PlanRequest* req);

FrameworkBehaviour FrameworkDefaults(Framework f, int zero_stage,
                                     Precision precision = Precision::kBf16);
// The pipeline schedules the framework implements (empty: every schedule the planner knows).
std::vector<schedule::ScheduleKind> FrameworkSchedules(Framework f);
// Whether `f`'s selective recompute takes a module list (data/frameworks/,
// recompute_modules_list): a search then tries heavier lists (plan::HeavierRecomputeModules)
// where the user named none. kOther: true (the planner's selective recompute is Megatron-Core's).
bool FrameworkListsRecomputeModules(Framework f);
// The same for the framework a request names (PlanRequest::framework; "" or a name it does not
// know: none, so true).
bool FrameworkListsRecomputeModules(const PlanRequest& req);
// The ZeRO stages a search tries where no framework restricts them: 0, 1 and 3.
inline constexpr std::array<int, 3> kSearchZeroStages = {0, 1, 3};
// The ZeRO stages `f` implements with pp > 1 (`pipelined`) or without (data/frameworks/,
// zero_stages and zero_stages_pipelined); kOther: kSearchZeroStages. Ascending.
std::vector<int> FrameworkZeroStages(Framework f, bool pipelined);
// A framework's lists in words, for messages and constraints: ZeRO stages "0|1|3", schedules
// "1f1b|interleaved-1f1b".
std::string ZeroStagesText(const std::vector<int>& stages);
std::string ScheduleNamesText(const std::vector<schedule::ScheduleKind>& schedules);
// What `f` does not run of a layout given to it explicitly (explicit choices win, so the layout
// is still predicted): "deepspeed runs no zbv (its schedules: 1f1b)", "torchtitan has no ZeRO-1
// (its stages: 0|3)", both joined by "; ", or "" when it runs the layout (and for kOther).
// `sharded`: dp x cp > 1 (otherwise no stage shards anything and none is refused).
std::string FrameworkCannotRun(Framework f, schedule::ScheduleKind schedule, int pp, int zero_stage,
                               bool sharded);
// "0 1 3": ZeRO stages 0-3 separated by spaces, each once (returned ascending); nullopt for
// anything else, an empty list included.
std::optional<std::vector<int>> ParseZeroStages(std::string_view value);
// An sp_backward value over `b`: "regather" (sp_backward_regather), "saved" (sp_inputs_gathered),
// "" (keep); InvalidArgument naming the value otherwise.
Status ApplySpBackward(std::string_view value, FrameworkBehaviour* b);
// An fsdp_with_pp value over `b`: "per_step" (fsdp_once_per_step_with_pp), "per_microbatch",
// "" (keep); InvalidArgument naming the value otherwise.
Status ApplyFsdpWithPp(std::string_view value, FrameworkBehaviour* b);
// A cp_exchange value over `b`: "ring" (each block's K and V passed to the next CP rank,
// Transformer Engine's), "all_gather" (every rank's K and V gathered in one call, PyTorch's
// context_parallel), "" (keep); InvalidArgument naming the value otherwise.
Status ApplyCpExchange(std::string_view value, FrameworkBehaviour* b);
// A cp_kv_heads value over `b`: "kv" (the exchange moves the model's key-value heads), "query"
// (K and V repeated to every query head first, torchtitan's repeat_kv), "" (keep);
// InvalidArgument naming the value otherwise.
Status ApplyCpKvHeads(std::string_view value, FrameworkBehaviour* b);
// A master_weights value over `b`: "fp32" (an FP32 master copy: Megatron-Core's distributed
// optimizer, PyTorch's FSDP, DeepSpeed's ZeRO), "bf16_remainders" (apex DistributedFusedAdam's
// store_param_remainders, NeMo 1.x), "" (keep); InvalidArgument naming the value otherwise.
Status ApplyMasterWeights(std::string_view value, FrameworkBehaviour* b);
// An attention value over `b`: "fused" (the framework's fused kernel), "flash2" (FlashAttention-2,
// PyTorch SDPA's), "cudnn" (Transformer Engine's), "materialized" (scores through HBM), "" (keep).
Status ApplyAttention(std::string_view value, FrameworkBehaviour* b);

// The embedded files (generated from data/frameworks/*.csv by cmake/embed_file.cmake).
std::string_view BundledFrameworkMegatronLm();
std::string_view BundledFrameworkMegatronDeepSpeed();
std::string_view BundledFrameworkDeepSpeed();
std::string_view BundledFrameworkTorchtitan();
std::string_view BundledFrameworkNemo();
std::string_view BundledFrameworkMegaScale();

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FRAMEWORK_H_
