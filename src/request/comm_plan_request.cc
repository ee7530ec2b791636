// infralens comm-plan: every collective a training step issues, per axis, with its link and time.
#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/units.h"
#include "plan/comm_plan.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"
#include "request/plan_output.h"
#include "request/training_flags.h"

namespace infralens::request {

namespace {

std::string Bytes(double b) {
  if (b >= 1 << 30) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.2f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

std::string Ms(double s) {
  return s >= 1e-3 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}

}  // namespace

StatusOr<CommPlanResult> ComputeCommPlan(const CommPlanQuery& q, const GivenFn& given) {
  CommPlanResult r;
  ASSIGN_OR_RETURN(r.model, q.training.LoadModel());
  ASSIGN_OR_RETURN(r.cluster, q.cluster.Load(given));
  ASSIGN_OR_RETURN(r.placement, q.cluster.Place(r.cluster));
  plan::CommPlanConfig& cfg = r.config;
  ASSIGN_OR_RETURN(cfg.job, q.training.Config(given));
  cfg.job.parallel.tp = q.cluster.tp;
  cfg.job.parallel.pp = q.cluster.pp;
  cfg.job.parallel.cp = q.cluster.cp;
  cfg.job.parallel.ep = q.cluster.ep;
  cfg.job.parallel.dp = cluster::DataParallelDegree(r.placement);
  cfg.order = r.placement.OrderString();
  ASSIGN_OR_RETURN(r.plan, plan::BuildCommPlan(r.model, r.cluster, cfg));
  return r;
}

std::string CommPlanJson(const CommPlanResult& r, int indent) {
  const plan::CommPlan& plan = r.plan;
  const plan::ParallelConfig& par = r.config.job.parallel;
  JsonWriter w(indent);
  w.BeginObject();
  w.Field("model", r.model.name)
      .Field("cluster", r.cluster.name)
      .Field("gpus", r.cluster.num_gpus());
  w.Key("parallel").BeginObject();
  WriteParallelFields(w, par, plan.vpp);
  w.Field("order", r.config.order);
  w.EndObject();
  w.Field("microbatches", plan.microbatches).Field("pipeline_rank", plan.rank);
  w.Field("layers", plan.layers).Field("moe_layers", plan.moe_layers);
  w.Field("units", "bytes; seconds; GB/s = 1e9 bytes/s");
  w.Key("items").BeginArray();
  for (const auto& it : plan.items) {
    w.BeginObject();
    w.Field("communication", it.name).Field("group", it.group).Field("group_size", it.group_size);
    w.Field("collective", collective::CollectiveName(it.collective));
    w.Field("frequency", it.frequency);
    w.Field("message_bytes", it.message_bytes).Field("count_per_step", it.count);
    w.Field("link", cluster::LinkClassName(it.link));
    w.Field("algorithm", collective::AlgorithmName(it.estimate.algorithm));
    w.Field("time_per_call_s", it.estimate.time_s).Field("time_per_step_s", it.time_per_step_s);
    w.Field("busbw_GBps", it.estimate.busbw_bytes_per_s / 1e9);
    w.Field("overlap", plan::OverlapName(it.overlap)).Field("overlap_note", it.overlap_note);
    w.EndObject();
  }
  w.EndArray();
  w.Field("total_time_per_step_s", plan.total_s);
  w.EndObject();
  return w.str();
}

std::string CommPlanText(const CommPlanResult& r, bool markdown) {
  const model::Model& m = r.model;
  const cluster::Cluster& c = r.cluster;
  const cluster::Placement& placement = r.placement;
  const plan::CommPlanConfig& cfg = r.config;
  const plan::CommPlan& plan = r.plan;
  const plan::ParallelConfig& par = cfg.job.parallel;

  std::string data;
  data = fmt::format(
      "{} on {}: {} nodes x {} GPUs; {}; {} chunk{} per rank, {} microbatches of {} x {} tokens; "
      "ZeRO {}{}, "
      "recompute {}\n",
      m.name, c.name, c.num_nodes, c.node.gpus_per_node, cluster::MegatronDegreesString(placement),
      plan.vpp, plan.vpp == 1 ? "" : "s", plan.microbatches, cfg.job.micro_batch,
      cfg.job.seq_len > 0 ? cfg.job.seq_len : m.seq_len, par.zero_stage,
      par.sequence_parallel ? ", SP" : "", model::RecomputeName(cfg.job.recompute));
  data += fmt::format(
      "Calls per step on one GPU of pipeline rank {} ({} layers{}); message = nccl-tests' size S; "
      "time on the "
      "slowest group of each kind; GB/s = 1e9 bytes/s.\n\n",
      plan.rank, plan.layers, plan.moe_layers > 0 ? fmt::format(", {} MoE", plan.moe_layers) : "");
  TextTable t({"communication", "group", "collective", "message", "calls/step", "link", "per call",
               "per step", "overlaps compute"});
  t.SetAlign(1, TextTable::Align::kLeft);
  t.SetAlign(2, TextTable::Align::kLeft);
  t.SetAlign(5, TextTable::Align::kLeft);
  t.SetAlign(8, TextTable::Align::kLeft);
  double exposed = 0;
  for (const auto& it : plan.items) {
    t.AddRow({it.name, fmt::format("{} ({})", it.group, it.group_size),
              std::string(collective::CollectiveName(it.collective)), Bytes(it.message_bytes),
              std::to_string(it.count), std::string(cluster::LinkClassName(it.link)),
              Ms(it.estimate.time_s), Ms(it.time_per_step_s), plan::OverlapName(it.overlap)});
    if (it.overlap == plan::Overlap::kNo) exposed += it.time_per_step_s;
  }
  data += markdown ? t.RenderMarkdown() : t.Render();
  data += "\nfrequency and overlap:\n";
  for (const auto& it : plan.items) {
    data += fmt::format("  {}: {}; overlap {}: {}\n", it.name, it.frequency,
                        plan::OverlapName(it.overlap), it.overlap_note);
  }
  data += fmt::format("\ntotal {} per step before overlap; {} of it cannot overlap compute\n",
                      Ms(plan.total_s), Ms(exposed));
  return data;
}

const Command& CommPlanCommand() {
  static const Command kCommand = MakeCommand<CommPlanQuery, CommPlanResult>(
      {.name = "comm-plan",
       .summary =
           "every collective a training step issues: group, frequency, size, link, time, overlap",
       .usage = "infralens comm-plan --model NAME --cluster C --nodes N --tp T --pp P [--dp D --cp "
                "C --ep E] [--sp] [--zero Z] [--micro-batch b --global-batch B --seq S] [--json]",
       .examples = {"infralens comm-plan --model llama3-70b --cluster dgx-h100 --nodes 8 --tp 8 "
                    "--pp 2 --dp 4 --sp --distributed-optimizer --recompute selective "
                    "--global-batch 256",
                    "infralens comm-plan --model mixtral-8x7b --cluster dgx-h100 --nodes 8 --tp 2 "
                    "--pp 4 --dp 8 --ep 8 --sp --zero 1 --global-batch 512 --json",
                    "infralens comm-plan --model llama2-7b --cluster dgx-a100 --nodes 2 --dp 16 "
                    "--fsdp --global-batch 256"},
       .formats = {"table", "markdown", "json"}},
      [](CommPlanQuery& q, FlagSink& flags) {
        q.cluster.Register(flags);
        q.training.Register(flags, /*layout=*/true);
      },
      [](const CommPlanQuery& q, const RunContext& ctx) {
        CommPlanQuery run = q;
        run.cluster.files_allowed = run.training.files_allowed = ctx.files_allowed;
        return ComputeCommPlan(run, ctx.given);
      },
      [](const CommPlanResult& r, const CommPlanQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        return ctx.format == "json" ? CommPlanJson(r, ctx.json_indent)
                                    : CommPlanText(r, ctx.format == "markdown");
      });
  return kCommand;
}

}  // namespace infralens::request
