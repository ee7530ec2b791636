#include "request/training_flags.h"

#include <fmt/format.h>

#include "base/strings.h"
#include "io/model_source.h"
#include "model/presets.h"
#include "plan/cpu_offload.h"
#include "request/pipeline_flags.h"
#include "schedule/schedule.h"

namespace infralens::request {

void TrainingFlags::RegisterModel(FlagSink& flags) {
  flags.String("--model", &model_name,
               "a preset name (infralens presets), a path to a config.json, or - for a "
               "config.json on stdin");
}

void TrainingFlags::RegisterBatch(FlagSink& flags) {
  flags.Int("--global-batch", &global_batch,
            "sequences per step; 0 = micro-batch x dp x 2pp where the degrees fix dp, one "
            "sequence where there are none (a search needs it given)");
  flags.Int("--seq", &seq, "sequence length; 0 = the model's");
}

void TrainingFlags::Register(FlagSink& flags, bool layout) {
  RegisterModel(flags);
  if (layout) {
    flags.Int("--vpp", &par.vpp, kVirtualStagesHelp);
    flags.Int("--zero", &par.zero_stage,
              "ZeRO stage: 0 none, 1 optimizer, 2 + gradients, 3 + weights");
    flags.Bool("--distributed-optimizer", &distributed_optimizer,
               "Megatron's distributed optimizer (= --zero 1)");
    flags.Bool("--fsdp", &fsdp, "fully sharded data parallel (= --zero 3)");
    flags.Bool("--sp", &par.sequence_parallel, "sequence parallelism (with tensor parallelism)");
    flags.Bool("--no-sp", &no_sp,
               "no sequence parallelism: norms and dropout replicated on every TP rank, TP's "
               "collectives all-reduces (over the framework's default: NeMo and torchtitan run SP "
               "with TP)");
    flags.String(
        "--recompute", &recompute,
        "activation recomputation: none, selective (recomputes the attention core), full (keeps "
        "each layer's input) or op-sac (torchtitan's op-level selective checkpointing)");
    flags.Int("--micro-batch", &micro_batch, "sequences per microbatch");
    // Megatron-LM: --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers,
    // --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split.
    flags.OptionalInt("--first-stage-layers", &par.first_stage_layers,
                      "transformer layers on the first pipeline rank; the others split the rest "
                      "(uneven stages, Megatron's --decoder-first-pipeline-num-layers)");
    flags.OptionalInt("--last-stage-layers", &par.last_stage_layers,
                      "transformer layers on the last pipeline rank (Megatron's "
                      "--decoder-last-pipeline-num-layers)");
    flags.Bool("--embedding-in-split", &par.embedding_in_split,
               "count the embedding as a layer when splitting stages (Megatron's "
               "--account-for-embedding-in-pipeline-split)");
    flags.Bool("--loss-in-split", &par.loss_in_split,
               "count the output layer and loss as a layer when splitting stages (Megatron's "
               "--account-for-loss-in-pipeline-split)");
    flags.String("--layout", &par.layout,
                 "every stage's layers in Megatron's --pipeline-model-parallel-layout form: '|' "
                 "between pp x vpp stages, E embedding, t layer, L loss, (..)*n repeats, e.g. "
                 "'Ett|(tttt|)*14tttL'");
  }
  RegisterBatch(flags);
  if (layout) RegisterScheduleOption(flags, &schedule_name);
  flags.String("--precision", &precision,
               "matmul precision: bf16 or fp8 (Transformer Engine's FP8 adds an FP8 weight copy "
               "and transpose and keeps linear inputs in FP8: docs/memory.md)");
  flags.Bool("--fp32-grads", &fp32_grads,
             "keep and reduce gradients in FP32 (Megatron's main_grad): 4 bytes, not 2");
}

StatusOr<model::Model> TrainingFlags::LoadModel() const {
  if (model_given) return *model_given;
  if (model_name.empty()) {
    return InvalidArgument(
        "--model: required (a preset name or a config.json path; see infralens presets)");
  }
  if (!files_allowed) {
    auto m = model::FindPreset(model_name);
    if (m.ok()) return m;
    std::vector<std::string> names;
    for (const auto& p : model::ModelPresets()) names.push_back(p.model.name);
    const std::string hint = ClosestMatch(model_name, names);
    return InvalidArgument(fmt::format(
        "--model {}: not a preset{}; the workbench takes preset names ({}); a config.json works "
        "with the CLI",
        model_name, hint.empty() ? "" : " (did you mean '" + hint + "'?)", Join(names, ", ")));
  }
  // A config.json that does not read is a failure of the file (exit 1; ResolveModel says so).
  return io::ResolveModel(model_name);
}

StatusOr<plan::MemoryConfig> TrainingFlags::Config(const GivenFn& given) const {
  plan::MemoryConfig cfg;
  cfg.parallel = par;
  if (no_sp && par.sequence_parallel) return InvalidArgument("--sp and --no-sp: give one");
  if (fsdp && distributed_optimizer)
    return InvalidArgument("--fsdp and --distributed-optimizer: give one");
  if (fsdp || distributed_optimizer) {
    const int implied = fsdp ? 3 : 1;
    if (given("--zero") && par.zero_stage != implied) {
      return InvalidArgument(fmt::format("--zero {} and --{}: that is ZeRO stage {}",
                                         par.zero_stage, fsdp ? "fsdp" : "distributed-optimizer",
                                         implied));
    }
    cfg.parallel.zero_stage = implied;
  }
  if (seq < 0)
    return InvalidArgument(fmt::format("--seq {}: must be at least 1 (or 0 for the model's)", seq));
  if (global_batch < 0)
    return InvalidArgument(fmt::format("--global-batch {}: must be at least 1", global_batch));
  ASSIGN_OR_RETURN(cfg.recompute, model::ParseRecompute(recompute));
  ASSIGN_OR_RETURN(cfg.precision, plan::ParsePrecision(precision));
  ASSIGN_OR_RETURN(cfg.schedule, schedule::ParseScheduleKind(schedule_name));
  cfg.fp32_gradients = fp32_grads;
  cfg.micro_batch = micro_batch;
  cfg.global_batch = global_batch;
  cfg.seq_len = seq;
  return cfg;
}

Status ApplyYesNo(std::string_view flag, std::string_view value, bool* out) {
  if (value == "yes" || value == "no") {
    *out = value == "yes";
  } else if (!value.empty()) {
    return InvalidArgument(fmt::format("{} '{}': expected yes or no", flag, Excerpt(value)));
  }
  return Status::Ok();
}

Status ApplyCpuOffloadLayers(std::string_view value, int64_t* out) {
  if (value.empty()) return Status::Ok();
  const StatusOr<int64_t> n = plan::ParseCpuOffloadLayers(value);
  if (!n.ok()) {
    return InvalidArgument(
        fmt::format("--cpu-offload-layers {} (below the model's layers)", n.status().message()));
  }
  *out = *n;
  return Status::Ok();
}

Status ApplyRecomputeModules(std::string_view value, model::RecomputeModules* out) {
  if (value.empty()) return Status::Ok();
  const StatusOr<model::RecomputeModules> modules = model::ParseRecomputeModules(value);
  if (!modules.ok()) return modules.status();  // its field spelled --recompute-modules
  *out = *modules;
  return Status::Ok();
}

Status ApplyFp8Recipe(std::string_view recipe, bool* transformer_engine) {
  if (recipe == "delayed" || recipe == "tensorwise") {
    *transformer_engine = recipe == "delayed";
  } else if (!recipe.empty()) {
    return InvalidArgument(
        fmt::format("--fp8-recipe '{}': expected delayed or tensorwise", Excerpt(recipe)));
  }
  return Status::Ok();
}

}  // namespace infralens::request
