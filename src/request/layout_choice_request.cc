// infralens explain: the five-part interview answer (problem, mechanism, communication, tradeoff,
// measurement) for a layout, or for the planner's best when no degree is given (lab 09).
#include <fmt/format.h>

#include "lab/explain.h"
#include "request/engine_requests.h"
#include "request/request_flags.h"

namespace infralens::request {

StatusOr<LayoutChoice> ChooseLayout(const RequestFlags& rf, const GivenFn& given, bool want_best,
                                    const plan::SearchOptions& search) {
  ASSIGN_OR_RETURN(plan::PlanRequest request, rf.Request(given));
  return ChooseLayout(std::move(request), rf, given, want_best, search);
}

StatusOr<LayoutChoice> ChooseLayout(plan::PlanRequest request, const RequestFlags& rf,
                                    const GivenFn& given, bool want_best,
                                    const plan::SearchOptions& search) {
  LayoutChoice c;
  c.request = std::move(request);
  ASSIGN_OR_RETURN(std::optional<plan::Layout> lay, rf.Layout(given, c.request));
  c.given = lay.has_value();
  // A given layout first, so that a layout that cannot run is refused before any search.
  if (c.given) {
    ASSIGN_OR_RETURN(c.chosen, plan::Evaluate(c.request, *lay));
  }
  if (!c.given || want_best) {
    // Without degrees, the layout options given restrict the search (the best of those); with a
    // given layout, "the best" is the unrestricted one it is compared with.
    plan::SearchOptions restricted = search;
    if (!c.given) RETURN_IF_ERROR(rf.RestrictSearch(given, c.request, &restricted));
    StatusOr<plan::PlanResult> best = lab::BestPlan(c.request, restricted);
    // A stopped search is the caller's time limit, whichever layout was asked for.
    if (!best.ok() && (!c.given || best.status().code() == StatusCode::kResourceExhausted)) {
      return best.status();
    }
    if (best.ok()) {
      c.has_best = true;
      c.best = *std::move(best);
    }
  }
  if (!c.given) c.chosen = c.best;
  return c;
}

std::string ExplainDocument(const LayoutChoice& c, bool json) {
  const lab::Explanation e = lab::Explain(c.request, c.chosen, c.has_best ? &c.best : nullptr);
  return json ? lab::RenderExplanationJson(e) : lab::RenderExplanationMarkdown(e);
}

}  // namespace infralens::request
