// What `plan --json` says the framework did (request.behaviour) is what `trace compare` rebuilds
// the plan from: every field plan::ApplyBehaviour carries into a request comes back from the
// JSON as it went in, for each framework's defaults and for a behaviour with every field away
// from its default. A field written but not read (or read under another name) fails here.
#include "request/plan_output.h"

#include <gtest/gtest.h>

#include <string>

#include "plan/framework.h"
#include "plan/testing.h"
#include "trace/compare.h"

namespace infralens::request {
namespace {

// `b` through a request, an evaluated plan's JSON document and trace::ReadPrediction, in the
// fields the JSON carries: sp_with_tp is validate's (a request holds SP itself), and
// cpu_offload_required is the user's flag, not a behaviour a plan reports.
plan::FrameworkBehaviour RoundTrip(const plan::FrameworkBehaviour& b, const plan::Layout& lay) {
  plan::PlanRequest req = plan::testing::PresetRequest("llama3-8b", 1, 64, 4096);
  plan::ApplyBehaviour(b, &req);
  req.fp32_gradients = b.fp32_grads;
  auto r = plan::Evaluate(req, lay);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto p = trace::ReadPrediction(PlanResultJsonDocument(req, *r), "plan.json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) return {};
  plan::FrameworkBehaviour back = p->rebuild.behaviour;
  EXPECT_TRUE(p->rebuild.has_fp32_gradients);
  auto loss = plan::ParseCrossEntropyKernels(p->rebuild.cross_entropy);
  EXPECT_TRUE(loss.ok()) << p->rebuild.cross_entropy;
  if (loss.ok()) back.cross_entropy = *loss;
  back.sp_with_tp = b.sp_with_tp;
  back.cpu_offload_required = b.cpu_offload_required;
  return back;
}

TEST(PlanOutputTest, EveryFrameworksBehaviourRoundTripsThroughTraceCompare) {
  const plan::Layout lay = plan::LayoutOf(2, 1, 4, 1, 1, 1, 1, 1, schedule::ScheduleKind::k1F1B,
                                          model::Recompute::kSelective);
  for (plan::Framework f :
       {plan::Framework::kMegatronLm, plan::Framework::kMegatronDeepSpeed,
        plan::Framework::kDeepSpeed, plan::Framework::kTorchtitan, plan::Framework::kNemo,
        plan::Framework::kMegaScale, plan::Framework::kOther}) {
    for (plan::Precision precision : {plan::Precision::kBf16, plan::Precision::kFp8}) {
      const plan::FrameworkBehaviour b = plan::FrameworkDefaults(f, 1, precision);
      EXPECT_EQ(RoundTrip(b, lay), b) << plan::FrameworkName(f);
    }
  }
}

TEST(PlanOutputTest, EveryFieldAwayFromItsDefaultRoundTrips) {
  const plan::FrameworkBehaviour d;
  plan::FrameworkBehaviour b;
  b.fused_attention = !d.fused_attention;  // materialized: flash_attention_2 stays false
  b.overlap_grad_reduce = !d.overlap_grad_reduce;
  b.tp_overlap = !d.tp_overlap;
  b.tp_overlap_bwd_reduce_scatter = !d.tp_overlap_bwd_reduce_scatter;
  b.tp_overlap_rs_sms = 7;
  b.tp_overlap_bulk_sms = 9;
  b.tp_overlap_rs_splits = 3;
  b.tp_overlap_rs_reduce_after = !d.tp_overlap_rs_reduce_after;
  b.sp_backward_regather = true;  // "regather"; "saved" is the next case
  b.fp32_grads = !d.fp32_grads;
  b.eager_elementwise = !d.eager_elementwise;
  b.cross_entropy = plan::CrossEntropyKernels::kEager;
  b.sp_rechunk_copies = !d.sp_rechunk_copies;
  b.p2p_wait = plan::P2pWait::kBlockingSingleChunk;
  b.fsdp_once_per_step_with_pp = !d.fsdp_once_per_step_with_pp;
  b.fsdp_max_live_params = 5e8;
  b.fsdp_copy_out = b.fsdp_copy_in = true;
  b.dp_bucket_params = 12345678;
  b.ep_hierarchical_dispatch = !d.ep_hierarchical_dispatch;
  b.ep_overlap = !d.ep_overlap;
  b.fp8_transformer_engine = !d.fp8_transformer_engine;
  b.fp8_param_gather = !d.fp8_param_gather;
  b.fused_projections = !d.fused_projections;
  b.master_weight_remainders = !d.master_weight_remainders;
  b.cp_all_gather = !d.cp_all_gather;
  b.cp_kv_repeated = !d.cp_kv_repeated;
  b.recompute_modules = {model::kRecomputeMlp | model::kRecomputeLayernorm};
  const plan::Layout lay = plan::LayoutOf(2, 1, 4, 1, 1, 3, 1, 1, schedule::ScheduleKind::k1F1B,
                                          model::Recompute::kSelective);
  EXPECT_EQ(RoundTrip(b, lay), b);

  // The other words of the fields with more than two.
  plan::FrameworkBehaviour other = b;
  other.fused_attention = true;
  other.flash_attention_2 = true;
  other.sp_backward_regather = false;
  other.sp_inputs_gathered = true;
  other.fsdp_copy_in = false;
  other.cross_entropy = plan::CrossEntropyKernels::kUnfused;
  other.p2p_wait = plan::P2pWait::kBlocking;
  EXPECT_EQ(RoundTrip(other, lay), other);

  // Activation offloading: a layout Megatron-Core offloads under (pp 1, no recompute).
  plan::FrameworkBehaviour offload;
  offload.cpu_offload_layers = 4;
  EXPECT_EQ(RoundTrip(offload, plan::LayoutOf(2, 1, 4, 1, 1, 1, 1, 1, schedule::ScheduleKind::k1F1B,
                                              model::Recompute::kNone)),
            offload);
}

// A layout's own selective list (a search's heavier one) is the plan's "recompute_modules", beside
// the request's behaviour.recompute_modules: `trace compare` rebuilds the layout with it, and a
// layout with the request's list writes that list.
TEST(PlanOutputTest, ALayoutsOwnRecomputeListRoundTrips) {
  const plan::PlanRequest req = plan::testing::PresetRequest("llama3-8b", 1, 64, 4096);
  plan::Layout lay = plan::LayoutOf(2, 1, 4, 1, 1, 1, 1, 1, schedule::ScheduleKind::k1F1B,
                                    model::Recompute::kSelective);
  const auto plan_of = [&](const plan::Layout& l) {
    auto r = plan::Evaluate(req, l);
    EXPECT_TRUE(r.ok()) << r.status().message();
    auto p = trace::ReadPrediction(PlanResultJsonDocument(req, *r), "plan.json");
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p->rebuild;
  };
  EXPECT_EQ(plan_of(lay).recompute_modules, "core_attn");
  lay.recompute_modules = {model::kRecomputeCoreAttn | model::kRecomputeLayernorm |
                           model::kRecomputeMlp};
  const trace::Prediction::Rebuild heavier = plan_of(lay);
  EXPECT_EQ(heavier.recompute_modules, "core_attn layernorm mlp");
  EXPECT_EQ(heavier.behaviour.recompute_modules, model::RecomputeModules{});  // the request's
  // No list without selective recompute.
  lay.recompute = model::Recompute::kFull;
  EXPECT_EQ(plan_of(lay).recompute_modules, "");
}

}  // namespace
}  // namespace infralens::request
