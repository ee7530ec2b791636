// infralens plan: search the layouts of a model on a cluster, or evaluate one; with the reasons.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/terminal.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "cli/plan_output.h"
#include "cli/training_flags.h"
#include "hw/gpu.h"
#include "plan/planner.h"

namespace infralens::cli {

Status RunPlan(const std::vector<std::string>& args, CliIO& io) {
  ClusterFlags cf;
  TrainingFlags tf;
  tf.recompute = "selective";
  int gpus = 0, top = 10, threads = 0;
  bool json = false, explain = false;
  std::string output, format = "table";
  Flags flags("plan", "search tp x pp x dp x cp x ep x ZeRO x recompute x micro-batch x schedule, or evaluate one layout",
              "infralens plan --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq S] [degrees to "
              "evaluate one layout] [--top K] [--explain] [--json]",
              {"infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --seq 8192 --explain",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --tp 8 --pp 4 "
               "--vpp 5 --schedule interleaved-1f1b --distributed-optimizer --sp",
               "infralens plan --model llama3-405b --cluster dgx-h100 --gpus 16384 --global-batch 2048 --top 5 --json",
               "infralens plan --model path/to/config.json --cluster my-cluster.toml --nodes 4 --global-batch 256"});
  cf.Register(flags);
  tf.Register(flags, /*degrees=*/false);
  flags.Int("--gpus", &gpus, "GPUs to use (a multiple of the cluster's GPUs per node); or give --nodes");
  flags.Int("--top", &top, "how many layouts to list");
  flags.Int("--threads", &threads, "worker threads; 0 = every core");
  flags.Bool("--explain", &explain, "say why the winner won and why each family of layouts lost");
  flags.String("--format", &format, "table, markdown or json");
  flags.Bool("--json", &json, "same as --format json");
  flags.String("-o,--output", &output, "write to this file instead of stdout");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (json) format = "json";
  if (format != "table" && format != "markdown" && format != "json") {
    return InvalidArgument(fmt::format("--format {}: expected table, markdown or json", format));
  }
  if (top < 1 || top > 1000) return InvalidArgument(fmt::format("--top {}: must be 1..1000", top));
  if (threads < 0 || threads > 256) return InvalidArgument(fmt::format("--threads {}: must be 0..256", threads));
  if (!flags.Given("--global-batch")) return InvalidArgument("--global-batch: required (sequences per step)");

  plan::PlanRequest req;
  ASSIGN_OR_RETURN(req.model, tf.LoadModel());
  ClusterFlags sized = cf;
  ASSIGN_OR_RETURN(cluster::Cluster probe, cf.Load(flags));
  if (flags.Given("--gpus")) {
    const int gpn = probe.node.gpus_per_node;
    if (gpus < 1 || gpus % gpn != 0) {
      return InvalidArgument(fmt::format("--gpus {}: {} nodes hold {} GPUs each; give a multiple of {}", gpus,
                                         probe.name, gpn, gpn));
    }
    if (flags.Given("--nodes") && cf.nodes * gpn != gpus) {
      return InvalidArgument(fmt::format("--gpus {} and --nodes {}: {} nodes hold {} GPUs", gpus, cf.nodes, cf.nodes,
                                         int64_t{cf.nodes} * gpn));
    }
    probe.num_nodes = gpus / gpn;
    if (probe.num_gpus() > cluster::kMaxGpus) {
      return InvalidArgument(fmt::format("--gpus {}: at most {} GPUs", gpus, cluster::kMaxGpus));
    }
  }
  req.cluster = probe;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(req.cluster.node.gpu_model));
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(flags));
  req.global_batch = job.global_batch;
  req.seq_len = job.seq_len;
  req.precision = job.precision;
  req.fp32_gradients = job.fp32_gradients;
  if (req.precision == plan::Precision::kFp8 && req.gpu.fp8_flops_per_s <= 0) {
    return InvalidArgument(fmt::format("--precision fp8: {} has no FP8 tensor cores", req.gpu.name));
  }

  std::string data;
  if (cf.AnyDegree(flags)) {
    // Evaluate the user's own layout.
    sized.nodes = req.cluster.num_nodes;
    ASSIGN_OR_RETURN(cluster::Placement placement, sized.Place(req.cluster));
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
    ASSIGN_OR_RETURN(plan::PlanResult r, plan::Evaluate(req, lay));
    data = format == "json" ? PlanResultJsonDocument(req, r) : PlanResultText(req, r, format == "markdown");
    return WriteOutput(output, data, io);
  }

  plan::SearchOptions opt;
  opt.top_k = top;
  opt.threads = threads;
  if (flags.Given("--schedule")) opt.schedules = {job.schedule};
  // A progress bar on a terminal once the search has run for a second.
  const bool tty = IsTerminal(stderr);
  const auto start = std::chrono::steady_clock::now();
  bool drew = false;
  plan::ProgressFn progress = [&](int64_t done, int64_t total) {
    if (!tty) return;
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1) && done < total) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
    std::fprintf(stderr, "\r  searching [%s%s] %lld/%lld layouts", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), static_cast<long long>(done), static_cast<long long>(total));
    drew = true;
  };
  auto sr = plan::Search(req, opt, progress);
  if (drew) std::fprintf(stderr, "\r%80s\r", "");
  if (!sr.ok()) return sr.status();
  data = format == "json" ? SearchJsonDocument(req, *sr) : SearchText(req, *sr, explain, format == "markdown");
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
