// infralens explain: the five-part interview answer (problem, mechanism, communication, tradeoff,
// measurement) for a layout (--tp with --pp), or for the planner's best among the layouts that keep
// the options given (lab 09).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "lab/explain.h"
#include "request/engine_requests.h"
#include "request/request_flags.h"

namespace infralens::cli {

using request::AppendExport;
using request::ChooseLayout;
using request::ExplainDocument;
using request::LayoutChoice;
using request::RequestFlags;

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
