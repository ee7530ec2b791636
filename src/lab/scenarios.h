// Lab 09's interview scenarios: questions an interviewer poses about parallelising a training
// job, each answered live by the engine (the five-part Explanation of lab/explain.h, plus the
// contrast the question is about), so that changing a preset changes the answer.
#ifndef INFRALENS_LAB_SCENARIOS_H_
#define INFRALENS_LAB_SCENARIOS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "lab/explain.h"
#include "plan/planner.h"

namespace infralens::lab {

struct ScenarioInfo {
  std::string name;      // "dp64-oom"
  std::string title;     // "why DP=64 runs out of memory"
  std::string question;  // what the interviewer asks
};

// Every scenario, in the order `infralens scenarios` lists them.
const std::vector<ScenarioInfo>& Scenarios();

struct ScenarioAnswer {
  ScenarioInfo info;
  plan::PlanRequest request;
  plan::PlanResult chosen;  // the layout the answer explains
  std::string headline;     // one line with the deciding numbers
  Explanation explanation;  // question set; the contrast added to its sections
};

// Computes one scenario; its planner searches take `search`'s threads and stop (a stopped search
// is ResourceExhausted). NotFound listing the names for an unknown one; FailedPrecondition when a
// preset changed so much that the scenario's layout no longer runs.
StatusOr<ScenarioAnswer> RunScenario(std::string_view name, const plan::SearchOptions& search = {});

}  // namespace infralens::lab

#endif  // INFRALENS_LAB_SCENARIOS_H_
