// Checking the step-time model against published training runs (a CSV with the columns of
// shared/data/published/calibration.csv; its README explains them). Empty cells mean "not
// published": the run is predicted with what the framework would have run best there, i.e. the
// fastest of the candidate micro-batch sizes, interleaving depths and recompute modes that fit.
#ifndef INFRALENS_PLAN_VALIDATE_H_
#define INFRALENS_PLAN_VALIDATE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "plan/planner.h"

namespace infralens::plan {

struct PublishedRun {
  int line = 0;  // in the CSV, for messages
  std::string source, model_name, gpu, cluster, recompute, precision, notes;
  model::Model model;
  int64_t num_gpus = 0, global_batch = 0, micro_batch = 0;  // micro_batch 0: not published
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 0, zero = 0;  // vp 0: not published
  double measured_step_time_s = 0, measured_tflops_per_gpu = 0, measured_mfu = 0;
};

// Reads the CSV; InvalidArgument naming the line and column for a missing or malformed value.
StatusOr<std::vector<PublishedRun>> ReadPublishedRuns(std::string_view text);

struct ValidationRow {
  PublishedRun run;
  Status status;       // not ok when no candidate layout could be evaluated
  PlanResult predicted;
  double predicted_step_time_s = 0;
  // In the source's own FLOP count: measured TFLOP/s x measured step / predicted step.
  double predicted_tflops_per_gpu = 0;
  double error = 0;    // (predicted - measured) / measured
};

struct Validation {
  std::vector<ValidationRow> rows;
  double median_abs_error = 0;  // over the rows that could be predicted
  int predicted = 0;
};

// The year a source was published, from a four-digit year or a tag like "SC21"; 0 if unknown.
// Runs published before 2023 are predicted with that era's framework behaviour (PlanRequest).
int PublicationYear(std::string_view source);

Validation ValidateRuns(const std::vector<PublishedRun>& runs);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_VALIDATE_H_
