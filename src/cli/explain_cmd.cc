// infralens explain: the five-part interview answer (problem, mechanism, communication, tradeoff,
// measurement) for a layout, or for the planner's best when no degree is given (lab 09).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/request_flags.h"
#include "plan/explain.h"

namespace infralens::cli {

Status RunExplain(const std::vector<std::string>& args, CliIO& io) {
  RequestFlags rf;
  rf.tf.recompute = "selective";
  std::string format = "markdown", output;
  bool json = false;
  Flags flags("explain", "the five-part answer for a layout: problem, mechanism, communication, tradeoff, measurement",
              "infralens explain --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq S] "
              "[--tp T --pp P --dp D --cp C --ep E --zero Z --sp --recompute R --micro-batch b --schedule S] "
              "[--json] [--export FORMAT]",
              {"infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 --seq 8192",
               "infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 --tp 8 --pp 4 "
               "--distributed-optimizer --sp --json",
               "infralens explain --model llama3-70b --cluster dgx-h100 --nodes 8 --global-batch 512 --export megatron"});
  rf.Register(flags, /*layout=*/true, /*exports=*/true);
  flags.String("--format", &format, "markdown or json");
  flags.Bool("--json", &json, "same as --format json");
  flags.String("-o,--output", &output, "write to this file instead of stdout");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (json) format = "json";
  if (format != "markdown" && format != "json") {
    return InvalidArgument(fmt::format("--format {}: expected markdown or json", format));
  }
  if (flags.Given("--export")) RETURN_IF_ERROR(io::ParseExportFormat(rf.export_format).status());
  ASSIGN_OR_RETURN(plan::PlanRequest req, rf.Request(flags));
  ASSIGN_OR_RETURN(std::optional<plan::Layout> lay, rf.Layout(flags, req));
  // The planner's best: the layout when none is given, else the comparison (not needed to export
  // a given layout).
  StatusOr<plan::PlanResult> best = FailedPrecondition("not searched");
  if (!lay || !flags.Given("--export")) best = plan::BestPlan(req);
  if (!lay && !best.ok()) return best.status();
  plan::PlanResult chosen;
  if (lay) {
    ASSIGN_OR_RETURN(chosen, plan::Evaluate(req, *lay));
  } else {
    chosen = *best;
  }
  std::string data;
  if (flags.Given("--export")) {
    std::string notes;
    RETURN_IF_ERROR(AppendExport(rf.export_format, req, chosen.layout, data, notes));
    io.err << notes;
    return WriteOutput(output, data, io);
  }
  const plan::Explanation e = plan::Explain(req, chosen, best.ok() ? &*best : nullptr);
  data = format == "json" ? plan::RenderExplanationJson(e) : plan::RenderExplanationMarkdown(e);
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
