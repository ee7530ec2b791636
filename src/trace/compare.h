// Predicted vs measured. The prediction is read from JSON: today the schedule engine's
// (`infralens schedule --json`: makespan, bubble_fraction, ranks, actions, in its time_unit), and
// a parallelism plan (step_time_s, bubble_fraction, exposed_comm_s per axis) once the planner
// writes one. Each format is recognised by its keys; a new one adds a reader in compare.cc.
#ifndef INFRALENS_TRACE_COMPARE_H_
#define INFRALENS_TRACE_COMPARE_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_writer.h"
#include "base/status.h"
#include "plan/framework.h"
#include "schedule/action.h"
#include "trace/analysis.h"

namespace infralens::trace {

inline constexpr size_t kMaxPredictionBytes = size_t{256} << 20;

struct Prediction {
  std::string format;  // "schedule" or "plan"
  std::string name;    // the schedule's or plan's name
  std::optional<double> step_time_us;
  std::optional<double> bubble_fraction;
  std::vector<double> rank_bubble_fraction;            // per pipeline rank
  std::map<std::string, double> exposed_comm_us;       // per axis (plan only)
  std::vector<std::vector<schedule::Action>> actions;  // per pipeline rank, in start order

  // Plan only (`infralens plan --json`): the step's terms as the planner charges them
  // (breakdown_s: compute, tp_comm, cp_comm, ep_comm, pp_comm, bubble, dp_comm, fsdp_comm,
  // optimizer), the layout that ran, and each communication of the step.
  std::map<std::string, double> terms_us;
  std::map<std::string, int> degrees;  // tp, pp, vpp, dp, cp, ep (absent: 1)
  std::string order;                   // Megatron's rank order, "tp-cp-ep-dp-pp" when absent
  struct Comm {
    std::string name, group, collective, link;
    int64_t group_size = 0;
    double message_bytes = 0, count_per_step = 0, time_per_step_us = 0;
  };
  std::vector<Comm> comm;
  // What rebuilds the plan (request/recalibrate.h): its request, the rest of its layout and the
  // constants it used, as `plan --json` writes them; empty strings and zeros when absent.
  struct Rebuild {
    std::string model, cluster, gpu, precision, recompute, schedule, stage_layout;
    // The plan's own selective modules ("recompute_modules" beside "recompute"; "" in older
    // JSON or without selective recompute): over behaviour.recompute_modules when given.
    std::string recompute_modules;
    int64_t nodes = 0, gpus = 0, global_batch = 0, seq = 0, micro_batch = 0;
    int zero = 0, first_stage_layers = 0, last_stage_layers = 0;
    bool sequence_parallel = false, embedding_in_split = false, loss_in_split = false;
    bool causal = true;
    // behaviour: what the framework did, as plan::ApplyBehaviour carries it into a request
    // (fused_attention and flash_attention_2 from "attention", fp32_grads from "fp32_gradients",
    // which ApplyBehaviour leaves to its caller).
    plan::FrameworkBehaviour behaviour;
    bool has_fp32_gradients = false;  // older JSON has no behaviour.fp32_gradients
    // behaviour.cross_entropy as written, parsed when the plan is rebuilt; "": not stated (older
    // JSON: the fused kernels, the planner's default then).
    std::string cross_entropy;
    double gemm = 0, gemm_half_dim = 0, attention_eff = 0, attention_fa2 = 0, hbm = 0;
    double attention_half_seq = 0, attention_fa2_half_seq = 0;  // 0: not stated (older JSON)
    double mfu = 0;
  } rebuild;
};

// InvalidArgument naming `label` and what is missing when the JSON is neither format.
StatusOr<Prediction> ReadPrediction(std::string_view json, const std::string& label);

struct CompareRow {
  std::string metric;
  std::string unit;  // "ms", "%"
  std::optional<double> predicted, measured;
};

struct OrderCheck {
  int pp_rank = 0;
  int64_t rank = -1;
  bool same = false;
  int64_t first_difference = -1;                  // index of the first differing action
  std::string predicted_action, measured_action;  // at that index ("" past the end)
};

// One of the largest predicted-vs-measured differences of a plan's terms, with its likely cause
// in words and numbers ("dp exposed 12.1 ms measured vs 4.0 predicted: all_reduce measured 310
// GB/s busbw vs 370 predicted on the rail links").
struct TermDifference {
  std::string term;
  double predicted_ms = 0, measured_ms = 0;
  std::string cause;
};

struct Comparison {
  Prediction prediction;
  std::vector<CompareRow> rows;
  std::vector<TermDifference> largest;  // plan predictions: up to three, largest first
  // The plan's prediction again with efficiency constants fitted to these traces (filled by the
  // caller: request/recalibrate.h; the trace layer cannot rebuild a plan).
  struct Recalibration {
    bool done = false;
    double step_time_ms = 0, new_step_time_ms = 0, mfu = 0, new_mfu = 0;
    std::string why_not;  // when not done and there is a reason to give
  } recalibration;
  std::vector<OrderCheck> order;  // when both sides know the action order
  // Where the prediction's pipeline ranks were found in the traces: "PP: annotations" (PyTorch
  // pipelining's own record, PipelineResult::pp_rank_of), "send/recv peers" (the chains of
  // trace/pipeline_detect.h: pipeline rank k is the rank at stage k), or "" when the traces hold
  // no pipeline (the per-pipeline-rank rows are then the loaded ranks in rank order).
  struct PipelineMapping {
    std::string source;
    // send/recv peers: the chains the per-pipeline-rank rows are over (each fully loaded and as
    // long as the first), global ranks in stage order; the order check uses the first.
    std::vector<std::vector<int64_t>> chains;
    int64_t chains_found = 0;  // every chain the detection found, loaded or not
    // send/recv peers: the generated schedule whose stage/microbatch labels the measured order
    // carries ("" when none matched and the order was not compared).
    std::string schedule;
  } mapping;
  std::vector<std::string> notes;
};

// The planner axis ("tp", "cp", "ep", "dp", "pp") of a measured communication group: by its
// ranks under the plan's layout (Megatron's rank order, cluster/placement.h; a group over dp and
// ep or cp is "dp", as Megatron's gradient groups are), else by its name (DeviceMesh dimensions:
// "tp", "dp_shard", ...; Megatron-Core's group_desc: "TENSOR_MODEL_PARALLEL_GROUP", ...), else
// "" when neither says.
std::string PlanAxisOfGroup(const std::string& label, const std::vector<int64_t>& ranks,
                            const Prediction& plan);

Comparison Compare(const Prediction& p, const TraceAnalysis& a);
std::string ComparisonText(const Comparison& c);
void WriteComparisonJson(JsonWriter& w, const Comparison& c);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_COMPARE_H_
