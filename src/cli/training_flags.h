// Flags that describe a training job, shared by `memory`, `comm-plan` and the planner commands:
// the model, the batch, ZeRO/FSDP, sequence parallelism, recomputation, the pipeline schedule and
// precision; optionally the parallel degrees (commands that place the job on a cluster take
// those from ClusterFlags instead).
#ifndef INFRALENS_CLI_TRAINING_FLAGS_H_
#define INFRALENS_CLI_TRAINING_FLAGS_H_

#include <string>

#include "base/status.h"
#include "cli/flags.h"
#include "model/model.h"
#include "plan/memory.h"

namespace infralens::cli {

struct TrainingFlags {
  std::string model_name;
  // Selective by default in every command (memory, comm-plan, plan, explain, worksheet, the API):
  // what Megatron-Core recipes run, and what the planner's own answers assume.
  std::string recompute = "selective";
  std::string schedule_name = "1f1b";
  std::string precision = "bf16";
  int micro_batch = 1, global_batch = 0, seq = 0;
  bool fsdp = false, distributed_optimizer = false, fp32_grads = false;
  plan::ParallelConfig par;
  // Whether --model may name a config.json. The web API takes presets only: no request reads a
  // file.
  bool files_allowed = true;

  // Registers the flags; with `degrees` also --tp --pp --dp --cp --ep (else only --vpp).
  void Register(Flags& flags, bool degrees);
  // The model (preset or config.json) and the MemoryConfig without a GPU (hbm_bytes = 0).
  StatusOr<model::Model> LoadModel() const;
  StatusOr<plan::MemoryConfig> Config(const GivenFn& given) const;
  StatusOr<plan::MemoryConfig> Config(const Flags& flags) const { return Config(GivenOf(flags)); }
};

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_TRAINING_FLAGS_H_
