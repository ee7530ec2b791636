// infralens plan: search the layouts of a model on a cluster, or evaluate one; with the reasons.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/terminal.h"
#include "plan/planner.h"
#include "request/engine_requests.h"
#include "request/plan_output.h"
#include "request/request_flags.h"

namespace infralens::request {

void PlanQuery::RegisterTop(FlagSink& flags) {
  flags.Int("--top", &top, "how many layouts to list");
}

StatusOr<plan::PlanRequest> PlanRequestOf(const PlanQuery& q, const GivenFn& given) {
  return q.request.Request(given);
}

StatusOr<PlanOutcome> ComputePlan(const PlanQuery& q, const GivenFn& given,
                                  const plan::ProgressFn& progress, const StopFn& stop) {
  PlanOutcome o;
  ASSIGN_OR_RETURN(o.request, q.request.Request(given));
  ASSIGN_OR_RETURN(std::optional<plan::Layout> fixed, q.request.Layout(given, o.request));
  if (fixed) {
    // Evaluate the user's own layout.
    o.evaluated = true;
    ASSIGN_OR_RETURN(o.one, plan::Evaluate(o.request, *fixed));
    return o;
  }
  plan::SearchOptions opt;
  opt.top_k = q.top;
  opt.threads = q.threads;
  opt.stop = stop;
  opt.keep_partial = q.keep_partial;
  RETURN_IF_ERROR(q.request.RestrictSearch(given, &opt));
  ASSIGN_OR_RETURN(o.search, plan::Search(o.request, opt, progress));
  return o;
}

std::string PlanJson(const PlanOutcome& o, int indent) {
  return o.evaluated ? PlanResultJsonDocument(o.request, o.one, indent)
                     : SearchJsonDocument(o.request, o.search, indent);
}

}  // namespace infralens::request
