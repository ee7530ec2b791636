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

void PlanQuery::RegisterSearch(FlagSink& flags) {
  flags.Int("--top", &top, "how many layouts to list");
  flags.Double("--search-seconds", &search_seconds,
               "stop the search after this many seconds and rank the layouts it evaluated (the "
               "answer says partial); 0 = search them all");
}

StatusOr<plan::PlanRequest> PlanRequestOf(const PlanQuery& q, const GivenFn& given) {
  return q.request.Request(given);
}

StatusOr<PlanOutcome> ComputePlan(const PlanQuery& q, const GivenFn& given,
                                  const plan::ProgressFn& progress, const StopFn& stop) {
  if (!(q.search_seconds >= 0 && q.search_seconds <= kMaxSearchSeconds)) {
    return InvalidArgument(fmt::format("--search-seconds {}: must be 0..{} (0 = no limit)",
                                       q.search_seconds, kMaxSearchSeconds));
  }
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
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(q.search_seconds));
  if (q.search_seconds > 0) {
    opt.stop = [stop, deadline] {
      return std::chrono::steady_clock::now() >= deadline || (stop && stop());
    };
    opt.keep_partial = true;
  }
  RETURN_IF_ERROR(q.request.RestrictSearch(given, o.request, &opt));
  auto searched = plan::Search(o.request, opt, progress);
  if (!searched.ok() && searched.status().code() == StatusCode::kResourceExhausted &&
      q.search_seconds > 0 && !(stop && stop())) {
    // Stopped by --search-seconds, not by the caller: the user's own bound, said as such.
    return FailedPrecondition(
        fmt::format("--search-seconds {}: {} before any layout that fits was evaluated; allow "
                    "more seconds (0 = no limit)",
                    q.search_seconds, searched.status().message()));
  }
  ASSIGN_OR_RETURN(o.search, std::move(searched));
  return o;
}

std::string PlanJson(const PlanOutcome& o, int indent) {
  return o.evaluated ? PlanResultJsonDocument(o.request, o.one, indent)
                     : SearchJsonDocument(o.request, o.search, indent);
}

}  // namespace infralens::request
