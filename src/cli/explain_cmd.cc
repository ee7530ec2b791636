// infralens explain: the five-part interview answer (problem, mechanism, communication, tradeoff,
// measurement) for a layout, or for the planner's best when no degree is given (lab 09).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_requests.h"
#include "cli/request_flags.h"
#include "plan/explain.h"

namespace infralens::cli {

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
    if (!c.given) RETURN_IF_ERROR(rf.RestrictSearch(given, &restricted));
    StatusOr<plan::PlanResult> best = plan::BestPlan(c.request, restricted);
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
  const plan::Explanation e = plan::Explain(c.request, c.chosen, c.has_best ? &c.best : nullptr);
  return json ? plan::RenderExplanationJson(e) : plan::RenderExplanationMarkdown(e);
}

Status RunExplain(const std::vector<std::string>& args, CliIO& io) {
  RequestFlags rf;
  rf.tf.recompute = "selective";
  std::string format = "markdown", output;
  bool json = false;
  Flags flags(
      "explain",
      "the five-part answer for a layout: problem, mechanism, communication, tradeoff, measurement",
      "infralens explain --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq S] "
      "[--tp T --pp P --dp D --cp C --ep E --zero Z --sp --recompute R --micro-batch b --schedule "
      "S] "
      "[--json] [--export FORMAT]",
      {"infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 --seq "
       "8192",
       "infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 --tp "
       "8 --pp 4 "
       "--distributed-optimizer --sp --json",
       "infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 "
       "--export megatron"});
  rf.Register(flags, /*layout=*/true, /*exports=*/true);
  AddOutputFlags(flags, &format, &json, &output, "markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"markdown", "json"}));
  const bool exporting = flags.Given("--export");
  if (exporting) RETURN_IF_ERROR(io::ParseExportFormat(rf.export_format).status());
  // The planner's best: the layout when none is given, else the comparison (not needed to export
  // a given layout).
  ASSIGN_OR_RETURN(LayoutChoice c, ChooseLayout(rf, GivenOf(flags), /*want_best=*/!exporting));
  if (exporting) {
    std::string data, notes;
    RETURN_IF_ERROR(AppendExport(rf.export_format, c.request, c.chosen.layout, data, notes));
    io.err << notes;
    return WriteOutput(output, data, io);
  }
  return WriteOutput(output, ExplainDocument(c, format == "json"), io);
}

}  // namespace infralens::cli
