// Checking the step-time model against published training runs (a CSV with the columns of
// shared/data/published/calibration.csv; its README explains them). Empty cells mean "not
// published": the run is predicted with what the framework would have run best there, i.e. the
// fastest of the candidate micro-batch sizes, interleaving depths and recompute modes that fit.
#ifndef INFRALENS_PLAN_VALIDATE_H_
#define INFRALENS_PLAN_VALIDATE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "plan/framework.h"
#include "plan/planner.h"

namespace infralens::plan {

// The framework a run used is the CSV's `framework` column (plan/framework.h); its data file
// fills the cells the row leaves empty.
struct PublishedRun {
  int line = 0;  // in the CSV, for messages
  std::string source, model_name, gpu, cluster, recompute, precision, notes;
  Framework framework = Framework::kOther;
  FrameworkBehaviour behaviour;  // the columns, or the framework's defaults where empty
  std::string recipe;  // the framework recipe rows applied under the columns (their sources)
  int64_t first_stage_layers = 0, last_stage_layers = 0;  // 0: stages even (or not published)
  model::Model model;
  int64_t num_gpus = 0, global_batch = 0, micro_batch = 0;  // micro_batch 0: not published
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 0;       // vp 0: not published
  int zero = 0;  // -1: not published (the framework's stages, FrameworkZeroStages, are tried)
  // Gradient reduction overlapped under ZeRO-3, for an open zero cell's stage-3 candidates: the
  // dp_overlap cell, else the framework's overlap_grad_reduce_zero3 (behaviour holds stage 0's).
  bool overlap_grad_reduce_zero3 = true;
  double measured_step_time_s = 0, measured_tflops_per_gpu = 0, measured_mfu = 0;
};

// Reads the CSV; InvalidArgument naming the line and column for a missing or malformed value, an
// unknown GPU, cluster, model preset or framework, or degrees that do not multiply to num_gpus.
StatusOr<std::vector<PublishedRun>> ReadPublishedRuns(std::string_view text);

struct ValidationRow {
  PublishedRun run;
  Status status;  // not ok when no candidate layout could be evaluated
  PlanResult predicted;
  double predicted_step_time_s = 0;
  // In the source's own FLOP count: measured TFLOP/s x measured step / predicted step.
  double predicted_tflops_per_gpu = 0;
  double error = 0;  // (predicted - measured) / measured
  // The cells the row leaves open (micro-batch, interleaving, recompute, ZeRO) are filled with the
  // fastest candidate that fits, which is the one predicted. How many candidates fit, and the
  // slowest of them: the step the open cells could also have meant (equal to the prediction
  // when the row names every cell, or one candidate fits; 0 on a memory-model miss).
  int fitting_candidates = 0;
  double slowest_fit_step_time_s = 0;
  double slowest_fit_error = 0;  // (slowest_fit_step_time_s - measured) / measured
  // Not empty when no candidate fits the memory model although the run trained: the miss, with
  // the terms of the leanest candidate, which is the one predicted.
  std::string memory_miss;
};

// The publication or repository a `source` cell names: "Narayanan et al. SC21, Table 1" ->
// "Narayanan et al. SC21"; "pytorch/torchtitan benchmarks/llama3.md ..." -> "pytorch/torchtitan".
std::string SourceGroup(std::string_view source);

// The median |error| and the median signed error of the predicted rows of one group: a source
// (SourceGroup) or a framework (FrameworkName).
struct SourceSummary {
  std::string source;
  int rows = 0, predicted = 0;
  double median_abs_error = 0;
  double median_error = 0;  // signed: below 0, the model is fast for this group
};

struct Validation {
  std::vector<ValidationRow> rows;
  double median_abs_error = 0;  // over the rows that could be predicted
  int predicted = 0;
  double median_error = 0;  // signed
  int memory_misses = 0;    // rows predicted although the memory model refused them
  // Of the rows predicted within the memory model (no miss): how many measured steps lie between
  // the fastest and the slowest fitting candidate, and how many are slower than even the
  // slowest (the open cells cannot explain those).
  int within_fitting_range = 0, slower_than_every_fit = 0;
  std::vector<SourceSummary> sources;     // in the order each source first appears
  std::vector<SourceSummary> frameworks;  // the same per framework, in order of appearance
};

// `efficiency` null: the built-in table (plan/efficiency.h).
Validation ValidateRuns(const std::vector<PublishedRun>& runs,
                        std::shared_ptr<const EfficiencyTable> efficiency = nullptr);

// How far a validation's predictions fall from the measurements: what a prediction's step time
// is worth, printed beside every plan (issue: honest output). Quantiles of |error| over the
// predicted rows (nearest rank), and how many ran slower than predicted.
struct ErrorSpread {
  int rows = 0;            // predicted rows
  double median_abs = 0;   // half the runs were within this
  double p80_abs = 0;      // four in five were within this
  int predicted_fast = 0;  // rows whose measured step was longer than predicted
};
ErrorSpread SpreadOf(const Validation& v);
// The spread of the built-in published runs under the built-in constants:
// SpreadOf(ValidateRuns(ReadPublishedRuns(BundledPublishedRuns()))). Computed once, when the
// engine is built (tools/builtin_spread_gen.cc writes its definition; validating the runs costs
// about 0.13 CPU-s, which every process would otherwise pay), and linked into every program
// through the `infralens_core` CMake target.
const ErrorSpread& BuiltinSpread();
// One line for a plan's output: "typical error on 58 published runs: +-14.9% (half of them),
// +-39% (four in five); 47 ran slower than predicted".
std::string SpreadText(const ErrorSpread& s);

// The spread of one group of the published runs: one framework on one GPU, one framework on any
// GPU, or any framework on one GPU. What a plan for that framework and GPU is worth: the model
// leans one way per framework and GPU generation (docs/planner.md, the validation tables).
struct GroupSpread {
  std::string framework;  // FrameworkName, "" = any
  std::string gpu;        // hw::Gpu::name, "" = any
  ErrorSpread spread;
  double median_error = 0;  // signed: below 0, the runs took longer than predicted
};
// Every group with at least one predicted row: (framework, GPU) pairs, then frameworks, then GPUs,
// each in order of first appearance.
std::vector<GroupSpread> GroupSpreadsOf(const Validation& v);
// GroupSpreadsOf the built-in runs, generated with BuiltinSpread.
const std::vector<GroupSpread>& BuiltinGroupSpreads();
// The fewest runs a group needs to speak for a plan.
inline constexpr int kMinGroupRuns = 3;
// The narrowest group with at least kMinGroupRuns predicted runs: `framework` on `gpu`, then
// `framework` on any GPU (framework not empty), then any framework on `gpu`; null when none has.
const GroupSpread* SpreadFor(const std::vector<GroupSpread>& groups, std::string_view framework,
                             std::string_view gpu);
// "torchtitan on H100-96GB: 14 published runs, median error -15.8% (half within +-15.8%), 14
// ran slower than predicted".
std::string GroupSpreadText(const GroupSpread& g);

// The best MFU the published runs on one GPU at one precision reached, by this planner's count:
// model::TrainingFlopsPerStep (no recompute) over the measured step, GPUs and the peak a plan at
// that precision is held against (BF16's, FP8's under FP8): what a plan's MFU can be held against.
struct PublishedMfu {
  std::string gpu;        // hw::Gpu::name
  std::string precision;  // "bf16" or "fp8"
  int runs = 0;           // published runs in the group
  double best_mfu = 0;
  std::string best_run;  // "pytorch/torchtitan, Llama 3 8B on 64 GPUs"
};
// One entry per (GPU, precision) with a run, in order of first appearance; runs whose GPU is not
// a preset are left out.
std::vector<PublishedMfu> PublishedMfusOf(const std::vector<PublishedRun>& runs);
// PublishedMfusOf the built-in runs, computed once.
const std::vector<PublishedMfu>& BuiltinPublishedMfus();
// The built-in runs' group of a plan's GPU at its precision (PublishedMfuFor), or null.
const PublishedMfu* BuiltinPublishedMfuFor(std::string_view gpu, Precision precision);
// The group of `gpu` at `precision`, or null.
const PublishedMfu* PublishedMfuFor(const std::vector<PublishedMfu>& groups, std::string_view gpu,
                                    std::string_view precision);
// "MFU 69.6% is above every published run on A100-80GB in bf16 the model was checked on (13 runs;
// the best, pytorch/torchtitan, Llama 3 8B on 64 GPUs, reached 58.2%)" when `mfu` is above the
// group's best; "" otherwise (or with no group).
std::string AbovePublishedText(const PublishedMfu* group, double mfu);

// The published runs built into the binary: data/published/calibration.csv at build time (a copy
// of the shared calibration set), what `infralens validate` checks when given no --published.
std::string_view BundledPublishedRuns();

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_VALIDATE_H_
