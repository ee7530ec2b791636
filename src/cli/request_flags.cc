#include "cli/request_flags.h"

#include <fmt/format.h>

#include "hw/gpu.h"

namespace infralens::cli {

void RequestFlags::Register(Flags& flags, bool layout, bool exports) {
  if (layout) {
    cf.Register(flags);
    tf.Register(flags, /*degrees=*/false);
  } else {
    flags.String("--model", &tf.model_name,
                 "a preset name (infralens presets) or a path to a config.json");
    flags.String("--cluster", &cf.cluster,
                 "a preset (" + cluster::ClusterPresetNames() +
                     ") or a topology .toml file (docs/topology.md)");
    flags.Int("--nodes", &cf.nodes, "nodes in the cluster (or give --gpus)");
    flags.Int("--gpus", &cf.gpus,
              "GPUs the job uses (a multiple of the cluster's GPUs per node); or give --nodes");
    flags.Int("--global-batch", &tf.global_batch, "sequences per step");
    flags.Int("--seq", &tf.seq, "sequence length; 0 = the model's");
    flags.String("--precision", &tf.precision, "matmul precision: bf16 or fp8");
    flags.Bool("--fp32-grads", &tf.fp32_grads, "keep and reduce gradients in FP32: 4 bytes, not 2");
  }
  if (exports) {
    flags.String("--export", &export_format,
                 "also print the layout as a framework config: " + io::ExportFormatNames());
  }
}

Status RequestFlags::RestrictSearch(const GivenFn& given, plan::SearchOptions* opt) const {
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  if (given("--schedule")) opt->schedules = {job.schedule};
  if (given("--zero") || given("--distributed-optimizer") || given("--fsdp")) {
    opt->fix_zero = job.parallel.zero_stage;
  }
  if (given("--recompute")) opt->fix_recompute = static_cast<int>(job.recompute);
  if (given("--micro-batch")) opt->fix_micro_batch = static_cast<int>(job.micro_batch);
  if (given("--sp")) opt->fix_sp = 1;
  return Status::Ok();
}

StatusOr<plan::PlanRequest> RequestFlags::Request(const GivenFn& given) const {
  plan::PlanRequest req;
  ASSIGN_OR_RETURN(req.model, tf.LoadModel());
  ASSIGN_OR_RETURN(cluster::Cluster c, cf.Load(given));
  if (!given("--gpus") && !given("--nodes") && c.num_nodes <= 1 &&
      !ClusterFlags::AnyDegree(given)) {
    return InvalidArgument("--gpus or --nodes: required (how much of the cluster the job uses)");
  }
  RETURN_IF_ERROR(cluster::Validate(c));
  req.cluster = c;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(c.node.gpu_model));
  if (!given("--global-batch") || tf.global_batch < 1) {
    return InvalidArgument(fmt::format(
        "--global-batch {}: required, at least 1 (sequences per step)", tf.global_batch));
  }
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  req.global_batch = job.global_batch;
  req.seq_len = job.seq_len;
  req.precision = job.precision;
  req.fp32_gradients = job.fp32_gradients;
  if (req.precision == plan::Precision::kFp8 && req.gpu.fp8_flops_per_s <= 0) {
    return InvalidArgument(
        fmt::format("--precision fp8: {} has no FP8 tensor cores", req.gpu.name));
  }
  return req;
}

StatusOr<std::optional<plan::Layout>> RequestFlags::Layout(const GivenFn& given,
                                                           const plan::PlanRequest& req) const {
  if (!ClusterFlags::AnyDegree(given)) return std::optional<plan::Layout>();
  ClusterFlags sized = cf;
  sized.nodes = req.cluster.num_nodes;
  ASSIGN_OR_RETURN(cluster::Placement placement, sized.Place(req.cluster));
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  plan::Layout lay;
  lay.parallel = job.parallel;
  lay.parallel.tp = cf.tp;
  lay.parallel.pp = cf.pp;
  lay.parallel.cp = cf.cp;
  lay.parallel.ep = cf.ep;
  lay.parallel.dp = cluster::DataParallelDegree(placement);
  lay.order = placement.OrderString();
  lay.recompute = job.recompute;
  lay.micro_batch = job.micro_batch;
  lay.schedule = job.schedule;
  return std::optional<plan::Layout>(lay);
}

Status AppendExport(const std::string& format, const plan::PlanRequest& req,
                    const plan::Layout& lay, std::string& out, std::string& notes) {
  ASSIGN_OR_RETURN(io::ExportFormat f, io::ParseExportFormat(format));
  ASSIGN_OR_RETURN(io::ExportedConfig cfg, io::ExportPlan(f, req, lay));
  out += cfg.text;
  if (f == io::ExportFormat::kDeepSpeed || f == io::ExportFormat::kPytorchCsv) {
    for (const auto& n : cfg.notes) notes += "note: " + n + "\n";
  }
  return Status::Ok();
}

}  // namespace infralens::cli
