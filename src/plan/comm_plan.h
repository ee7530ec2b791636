// The communication a training step issues, collective by collective: which group, how often, how
// many bytes, over which link class, how long, and whether the framework overlaps it with compute.
// Follows Megatron-LM's behaviour (tensor, sequence, context, expert, pipeline and data parallel;
// distributed optimizer; FSDP as ZeRO-3); docs/comm_plan.md derives every count and size.
//
// All counts are for one GPU on the pipeline rank that holds the most layers (ties: the most
// parameters), per training step; message sizes follow nccl-tests' convention (collective.h).
#ifndef INFRALENS_PLAN_COMM_PLAN_H_
#define INFRALENS_PLAN_COMM_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "collective/collective.h"
#include "model/model.h"
#include "plan/memory.h"

namespace infralens::plan {

// Whether the framework runs it concurrently with compute.
enum class Overlap { kNo, kPartly, kYes };
const char* OverlapName(Overlap o);  // "no", "partly", "yes"

// What a communication item is, for code that computes with it (the planner, the worksheet, the
// search's explanations): the display name is for people and may change (issue 23).
enum class CommItemKind {
  kTpAllReduce,          // TP without SP: all-reduce of attention and MLP outputs
  kTpSpAllGather,        // TP with SP: all-gather of the layer-norm outputs
  kTpSpAllGatherFp8,     // ... of those the framework casts to FP8 first (1 byte per element)
  kTpSpReduceScatter,    // TP with SP: reduce-scatter of attention and MLP outputs
  kTpSpGatherLatents,    // TP with SP, MLA: all-gather of the latents ahead of the up projections
  kTpSpScatterLatents,   // ... reduce-scatter of their gradients in the backward
  kTpSpRegatherLatents,  // ... all-gather of them again for the up projections' wgrad GEMMs
  kTpSpWeightGradAllReduce,  // TP with SP: the norms' (and MLA's down projections') gradients
  kCpRingForward,            // one CP ring step of K and V in the forward (all-gather: the whole)
  kCpRingBackward,           // one CP ring step of K, V and their gradients in the backward
                             // (all-gather: K and V gathered again)
  kCpGradRing,               // CP all-gather: one ring step of the K and V gradients (FP32)
  kEpAllToAll,               // MoE dispatch or combine
  kPpSendRecv,               // activations or gradients at a stage boundary
  kTiedEmbeddingReduce,      // the tied embedding's gradient between the first and last stage
  kDpGradAllReduce,          // ZeRO-0: one gradient bucket
  kDpGradReduceScatter,      // ZeRO-1/2: one gradient bucket
  kDpParamAllGather,         // ZeRO-1/2: the updated weights of one bucket
  kFsdpGatherForward,        // ZeRO-3 / FSDP: one unit's weights before its forward
  kFsdpGatherBackward,       // ... before its backward
  kFsdpReduceScatter,        // ... its gradients after its backward
};
const char* CommItemKindName(CommItemKind k);  // "tp_all_reduce", ... (JSON)
// The step-time part a kind belongs to: "TP", "CP", "EP", "PP", "DP" or "FSDP".
const char* CommItemFamily(CommItemKind k);

struct CommItem {
  std::string name;   // e.g. "TP all-reduce of attention and MLP outputs" (display only)
  std::string group;  // group kind: tp, cp, ep, dp, edp, pp, or "dp+cp" / "edp+cp"
  collective::Collective collective = collective::Collective::kAllReduce;
  std::string frequency;  // e.g. "4 per layer per microbatch (2 forward, 2 backward)"
  int group_size = 0;
  double message_bytes = 0;                             // nccl-tests' S for one call
  int64_t count = 0;                                    // calls per step on one GPU
  cluster::LinkClass link = cluster::LinkClass::kNone;  // the outermost class the group crosses
  collective::Estimate estimate;                        // one call, on the slowest group
  double time_per_step_s = 0;                           // count x estimate.time_s
  Overlap overlap = Overlap::kNo;
  std::string overlap_note;  // why (e.g. "overlapped with backward, except the last bucket")
  CommItemKind kind = CommItemKind::kTpAllReduce;  // set by BuildCommPlan for every item
};

struct CommPlanConfig {
  MemoryConfig job;  // layout, batch, recompute, precision, schedule (hbm_bytes unused)
  std::string order = std::string(cluster::kDefaultOrder);
  // Parameters per data-parallel bucket; 0: Megatron's default max(4e7, 1e6 x dp)
  // (megatron/core/distributed/distributed_data_parallel_config.py, bucket_size).
  int64_t bucket_params = 0;
  // MoE dispatch and combine as DeepEP's normal kernels (and NVIDIA's HybridEP) run them,
  // Megatron's flex dispatcher: a token crosses the scale-out network once per target node (to the
  // GPU of the same local index), then NVLink carries it once to each target GPU of that node; the
  // combine reverses it (deepseek-ai/DeepEP README and csrc/kernels/internode.cu; DeepSeek-V3
  // report sec. 3.2.2). false: Megatron's alltoall dispatcher, one copy per routed (token, expert)
  // pair.
  bool hierarchical_ep_dispatch = false;
  // The EP all-to-all overlapped with another microbatch's compute (PlanRequest::ep_overlap): the
  // item says so; the planner computes what stays exposed.
  bool ep_overlap = false;
  // TP collectives decomposed and hidden behind the GEMMs they feed (PlanRequest::tp_overlap): the
  // TP items say so; the planner computes what stays exposed.
  bool tp_overlap = false;
  // Sequence parallelism's backward gathers each column-parallel input again
  // (PlanRequest::sp_backward_regather): one all-gather more per qkv and fc1 per microbatch.
  bool sp_backward_regather = false;
  // FP8 training with SP: the all-gathers the framework casts to FP8 before it gathers (1 byte per
  // element, not BF16's 2), as their own item. Transformer Engine gathers every one in FP8: the
  // forward's normalised inputs and the backward's output gradients (transformer_engine/pytorch/
  // distributed.py gather_along_first_dim with a quantizer -> _all_gather_fp8; its userbuffers
  // likewise, initialize_ub get_default_config "fp8_buf": name in layers_all_gather_overlap) and
  // the inputs gathered again for the wgrad. torchao's tensorwise Float8 casts the forward's inputs
  // before their all-gather (torchtitan 820504e parallelize_llama.py, "float8 all-gather with TP":
  // Float8ColwiseParallel, PrepareFloat8ModuleInput); the backward's dtype differs between its
  // versions and is kept BF16. A full recompute's all-gathers are the forward's.
  bool sp_gathers_fp8_forward = false, sp_gathers_fp8_backward = false;
  // ZeRO-3 fetched per parameter (PlanRequest::fsdp_max_live_params): the FSDP items say so; the
  // planner times each call (EstimateFsdpCalls) and computes what stays exposed.
  bool fsdp_per_parameter = false;
  // Context parallelism's exchange (PlanRequest::cp_all_gather, cp_kv_repeated): all-gathers of
  // K and V and a ring of their FP32 gradients rather than ring steps; K and V at the query
  // heads rather than the KV heads.
  bool cp_all_gather = false, cp_kv_repeated = false;
  collective::Overrides overrides;
};

// One ZeRO-3 call: `params` weights gathered (BF16) and their gradients reduce-scattered (in the
// reduce dtype) on the dense weights' group, each call alone.
struct FsdpCall {
  double params = 0, gather_s = 0, reduce_s = 0;
};

struct CommPlan {
  std::vector<CommItem> items;
  int64_t microbatches = 0;
  int vpp = 1;
  int rank = 0;        // the pipeline rank the counts are for
  int64_t layers = 0;  // transformer layers on that rank
  int64_t moe_layers = 0;
  double total_s = 0;  // sum of every item's time per step (before any overlap)
};

// The placement of a Megatron layout (dp counts every data-parallel rank; EP is carved out of
// it) on the cluster: placement axes tp, cp, ep, dp / ep, pp in `order`.
StatusOr<cluster::Placement> PlaceJob(const ParallelConfig& p, const std::string& order,
                                      int64_t world_size);

// Builds the plan. InvalidArgument for layouts the memory model refuses (heads not divisible by
// tp, layers not divisible by pp x vpp, ...) or that do not fill the cluster exactly.
StatusOr<CommPlan> BuildCommPlan(const model::Model& m, const cluster::Cluster& c,
                                 const CommPlanConfig& cfg);

// ZeRO-3's calls of `params` parameters each, timed one by one on the slowest group of the dense
// weights' ZeRO-3 items of BuildCommPlan (dp x cp ranks), in the order given; each call 0 s when
// that group has one rank. The same errors as BuildCommPlan.
StatusOr<std::vector<FsdpCall>> EstimateFsdpCalls(const cluster::Cluster& c,
                                                  const CommPlanConfig& cfg,
                                                  const std::vector<double>& params);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_COMM_PLAN_H_
