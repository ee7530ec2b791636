// The communication plan's counts and sizes, derived by hand from the rules in comm_plan.cc's
// comments (Megatron's behaviour), on a small GPT-like model.
#include "plan/comm_plan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/presets.h"

namespace infralens::plan {
namespace {

model::Model Gpt() {
  model::Model m;
  m.name = "test-gpt";
  m.num_layers = 8;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.num_heads = 16;
  m.num_kv_heads = 16;
  m.head_dim = 64;
  m.vocab = 32000;
  m.seq_len = 2048;
  return m;
}

// Gpt() with `experts` routed experts of width 1024 in every layer, top_k per token.
model::Model MoeGpt(int64_t experts, int64_t top_k) {
  model::Model m = Gpt();
  m.num_experts = experts;
  m.top_k = top_k;
  m.expert_ffn_hidden = 1024;
  return m;
}

cluster::Cluster Dgx(int nodes) {
  auto c = cluster::FindClusterPreset("dgx-h100");
  EXPECT_TRUE(c.ok());
  c->num_nodes = nodes;
  return *c;
}

CommPlanConfig Job(int tp, int pp, int dp, int64_t global_batch) {
  CommPlanConfig cfg;
  cfg.job.parallel.tp = tp;
  cfg.job.parallel.pp = pp;
  cfg.job.parallel.dp = dp;
  cfg.job.micro_batch = 2;
  cfg.job.global_batch = global_batch;
  return cfg;
}

const CommItem* Find(const CommPlan& p, const std::string& prefix) {
  for (const auto& it : p.items) {
    if (it.name.rfind(prefix, 0) == 0) return &it;
  }
  return nullptr;
}

// Every item carries the kind the planner computes with; names are for people (issue 23).
TEST(CommPlanTest, ItemsCarryKinds) {
  CommPlanConfig sp = Job(8, 2, 4, 64);
  sp.job.parallel.sequence_parallel = true;
  sp.job.parallel.zero_stage = 1;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), sp);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::vector<CommItemKind> kinds;
  for (const CommItem& it : plan->items) kinds.push_back(it.kind);
  EXPECT_EQ(kinds, (std::vector<CommItemKind>{
                       CommItemKind::kTpSpAllGather, CommItemKind::kTpSpReduceScatter,
                       CommItemKind::kTpSpWeightGradAllReduce, CommItemKind::kPpSendRecv,
                       CommItemKind::kDpGradReduceScatter, CommItemKind::kDpParamAllGather}));
  EXPECT_STREQ(CommItemFamily(CommItemKind::kTpSpAllGather), "TP");
  EXPECT_STREQ(CommItemFamily(CommItemKind::kFsdpReduceScatter), "FSDP");
  CommPlanConfig fsdp = Job(1, 1, 64, 128);
  fsdp.job.parallel.zero_stage = 3;
  auto f = BuildCommPlan(Gpt(), Dgx(8), fsdp);
  ASSERT_TRUE(f.ok()) << f.status().message();
  kinds.clear();
  for (const CommItem& it : f->items) kinds.push_back(it.kind);
  EXPECT_EQ(kinds, (std::vector<CommItemKind>{CommItemKind::kFsdpGatherForward,
                                              CommItemKind::kFsdpGatherBackward,
                                              CommItemKind::kFsdpReduceScatter}));
}

// The distributed optimizer's all-gather of the updated weights moves FP8 for the layers' FP8
// parameters and BF16 for the rest (embedding, output layer, final norm). Llama 2 7B, dp 8,
// ZeRO-1, by hand: 6,476,267,520 layer parameters x 1 + 262,148,096 others x 2 = 7,000,563,712
// bytes a step, against 2 x 6,738,415,616 = 13,476,831,232 in BF16.
TEST(CommPlanTest, Fp8ParametersAreGatheredInFp8) {
  CommPlanConfig cfg = Job(1, 1, 8, 64);
  cfg.job.parallel.zero_stage = 1;
  cfg.job.precision = Precision::kFp8;
  auto gathered = [&](bool fp8_params) {
    cfg.job.fp8_param_gather = fp8_params;
    auto plan = BuildCommPlan(*model::FindPreset("llama2-7b"), Dgx(1), cfg);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    double bytes = 0;
    if (!plan.ok()) return bytes;
    for (const CommItem& it : plan->items) {
      if (it.kind == CommItemKind::kDpParamAllGather) bytes += it.message_bytes * it.count;
    }
    return bytes;
  };
  EXPECT_NEAR(gathered(true), 7'000'563'712.0, 1e-6 * 7e9);
  EXPECT_NEAR(gathered(false), 13'476'831'232.0, 1e-6 * 13e9);
}

// tp=8, pp=2, dp=4 on 64 GPUs; global batch 64 = micro-batch 2 x dp 4 x 8 microbatches.
TEST(CommPlanTest, TensorParallelAllReduceCountsAndSize) {
  auto plan = BuildCommPlan(Gpt(), Dgx(8), Job(8, 2, 4, 64));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->microbatches, 8);
  EXPECT_EQ(plan->layers, 4);  // 8 layers over 2 pipeline ranks
  const CommItem* tp = Find(*plan, "TP all-reduce");
  ASSERT_NE(tp, nullptr);
  // 2 forward + 2 backward per layer per microbatch: 4 layers x 8 microbatches x 4.
  EXPECT_EQ(tp->count, 4 * 8 * 4);
  // The hidden states of one microbatch: b s h x 2 bytes.
  EXPECT_DOUBLE_EQ(tp->message_bytes, 2.0 * 2048 * 1024 * 2);
  EXPECT_EQ(tp->group_size, 8);
  EXPECT_EQ(tp->link, cluster::LinkClass::kScaleUp);
  EXPECT_EQ(tp->overlap, Overlap::kNo);
  EXPECT_NEAR(tp->time_per_step_s, tp->count * tp->estimate.time_s, 1e-12);
  // PP: one forward and one backward send per microbatch per chunk.
  const CommItem* pp = Find(*plan, "PP send/recv");
  ASSERT_NE(pp, nullptr);
  EXPECT_EQ(pp->count, 2 * 8);
  EXPECT_DOUBLE_EQ(pp->message_bytes, 2.0 * 2048 * 1024 * 2);
  EXPECT_EQ(pp->link, cluster::LinkClass::kRail);
}

TEST(CommPlanTest, SequenceParallelSplitsEachAllReduce) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.job.parallel.sequence_parallel = true;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "TP all-reduce"), nullptr);
  const CommItem* ag = Find(*plan, "TP+SP all-gather");
  const CommItem* rs = Find(*plan, "TP+SP reduce-scatter");
  ASSERT_NE(ag, nullptr);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(ag->count, 4 * 8 * 4);
  EXPECT_EQ(rs->count, 4 * 8 * 4);
  // The PP tensor is the SP shard: 1/tp of the hidden states.
  EXPECT_DOUBLE_EQ(Find(*plan, "PP send/recv")->message_bytes, 2.0 * 2048 * 1024 * 2 / 8);
  // Each rank's norm weights see only its own tokens: once per step, the rank's 4 layers' two
  // RMSNorms (1,024 weights each) summed over TP in BF16 gradients, after the last backward.
  const CommItem* sync = Find(*plan, "TP+SP all-reduce of");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->kind, CommItemKind::kTpSpWeightGradAllReduce);
  EXPECT_EQ(sync->collective, collective::Collective::kAllReduce);
  EXPECT_EQ(sync->count, 1);
  EXPECT_EQ(sync->group_size, 8);
  EXPECT_DOUBLE_EQ(sync->message_bytes, 4.0 * 2 * 1024 * 2);
  EXPECT_EQ(sync->overlap, Overlap::kNo);
}

// MLA under SP (Megatron-Core multi_latent_attention.py): the down projections run duplicated on
// each rank's sequence shard, so the attention's forward all-gathers carry the latents that feed
// the up projections, 1,536 + 512 + 64 = 2,112 values a token for DeepSeek-V3, and the backward
// reduce-scatters their gradients at that width; the MLP's calls and the projection's output
// gradients stay 7,168 wide. At tp 8, pp 61 (one layer a stage), micro-batch 2 of 4,096 tokens,
// 64 microbatches, selective recompute, per layer and microbatch: 1 latent all-gather and 1 latent
// reduce-scatter; 3 hidden all-gathers (the MLP's forward, 2 backward) and 3 reduce-scatters
// (2 forward, the MLP's backward). The once-per-step sum of the whole-on-every-rank weights'
// gradients adds the down projections (15,140,864) to the norms (2 x 7,168).
TEST(CommPlanTest, MlaGathersItsLatentsUnderSequenceParallelism) {
  const model::Model m = *model::FindPreset("deepseek-v3");
  CommPlanConfig cfg = Job(8, 61, 1, 128);
  cfg.job.parallel.sequence_parallel = true;
  cfg.job.parallel.ep = 1;
  auto plan = BuildCommPlan(m, Dgx(61), cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->layers, 1);
  ASSERT_EQ(plan->microbatches, 64);
  const double tokens = 2.0 * 4096;
  const CommItem* lat_ag = Find(*plan, "TP+SP all-gather of MLA's latents");
  const CommItem* lat_rs = Find(*plan, "TP+SP reduce-scatter of the gradients of MLA's latents");
  const CommItem* ag = Find(*plan, "TP+SP all-gather of the layer norm outputs");
  const CommItem* rs = Find(*plan, "TP+SP reduce-scatter of attention and MLP outputs");
  ASSERT_TRUE(lat_ag && lat_rs && ag && rs);
  EXPECT_DOUBLE_EQ(lat_ag->message_bytes, tokens * 2112 * 2);
  EXPECT_DOUBLE_EQ(lat_rs->message_bytes, tokens * 2112 * 2);
  EXPECT_DOUBLE_EQ(ag->message_bytes, tokens * 7168 * 2);
  EXPECT_EQ(lat_ag->count, 64);
  EXPECT_EQ(lat_rs->count, 64);
  EXPECT_EQ(ag->count, 3 * 64);
  EXPECT_EQ(rs->count, 3 * 64);
  const CommItem* sync = Find(*plan, "TP+SP all-reduce of");
  ASSERT_NE(sync, nullptr);
  EXPECT_DOUBLE_EQ(sync->message_bytes, (15'140'864.0 + 2 * 7168) * 2);
  EXPECT_EQ(Find(*plan, "TP+SP all-gather of MLA's latents again"), nullptr);
  // Transformer Engine's backward gathers the up projections' inputs again (the two latents,
  // 1,536 + 512, not the RoPE key): one call per layer and microbatch; the MLP's fc1 (a dense
  // layer's) gathers the hidden state again as before.
  cfg.sp_backward_regather = true;
  auto again = BuildCommPlan(m, Dgx(61), cfg);
  ASSERT_TRUE(again.ok()) << again.status().message();
  const CommItem* regather = Find(*again, "TP+SP all-gather of MLA's latents again");
  ASSERT_NE(regather, nullptr);
  EXPECT_EQ(regather->kind, CommItemKind::kTpSpRegatherLatents);
  EXPECT_DOUBLE_EQ(regather->message_bytes, tokens * 2048 * 2);
  EXPECT_EQ(regather->count, 64);
}

// Megatron-Core's and Transformer Engine's backward gathers each column-parallel input again
// (qkv and fc1): two all-gathers more per layer per microbatch; the reduce-scatters do not change.
// A MoE layer's MLP has no fc1 (one more), MLA's attention no qkv.
TEST(CommPlanTest, SequenceParallelBackwardGathersTheInputsAgain) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.job.parallel.sequence_parallel = true;
  cfg.sp_backward_regather = true;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const CommItem* ag = Find(*plan, "TP+SP all-gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->count, 4 * 8 * (4 + 2));  // 4 layers x 8 microbatches
  EXPECT_EQ(Find(*plan, "TP+SP reduce-scatter")->count, 4 * 8 * 4);
  EXPECT_EQ(ag->frequency,
            "24 per microbatch (4 per layer: 2 forward, 2 backward; and 8 gathered again for the "
            "wgrad GEMMs)");
  EXPECT_EQ(ag->overlap, Overlap::kPartly);
  EXPECT_EQ(Find(*plan, "TP+SP reduce-scatter")->overlap, Overlap::kPartly);
  auto moe = BuildCommPlan(MoeGpt(8, 2), Dgx(8), cfg);
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  EXPECT_EQ(Find(*moe, "TP+SP all-gather")->count, 4 * 8 * (4 + 1));
}

const CommItem* FindKind(const CommPlan& p, CommItemKind kind) {
  for (const auto& it : p.items) {
    if (it.kind == kind) return &it;
  }
  return nullptr;
}

// Context parallelism as each framework exchanges K and V, by hand for Llama 3 8B at cp 8 over
// 32,768 tokens, micro-batch 1, full recompute: 4,096 tokens a rank, K and V 8 KV heads x
// (128 + 128) = 2,048 values a token, 16 MiB a rank in BF16.
// Transformer Engine's ring: 7 steps per layer each way, the forward's twice (recompute); the
// backward's steps carry K, V and their gradients (32 MiB).
// PyTorch's context_parallel: one all-gather of every rank's K and V (8 x 16 MiB = 128 MiB out)
// per forward, again in the recompute and once more in the backward, and the gradients passed
// on in FP32 once per block (2 x 16 MiB, 8 per layer). torchtitan repeats K and V to the 32
// query heads before the attention: 4x the bytes.
TEST(CommPlanTest, ContextParallelExchangesAsEachFrameworkDoes) {
  const model::Model m = *model::FindPreset("llama3-8b");
  CommPlanConfig cfg = Job(1, 1, 1, 1);
  cfg.job.parallel.cp = 8;
  cfg.job.micro_batch = 1;
  cfg.job.seq_len = 32768;
  cfg.job.recompute = model::Recompute::kFull;
  const double mib = 1024.0 * 1024.0;
  auto ring = BuildCommPlan(m, Dgx(1), cfg);
  ASSERT_TRUE(ring.ok()) << ring.status().message();
  const CommItem* fwd = FindKind(*ring, CommItemKind::kCpRingForward);
  const CommItem* bwd = FindKind(*ring, CommItemKind::kCpRingBackward);
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->collective, collective::Collective::kSendRecv);
  EXPECT_DOUBLE_EQ(fwd->message_bytes, 16 * mib);
  EXPECT_EQ(fwd->count, 32 * 7 * 2);
  EXPECT_DOUBLE_EQ(bwd->message_bytes, 32 * mib);
  EXPECT_EQ(bwd->count, 32 * 7);
  EXPECT_EQ(FindKind(*ring, CommItemKind::kCpGradRing), nullptr);

  cfg.cp_all_gather = true;
  auto gathered = BuildCommPlan(m, Dgx(1), cfg);
  ASSERT_TRUE(gathered.ok()) << gathered.status().message();
  fwd = FindKind(*gathered, CommItemKind::kCpRingForward);
  bwd = FindKind(*gathered, CommItemKind::kCpRingBackward);
  const CommItem* grads = FindKind(*gathered, CommItemKind::kCpGradRing);
  ASSERT_TRUE(fwd && bwd && grads);
  EXPECT_EQ(fwd->collective, collective::Collective::kAllGather);
  EXPECT_DOUBLE_EQ(fwd->message_bytes, 128 * mib);
  EXPECT_EQ(fwd->count, 32 * 2);
  EXPECT_DOUBLE_EQ(bwd->message_bytes, 128 * mib);
  EXPECT_EQ(bwd->count, 32);
  EXPECT_EQ(grads->collective, collective::Collective::kSendRecv);
  EXPECT_DOUBLE_EQ(grads->message_bytes, 32 * mib);
  EXPECT_EQ(grads->count, 32 * 8);

  cfg.cp_kv_repeated = true;
  auto repeated = BuildCommPlan(m, Dgx(1), cfg);
  ASSERT_TRUE(repeated.ok()) << repeated.status().message();
  EXPECT_DOUBLE_EQ(FindKind(*repeated, CommItemKind::kCpRingForward)->message_bytes, 512 * mib);
  EXPECT_DOUBLE_EQ(FindKind(*repeated, CommItemKind::kCpGradRing)->message_bytes, 128 * mib);
}

// FP8 training gathers in FP8 what the framework casts before the all-gather
// (CommPlanConfig::sp_gathers_fp8_*): 1 byte per element, half the BF16 item's message, as an
// item of its own. 4 layers per stage, 8 microbatches of 2 x 2,048 tokens, full recompute (the
// forward's 2 all-gathers per layer and 2 recomputed), the backward's 2 and 2 gathered again.
TEST(CommPlanTest, Fp8GathersAreTheirOwnItemAtOneBytePerElement) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.job.parallel.sequence_parallel = true;
  cfg.job.recompute = model::Recompute::kFull;
  cfg.sp_backward_regather = true;
  const double bf16_bytes = 2.0 * 2048 * 1024 * 2;
  const int64_t per_layer_mb = 4 * 8;
  // torchao's Float8: the forward's (and the recompute's) in FP8, the backward's in BF16.
  cfg.sp_gathers_fp8_forward = true;
  auto torchao = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(torchao.ok()) << torchao.status().message();
  const CommItem* fp8 = FindKind(*torchao, CommItemKind::kTpSpAllGatherFp8);
  const CommItem* bf16 = FindKind(*torchao, CommItemKind::kTpSpAllGather);
  ASSERT_TRUE(fp8 && bf16);
  EXPECT_EQ(fp8->count, per_layer_mb * 4);
  EXPECT_DOUBLE_EQ(fp8->message_bytes, bf16_bytes / 2);
  EXPECT_EQ(fp8->frequency, "16 per microbatch: the forward's (4 per layer)");
  EXPECT_EQ(bf16->count, per_layer_mb * (2 + 2));
  EXPECT_DOUBLE_EQ(bf16->message_bytes, bf16_bytes);
  EXPECT_EQ(bf16->frequency, "16 per microbatch in BF16");
  // A message half the size takes less time on the same group, and no less than half.
  EXPECT_LT(fp8->estimate.time_s, bf16->estimate.time_s);
  EXPECT_GE(fp8->estimate.time_s, bf16->estimate.time_s / 2);
  // Transformer Engine: every one in FP8, no BF16 all-gather left.
  cfg.sp_gathers_fp8_backward = true;
  auto te = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(te.ok());
  EXPECT_EQ(FindKind(*te, CommItemKind::kTpSpAllGather), nullptr);
  EXPECT_EQ(FindKind(*te, CommItemKind::kTpSpAllGatherFp8)->count, per_layer_mb * (4 + 2 + 2));
  // The reduce-scatters stay BF16 either way.
  for (const CommPlan* p : {&*torchao, &*te}) {
    const CommItem* rs = FindKind(*p, CommItemKind::kTpSpReduceScatter);
    ASSERT_NE(rs, nullptr);
    EXPECT_EQ(rs->count, per_layer_mb * 6);
    EXPECT_DOUBLE_EQ(rs->message_bytes, bf16_bytes);
  }
}

// Under TP overlap the TP items say they are partly hidden; the counts do not change.
TEST(CommPlanTest, TpOverlapMarksTheTpItemsPartlyHidden) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.tp_overlap = true;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const CommItem* tp = Find(*plan, "TP all-reduce");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->overlap, Overlap::kPartly);
  EXPECT_EQ(tp->count, 4 * 8 * 4);
}

TEST(CommPlanTest, FullRecomputeRepeatsForwardCollectives) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.job.recompute = model::Recompute::kFull;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "TP all-reduce")->count, 4 * 8 * 6);
}

// Data parallel with plain all-reduce: Megatron buckets of max(4e7, 1e6 dp) parameters.
TEST(CommPlanTest, DataParallelBuckets) {
  // tp=1 pp=1 dp=16 on 2 nodes: every GPU holds the whole model.
  const model::Model m = Gpt();
  auto cfg = Job(1, 1, 16, 64);
  auto plan = BuildCommPlan(m, Dgx(2), cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const CommItem* ar = Find(*plan, "DP all-reduce");
  ASSERT_NE(ar, nullptr);
  const double params = static_cast<double>(model::CountParameters(m).total);
  const int64_t buckets = static_cast<int64_t>(std::ceil(params / 4e7));
  EXPECT_EQ(ar->count, buckets);
  EXPECT_NEAR(ar->message_bytes, params / buckets * 2, 1e-6);
  EXPECT_EQ(ar->group_size, 16);
  EXPECT_EQ(ar->overlap, Overlap::kYes);
  // The distributed optimizer turns it into a reduce-scatter and an all-gather of the same buckets.
  cfg.job.parallel.zero_stage = 1;
  auto zero1 = BuildCommPlan(m, Dgx(2), cfg);
  ASSERT_TRUE(zero1.ok());
  EXPECT_EQ(Find(*zero1, "DP all-reduce"), nullptr);
  EXPECT_EQ(Find(*zero1, "DP reduce-scatter")->count, buckets);
  EXPECT_EQ(Find(*zero1, "DP all-gather")->count, buckets);
  // FP32 gradients double the reduce-scatter's bytes.
  cfg.job.fp32_gradients = true;
  auto fp32 = BuildCommPlan(m, Dgx(2), cfg);
  EXPECT_NEAR(Find(*fp32, "DP reduce-scatter")->message_bytes, params / buckets * 4, 1e-6);
}

// FSDP: per layer per microbatch, gather forward, gather backward, reduce-scatter gradients.
TEST(CommPlanTest, FsdpPerLayerPerMicrobatch) {
  auto cfg = Job(1, 1, 16, 64);  // 64 / (2 x 16) = 2 microbatches
  cfg.job.parallel.zero_stage = 3;
  auto plan = BuildCommPlan(Gpt(), Dgx(2), cfg);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "FSDP all-gather of weights (forward)")->count, 8 * 2);
  EXPECT_EQ(Find(*plan, "FSDP all-gather of weights (backward)")->count, 8 * 2);
  EXPECT_EQ(Find(*plan, "FSDP reduce-scatter")->count, 8 * 2);
}

// Under a pipeline as torchtitan runs FSDP (fsdp_once_per_step_with_pp): each of a rank's layers
// gathered once per step, never again for the backward, and reduce-scattered once, after the
// last backward; without a pipeline the flag changes nothing.
TEST(CommPlanTest, FsdpOncePerStepUnderAPipeline) {
  auto cfg = Job(1, 2, 8, 64);  // 64 / (2 x 8) = 4 microbatches; 8 layers over 2 ranks
  cfg.job.parallel.zero_stage = 3;
  cfg.job.recompute = model::Recompute::kFull;  // per microbatch it would gather twice
  auto per_mb = BuildCommPlan(Gpt(), Dgx(2), cfg);
  ASSERT_TRUE(per_mb.ok()) << per_mb.status().message();
  EXPECT_EQ(Find(*per_mb, "FSDP all-gather of weights (forward)")->count, 4 * 4 * 2);
  cfg.job.fsdp_once_per_step_with_pp = true;
  auto once = BuildCommPlan(Gpt(), Dgx(2), cfg);
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(Find(*once, "FSDP all-gather of weights (forward)")->count, 4);
  EXPECT_EQ(Find(*once, "FSDP all-gather of weights (backward)"), nullptr);
  const CommItem* rs = Find(*once, "FSDP reduce-scatter");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->count, 4);
  EXPECT_EQ(rs->overlap, Overlap::kNo);
  EXPECT_EQ(rs->estimate.time_s, Find(*per_mb, "FSDP reduce-scatter")->estimate.time_s);
  auto flat = Job(1, 1, 16, 64);
  flat.job.parallel.zero_stage = 3;
  flat.job.fsdp_once_per_step_with_pp = true;
  auto no_pipe = BuildCommPlan(Gpt(), Dgx(2), flat);
  ASSERT_TRUE(no_pipe.ok());
  EXPECT_EQ(Find(*no_pipe, "FSDP all-gather of weights (backward)")->count, 8 * 2);
}

// With overrides the TP all-reduce is the textbook ring: 2(n-1) alpha + 2(n-1)/n S / B.
TEST(CommPlanTest, TextbookOverridesGiveTheAlphaBetaTime) {
  auto cfg = Job(8, 2, 4, 64);
  cfg.overrides.bytes_per_s = 450e9;
  cfg.overrides.step_latency_s = 5e-6;
  auto plan = BuildCommPlan(Gpt(), Dgx(8), cfg);
  ASSERT_TRUE(plan.ok());
  const CommItem* tp = Find(*plan, "TP all-reduce");
  const double S = 2.0 * 2048 * 1024 * 2;
  EXPECT_NEAR(tp->estimate.time_s, 14 * 5e-6 + 2.0 * 7 / 8 * S / 450e9, 1e-12);
}

// Megatron carves EP out of DP: experts' gradients reduce over dp / ep replicas only.
TEST(CommPlanTest, ExpertParallelAllToAllAndExpertDataParallel) {
  const model::Model m = MoeGpt(8, 2);
  auto cfg = Job(1, 1, 16, 64);
  cfg.job.parallel.ep = 8;
  auto plan = BuildCommPlan(m, Dgx(2), cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const CommItem* a2a = Find(*plan, "EP all-to-all");
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->count, 8 * 2 * 4);  // 8 MoE layers x 2 microbatches x 4
  EXPECT_DOUBLE_EQ(a2a->message_bytes, 2.0 * 2048 * 2 /*top_k*/ * 1024 * 2);
  EXPECT_EQ(a2a->group_size, 8);
  EXPECT_EQ(Find(*plan, "DP all-reduce of the gradients of dense weights")->group_size, 16);
  EXPECT_EQ(Find(*plan, "EDP all-reduce of the gradients of expert weights")->group_size, 2);
}

// DeepEP's hierarchical dispatch: ep 16 over two 8-GPU nodes, 16 experts (one per GPU), top 2.
// A token's 2 experts are 2 distinct GPUs; they miss a given node with probability
// C(8, 2) / C(16, 2) = 28 / 120, so it reaches 2 (1 - 28/120) = 46/30 nodes on average. The
// scale-out stage (one GPU per node) sends 46/30 copies of each token, half of them off the node:
// 23/30 of a token crosses the network, against 2 x 8/16 = 1 under the flat all-to-all.
TEST(CommPlanTest, HierarchicalDispatchSendsATokenOncePerTargetNode) {
  const model::Model m = MoeGpt(16, 2);
  auto cfg = Job(1, 1, 16, 64);
  cfg.job.parallel.ep = 16;
  auto flat = BuildCommPlan(m, Dgx(2), cfg);
  cfg.hierarchical_ep_dispatch = true;
  auto deepep = BuildCommPlan(m, Dgx(2), cfg);
  ASSERT_TRUE(flat.ok() && deepep.ok());
  const CommItem* a = Find(*flat, "EP all-to-all");
  const CommItem* h = Find(*deepep, "EP dispatch and combine");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(h, nullptr);
  const double token_bytes = 1024.0 * 2;  // hidden x BF16
  const double tokens = 2.0 * 2048;       // micro-batch 2 x seq
  EXPECT_DOUBLE_EQ(a->message_bytes, tokens * 2 * token_bytes);
  // The slower stage is the scale-out one (400 Gb/s per GPU against NVLink's 450 GB/s).
  EXPECT_NEAR(h->message_bytes, tokens * token_bytes * 46.0 / 30.0, 1e-6 * h->message_bytes);
  EXPECT_EQ(h->count, a->count);
  EXPECT_EQ(h->group_size, 16);
  EXPECT_EQ(h->kind, CommItemKind::kEpAllToAll);
  EXPECT_EQ(h->overlap, Overlap::kNo);
  cfg.ep_overlap = true;  // the 1F1B A2A overlap: the item says partly; the planner times it
  auto overlapped = BuildCommPlan(m, Dgx(2), cfg);
  ASSERT_TRUE(overlapped.ok());
  EXPECT_EQ(Find(*overlapped, "EP dispatch and combine")->overlap, Overlap::kPartly);
  // Network bytes per token: 1 flat, 23/30 hierarchical.
  EXPECT_LT(h->estimate.time_s, a->estimate.time_s);
  EXPECT_GT(h->estimate.time_s, 0.5 * a->estimate.time_s);
}

TEST(CommPlanTest, TiedEmbeddingsAllReduceBetweenFirstAndLastStage) {
  model::Model m = Gpt();
  m.tied_embeddings = true;
  auto plan = BuildCommPlan(m, Dgx(8), Job(8, 2, 4, 64));
  ASSERT_TRUE(plan.ok());
  const CommItem* tied = Find(*plan, "tied embedding");
  ASSERT_NE(tied, nullptr);
  EXPECT_EQ(tied->count, 1);
  EXPECT_EQ(tied->group_size, 2);
  EXPECT_DOUBLE_EQ(tied->message_bytes, 32000.0 * 1024 / 8 * 2);
}

TEST(CommPlanTest, RejectsLayoutsThatDoNotFillTheCluster) {
  auto plan = BuildCommPlan(Gpt(), Dgx(8), Job(8, 2, 2, 64));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("use 32 GPUs, but the cluster has 64"), std::string::npos)
      << plan.status().message();
  auto cfg = Job(1, 1, 16, 64);
  cfg.job.parallel.ep = 3;
  EXPECT_FALSE(BuildCommPlan(MoeGpt(8, 2), Dgx(2), cfg).ok());
}

// ZeRO-3's calls timed one by one (EstimateFsdpCalls) run on the group of the plan's own ZeRO-3
// items: a call of one layer's parameters takes what the plan's per-layer gather and
// reduce-scatter take, and a smaller call less.
TEST(CommPlanTest, FsdpCallsTimedOnTheZero3Group) {
  auto cfg = Job(1, 1, 16, 64);
  cfg.job.parallel.zero_stage = 3;
  const cluster::Cluster c = Dgx(2);
  auto plan = BuildCommPlan(Gpt(), c, cfg);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  double gather = 0, reduce = 0, layer_params = 0;
  for (const CommItem& it : plan->items) {
    if (it.kind == CommItemKind::kFsdpGatherForward) {
      gather = it.estimate.time_s;
      layer_params = it.message_bytes / 2;
    }
    if (it.kind == CommItemKind::kFsdpReduceScatter) reduce = it.estimate.time_s;
  }
  ASSERT_GT(layer_params, 0);
  auto calls = EstimateFsdpCalls(c, cfg, {layer_params, layer_params / 8});
  ASSERT_TRUE(calls.ok()) << calls.status().message();
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_DOUBLE_EQ((*calls)[0].gather_s, gather);
  EXPECT_DOUBLE_EQ((*calls)[0].reduce_s, reduce);
  EXPECT_LT((*calls)[1].gather_s, gather);
  EXPECT_LT((*calls)[1].reduce_s, reduce);
}

}  // namespace
}  // namespace infralens::plan
