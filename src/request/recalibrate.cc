#include "request/recalibrate.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "base/strings.h"
#include "cluster/cluster.h"
#include "model/presets.h"
#include "plan/efficiency.h"
#include "plan/planner.h"
#include "schedule/schedule.h"

namespace infralens::request {

namespace {

Status CannotRebuild(const std::string& why) {
  return Status(StatusCode::kFailedPrecondition,
                "cannot rebuild the plan from its JSON to recalibrate it: " + why);
}

}  // namespace

StatusOr<Recalibrated> RecalibratePlan(const trace::Prediction& plan,
                                       std::string_view efficiency_csv) {
  const trace::Prediction::Rebuild& rb = plan.rebuild;
  if (plan.format != "plan" || rb.model.empty() || rb.cluster.empty() || !plan.step_time_us)
    return CannotRebuild("it carries no request (write it with `infralens plan --json`)");
  if (!rb.has_fp32_gradients)
    return CannotRebuild("it was written by an older InfraLens (no behaviour.fp32_gradients)");

  plan::PlanRequest req;
  // Presets only: a config.json or a cluster TOML named in the JSON may have changed since (and a
  // name the JSON gives is never read as a path, "-" as standard input included).
  auto model = model::FindPreset(rb.model);
  if (!model.ok()) {
    return CannotRebuild(fmt::format("model '{}' is not a preset", Excerpt(rb.model)));
  }
  req.model = *model;
  auto cluster = cluster::FindClusterPreset(rb.cluster);
  if (!cluster.ok()) {
    return CannotRebuild(fmt::format("cluster '{}' is not a preset", Excerpt(rb.cluster)));
  }
  req.cluster = *cluster;
  if (rb.nodes < 1 || rb.nodes > cluster::kMaxGpus)
    return CannotRebuild(fmt::format("request.nodes {} is out of range", rb.nodes));
  req.cluster.num_nodes = static_cast<int>(rb.nodes);
  RETURN_IF_ERROR(cluster::Validate(req.cluster));
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(req.cluster.node.gpu_model));
  req.global_batch = rb.global_batch;
  req.seq_len = rb.seq;
  ASSIGN_OR_RETURN(req.precision, plan::ParsePrecision(rb.precision));
  plan::ApplyBehaviour(rb.behaviour, &req);
  req.fp32_gradients = rb.behaviour.fp32_grads;
  req.model.causal = rb.causal;
  if (!rb.cross_entropy.empty()) {
    ASSIGN_OR_RETURN(req.cross_entropy, plan::ParseCrossEntropyKernels(rb.cross_entropy));
  }

  plan::Layout lay;
  auto degree = [&plan](const char* axis) {
    auto it = plan.degrees.find(axis);
    return it == plan.degrees.end() ? 1 : it->second;
  };
  lay.parallel.tp = degree("tp");
  lay.parallel.pp = degree("pp");
  lay.parallel.vpp = degree("vpp");
  lay.parallel.dp = degree("dp");
  lay.parallel.cp = degree("cp");
  lay.parallel.ep = degree("ep");
  lay.parallel.zero_stage = rb.zero;
  lay.parallel.sequence_parallel = rb.sequence_parallel;
  lay.parallel.first_stage_layers = rb.first_stage_layers;
  lay.parallel.last_stage_layers = rb.last_stage_layers;
  lay.parallel.embedding_in_split = rb.embedding_in_split;
  lay.parallel.loss_in_split = rb.loss_in_split;
  lay.parallel.layout = rb.stage_layout;
  ASSIGN_OR_RETURN(lay.recompute, model::ParseRecompute(rb.recompute));
  // A searched heavier module list is the layout's (the request's stays the behaviour's).
  if (!rb.recompute_modules.empty()) {
    ASSIGN_OR_RETURN(lay.recompute_modules, model::ParseRecomputeModules(rb.recompute_modules));
  }
  ASSIGN_OR_RETURN(lay.schedule, schedule::ParseScheduleKind(rb.schedule));
  lay.micro_batch = rb.micro_batch;
  if (!plan.order.empty()) lay.order = plan.order;

  // The constants the plan used, as it states them, over the built-in table; then the fitted
  // ones over those.
  const std::string prec = plan::PrecisionName(req.precision);
  std::string stated = fmt::format(
      "gpu,quantity,precision,value,source\n"
      "{0},gemm,{1},{2},stated\n{0},gemm_half_dim,{1},{3},stated\n{0},attention,,{4},stated\n"
      "{0},attention_fa2,,{5},stated\n{0},hbm,,{6},stated\n",
      req.gpu.name, prec, rb.gemm, rb.gemm_half_dim, rb.attention_eff, rb.attention_fa2, rb.hbm);
  // The attention kernels' half-rate key lengths, where the JSON states them (older plans rebuild
  // with the built-in ones, and are refused below if those changed their step).
  if (rb.attention_half_seq > 0 && rb.attention_fa2_half_seq > 0) {
    stated +=
        fmt::format("{0},attention_half_seq,,{1},stated\n{0},attention_fa2_half_seq,,{2},stated\n",
                    req.gpu.name, rb.attention_half_seq, rb.attention_fa2_half_seq);
  }
  auto stated_table = plan::EfficiencyTable::Parse(stated, "the plan's constants");
  if (!stated_table.ok())
    return CannotRebuild("its efficiency constants: " + stated_table.status().message());
  auto base = std::make_shared<plan::EfficiencyTable>(plan::EfficiencyTable::Builtin());
  base->Overlay(*stated_table);
  req.efficiency = base;
  auto before = plan::Evaluate(req, lay);
  if (!before.ok()) return CannotRebuild(before.status().message());
  const double stated_s = *plan.step_time_us * 1e-6;
  // The JSON's numbers are printed to 17 significant digits; the same model gives them back.
  if (std::abs(before->time.step_s - stated_s) > 1e-6 * stated_s) {
    return CannotRebuild(fmt::format(
        "rebuilt, it predicts {:.6g} s where it states {:.6g} s (a different InfraLens version?)",
        before->time.step_s, stated_s));
  }

  ASSIGN_OR_RETURN(plan::EfficiencyTable fitted,
                   plan::EfficiencyTable::Parse(efficiency_csv, "the calibration"));
  auto recal = std::make_shared<plan::EfficiencyTable>(*base);
  recal->Overlay(fitted);
  req.efficiency = recal;
  ASSIGN_OR_RETURN(plan::PlanResult after, plan::Evaluate(req, lay));
  Recalibrated out;
  out.step_time_s = stated_s;
  out.new_step_time_s = after.time.step_s;
  out.mfu = before->mfu;
  out.new_mfu = after.mfu;
  out.gpu = req.gpu.name;
  out.precision = prec;
  return out;
}

}  // namespace infralens::request
