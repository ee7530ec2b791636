// infralens memory: bytes per GPU for weights, gradients, optimizer states and activations under
// a parallel layout, per pipeline rank, against the GPU's HBM.
#include <fmt/format.h>

#include <cmath>

#include "base/json_writer.h"
#include "base/strings.h"
#include "base/table.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/cpu_offload.h"
#include "plan/framework.h"
#include "plan/memory.h"
#include "request/count_format.h"
#include "request/engine_requests.h"
#include "request/json_or_text.h"
#include "request/plan_output.h"
#include "request/training_flags.h"
#include "schedule/schedule.h"

namespace infralens::request {

namespace {

std::string GiB2(double bytes) { return fmt::format("{:.2f}", bytes / plan::kGiB); }

// The table's unit: GiB, or MiB / KiB when the largest rank is below 1 GiB / 1 MiB.
struct Unit {
  const char* name;
  double bytes;
};
Unit TableUnit(double largest_bytes) {
  if (largest_bytes >= plan::kGiB) return {"GiB", plan::kGiB};
  if (largest_bytes >= 1024.0 * 1024) return {"MiB", 1024.0 * 1024};
  return {"KiB", 1024.0};
}
int64_t RoundBytes(double bytes) { return std::llround(bytes); }

std::string Stages(const std::vector<int>& stages) {
  std::vector<std::string> parts;
  for (int s : stages) parts.push_back(std::to_string(s));
  return Join(parts, ",");
}

// A rank's bytes by kind, the fields of each rank and of the worst one.
void RankBytesJson(JsonWriter& w, const plan::RankMemory& r) {
  w.Field("weights_bytes", RoundBytes(r.weights_bytes));
  w.Field("gradients_bytes", RoundBytes(r.gradients_bytes));
  w.Field("optimizer_bytes", RoundBytes(r.optimizer_bytes));
  w.Field("activations_bytes", RoundBytes(r.activations_bytes));
  w.Field("total_bytes", RoundBytes(r.total_bytes));
}

void RankJson(JsonWriter& w, const plan::RankMemory& r, double usable_bytes) {
  w.BeginObject();
  w.Field("rank", r.rank);
  w.Key("stages").BeginArray();
  for (int s : r.stages) w.Int(s);
  w.EndArray();
  w.Field("layers", r.layers);
  w.Field("embedding", r.embedding);
  w.Field("output_layer", r.output_layer);
  w.Field("parameters", RoundBytes(r.parameters));
  w.Field("peak_in_flight_chunks", r.peak_chunks);
  RankBytesJson(w, r);
  w.Field("fits", r.total_bytes <= usable_bytes);
  w.EndObject();
}

}  // namespace

StatusOr<MemoryResult> ComputeMemory(const MemoryQuery& q, const GivenFn& given) {
  if (!(q.reserve_gib >= 0) || q.reserve_gib > 1e6) {
    return InvalidArgument(
        fmt::format("--reserve-gib {}: must be between 0 and 1e6", q.reserve_gib));
  }
  MemoryResult r;
  ASSIGN_OR_RETURN(r.config, q.training.Config(given));
  RETURN_IF_ERROR(ApplyFp8Recipe(q.fp8_recipe, &r.config.fp8_transformer_engine));
  RETURN_IF_ERROR(ApplyYesNo("--fp8-param-gather", q.fp8_param_gather, &r.config.fp8_param_gather));
  RETURN_IF_ERROR(ApplyCpuOffloadLayers(q.cpu_offload_layers, &r.config.cpu_offload_layers));
  RETURN_IF_ERROR(ApplyRecomputeModules(q.recompute_modules, &r.config.recompute_modules));
  {
    plan::FrameworkBehaviour b;
    if (Status st = plan::ApplyMasterWeights(q.master_weights, &b); !st.ok()) {
      return InvalidArgument("--master-weights " + st.message());
    }
    r.config.master_weight_remainders = b.master_weight_remainders;
  }
  ASSIGN_OR_RETURN(r.cluster, q.cluster.Load(given));
  ASSIGN_OR_RETURN(r.gpu, hw::FindGpu(r.cluster.node.gpu_model));
  if (r.config.precision == plan::Precision::kFp8 && r.gpu.fp8_flops_per_s <= 0) {
    return InvalidArgument(fmt::format("--precision fp8: {} has no FP8 tensor cores", r.gpu.name));
  }
  plan::ParallelConfig& par = r.config.parallel;
  par.tp = q.cluster.tp;
  par.pp = q.cluster.pp;
  par.cp = q.cluster.cp;
  par.ep = q.cluster.ep;
  if (q.cluster.dp == 0 || given("--gpus") || given("--nodes")) {
    // dp from the GPU count, as plan derives it; with --dp as well, the product must match.
    auto placement = q.cluster.Place(r.cluster);
    if (!placement.ok()) {
      // A degree the model refuses (--tp 3 against 32 heads) says more than the GPU count it
      // fails to divide: check the degrees with the smallest dp first.
      ASSIGN_OR_RETURN(r.model, q.training.LoadModel());
      plan::MemoryConfig probe = r.config;
      probe.parallel.dp = par.ep;
      RETURN_IF_ERROR(plan::EstimateMemory(r.model, probe).status());
      return placement.status();
    }
    par.dp = cluster::DataParallelDegree(*placement);
  } else {
    // The degrees alone describe the job (it need not fill whole nodes to have a memory answer).
    if (q.cluster.dp % q.cluster.ep != 0) {
      return InvalidArgument(fmt::format(
          "--ep {}: must divide the data-parallel degree dp = {} (expert-parallel groups are "
          "carved out of the data-parallel ranks, as Megatron does)",
          q.cluster.ep, q.cluster.dp));
    }
    par.dp = q.cluster.dp;
  }
  ASSIGN_OR_RETURN(r.model, q.training.LoadModel());
  r.config.hbm_bytes = r.gpu.hbm_bytes;
  r.config.reserve_bytes = q.reserve_gib * plan::kGiB;
  ASSIGN_OR_RETURN(r.report, plan::EstimateMemory(r.model, r.config));
  // What the GPUs offload must fit in their node's host memory (the plan refuses it too).
  RETURN_IF_ERROR(plan::CheckCpuOffloadHostMemory(
      r.config.cpu_offload_layers, r.report.worst().offloaded_bytes, r.cluster.node));
  return r;
}

std::string MemoryJson(const MemoryResult& r, int indent) {
  const plan::MemoryConfig& cfg = r.config;
  const plan::ParallelConfig& par = cfg.parallel;
  const plan::MemoryReport& rep = r.report;
  const plan::RankMemory& worst = rep.worst();
  JsonWriter w(indent);
  w.BeginObject();
  w.Field("model", r.model.name);
  w.Field("cluster", r.cluster.name);
  w.Field("gpu", r.gpu.name);
  w.Key("parallel").BeginObject();
  WriteParallelFields(w, par, rep.vpp);
  w.Field("gpus", rep.gpus);
  w.EndObject();
  w.Field("schedule", schedule::Info(cfg.schedule).name);
  w.Field("recompute", model::RecomputeName(cfg.recompute));
  if (cfg.recompute == model::Recompute::kSelective) {
    w.Field("recompute_modules", model::RecomputeModulesName(cfg.recompute_modules));
  }
  w.Field("precision", plan::PrecisionName(cfg.precision));
  if (cfg.precision == plan::Precision::kFp8) {
    w.Field("fp8_recipe", cfg.fp8_transformer_engine ? "delayed" : "tensorwise");
    w.Field("fp8_param_gather", plan::Fp8Parameters(cfg));
  }
  w.Field("fp32_gradients", cfg.fp32_gradients);
  w.Field("master_weights", plan::MasterWeightRemainders(cfg) ? "bf16_remainders" : "fp32");
  w.Field("cpu_offload_layers", cfg.cpu_offload_layers);
  w.Field("offloaded_bytes", RoundBytes(worst.offloaded_bytes));
  w.Field("micro_batch", cfg.micro_batch);
  w.Field("global_batch", rep.global_batch);
  w.Field("microbatches", rep.microbatches);
  w.Field("seq", rep.seq_len);
  w.Field("hbm_bytes", RoundBytes(r.gpu.hbm_bytes));
  w.Field("reserve_bytes", RoundBytes(cfg.reserve_bytes));
  w.Field("usable_bytes", RoundBytes(rep.usable_bytes));
  w.Field("worst_rank", rep.worst_rank);
  RankBytesJson(w, worst);
  w.Field("fits", rep.fits);
  w.Key("ranks").BeginArray();
  for (const auto& rm : rep.ranks) RankJson(w, rm, rep.usable_bytes);
  w.EndArray();
  w.EndObject();
  return w.str();
}

std::string MemoryText(const MemoryResult& r) {
  const plan::MemoryConfig& cfg = r.config;
  const plan::ParallelConfig& par = cfg.parallel;
  const bool fp32_grads = cfg.fp32_gradients;
  const int64_t micro_batch = cfg.micro_batch;
  const hw::Gpu& gpu = r.gpu;
  const model::Model& m = r.model;
  const plan::MemoryReport& rep = r.report;
  const plan::RankMemory& worst = rep.worst();
  const std::string sched_name(schedule::Info(cfg.schedule).name);

  std::string out = fmt::format(
      "{} on {}: {} GPUs = tp {} x pp {} x dp {} x cp {} (vpp {}, ep {}); ZeRO {}{}, recompute {}, "
      "{}{}{}{}\n",
      m.name, gpu.name, rep.gpus, par.tp, par.pp, par.dp, par.cp, rep.vpp, par.ep, par.zero_stage,
      par.sequence_parallel ? ", SP" : "",
      cfg.recompute == model::Recompute::kSelective &&
              cfg.recompute_modules != model::RecomputeModules{}
          ? fmt::format("selective ({})", model::RecomputeModulesName(cfg.recompute_modules))
          : std::string(model::RecomputeName(cfg.recompute)),
      plan::PrecisionName(cfg.precision),
      cfg.precision != plan::Precision::kFp8 ? ""
      : plan::Fp8Parameters(cfg)
          ? " (Transformer Engine's: FP8 linear inputs, FP8 weights and transposes as the "
            "parameters)"
      : cfg.fp8_transformer_engine ? " (Transformer Engine's: FP8 linear inputs, FP8 "
                                     "weight copy and transpose)"
                                   : " (torchao's: BF16 linear inputs, no FP8 weights)",
      fp32_grads ? ", FP32 gradients" : "",
      plan::MasterWeightRemainders(cfg) ? ", master weights as BF16 remainders" : "");
  out += fmt::format(
      "micro-batch {} x seq {}; global batch {} = {} microbatches per step through {}\n\n",
      micro_batch, rep.seq_len, rep.global_batch, rep.microbatches, sched_name);
  const Unit unit = TableUnit(worst.total_bytes);
  auto in_unit = [&](double bytes) { return fmt::format("{:.2f}", bytes / unit.bytes); };
  TextTable t({"rank", "stages", "layers", "params", "in flight", "weights", "grads", "optimizer",
               "activations", fmt::format("total {}", unit.name)});
  for (const auto& rm : rep.ranks) {
    std::string stages = Stages(rm.stages);
    if (rm.embedding) stages += " +emb";
    if (rm.output_layer) stages += " +out";
    t.AddRow({std::to_string(rm.rank), stages, std::to_string(rm.layers), SiCount(rm.parameters, 4),
              std::to_string(rm.peak_chunks), in_unit(rm.weights_bytes),
              in_unit(rm.gradients_bytes), in_unit(rm.optimizer_bytes),
              in_unit(rm.activations_bytes), in_unit(rm.total_bytes)});
  }
  t.SetAlign(1, TextTable::Align::kLeft);
  out += t.Render();
  out += fmt::format(
      "\nworst rank {}: {} GiB ({} bytes) of {} GiB usable ({} GiB HBM - {} GiB reserve): {}\n",
      rep.worst_rank, GiB2(worst.total_bytes), RoundBytes(worst.total_bytes),
      GiB2(rep.usable_bytes), GiB2(gpu.hbm_bytes), GiB2(cfg.reserve_bytes),
      rep.fits ? "fits" : "does NOT fit");
  if (cfg.cpu_offload_layers > 0) {
    out += fmt::format(
        "activations of the first {} layers offloaded to host memory: {} GiB per microbatch, "
        "not in the table{}\n",
        cfg.cpu_offload_layers, GiB2(worst.offloaded_bytes),
        r.cluster.node.host_memory_bytes > 0
            ? fmt::format("; {} GiB of the node's {} GiB for its {} GPUs",
                          GiB2(worst.offloaded_bytes * r.cluster.node.gpus_per_node),
                          GiB2(r.cluster.node.host_memory_bytes), r.cluster.node.gpus_per_node)
            : std::string());
  }
  out += "(table sizes in " + std::string(unit.name) +
         "; params per GPU after TP/EP splits, before ZeRO; in flight = peak chunk "
         "activations held)\n";
  return out;
}

const Command& MemoryCommand() {
  static const Command kCommand = MakeCommand<MemoryQuery, MemoryResult>(
      {.name = "memory",
       .summary = "bytes per GPU for weights, gradients, optimizer states and activations, per "
                  "pipeline rank",
       .usage = "infralens memory --model NAME|config.json [--cluster C] [--gpus N | --nodes N] "
                "[--tp T --pp P --vpp V --dp D --cp C --ep E] [--zero Z | "
                "--distributed-optimizer | --fsdp] [--sp] [--recompute R] [--micro-batch b] "
                "[--global-batch B] [--seq S] [--schedule NAME] [--precision P [--fp8-recipe R]] "
                "[--json]",
       .examples = {"infralens memory --model llama2-7b --cluster dgx-h100 --gpus 8 --zero 1",
                    "infralens memory --model gpt3-175b --cluster dgx-a100 --gpus 512 --tp 8 "
                    "--pp 8 --sp --recompute selective --global-batch 512",
                    "infralens memory --model llama3-70b --cluster dgx-h100 --tp 8 --pp 4 --vpp "
                    "5 --schedule interleaved-1f1b --dp 4 --distributed-optimizer --sp "
                    "--global-batch 64",
                    "infralens memory --model mixtral-8x7b --cluster dgx-h100 --gpus 64 --tp 2 "
                    "--pp 4 --ep 8 --zero 1 --sp --json",
                    "infralens memory --model llama3-8b --cluster dgx-a100-40gb --gpus 64 --fsdp",
                    "infralens memory --model llama3-8b --cluster dgx-h100 --gpus 8 --fsdp "
                    "--precision fp8 --fp8-recipe tensorwise"},
       .formats = {"table", "json"},
       .retired = {{"--gpu",
                    "--gpu: memory takes the cluster's GPU now, as every command does: give "
                    "--cluster (a preset such as dgx-a100 or dgx-a100-40gb, or a topology .toml; "
                    "infralens presets --kind clusters)"}}},
      [](MemoryQuery& q, FlagSink& flags) {
        q.cluster.Register(flags);
        q.training.Register(flags, /*layout=*/true);
        flags.Double("--reserve-gib", &q.reserve_gib,
                     "HBM kept back for CUDA context, NCCL and fragmentation (GiB)");
        flags.String("--fp8-recipe", &q.fp8_recipe, kFp8RecipeHelp);
        flags.String("--fp8-param-gather", &q.fp8_param_gather, kFp8ParamGatherHelp);
        flags.String("--cpu-offload-layers", &q.cpu_offload_layers, kCpuOffloadLayersHelp);
        flags.String("--recompute-modules", &q.recompute_modules, kRecomputeModulesHelp);
        flags.String("--master-weights", &q.master_weights, kMasterWeightsHelp);
      },
      [](const MemoryQuery& q, const RunContext& ctx) {
        MemoryQuery run = q;
        run.cluster.files_allowed = run.training.files_allowed = ctx.files_allowed;
        return ComputeMemory(run, ctx.given);
      },
      JsonOrText<MemoryQuery>(MemoryJson, MemoryText));
  return kCommand;
}

}  // namespace infralens::request
