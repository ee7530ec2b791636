#include "io/export_types.h"

#include <fmt/format.h>

#include <limits>

#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::io {

constexpr EnumName<ExportFormat> kExportFormatNames[] = {
    {ExportFormat::kMegatron, "megatron"},
    {ExportFormat::kDeepSpeed, "deepspeed"},
    {ExportFormat::kTorchtitan, "torchtitan"},
    {ExportFormat::kPytorchCsv, "pytorch-csv"}};

const char* ExportFormatName(ExportFormat f) { return NameIn(kExportFormatNames, f); }

std::string ExportFormatNames() { return "megatron, deepspeed, torchtitan, pytorch-csv"; }

StatusOr<ExportFormat> ParseExportFormat(std::string_view name) {
  const std::string n = ToLower(Trim(name));
  if (auto f = ValueIn(kExportFormatNames, n)) return *f;
  if (n == "megatron-lm") return ExportFormat::kMegatron;
  if (n == "csv" || n == "pytorch") return ExportFormat::kPytorchCsv;
  return InvalidArgument(fmt::format("‹export› {}: expected one of {}", name, ExportFormatNames()));
}

StatusOr<ExportJob> ResolveExportJob(const plan::PlanRequest& req, const plan::Layout& lay) {
  const plan::ParallelConfig& p = lay.parallel;
  ExportJob j;
  j.tp = p.tp;
  j.pp = p.pp;
  j.dp = p.dp;
  j.cp = p.cp;
  j.ep = p.ep;
  j.zero = p.zero_stage;
  j.sp = p.sequence_parallel && p.tp > 1;
  for (auto [name, v] :
       {std::pair{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}}) {
    if (v < 1)
      return InvalidArgument(fmt::format("{}={}: every degree must be at least 1", name, v));
  }
  if (p.zero_stage < 0 || p.zero_stage > 3) {
    return InvalidArgument(fmt::format("zero={}: ZeRO stages are 0, 1, 2 and 3", p.zero_stage));
  }
  const int64_t gpus = int64_t{p.tp} * p.pp * p.dp * p.cp;
  if (gpus != req.gpus()) {
    return InvalidArgument(
        fmt::format("tp={} pp={} dp={} cp={} use {} GPUs, but the cluster has {}", p.tp, p.pp, p.dp,
                    p.cp, gpus, req.gpus()));
  }
  if (p.dp % p.ep != 0) {
    return InvalidArgument(
        fmt::format("ep={}: must divide dp={} (expert parallelism is carved out of data "
                    "parallelism, as Megatron-LM does)",
                    p.ep, p.dp));
  }
  j.vpp = p.pp == 1 ? 1 : (p.vpp > 0 ? p.vpp : schedule::Info(lay.schedule).default_vpp);
  j.micro_batch = lay.micro_batch;
  j.global_batch = req.global_batch;
  if (lay.micro_batch < 1)
    return InvalidArgument(fmt::format("micro-batch {}: must be at least 1", lay.micro_batch));
  const int64_t per_step = lay.micro_batch * p.dp;
  if (req.global_batch < per_step || req.global_batch % per_step != 0) {
    return InvalidArgument(
        fmt::format("global batch {}: must be a multiple of micro-batch x dp = {} x {} = {}",
                    req.global_batch, lay.micro_batch, p.dp, per_step));
  }
  j.microbatches = req.global_batch / per_step;
  j.seq_len = req.seq_len > 0 ? req.seq_len : req.model.seq_len;
  const int64_t chunks = int64_t{j.pp} * j.vpp;
  plan::ParallelConfig split = p;
  split.pp = j.pp;
  auto counts = plan::StageLayerCounts(req.model.num_layers, split, j.vpp);
  if (!counts.ok()) {
    return InvalidArgument(fmt::format("{} layers over pp x vpp = {} x {} = {} chunks: {}",
                                       req.model.num_layers, j.pp, j.vpp, chunks,
                                       counts.status().message()));
  }
  j.stage_layers = *counts;
  j.first_stage_layers = p.first_stage_layers;
  j.last_stage_layers = p.last_stage_layers;
  j.embedding_in_split = p.embedding_in_split;
  j.loss_in_split = p.loss_in_split;
  j.layout = p.layout;
  j.layers_per_chunk = p.uneven() ? 0 : req.model.num_layers / chunks;
  return j;
}

bool MasterWeightRemainders(const plan::PlanRequest& req) {
  const bool fp8_params =
      req.precision == plan::Precision::kFp8 && req.fp8_transformer_engine && req.fp8_param_gather;
  return req.master_weight_remainders && !fp8_params;
}

std::string MasterWeightsNote(std::string_view framework) {
  return fmt::format(
      "the plan keeps the optimizer's master weights as the BF16 weights' 16-bit remainders "
      "(--master-weights bf16_remainders, NeMo 1.x's distributed_fused_adam); {} keeps FP32 "
      "master weights, 2 bytes more per parameter over the data-parallel ranks (not exported)",
      framework);
}

std::string ExportHeaderComment(std::string_view what, const plan::PlanRequest& req,
                                const plan::Layout& lay, const ExportJob& j,
                                std::string_view targets, const std::vector<std::string>& notes) {
  std::string t = fmt::format("# {} for {} on {} x {} ({}: {} nodes x {} GPUs)\n", what,
                              req.model.name, req.gpus(), req.gpu.name, req.cluster.name,
                              req.cluster.num_nodes, req.cluster.node.gpus_per_node);
  t += fmt::format("# plan: {} ({} microbatches of {} x {} tokens per step)\n", lay.ToString(),
                   j.microbatches, j.micro_batch, j.seq_len);
  t += targets;
  for (const auto& n : notes) t += "# note: " + n + "\n";
  return t;
}

}  // namespace infralens::io
