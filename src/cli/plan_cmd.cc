// infralens plan: search the layouts of a model on a cluster, or evaluate one; with the reasons.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/table.h"
#include "base/terminal.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "io/launch_script.h"
#include "plan/planner.h"
#include "request/engine_requests.h"
#include "request/megatron_launch.h"
#include "request/plan_output.h"
#include "request/request_flags.h"

namespace infralens::cli {

using request::AppendExport;
using request::ComputePlan;
using request::PlanJson;
using request::PlanQuery;
using request::PlanResultText;
using request::RequestFlags;
using request::SearchText;

Status RunPlan(const std::vector<std::string>& args, CliIO& io) {
  PlanQuery q;
  RequestFlags& rf = q.request;
  bool json = false, explain = false;
  std::string output, format = "table";
  Flags flags("plan",
              "search tp x pp x dp x cp x ep x ZeRO x recompute x micro-batch x schedule, or "
              "evaluate one layout",
              "infralens plan --model M --cluster C (--gpus N | --nodes N) --global-batch B [--seq "
              "S] [--tp T --pp P: evaluate that layout | any layout options: the best layouts "
              "that keep them] [--top K] [--explain] [--json] [--export FORMAT]",
              {"infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
               "--seq 8192 --explain",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
               "--tp 8 --pp 4 "
               "--vpp 5 --schedule interleaved-1f1b --distributed-optimizer --sp",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
               "--pp 4 --zero 1   # the best layouts with pp 4 and ZeRO-1",
               "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 "
               "--export megatron",
               "infralens plan --model llama3-405b --cluster dgx-h100 --gpus 16384 --global-batch "
               "2048 --top 5 --json",
               "infralens plan --model path/to/config.json --cluster my-cluster.toml --nodes 4 "
               "--global-batch 256",
               "infralens plan --from-megatron path/to/run.sh --cluster dgx-h100 --nodes 8"});
  rf.Register(flags, /*layout=*/true, /*exports=*/true);
  q.RegisterSearch(flags);
  flags.Int("--threads", &q.threads, "worker threads; 0 = every core");
  flags.Bool("--explain", &explain, "say why the winner won and why each family of layouts lost");
  std::string from_megatron;
  flags.String("--from-megatron", &from_megatron,
               "FILE: a Megatron-LM launch script; predict exactly its job (model, layout, batch, "
               "recompute, precision from its flags; variables and arrays expanded)");
  AddOutputFlags(flags, &format, &json, &output, "table, markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "markdown", "json"}));
  if (q.top < 1 || q.top > 1000)
    return InvalidArgument(fmt::format("--top {}: must be 1..1000", q.top));
  if (q.threads < 0 || q.threads > 256) {
    return InvalidArgument(fmt::format("--threads {}: must be 0..256", q.threads));
  }

  // A progress bar on a terminal once the search has run for a second (not with NO_COLOR: plain
  // output, as cli/progress.h).
  const bool tty = ColorEnabled(stderr);
  const auto start = std::chrono::steady_clock::now();
  bool drew = false;
  plan::ProgressFn progress = [&](int64_t done, int64_t total) {
    if (!tty) return;
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1) && done < total) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
    std::fprintf(stderr, "\r  searching [%s%s] %lld/%lld layouts", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total));
    drew = true;
  };
  request::GivenFn given = GivenOf(flags);
  if (!from_megatron.empty()) {
    ASSIGN_OR_RETURN(const std::string script,
                     ReadFileLimited(from_megatron, io::kMaxLaunchScriptBytes));
    ASSIGN_OR_RETURN(request::MegatronLaunch launch,
                     request::ApplyMegatronLaunch(script, from_megatron, given, &rf));
    for (const std::string& n : launch.notes) io.err << "note: " << n << "\n";
    given = [user = given, script_flags = launch.given](const std::string& f) {
      return user(f) || script_flags.count(f) > 0;
    };
  }
  auto o = ComputePlan(q, given, progress);
  if (drew) std::fprintf(stderr, "\r%80s\r", "");
  if (!o.ok()) return o.status();

  // --export prints the chosen layout (the given one, or the search's pick) as a framework config.
  if (!rf.export_format.empty()) {
    const plan::Layout& lay = o->evaluated ? o->one.layout : o->search.ranked.front().layout;
    std::string data, notes;
    RETURN_IF_ERROR(AppendExport(rf.export_format, o->request, lay, data, notes));
    io.err << notes;
    return WriteOutput(output, data, io);
  }
  std::string data;
  if (format == "json") {
    data = PlanJson(*o);
  } else if (o->evaluated) {
    data = PlanResultText(o->request, o->one, format == "markdown");
  } else {
    data = SearchText(o->request, o->search, explain, format == "markdown");
  }
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
