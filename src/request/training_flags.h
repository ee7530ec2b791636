// Options that describe a training job, shared by `memory`, `comm-plan` and the planner commands:
// the model, the batch, ZeRO/FSDP, sequence parallelism, recomputation, the pipeline schedule and
// precision. The parallel degrees are ClusterFlags' in every command.
#ifndef INFRALENS_REQUEST_TRAINING_FLAGS_H_
#define INFRALENS_REQUEST_TRAINING_FLAGS_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "model/model.h"
#include "plan/memory.h"
#include "request/flag_sink.h"

namespace infralens::request {

// --fp8-recipe's help, one text wherever it is registered (plan and its kin, memory).
inline constexpr const char* kFp8RecipeHelp =
    "delayed (Transformer Engine's: norms write FP8, linear inputs saved in FP8, weights cast "
    "once per step into an FP8 copy and transpose, output layer and router in BF16) or tensorwise "
    "(torchao's Float8Linear, torchtitan's: BF16 inputs saved, no FP8 weights); default: the "
    "framework's, delayed without one";
// --fp8-param-gather, as every command with FP8 takes it (plan::PlanRequest::fp8_param_gather).
inline constexpr const char* kFp8ParamGatherHelp =
    "yes or no: at FP8 under Transformer Engine's recipe, the layers' weights are FP8 parameters "
    "(Megatron's --fp8-param-gather): no BF16 copy, gathered in FP8 by the distributed "
    "optimizer; default: the framework's (NeMo's FP8 presets yes), else no";
// --master-weights, as plan and its kin and memory take it (plan::PlanRequest::
// master_weight_remainders).
inline constexpr const char* kMasterWeightsHelp =
    "fp32 or bf16_remainders: the optimizer's master weights as an FP32 copy (Megatron-Core's "
    "distributed optimizer, FSDP, ZeRO: 12 bytes of optimizer state per parameter) or as each "
    "BF16 weight's low 16 bits (apex DistributedFusedAdam's store_param_remainders, NeMo 1.x's "
    "distributed_fused_adam: 10 bytes); not with FP8 parameters; default: fp32";
// --cpu-offload-layers, as plan and its kin and memory take it (plan::PlanRequest::
// cpu_offload_layers).
inline constexpr const char* kCpuOffloadLayersHelp =
    "N: the first N transformer layers' activations copied to host memory after their forward "
    "and back before their backward (Megatron-Core's --cpu-offloading-num-layers), below the "
    "layer count; only with pp 1 and --recompute none; default: the framework's recipe (NeMo's "
    "Llama 3 70B on GB200), else 0";
// --recompute-modules, as plan and its kin and memory take it (plan::PlanRequest::
// recompute_modules).
inline constexpr const char* kRecomputeModulesHelp =
    "under --recompute selective, what is recomputed: one or more of core_attn, mlp, moe, "
    "shared_experts, moe_act, layernorm, mla_up_proj, separated by commas (Megatron-Core's "
    "--recompute-modules); default: the framework's recipe, else core_attn";
// A --recompute-modules value over `*out`: "" keeps it; InvalidArgument naming the value and the
// modules allowed otherwise.
Status ApplyRecomputeModules(std::string_view value, model::RecomputeModules* out);
// A --cpu-offload-layers value over `*out`: "" keeps it; InvalidArgument naming the value and the
// range (0 to plan::kMaxCpuOffloadLayers) otherwise. The model's own bound is the planner's.
Status ApplyCpuOffloadLayers(std::string_view value, int64_t* out);
// A yes/no flag's value over `*out`: "yes" (true), "no" (false), "" (keep); InvalidArgument
// naming `flag` and the value otherwise.
Status ApplyYesNo(std::string_view flag, std::string_view value, bool* out);
// An --fp8-recipe value over `*transformer_engine`: delayed (true), tensorwise (false), "" (keep);
// InvalidArgument naming the value otherwise.
Status ApplyFp8Recipe(std::string_view recipe, bool* transformer_engine);

struct TrainingFlags {
  std::string model_name;
  // Selective by default in every command (memory, comm-plan, plan, explain, worksheet, the API):
  // what Megatron-Core recipes run, and what the planner's own answers assume.
  std::string recompute = "selective";
  std::string schedule_name = "1f1b";
  std::string precision = "bf16";
  int micro_batch = 1, global_batch = 0, seq = 0;
  bool fsdp = false, distributed_optimizer = false, fp32_grads = false;
  bool no_sp = false;  // --no-sp: sequence parallelism off whatever the framework runs
  plan::ParallelConfig par;
  // Whether --model may name a config.json. The web API takes presets only: no request reads a
  // file.
  bool files_allowed = true;
  // A model read from elsewhere (plan --from-megatron: the launch script's): LoadModel returns
  // it instead of resolving --model.
  std::optional<model::Model> model_given;

  // --model, --global-batch, --seq, --precision, --fp32-grads; with `layout` also the layout
  // options (--vpp, ZeRO, SP, --recompute, --micro-batch, --schedule). The degrees are
  // ClusterFlags' (`par` keeps 1 for them until a command copies them in).
  void Register(FlagSink& flags, bool layout);
  // The parts `model` shares: --model; --global-batch and --seq.
  void RegisterModel(FlagSink& flags);
  void RegisterBatch(FlagSink& flags);
  // The model (preset or config.json) and the MemoryConfig without a GPU (hbm_bytes = 0).
  StatusOr<model::Model> LoadModel() const;
  StatusOr<plan::MemoryConfig> Config(const GivenFn& given) const;
  StatusOr<plan::MemoryConfig> Config(const FlagSink& flags) const {
    return Config(GivenOf(flags));
  }
};

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_TRAINING_FLAGS_H_
