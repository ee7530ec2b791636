// Exports of a plan (a Layout for a PlanRequest) to the configuration formats of the frameworks
// that run it: Megatron-LM command-line arguments, a DeepSpeed config JSON, the torchtitan TOML
// sections, and the pipeline schedule in PyTorch's CSV. Each key is spelled as upstream spells it;
// export_<format>.cc names the upstream file beside every key. docs/exports.md lists the mapping.
//
// The exporters only format: they never print, and they refuse layouts that do not describe a
// whole job (degrees that do not multiply to the cluster's GPUs, a batch that does not split).
#ifndef INFRALENS_IO_EXPORT_H_
#define INFRALENS_IO_EXPORT_H_

#include "base/status.h"
#include "io/export_types.h"
#include "plan/planner.h"

namespace infralens::io {

// The layout's pipeline schedule (its pp, vpp and microbatches) as io::WritePytorchCsv writes it.
// InvalidArgument when pp = 1 (no pipeline, nothing to schedule).
StatusOr<ExportedConfig> ExportPytorchCsv(const plan::PlanRequest& req, const plan::Layout& lay);

// Dispatches to ExportMegatron (export_megatron.h), ExportDeepSpeed (export_deepspeed.h),
// ExportTorchtitan (export_torchtitan.h) or ExportPytorchCsv.
StatusOr<ExportedConfig> ExportPlan(ExportFormat f, const plan::PlanRequest& req,
                                    const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_H_
