// infralens memory: bytes per GPU for weights, gradients, optimizer states and activations under
// a parallel layout, per pipeline rank, against the GPU's HBM.
#include <algorithm>

#include "cli/commands.h"
#include "cli/flags.h"
#include "request/engine_requests.h"

namespace infralens::cli {

using request::ComputeMemory;
using request::MemoryJson;
using request::MemoryQuery;
using request::MemoryResult;
using request::MemoryText;

Status RunMemory(const std::vector<std::string>& args, CliIO& io) {
  std::string format = "table", output;
  bool json = false;
  MemoryQuery q;
  Flags flags(
      "memory",
      "bytes per GPU for weights, gradients, optimizer states and activations, per pipeline rank",
      "infralens memory --model NAME|config.json [--cluster C] [--gpus N | --nodes N] [--tp T --pp "
      "P "
      "--vpp V --dp D --cp C --ep E] [--zero Z | --distributed-optimizer | --fsdp] [--sp] "
      "[--recompute R] [--micro-batch b] [--global-batch B] [--seq S] [--schedule NAME] [--json]",
      {"infralens memory --model llama2-7b --cluster dgx-h100 --gpus 8 --zero 1",
       "infralens memory --model gpt3-175b --cluster dgx-a100 --gpus 512 --tp 8 --pp 8 --sp "
       "--recompute selective --global-batch 512",
       "infralens memory --model llama3-70b --cluster dgx-h100 --tp 8 --pp 4 --vpp 5 --schedule "
       "interleaved-1f1b --dp 4 --distributed-optimizer --sp --global-batch 64",
       "infralens memory --model mixtral-8x7b --cluster dgx-h100 --gpus 64 --tp 2 --pp 4 --ep 8 "
       "--zero 1 --sp --json",
       "infralens memory --model llama3-8b --cluster dgx-a100-40gb --gpus 64 --fsdp"});
  q.cluster.Register(flags);
  q.training.Register(flags, /*layout=*/true);
  flags.Double("--reserve-gib", &q.reserve_gib,
               "HBM kept back for CUDA context, NCCL and fragmentation (GiB)");
  AddOutputFlags(flags, &format, &json, &output, "table or json");
  const bool old_gpu_flag = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--gpu" || a.rfind("--gpu=", 0) == 0;
  });
  if (old_gpu_flag) {
    return InvalidArgument(
        "--gpu: memory takes the cluster's GPU now, as every command does: give --cluster "
        "(a preset such as dgx-a100 or dgx-a100-40gb, or a topology .toml; infralens presets "
        "--kind clusters)");
  }
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  ASSIGN_OR_RETURN(MemoryResult r, ComputeMemory(q, GivenOf(flags)));
  return WriteOutput(output, format == "json" ? MemoryJson(r) : MemoryText(r), io);
}

}  // namespace infralens::cli
