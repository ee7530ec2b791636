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

struct Comparison {
  Prediction prediction;
  std::vector<CompareRow> rows;
  std::vector<OrderCheck> order;  // when both sides know the action order
  std::vector<std::string> notes;
};

Comparison Compare(const Prediction& p, const TraceAnalysis& a);
std::string ComparisonText(const Comparison& c);
void WriteComparisonJson(JsonWriter& w, const Comparison& c);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_COMPARE_H_
