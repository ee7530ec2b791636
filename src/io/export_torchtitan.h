// torchtitan's TOML job config for a plan: the [parallelism] section and the [training] and
// [activation_checkpoint] keys that go with it, as torchtitan v0.2.2 reads them
// (torchtitan/config/job_config.py; train_configs such as torchtitan/models/llama3/train_configs/
// llama3_70b.toml). tests/data/torchtitan_job_config_keys.txt lists that version's keys.
#ifndef INFRALENS_IO_EXPORT_TORCHTITAN_H_
#define INFRALENS_IO_EXPORT_TORCHTITAN_H_

#include "io/export_types.h"

namespace infralens::io {

inline constexpr const char* kTorchtitanVersion = "v0.2.2";
inline constexpr const char* kTorchtitanCommit = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce";

// The modules of each pipeline stage in model order, as torchtitan's
// parallelism.module_fqns_per_model_part names them (generate_llm_fqn_per_model_part in
// torchtitan/distributed/pipeline_parallel.py): "tok_embeddings" first in stage 0, then
// "layers.<i>" by the stage's layer count, and "norm", "output" last in the last stage.
std::vector<std::vector<std::string>> TorchtitanStageModules(
    const std::vector<int64_t>& stage_layers);

// False for the presets whose torchtitan model has no pipelining (qwen3 and gpt_oss at v0.2.2:
// their TrainSpec's pipelining_fn is None), so a torchtitan export needs pp 1; true otherwise,
// and for models torchtitan does not have (the user registers their own).
bool TorchtitanRunsPipelines(const model::Model& m);

// TOML sections [model] (the Llama-3, DeepSeek-V3, Qwen3 and GPT-OSS presets, torchtitan's models),
// [training], [parallelism] (with the plan's stage split as module_fqns_per_model_part) and
// [activation_checkpoint], with the other sections of a torchtitan config left to the user. The
// header comment names the version and each thing the config cannot express. InvalidArgument
// for what torchtitan refuses at startup: pp > 1 on a model without pipelining, a sequence
// length that is not a multiple of tp x 2 cp.
StatusOr<ExportedConfig> ExportTorchtitan(const plan::PlanRequest& req, const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_TORCHTITAN_H_
