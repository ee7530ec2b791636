// The worksheet documents of `infralens worksheet` and /api/worksheet: lab 12's two tables filled
// for a layout, and a learner's filled tables read and checked.
#include <fmt/format.h>

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

}  // namespace infralens::request
