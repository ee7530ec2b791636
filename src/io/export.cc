#include "io/export.h"

#include <fmt/format.h>

#include <limits>

#include "base/strings.h"
#include "io/export_deepspeed.h"
#include "io/export_megatron.h"
#include "io/export_torchtitan.h"
#include "io/pytorch_csv.h"
#include "schedule/schedule.h"

namespace infralens::io {

StatusOr<ExportedConfig> ExportPytorchCsv(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(ExportJob j, ResolveExportJob(req, lay));
  if (j.pp == 1) {
    return InvalidArgument(
        fmt::format("‹export› pytorch-csv: the plan has pp=1 ({}), so there is no pipeline "
                    "schedule to export",
                    lay.ToString()));
  }
  if (j.microbatches > std::numeric_limits<int>::max()) {
    return InvalidArgument(
        fmt::format("{} microbatches: too many to write a schedule", j.microbatches));
  }
  ASSIGN_OR_RETURN(
      schedule::Schedule s,
      schedule::Generate(lay.schedule, {j.pp, j.vpp, static_cast<int>(j.microbatches)}));
  ExportedConfig out;
  out.text = WritePytorchCsv(s);
  out.notes.push_back(fmt::format(
      "{} with pp={} vpp={} and {} microbatches; load it with PipelineScheduleMulti._load_csv "
      "(PyTorch "
      "torch/distributed/pipelining/schedules.py) or torchtitan's pipeline_parallel_schedule_csv",
      schedule::Info(lay.schedule).name, j.pp, j.vpp, j.microbatches));
  return out;
}

StatusOr<ExportedConfig> ExportPlan(ExportFormat f, const plan::PlanRequest& req,
                                    const plan::Layout& lay) {
  if (lay.recompute == model::Recompute::kOpSac &&
      (f == ExportFormat::kMegatron || f == ExportFormat::kDeepSpeed)) {
    return InvalidArgument(fmt::format(
        "‹recompute› op-sac is torchtitan's op-level activation checkpointing; {} has none, "
        "selective (Megatron) or full: plan with one of those to export there",
        ExportFormatName(f)));
  }
  switch (f) {
    case ExportFormat::kMegatron:
      return ExportMegatron(req, lay);
    case ExportFormat::kDeepSpeed:
      return ExportDeepSpeed(req, lay);
    case ExportFormat::kTorchtitan:
      return ExportTorchtitan(req, lay);
    case ExportFormat::kPytorchCsv:
      return ExportPytorchCsv(req, lay);
  }
  return Internal("unknown export format");
}

}  // namespace infralens::io
