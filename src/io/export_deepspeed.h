// A DeepSpeed config JSON for a plan: batch sizes, gradient accumulation, ZeRO stage, precision
// and clipping, with keys as DeepSpeed reads them (deepspeed/runtime/config.py,
// deepspeed/runtime/zero/config.py; documented at deepspeed.ai/docs/config-json).
#ifndef INFRALENS_IO_EXPORT_DEEPSPEED_H_
#define INFRALENS_IO_EXPORT_DEEPSPEED_H_

#include "io/export_types.h"

namespace infralens::io {

// The release whose keys the export uses (tests/data/deepspeed_config_keys.txt is its list).
inline constexpr const char* kDeepSpeedVersion = "v0.16.4";

// JSON only (DeepSpeed reads nothing else); the tensor, pipeline, context and expert degrees,
// which a DeepSpeed config does not hold, are in `notes` for the launcher.
StatusOr<ExportedConfig> ExportDeepSpeed(const plan::PlanRequest& req, const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_DEEPSPEED_H_
