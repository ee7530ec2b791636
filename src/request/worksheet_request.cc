// The worksheet documents of `infralens worksheet` and /api/worksheet: lab 12's two tables filled
// for a layout, and a learner's filled tables read and checked.
#include <fmt/format.h>

#include "base/read_file.h"
#include "io/export.h"
#include "lab/explain.h"
#include "lab/worksheet.h"
#include "request/engine_requests.h"

namespace infralens::request {

std::string WorksheetDocument(const LayoutChoice& c, bool json) {
  const plan::PlanRequest& req = c.request;
  const plan::PlanResult& r = c.chosen;
  const lab::Worksheet w = lab::FillWorksheet(req, r);
  if (json) return lab::RenderWorksheetJson(req, r, w);
  std::string data = fmt::format(
      "# Parallelism worksheet: {} on {} x {} ({}, {} nodes of {}), global batch {} x {} "
      "tokens\n\n",
      req.model.name, req.gpus(), req.gpu.name, req.cluster.name, req.cluster.num_nodes,
      req.cluster.node.gpus_per_node, req.global_batch, r.memory.seq_len);
  data += fmt::format("{}: {} ({} per step, {:.0f} tokens/s, MFU {}, {} per GPU{}).\n\n",
                      c.given ? "The layout given" : "The planner's best layout",
                      r.layout.ToString(), lab::FormatSeconds(r.time.step_s), r.tokens_per_s,
                      lab::FormatPercent(r.mfu), lab::FormatGiB(r.memory.worst().total_bytes),
                      r.memory.fits ? "" : ": it does not fit");
  return data + lab::RenderWorksheetMarkdown(w);
}

StatusOr<lab::LearnerDesign> ReadWorksheetDesign(std::string_view text, std::string_view source) {
  auto sheet = lab::ParseWorksheet(text);
  if (!sheet.ok()) return InvalidArgument(fmt::format("{}: {}", source, sheet.status().message()));
  auto design = lab::InterpretWorksheet(*sheet);
  if (!design.ok())
    return InvalidArgument(fmt::format("{}: {}", source, design.status().message()));
  return design;
}

std::string WorksheetCheckDocument(const lab::LearnerDesign& design, const plan::PlanRequest& req,
                                   const plan::PlanResult* best, bool json) {
  const lab::WorksheetCheck check = lab::CheckWorksheet(req, design, best);
  return json ? lab::RenderCheckJson(check) : lab::RenderCheckMarkdown(check);
}

namespace {

struct WorksheetCheckQuery {
  RequestFlags request;
  std::vector<std::string> files;  // the one FILE.md (the API: its request body)
};

struct WorksheetCheckResult {
  lab::LearnerDesign design;
  plan::PlanRequest request;
  StatusOr<plan::PlanResult> best = Status(StatusCode::kNotFound, "not searched");
};

struct NoQuery {};

}  // namespace

const Command& WorksheetCommand() {
  static const Command kCommand = MakeCommand<RequestFlags, LayoutChoice>(
      {.name = "worksheet",
       .summary = "lab 12's design worksheet filled for the best plan or a given layout (or: "
                  "worksheet check FILE.md, worksheet template)",
       .usage = "infralens worksheet --model M --cluster C (--gpus N | --nodes N) --global-batch "
                "B [--seq S] [--tp T --pp P ...] [--json] [--export FORMAT]\n"
                "       infralens worksheet check FILE.md --model M --cluster C --nodes N "
                "--global-batch B\n"
                "       infralens worksheet template > my-design.md",
       .examples = {"infralens worksheet --model llama3-70b --cluster dgx-h100 --gpus 64 "
                    "--global-batch 512 --seq 8192",
                    "infralens worksheet --model llama3-70b --cluster dgx-h100 --gpus 64 "
                    "--global-batch 512 --tp 8 --pp 4 --distributed-optimizer --sp",
                    "infralens worksheet check my-design.md --model llama3-70b --cluster dgx-h100 "
                    "--nodes 8 --global-batch 512"},
       .formats = {"markdown", "json"},
       .cli_only = {"--export"}},
      [](RequestFlags& rf, FlagSink& flags) {
        rf.tf.recompute = "selective";
        rf.Register(flags, /*layout=*/true, /*exports=*/true);
      },
      [](const RequestFlags& rf, const RunContext& ctx) -> StatusOr<LayoutChoice> {
        if (ctx.given("--export"))
          RETURN_IF_ERROR(io::ParseExportFormat(rf.export_format).status());
        return ChooseLayoutFor(rf, ctx, /*want_best=*/false);
      },
      [](const LayoutChoice& c, const RequestFlags& rf,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.given("--export"))
          return ExportDocument(rf.export_format, c.request, c.chosen.layout, ctx);
        return WorksheetDocument(c, ctx.format == "json");
      });
  return kCommand;
}

const Command& WorksheetCheckCommand() {
  static const Command kCommand = MakeCommand<WorksheetCheckQuery, WorksheetCheckResult>(
      {.name = "worksheet check",
       .summary = "check a learner's filled worksheet against the engine, point by point",
       .usage = "infralens worksheet check FILE.md --model M --cluster C (--nodes N | --gpus N) "
                "--global-batch B [--seq S] [--json]",
       .examples = {"infralens worksheet check my-design.md --model llama3-70b --cluster "
                    "dgx-h100 --nodes 8 --global-batch 512 --seq 8192",
                    "infralens worksheet check my-design.md --model llama3-70b --cluster "
                    "dgx-h100 --gpus 64 --global-batch 512 --json"},
       .formats = {"markdown", "json"}},
      [](WorksheetCheckQuery& q, FlagSink& flags) {
        q.request.Register(flags, /*layout=*/false, /*exports=*/false);
        flags.Positionals("FILE", &q.files,
                          "the worksheet: markdown with the lab's two pipe tables");
      },
      [](const WorksheetCheckQuery& q, const RunContext& ctx) -> StatusOr<WorksheetCheckResult> {
        if (q.files.size() != 1) {
          if (!ctx.files_allowed) {
            return InvalidArgument(
                "‹body›: send the filled worksheet (markdown with the lab's two tables) as the "
                "request body");
          }
          return InvalidArgument(
              fmt::format("worksheet check: expected one FILE.md, got {}", q.files.size()));
        }
        // The worksheet first: a malformed one is answered before any search. Its content is a
        // failure (exit 1), as a bad CSV row is (base/read_file.h).
        ASSIGN_OR_RETURN(const std::string text,
                         ctx.ReadInput(q.files[0], "body", lab::kMaxWorksheetBytes));
        WorksheetCheckResult r;
        if (ctx.files_allowed) {
          auto read = ReadWorksheetDesign(text, q.files[0]);
          if (!read.ok()) return AsFileFailure(read.status());
          r.design = *std::move(read);
        } else {
          ASSIGN_OR_RETURN(r.design, ReadWorksheetDesign(text, "the request ‹body›"));
        }
        RequestFlags rf = q.request;
        rf.SetFilesAllowed(ctx.files_allowed);
        ASSIGN_OR_RETURN(r.request, rf.Request(ctx.given));
        RETURN_IF_ERROR(CheckRequestGpus(r.request, ctx.given, ctx.max_gpus));
        r.best = lab::BestPlan(r.request, SearchOptionsOf(ctx));
        // A search stopped by the caller fails the check; a job where nothing fits is a finding.
        if (!r.best.ok() && r.best.status().code() == StatusCode::kResourceExhausted)
          return r.best.status();
        return r;
      },
      [](const WorksheetCheckResult& r, const WorksheetCheckQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        return WorksheetCheckDocument(r.design, r.request, r.best.ok() ? &*r.best : nullptr,
                                      ctx.format == "json");
      });
  return kCommand;
}

const Command& WorksheetTemplateCommand() {
  static const Command kCommand = MakeCommand<NoQuery, std::string>(
      {.name = "worksheet template",
       .summary = "lab 12's two tables with every answer cell empty, to fill and check",
       .usage = "infralens worksheet template [-o FILE.md]",
       .examples = {"infralens worksheet template > my-design.md"},
       .formats = {"markdown"}},
      [](NoQuery&, FlagSink&) {},
      [](const NoQuery&, const RunContext&) -> StatusOr<std::string> {
        return lab::BlankWorksheetMarkdown();
      },
      [](const std::string& text, const NoQuery&, const RunContext&) -> StatusOr<std::string> {
        return text;
      });
  return kCommand;
}

}  // namespace infralens::request
