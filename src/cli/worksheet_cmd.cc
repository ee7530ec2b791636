// infralens worksheet: lab 12's two tables filled for the best plan, or `worksheet check FILE.md`:
// a learner's filled tables evaluated and answered point by point.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_requests.h"
#include "cli/request_flags.h"
#include "plan/worksheet.h"

namespace infralens::cli {

std::string WorksheetDocument(const LayoutChoice& c, bool json) {
  const plan::PlanRequest& req = c.request;
  const plan::PlanResult& r = c.chosen;
  const plan::Worksheet w = plan::FillWorksheet(req, r);
  if (json) return plan::RenderWorksheetJson(req, r, w);
  std::string data = fmt::format(
      "# Parallelism worksheet: {} on {} x {} ({}, {} nodes of {}), global batch {} x {} "
      "tokens\n\n",
      req.model.name, req.gpus(), req.gpu.name, req.cluster.name, req.cluster.num_nodes,
      req.cluster.node.gpus_per_node, req.global_batch, r.memory.seq_len);
  data += fmt::format("{}: {} ({} per step, {:.0f} tokens/s, MFU {}, {} per GPU{}).\n\n",
                      c.given ? "The layout given" : "The planner's best layout",
                      r.layout.ToString(), plan::FormatSeconds(r.time.step_s), r.tokens_per_s,
                      plan::FormatPercent(r.mfu), plan::FormatGiB(r.memory.worst().total_bytes),
                      r.memory.fits ? "" : ": it does not fit");
  return data + plan::RenderWorksheetMarkdown(w);
}

StatusOr<plan::LearnerDesign> ReadWorksheetDesign(std::string_view text, std::string_view source) {
  auto sheet = plan::ParseWorksheet(text);
  if (!sheet.ok()) return InvalidArgument(fmt::format("{}: {}", source, sheet.status().message()));
  auto design = plan::InterpretWorksheet(*sheet);
  if (!design.ok())
    return InvalidArgument(fmt::format("{}: {}", source, design.status().message()));
  return design;
}

std::string WorksheetCheckDocument(const plan::LearnerDesign& design, const plan::PlanRequest& req,
                                   const plan::PlanResult* best, bool json) {
  const plan::WorksheetCheck check = plan::CheckWorksheet(req, design, best);
  return json ? plan::RenderCheckJson(check) : plan::RenderCheckMarkdown(check);
}

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
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(files[0], plan::kMaxWorksheetBytes));
  ASSIGN_OR_RETURN(plan::LearnerDesign design, ReadWorksheetDesign(text, files[0]));
  ASSIGN_OR_RETURN(plan::PlanRequest req, rf.Request(flags));
  StatusOr<plan::PlanResult> best = plan::BestPlan(req);
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
    flags.String("-o,--output", &output, "write to FILE instead of stdout");
    RETURN_IF_ERROR(flags.Parse({args.begin() + 1, args.end()}));
    if (flags.help_requested()) {
      io.out << flags.Help();
      return Status::Ok();
    }
    return WriteOutput(output, plan::BlankWorksheetMarkdown(), io);
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
