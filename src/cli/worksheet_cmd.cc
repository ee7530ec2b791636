// infralens worksheet: lab 12's two tables filled for the best plan, or `worksheet check FILE.md`:
// a learner's filled tables evaluated and answered point by point.
#include <fmt/format.h>

#include "base/read_file.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "lab/worksheet.h"
#include "request/engine_requests.h"
#include "request/request_flags.h"

namespace infralens::cli {

using request::AppendExport;
using request::ChooseLayout;
using request::LayoutChoice;
using request::ReadWorksheetDesign;
using request::RequestFlags;
using request::WorksheetCheckDocument;
using request::WorksheetDocument;

namespace {

Status RunWorksheetCheck(const std::vector<std::string>& args, CliIO& io) {
  RequestFlags rf;
  std::vector<std::string> files;
  std::string format = "markdown", output;
  bool json = false;
  Flags flags("worksheet check",
              "check a learner's filled worksheet against the engine, point by point",
              "infralens worksheet check FILE.md --model M --cluster C (--nodes N | --gpus N) "
              "--global-batch B "
              "[--seq S] [--json]",
              {"infralens worksheet check my-design.md --model llama3-70b --cluster dgx-h100 "
               "--nodes 8 --global-batch "
               "512 --seq 8192",
               "infralens worksheet check my-design.md --model llama3-70b --cluster dgx-h100 "
               "--gpus 64 --global-batch "
               "512 --json"});
  rf.Register(flags, /*layout=*/false, /*exports=*/false);
  flags.Positionals("FILE", &files, "the worksheet: markdown with the lab's two pipe tables");
  AddOutputFlags(flags, &format, &json, &output, "markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"markdown", "json"}));
  if (files.size() != 1) {
    return InvalidArgument(
        fmt::format("worksheet check: expected one FILE.md, got {}", files.size()));
  }
  // The worksheet's content is a failure (exit 1), as a bad CSV row is (base/read_file.h).
  auto text = ReadFileLimited(files[0], lab::kMaxWorksheetBytes);
  if (!text.ok()) return AsFileFailure(text.status());
  auto read = ReadWorksheetDesign(*text, files[0]);
  if (!read.ok()) return AsFileFailure(read.status());
  const lab::LearnerDesign& design = *read;
  ASSIGN_OR_RETURN(plan::PlanRequest req, rf.Request(flags));
  StatusOr<plan::PlanResult> best = lab::BestPlan(req);
  const std::string data =
      WorksheetCheckDocument(design, req, best.ok() ? &*best : nullptr, format == "json");
  return WriteOutput(output, data, io);
}

}  // namespace

Status RunWorksheet(const std::vector<std::string>& args, CliIO& io) {
  if (!args.empty() && args[0] == "check")
    return RunWorksheetCheck({args.begin() + 1, args.end()}, io);
  if (!args.empty() && args[0] == "template") {
    std::string output;
    Flags flags("worksheet template",
                "lab 12's two tables with every answer cell empty, to fill and check",
                "infralens worksheet template [-o FILE.md]",
                {"infralens worksheet template > my-design.md"});
    AddOutputFile(flags, &output);
    RETURN_IF_ERROR(flags.Parse({args.begin() + 1, args.end()}));
    if (flags.help_requested()) {
      io.out << flags.Help();
      return Status::Ok();
    }
    return WriteOutput(output, lab::BlankWorksheetMarkdown(), io);
  }
  RequestFlags rf;
  rf.tf.recompute = "selective";
  std::string format = "markdown", output;
  bool json = false;
  Flags flags(
      "worksheet",
      "lab 12's design worksheet filled for the best plan or a given layout (or: worksheet check "
      "FILE.md, "
      "worksheet template)",
      "infralens worksheet --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq S] "
      "[--tp T --pp P ...] [--json] [--export FORMAT]\n"
      "       infralens worksheet check FILE.md --model M --cluster C --nodes N --global-batch B\n"
      "       infralens worksheet template > my-design.md",
      {"infralens worksheet --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
       "--seq 8192",
       "infralens worksheet --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
       "--tp 8 --pp 4 "
       "--distributed-optimizer --sp",
       "infralens worksheet check my-design.md --model llama3-70b --cluster dgx-h100 --nodes 8 "
       "--global-batch "
       "512"});
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
  ASSIGN_OR_RETURN(LayoutChoice c, ChooseLayout(rf, GivenOf(flags), /*want_best=*/false));
  if (exporting) {
    std::string data, notes;
    RETURN_IF_ERROR(AppendExport(rf.export_format, c.request, c.chosen.layout, data, notes));
    io.err << notes;
    return WriteOutput(output, data, io);
  }
  return WriteOutput(output, WorksheetDocument(c, format == "json"), io);
}

}  // namespace infralens::cli
