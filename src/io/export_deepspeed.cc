// Keys as DeepSpeed v0.16.4 reads them: deepspeed/runtime/constants.py and config.py (batch sizes,
// gradient_clipping, bf16), deepspeed/runtime/zero/config.py (zero_optimization); the reference
// is docs/_pages/config-json.md (deepspeed.ai/docs/config-json).
#include "io/export_deepspeed.h"

#include <fmt/format.h>

#include "base/json_writer.h"
#include "schedule/schedule.h"

namespace infralens::io {

StatusOr<ExportedConfig> ExportDeepSpeed(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(ExportJob j, ResolveExportJob(req, lay));
  ExportedConfig out;
  JsonWriter w;
  w.BeginObject();
  // DeepSpeedConfig._batch_assertion: train_batch_size == micro x gradient_accumulation_steps x
  // world_size, where world_size is mpu.get_data_parallel_world_size() when a model-parallel unit
  // is given (Megatron-DeepSpeed), else every rank.
  w.Field("train_batch_size", j.global_batch);
  w.Field("train_micro_batch_size_per_gpu", j.micro_batch);
  w.Field("gradient_accumulation_steps", j.microbatches);
  w.Field("gradient_clipping", 1.0);
  // "bf16": {"enabled"} (BFLOAT16 training options); FP8 has no DeepSpeed config key.
  w.Key("bf16").BeginObject().Field("enabled", true).EndObject();
  // DeepSpeedZeroConfig: stage 0-3; overlap_comm overlaps the gradient reduction with backward;
  // contiguous_gradients copies gradients into one buffer as they are produced.
  w.Key("zero_optimization").BeginObject();
  w.Field("stage", j.zero);
  if (j.zero > 0) {
    w.Field("overlap_comm", req.overlap_grad_reduce);
    w.Field("contiguous_gradients", true);
  }
  // stage3_max_live_parameters: the live bound the plan's ZeRO-3 prefetch was timed with
  // (PlanRequest::fsdp_max_live_params; DeepSpeed's own default 1e9 when the plan took it).
  if (j.zero >= 3 && req.fsdp_max_live_params > 0) {
    w.Field("stage3_max_live_parameters", static_cast<int64_t>(req.fsdp_max_live_params));
  }
  w.EndObject();
  w.EndObject();
  out.text = w.str();

  // JSON has no comments: the target version is the first note.
  out.notes.push_back(
      fmt::format("targets microsoft/DeepSpeed {} (deepspeed/runtime/config.py, "
                  "deepspeed/runtime/zero/config.py; keys in tests/data/deepspeed_config_keys.txt)",
                  kDeepSpeedVersion));
  out.notes.push_back(
      fmt::format("train_batch_size {} = train_micro_batch_size_per_gpu {} x "
                  "gradient_accumulation_steps {} x data-parallel "
                  "size {} (DeepSpeed checks this identity)",
                  j.global_batch, j.micro_batch, j.microbatches, j.dp));
  if (j.tp > 1 || j.pp > 1 || j.cp > 1 || j.ep > 1) {
    std::string degrees = fmt::format("tp={} pp={}", j.tp, j.pp);
    if (j.cp > 1) degrees += fmt::format(" cp={}", j.cp);
    if (j.ep > 1) degrees += fmt::format(" ep={}", j.ep);
    out.notes.push_back(
        fmt::format("a DeepSpeed config holds no model-parallel degrees: give {} to the launcher "
                    "(Megatron-DeepSpeed: "
                    "--tensor-model-parallel-size {} --pipeline-model-parallel-size {}; "
                    "PipelineModule(num_stages={})"
                    "{})",
                    degrees, j.tp, j.pp, j.pp,
                    j.ep > 1 ? fmt::format("; deepspeed.moe.layer.MoE(ep_size={})", j.ep) : ""));
  }
  if (j.layers_per_chunk == 0) {
    out.notes.push_back(
        fmt::format("uneven stages ({}): DeepSpeed's PipelineModule splits by its partition_method "
                    "(deepspeed/runtime/pipe/module.py, default 'parameters'), not by these counts",
                    plan::StageSplitText(j.stage_layers)));
  }
  if (j.pp > 1 && j.zero >= 2) {
    out.notes.push_back(
        fmt::format("ZeRO stage {} with pp={}: DeepSpeed's PipelineEngine refuses stages 2 and 3 "
                    "(\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\")",
                    j.zero, j.pp));
  }
  if (j.pp > 1 && lay.schedule != schedule::ScheduleKind::k1F1B) {
    out.notes.push_back(
        fmt::format("DeepSpeed's PipelineEngine runs its own 1F1B TrainSchedule; the plan's {} "
                    "has no DeepSpeed setting",
                    schedule::Info(lay.schedule).name));
  }
  if (j.cp > 1) {
    out.notes.push_back(
        fmt::format("cp={}: DeepSpeed's sequence parallelism is Ulysses (all-to-all over heads, "
                    "\"sequence_parallel_size\"), not the ring attention the plan assumed",
                    j.cp));
  }
  if (req.precision == plan::Precision::kFp8) {
    out.notes.push_back(
        "FP8 has no DeepSpeed config key: use Transformer Engine layers in the model");
  }
  if (req.fp32_gradients) {
    out.notes.push_back(
        "the plan keeps FP32 gradients; DeepSpeed's bf16 mode accumulates them in the model's "
        "dtype unless configured otherwise");
  }
  if (MasterWeightRemainders(req)) out.notes.push_back(MasterWeightsNote("DeepSpeed's ZeRO"));
  if (const int64_t n = plan::CpuOffloadLayersFor(req, lay); n > 0) {
    out.notes.push_back(fmt::format(
        "activation offloading of {} layers (Megatron-Core's --cpu-offloading-num-layers): "
        "DeepSpeed's activation_checkpointing.cpu_checkpointing offloads checkpoints under "
        "recomputation instead, not the same thing (not exported)",
        n));
  }
  return out;
}

}  // namespace infralens::io
