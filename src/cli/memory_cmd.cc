// infralens memory: bytes per GPU for weights, gradients, optimizer states and activations under
// a parallel layout, per pipeline rank, against the GPU's HBM.
#include <fmt/format.h>

#include <cmath>

#include "base/json_writer.h"
#include "base/strings.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/engine_requests.h"
#include "cli/flags.h"
#include "cli/training_flags.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/memory.h"
#include "schedule/schedule.h"

namespace infralens::cli {

namespace {

std::string GiB(double bytes) { return fmt::format("{:.2f}", bytes / plan::kGiB); }

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
int64_t Bytes(double bytes) { return std::llround(bytes); }

// 2820509184 -> "2.821B": four significant digits and a K/M/B/T suffix.
std::string Count(double v) {
  if (v >= 1e12) return fmt::format("{:.4g}T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.4g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.4g}K", v / 1e3);
  return fmt::format("{:.4g}", v);
}

std::string Stages(const std::vector<int>& stages) {
  std::vector<std::string> parts;
  for (int s : stages) parts.push_back(std::to_string(s));
  return Join(parts, ",");
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
  w.Field("parameters", Bytes(r.parameters));
  w.Field("peak_in_flight_chunks", r.peak_chunks);
  w.Field("weights_bytes", Bytes(r.weights_bytes));
  w.Field("gradients_bytes", Bytes(r.gradients_bytes));
  w.Field("optimizer_bytes", Bytes(r.optimizer_bytes));
  w.Field("activations_bytes", Bytes(r.activations_bytes));
  w.Field("total_bytes", Bytes(r.total_bytes));
  w.Field("fits", r.total_bytes <= usable_bytes);
  w.EndObject();
}

}  // namespace

StatusOr<MemoryResult> ComputeMemory(const MemoryQuery& q, const GivenFn& given) {
  if (!(q.reserve_gib >= 0) || q.reserve_gib > 1e6) {
    return InvalidArgument(fmt::format("--reserve-gib {}: must be between 0 and 1e6", q.reserve_gib));
  }
  MemoryResult r;
  ASSIGN_OR_RETURN(r.config, q.training.Config(given));
  ASSIGN_OR_RETURN(r.gpu, hw::FindGpu(q.gpu));
  if (r.config.precision == plan::Precision::kFp8 && r.gpu.fp8_flops_per_s <= 0) {
    return InvalidArgument(fmt::format("--precision fp8: {} has no FP8 tensor cores", r.gpu.name));
  }
  ASSIGN_OR_RETURN(r.model, q.training.LoadModel());
  r.config.hbm_bytes = r.gpu.hbm_bytes;
  r.config.reserve_bytes = q.reserve_gib * plan::kGiB;
  ASSIGN_OR_RETURN(r.report, plan::EstimateMemory(r.model, r.config));
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
  w.Field("gpu", r.gpu.name);
  w.Key("parallel").BeginObject();
  w.Field("tp", par.tp);
  w.Field("pp", par.pp);
  w.Field("vpp", rep.vpp);
  w.Field("dp", par.dp);
  w.Field("cp", par.cp);
  w.Field("ep", par.ep);
  w.Field("zero", par.zero_stage);
  w.Field("sequence_parallel", par.sequence_parallel);
  w.Field("gpus", rep.gpus);
  w.EndObject();
  w.Field("schedule", schedule::Info(cfg.schedule).name);
  w.Field("recompute", model::RecomputeName(cfg.recompute));
  w.Field("precision", plan::PrecisionName(cfg.precision));
  w.Field("fp32_gradients", cfg.fp32_gradients);
  w.Field("micro_batch", cfg.micro_batch);
  w.Field("global_batch", rep.global_batch);
  w.Field("microbatches", rep.microbatches);
  w.Field("seq", rep.seq_len);
  w.Field("hbm_bytes", Bytes(r.gpu.hbm_bytes));
  w.Field("reserve_bytes", Bytes(cfg.reserve_bytes));
  w.Field("usable_bytes", Bytes(rep.usable_bytes));
  w.Field("worst_rank", rep.worst_rank);
  w.Field("weights_bytes", Bytes(worst.weights_bytes));
  w.Field("gradients_bytes", Bytes(worst.gradients_bytes));
  w.Field("optimizer_bytes", Bytes(worst.optimizer_bytes));
  w.Field("activations_bytes", Bytes(worst.activations_bytes));
  w.Field("total_bytes", Bytes(worst.total_bytes));
  w.Field("fits", rep.fits);
  w.Key("ranks").BeginArray();
  for (const auto& rm : rep.ranks) RankJson(w, rm, rep.usable_bytes);
  w.EndArray();
  w.EndObject();
  return w.str();
}

Status RunMemory(const std::vector<std::string>& args, CliIO& io) {
  std::string gpu_name = "H100-SXM";
  bool json = false;
  double reserve_gib = plan::kDefaultReserveBytes / plan::kGiB;
  Flags flags(
      "memory",
      "bytes per GPU for weights, gradients, optimizer states and activations, per pipeline rank",
      "infralens memory --model NAME|config.json [--gpu G] [--tp T --pp P --vpp V --dp D --cp C "
      "--ep E] "
      "[--zero Z | --distributed-optimizer | --fsdp] [--sp] [--recompute R] [--micro-batch b] "
      "[--global-batch B] "
      "[--seq S] [--schedule NAME] [--json]",
      {"infralens memory --model llama2-7b --gpu H100-SXM --dp 8 --zero 1",
       "infralens memory --model gpt3-175b --gpu A100-80GB --tp 8 --pp 8 --dp 8 --sp --recompute "
       "selective "
       "--global-batch 512",
       "infralens memory --model llama3-70b --gpu H100 --tp 8 --pp 4 --vpp 5 --schedule "
       "interleaved-1f1b "
       "--dp 4 --distributed-optimizer --sp --recompute selective --global-batch 64",
       "infralens memory --model mixtral-8x7b --gpu H100-SXM --tp 2 --pp 4 --dp 8 --ep 8 --zero 1 "
       "--sp --json",
       "infralens memory --model path/to/config.json --gpu MI300X --fsdp --dp 64"});
  TrainingFlags tf;
  tf.Register(flags, /*degrees=*/true);
  flags.String("--gpu", &gpu_name, "GPU preset (infralens presets --kind gpus)");
  flags.Double("--reserve-gib", &reserve_gib,
               "HBM kept back for CUDA context, NCCL and fragmentation (GiB)");
  flags.Bool("--json", &json, "print JSON");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  MemoryQuery q;
  q.training = tf;
  q.gpu = gpu_name;
  q.reserve_gib = reserve_gib;
  ASSIGN_OR_RETURN(MemoryResult r, ComputeMemory(q, GivenOf(flags)));
  if (json) {
    io.out << MemoryJson(r);
    return Status::Ok();
  }
  const plan::MemoryConfig& cfg = r.config;
  const plan::ParallelConfig& par = cfg.parallel;
  const bool fp32_grads = cfg.fp32_gradients;
  const int micro_batch = tf.micro_batch;
  const hw::Gpu& gpu = r.gpu;
  const model::Model& m = r.model;
  const plan::MemoryReport& rep = r.report;
  const plan::RankMemory& worst = rep.worst();
  const std::string sched_name(schedule::Info(cfg.schedule).name);

  std::string out = fmt::format(
      "{} on {}: {} GPUs = tp {} x pp {} x dp {} x cp {} (vpp {}, ep {}); ZeRO {}{}, recompute {}, "
      "{}{}\n",
      m.name, gpu.name, rep.gpus, par.tp, par.pp, par.dp, par.cp, rep.vpp, par.ep, par.zero_stage,
      par.sequence_parallel ? ", SP" : "", model::RecomputeName(cfg.recompute),
      plan::PrecisionName(cfg.precision), fp32_grads ? ", FP32 gradients" : "");
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
    t.AddRow({std::to_string(rm.rank), stages, std::to_string(rm.layers), Count(rm.parameters),
              std::to_string(rm.peak_chunks), in_unit(rm.weights_bytes), in_unit(rm.gradients_bytes),
              in_unit(rm.optimizer_bytes), in_unit(rm.activations_bytes), in_unit(rm.total_bytes)});
  }
  t.SetAlign(1, TextTable::Align::kLeft);
  out += t.Render();
  out += fmt::format(
      "\nworst rank {}: {} GiB ({} bytes) of {} GiB usable ({} GiB HBM - {} GiB reserve): {}\n",
      rep.worst_rank, GiB(worst.total_bytes), Bytes(worst.total_bytes), GiB(rep.usable_bytes),
      GiB(gpu.hbm_bytes), GiB(cfg.reserve_bytes), rep.fits ? "fits" : "does NOT fit");
  out += "(table sizes in " + std::string(unit.name) +
         "; params per GPU after TP/EP splits, before ZeRO; in flight = peak chunk "
         "activations held)\n";
  io.out << out;
  return Status::Ok();
}

}  // namespace infralens::cli
