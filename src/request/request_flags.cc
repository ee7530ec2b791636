#include "request/request_flags.h"

#include <fmt/format.h>

#include <tuple>

#include "base/read_file.h"
#include "base/strings.h"
#include "hw/gpu.h"
#include "plan/validate.h"

namespace infralens::request {

void RequestFlags::Register(FlagSink& flags, bool layout, bool exports) {
  cf.Register(flags, layout);
  tf.Register(flags, layout);
  RegisterEfficiency(flags, &efficiency_path);
  RegisterBehaviour(flags);
  if (exports) {
    flags.String("--export", &export_format,
                 "also print the layout as a framework config: " + io::ExportFormatNames());
  }
}

void RequestFlags::RegisterBehaviour(FlagSink& flags) {
  flags.String("--framework", &framework,
               "the framework whose defaults apply: megatron-lm, megatron-deepspeed, deepspeed, "
               "torchtitan, nemo, megascale (docs/planner.md lists each default and its source)");
  flags.String("--attention", &attention,
               "fused (the framework's fused kernel), flash2 (FlashAttention-2, as PyTorch SDPA "
               "runs it: torchtitan's, DeepSpeed's), cudnn (Transformer Engine's: Megatron-LM's, "
               "NeMo's) or materialized (the s x s scores through HBM)");
  flags.String("--dp-overlap", &dp_overlap,
               "yes or no: gradient reduction overlapped with the backward (Megatron's "
               "--overlap-grad-reduce); default: the framework's");
  flags.String("--tp-overlap", &tp_overlap,
               "yes or no: TP collectives overlapped with the GEMMs (Megatron's --tp-comm-overlap, "
               "torchtitan's async TP); default: the framework's");
  flags.Bool("--bidirectional", &bidirectional,
             "attention without a causal mask (encoders): fused kernels then compute every score");
}

Status RequestFlags::RestrictSearch(const GivenFn& given, plan::SearchOptions* opt) const {
  for (const char* f : {"--first-stage-layers", "--last-stage-layers", "--embedding-in-split",
                        "--loss-in-split", "--layout"}) {
    if (given(f)) {
      return InvalidArgument(fmt::format(
          "{}: give the degrees (--tp, --pp, ...) to evaluate an uneven layout; a search splits "
          "the layers evenly, or counts the embedding and the loss as layers where they do not "
          "split",
          f));
    }
  }
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  if (given("--schedule")) {
    opt->schedules = {job.schedule};
  } else {
    // Only what the framework can run (plan::FrameworkSchedules).
    ASSIGN_OR_RETURN(std::optional<plan::Framework> f, Framework());
    if (f) opt->schedules = plan::FrameworkSchedules(*f);
  }
  if (given("--zero") || given("--distributed-optimizer") || given("--fsdp")) {
    opt->fix_zero = job.parallel.zero_stage;
  }
  if (given("--recompute")) opt->fix_recompute = static_cast<int>(job.recompute);
  if (given("--micro-batch")) opt->fix_micro_batch = static_cast<int>(job.micro_batch);
  if (given("--sp")) opt->fix_sp = 1;
  return Status::Ok();
}

void RegisterEfficiency(FlagSink& flags, std::string* path) {
  flags.String("--efficiency", path,
               "CSV of efficiency constants over the built-in ones (docs/planner.md, "
               "data/hw/efficiency.csv): your GEMM, attention, HBM and link measurements, as "
               "infralens trace calibrate writes them");
}

StatusOr<std::shared_ptr<const plan::EfficiencyTable>> LoadEfficiency(const std::string& path) {
  if (path.empty()) return std::shared_ptr<const plan::EfficiencyTable>();
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, plan::kMaxEfficiencyBytes));
  return EfficiencyFromText(text, "--efficiency " + path);
}

StatusOr<std::shared_ptr<const plan::EfficiencyTable>> EfficiencyFromText(std::string_view csv,
                                                                          std::string_view origin) {
  if (csv.empty()) return std::shared_ptr<const plan::EfficiencyTable>();
  auto user = plan::EfficiencyTable::Parse(csv, origin);
  if (!user.ok()) return user.status();
  auto table = std::make_shared<plan::EfficiencyTable>(plan::EfficiencyTable::Builtin());
  table->Overlay(*user);
  return std::shared_ptr<const plan::EfficiencyTable>(std::move(table));
}

StatusOr<std::optional<plan::Framework>> RequestFlags::Framework() const {
  if (framework.empty()) return std::optional<plan::Framework>();
  auto f = plan::ParseFramework(framework);
  if (!f.ok()) return InvalidArgument("--framework " + std::string(f.status().message()));
  return std::optional<plan::Framework>(*f);
}

StatusOr<plan::FrameworkBehaviour> RequestFlags::Behaviour(int zero_stage,
                                                             plan::Precision precision) const {
  plan::FrameworkBehaviour b;
  ASSIGN_OR_RETURN(std::optional<plan::Framework> f, Framework());
  if (f) b = plan::FrameworkDefaults(*f, zero_stage, precision);
  if (Status st = plan::ApplyAttention(attention, &b); !st.ok()) {
    return InvalidArgument("--attention " + st.message());
  }
  for (auto [flag, value, out] : {std::tuple{"--dp-overlap", &dp_overlap, &b.overlap_grad_reduce},
                                  std::tuple{"--tp-overlap", &tp_overlap, &b.tp_overlap}}) {
    if (*value == "yes" || *value == "no") {
      *out = *value == "yes";
    } else if (!value->empty()) {
      return InvalidArgument(fmt::format("{} '{}': expected yes or no", flag, Excerpt(*value)));
    }
  }
  return b;
}

StatusOr<plan::PlanRequest> RequestFlags::Request(const GivenFn& given) const {
  plan::PlanRequest req;
  if (!efficiency_path.empty() && !cf.files_allowed) {
    return InvalidArgument("--efficiency: the workbench reads no file; use the CLI");
  }
  ASSIGN_OR_RETURN(req.efficiency, LoadEfficiency(efficiency_path));
  if (!efficiency_text.empty()) {
    ASSIGN_OR_RETURN(req.efficiency, EfficiencyFromText(efficiency_text, kEfficiencyTextOrigin));
  }
  ASSIGN_OR_RETURN(req.model, tf.LoadModel());
  ASSIGN_OR_RETURN(cluster::Cluster c, cf.Load(given));
  if (!given("--gpus") && !given("--nodes") && c.num_nodes <= 1 &&
      !ClusterFlags::AnyDegree(given)) {
    return InvalidArgument("--gpus or --nodes: required (how much of the cluster the job uses)");
  }
  RETURN_IF_ERROR(cluster::Validate(c));
  req.cluster = c;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(c.node.gpu_model));
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  req.global_batch = job.global_batch;
  if (tf.global_batch < 0 || (tf.global_batch == 0 && !ClusterFlags::AnyDegree(given))) {
    return InvalidArgument(fmt::format(
        "--global-batch {}: a search needs it, at least 1 (sequences per step)", tf.global_batch));
  }
  if (tf.global_batch == 0) {
    // The layout is given: 2pp microbatches per data-parallel rank, as memory and comm-plan
    // derive it (enough to fill a 1F1B pipeline's warm-up twice).
    ASSIGN_OR_RETURN(cluster::Placement placement, cf.Place(c));
    req.global_batch =
        int64_t{job.micro_batch} * cluster::DataParallelDegree(placement) * 2 * cf.pp;
  }
  if (bidirectional) req.model.causal = false;
  ASSIGN_OR_RETURN(plan::FrameworkBehaviour b, Behaviour(job.parallel.zero_stage, job.precision));
  req.fused_attention = b.fused_attention;
  req.overlap_grad_reduce = b.overlap_grad_reduce;
  req.tp_overlap = b.tp_overlap;
  req.flash_attention_2 = b.flash_attention_2;
  req.eager_elementwise = b.eager_elementwise;  // the framework's (data/frameworks/)
  req.dp_bucket_params = b.dp_bucket_params;
  req.seq_len = job.seq_len;
  req.precision = job.precision;
  req.fp32_gradients = job.fp32_gradients || b.fp32_grads;  // --fp32-grads, or the framework's
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

}  // namespace infralens::request
