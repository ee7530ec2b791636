// infralens plan: search the layouts of a model on a cluster, or evaluate one; with the reasons.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/terminal.h"
#include "cli/request_flags.h"
#include "cli/commands.h"
#include "cli/plan_output.h"
#include "plan/planner.h"

namespace infralens::cli {

Status RunPlan(const std::vector<std::string>& args, CliIO& io) {
  RequestFlags rf;
  rf.tf.recompute = "selective";
  int top = 10, threads = 0;
  bool json = false, explain = false;
  std::string output, format = "table";
  Flags flags("plan", "search tp x pp x dp x cp x ep x ZeRO x recompute x micro-batch x schedule, or evaluate one layout",
              "infralens plan --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq S] [degrees to "
              "evaluate one layout] [--top K] [--explain] [--json] [--export FORMAT]",
              {"infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --seq 8192 --explain",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --tp 8 --pp 4 "
               "--vpp 5 --schedule interleaved-1f1b --distributed-optimizer --sp",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --export megatron",
               "infralens plan --model llama3-405b --cluster dgx-h100 --gpus 16384 --global-batch 2048 --top 5 --json",
               "infralens plan --model path/to/config.json --cluster my-cluster.toml --nodes 4 --global-batch 256"});
  rf.Register(flags, /*layout=*/true, /*exports=*/true);
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
  ASSIGN_OR_RETURN(plan::PlanRequest req, rf.Request(flags));
  ASSIGN_OR_RETURN(std::optional<plan::Layout> fixed, rf.Layout(flags, req));

  // --export prints the chosen layout (the given one, or the search's pick) as a framework config.
  auto emit_export = [&](const plan::Layout& lay) -> Status {
    std::string data, notes;
    RETURN_IF_ERROR(AppendExport(rf.export_format, req, lay, data, notes));
    io.err << notes;
    return WriteOutput(output, data, io);
  };
  if (fixed) {
    ASSIGN_OR_RETURN(plan::PlanResult r, plan::Evaluate(req, *fixed));
    if (!rf.export_format.empty()) return emit_export(r.layout);
    const std::string data =
        format == "json" ? PlanResultJsonDocument(req, r) : PlanResultText(req, r, format == "markdown");
    return WriteOutput(output, data, io);
  }

  plan::SearchOptions opt;
  opt.top_k = top;
  opt.threads = threads;
  if (flags.Given("--schedule")) {
    ASSIGN_OR_RETURN(plan::MemoryConfig job, rf.tf.Config(flags));
    opt.schedules = {job.schedule};
  }
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
  if (!rf.export_format.empty()) return emit_export(sr->ranked.front().layout);
  const std::string data =
      format == "json" ? SearchJsonDocument(req, *sr) : SearchText(req, *sr, explain, format == "markdown");
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
