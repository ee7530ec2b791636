// torchtitan's TOML job config for a plan: the [parallelism] section and the [training] and
// [activation_checkpoint] keys that go with it, as torchtitan v0.2 reads them
// (torchtitan/config/job_config.py; train_configs such as torchtitan/models/llama3/train_configs/
// llama3_70b.toml).
#ifndef INFRALENS_IO_EXPORT_TORCHTITAN_H_
#define INFRALENS_IO_EXPORT_TORCHTITAN_H_

#include "io/export.h"

namespace infralens::io {

inline constexpr const char* kTorchtitanVersion = "v0.2";

// TOML sections [model] (llama3 presets only), [training], [parallelism] and
// [activation_checkpoint], with the other sections of a torchtitan config left to the user.
StatusOr<ExportedConfig> ExportTorchtitan(const plan::PlanRequest& req, const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_TORCHTITAN_H_
