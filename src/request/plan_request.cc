// infralens plan: search the layouts of a model on a cluster, or evaluate one; with the reasons.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/strings.h"
#include "base/table.h"
#include "base/terminal.h"
#include "io/launch_script.h"
#include "plan/planner.h"
#include "request/engine_requests.h"
#include "request/megatron_launch.h"
#include "request/plan_output.h"
#include "request/request_flags.h"

namespace infralens::request {

void PlanQuery::RegisterSearch(FlagSink& flags) {
  flags.Int("--top", &top, "how many layouts to list");
  flags.Double("--search-seconds", &search_seconds,
               "stop the search after this many seconds and rank the layouts it evaluated (the "
               "answer says partial); 0 = search them all");
}

StatusOr<plan::PlanRequest> PlanRequestOf(const PlanQuery& q, const GivenFn& given) {
  return q.request.Request(given);
}

Status CheckRequestGpus(const plan::PlanRequest& request, const GivenFn& given, int64_t max_gpus) {
  if (max_gpus <= 0 || request.gpus() <= max_gpus) return Status::Ok();
  // The server's bound, before any work (the CLI goes to cluster::kMaxGpus).
  return InvalidArgument(fmt::format(
      "‹{}›: {} GPUs ({} nodes of {}): the server plans for at most {} GPUs per request; the "
      "CLI goes to {} (infralens plan)",
      given("--gpus") ? "gpus" : "nodes", request.gpus(), request.cluster.num_nodes,
      request.cluster.node.gpus_per_node, max_gpus, cluster::kMaxGpus));
}

StatusOr<LayoutChoice> ChooseLayoutFor(const RequestFlags& query, const RunContext& ctx,
                                       bool want_best) {
  RequestFlags rf = query;
  rf.SetFilesAllowed(ctx.files_allowed);
  ASSIGN_OR_RETURN(plan::PlanRequest request, rf.Request(ctx.given));
  RETURN_IF_ERROR(CheckRequestGpus(request, ctx.given, ctx.max_gpus));
  return ChooseLayout(std::move(request), rf, ctx.given, want_best, SearchOptionsOf(ctx));
}

plan::SearchOptions SearchOptionsOf(const RunContext& ctx) {
  plan::SearchOptions o;
  if (ctx.threads > 0) o.threads = ctx.threads;
  o.stop = ctx.stop;
  return o;
}

StatusOr<PlanOutcome> ComputePlan(const PlanQuery& q, const GivenFn& given,
                                  const plan::ProgressFn& progress, const StopFn& stop) {
  if (!(q.search_seconds >= 0 && q.search_seconds <= kMaxSearchSeconds)) {
    return InvalidArgument(fmt::format("--search-seconds {}: must be 0..{} (0 = no limit)",
                                       q.search_seconds, kMaxSearchSeconds));
  }
  PlanOutcome o;
  ASSIGN_OR_RETURN(o.request, q.request.Request(given));
  RETURN_IF_ERROR(CheckRequestGpus(o.request, given, q.max_gpus));
  ASSIGN_OR_RETURN(std::optional<plan::Layout> fixed, q.request.Layout(given, o.request));
  if (fixed) {
    // Evaluate the user's own layout.
    o.evaluated = true;
    ASSIGN_OR_RETURN(o.one, plan::Evaluate(o.request, *fixed));
    return o;
  }
  plan::SearchOptions opt;
  opt.top_k = q.top;
  opt.threads = q.threads;
  opt.stop = stop;
  opt.keep_partial = q.keep_partial;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(q.search_seconds));
  if (q.search_seconds > 0) {
    opt.stop = [stop, deadline] {
      return std::chrono::steady_clock::now() >= deadline || (stop && stop());
    };
    opt.keep_partial = true;
  }
  RETURN_IF_ERROR(q.request.RestrictSearch(given, o.request, &opt));
  auto searched = plan::Search(o.request, opt, progress);
  if (!searched.ok() && searched.status().code() == StatusCode::kResourceExhausted &&
      q.search_seconds > 0 && !(stop && stop())) {
    // Stopped by --search-seconds, not by the caller: the user's own bound, said as such.
    return FailedPrecondition(
        fmt::format("--search-seconds {}: {} before any layout that fits was evaluated; allow "
                    "more seconds (0 = no limit)",
                    q.search_seconds, searched.status().message()));
  }
  ASSIGN_OR_RETURN(o.search, std::move(searched));
  return o;
}

std::string PlanJson(const PlanOutcome& o, int indent) {
  return o.evaluated ? PlanResultJsonDocument(o.request, o.one, indent)
                     : SearchJsonDocument(o.request, o.search, indent);
}

namespace {

// --from-megatron FILE: the script's flags fill the request where the user gave none; its notes
// go to the user. The given-ness of what the script set is `given`'s too.
StatusOr<GivenFn> ApplyFromMegatron(PlanQuery& q, const RunContext& ctx) {
  if (q.from_megatron.empty()) return ctx.given;
  if (!ctx.files_allowed) return InvalidArgument("‹from_megatron›: the workbench reads no file");
  ASSIGN_OR_RETURN(const std::string script,
                   ReadFileLimited(q.from_megatron, io::kMaxLaunchScriptBytes));
  ASSIGN_OR_RETURN(MegatronLaunch launch,
                   ApplyMegatronLaunch(script, q.from_megatron, ctx.given, &q.request));
  if (ctx.note) {
    for (const std::string& n : launch.notes) ctx.note("note: " + n + "\n");
  }
  return GivenFn([user = ctx.given, script_flags = launch.given](const std::string& f) {
    return user(f) || script_flags.count(f) > 0;
  });
}

}  // namespace

const Command& PlanCommand() {
  static const Command kCommand = MakeCommand<PlanQuery, PlanOutcome>(
      {.name = "plan",
       .summary = "search tp x pp x dp x cp x ep x ZeRO x recompute x micro-batch x schedule, or "
                  "evaluate one layout",
       .usage = "infralens plan --model M --cluster C (--gpus N | --nodes N) --global-batch B "
                "[--seq S] [--tp T --pp P: evaluate that layout | any layout options: the best "
                "layouts that keep them] [--top K] [--explain] [--json] [--export FORMAT]",
       .examples =
           {"infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch "
            "512 --seq 8192 --explain",
            "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch "
            "512 --tp 8 --pp 4 --vpp 5 --schedule interleaved-1f1b --distributed-optimizer "
            "--sp",
            "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch "
            "512 --pp 4 --zero 1   # the best layouts with pp 4 and ZeRO-1",
            "infralens plan --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch "
            "512 --export megatron",
            "infralens plan --model llama3-405b --cluster dgx-h100 --gpus 16384 "
            "--global-batch 2048 --top 5 --json",
            "infralens plan --model path/to/config.json --cluster my-cluster.toml --nodes 4 "
            "--global-batch 256",
            "infralens plan --from-megatron path/to/run.sh --cluster dgx-h100 --nodes 8"},
       .formats = {"table", "markdown", "json"},
       .cli_only = {"--threads", "--explain", "--from-megatron", "--export"}},
      [](PlanQuery& q, FlagSink& flags) {
        q.request.Register(flags, /*layout=*/true, /*exports=*/true);
        q.RegisterSearch(flags);
        flags.Int("--threads", &q.threads, "worker threads; 0 = every core");
        flags.Bool("--explain", &q.explain,
                   "say why the winner won and why each family of layouts lost");
        flags.String("--from-megatron", &q.from_megatron,
                     "FILE: a Megatron-LM launch script; predict exactly its job (model, layout, "
                     "batch, recompute, precision from its flags; variables and arrays expanded)");
      },
      [](const PlanQuery& query, const RunContext& ctx) -> StatusOr<PlanOutcome> {
        if (query.top < 1 || query.top > 1000)
          return InvalidArgument(fmt::format("‹top› {}: must be 1..1000", query.top));
        if (query.threads < 0 || query.threads > 256)
          return InvalidArgument(fmt::format("‹threads› {}: must be 0..256", query.threads));
        PlanQuery q = query;
        q.request.SetFilesAllowed(ctx.files_allowed);
        if (ctx.threads > 0) q.threads = ctx.threads;
        q.keep_partial = q.keep_partial || ctx.keep_partial;
        q.max_gpus = ctx.max_gpus;
        ASSIGN_OR_RETURN(const GivenFn given, ApplyFromMegatron(q, ctx));
        return ComputePlan(q, given, ctx.progress, ctx.stop);
      },
      [](const PlanOutcome& o, const PlanQuery& q, const RunContext& ctx) -> StatusOr<std::string> {
        if (!q.request.export_format.empty()) {
          // The chosen layout (the given one, or the search's pick) as a framework's config.
          const plan::Layout& lay = o.evaluated ? o.one.layout : o.search.ranked.front().layout;
          if (!o.evaluated && ctx.note && !o.search.constraints.empty()) {
            // What the search kept to: the framework's (--framework, else --export's) schedules
            // and ZeRO stages among them (RequestFlags::SearchFramework).
            ctx.note("note: searched only " + Join(o.search.constraints, ", ") + "\n");
          }
          return ExportDocument(q.request.export_format, o.request, lay, ctx);
        }
        if (ctx.format == "json") return PlanJson(o, ctx.json_indent);
        const bool markdown = ctx.format == "markdown";
        if (o.evaluated) return PlanResultText(o.request, o.one, markdown);
        return SearchText(o.request, o.search, q.explain, markdown);
      });
  return kCommand;
}

}  // namespace infralens::request
