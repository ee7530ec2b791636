// Renderings of planner results shared by `plan`, `validate`, `worksheet`, `explain` and the
// server: text tables and the JSON documents (stable keys, documented in docs/planner.md).
#ifndef INFRALENS_REQUEST_PLAN_OUTPUT_H_
#define INFRALENS_REQUEST_PLAN_OUTPUT_H_

#include <string>

#include "base/json_writer.h"
#include "plan/planner.h"

namespace infralens::request {

// The degrees of a layout's "parallel" object, its first fields (the caller opens it, adds its
// own and closes it): tp, pp, vpp, dp, cp, ep, zero and sequence_parallel. `vpp`: the chunks per
// rank the layout runs.
void WriteParallelFields(JsonWriter& w, const plan::ParallelConfig& p, int vpp);

// One evaluated layout: the request line, the layout, the step-time breakdown, memory per
// pipeline rank and the communication plan.
std::string PlanResultText(const plan::PlanRequest& req, const plan::PlanResult& r, bool markdown);
// Writes one plan as a JSON object: layout, step_time_s, breakdown, memory, comm, throughput.
void WritePlanJson(JsonWriter& w, const plan::PlanResult& r);
std::string PlanResultJsonDocument(const plan::PlanRequest& req, const plan::PlanResult& r,
                                   int indent = 2);

// A search: the ranked layouts, the winner's breakdown and, with `explain`, every family's verdict.
std::string SearchText(const plan::PlanRequest& req, const plan::SearchResult& sr, bool explain,
                       bool markdown);
std::string SearchJsonDocument(const plan::PlanRequest& req, const plan::SearchResult& sr,
                               int indent = 2);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_PLAN_OUTPUT_H_
