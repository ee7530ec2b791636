#include "plan/fsdp_copy.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/presets.h"
#include "plan/efficiency.h"
#include "plan/gemm_time.h"
#include "plan/planner.h"
#include "plan/testing.h"

namespace infralens::plan {
namespace {

// Llama 3 8B's layer at tp 1, from its shape (h 4096, 32 heads of 128 with 8 KV heads, SwiGLU
// 14336): QKV 4096 x 6144, the output projection 4096 x 4096, FC1 (gate and up) 4096 x 28672,
// FC2 14336 x 4096.
constexpr double kLlama3Layer8B =
    4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;  // 218,103,808

// The weights on one rank: LinearWeights summed over a layer's GEMMs, the router's included.
double RankWeights(const std::vector<LinearGemm>& linears) {
  double w = 0;
  for (const LinearGemm& l : linears) w += LinearWeights(l);
  return w;
}

TEST(FsdpCopyTest, BytesByHand) {
  const model::Model m = *model::FindPreset("llama3-8b");
  const double linears = RankWeights(LayerLinears(m, false, 1, 1));
  EXPECT_DOUBLE_EQ(linears, kLlama3Layer8B);  // the planner's GEMMs hold the weights by hand
  // FSDP2 under FP32 reduction: forward 2 + 2 bytes per weight (copied out of the all-gather
  // buffer); backward the same again plus 2 read and 4 written into the reduce-scatter input.
  const FsdpCopyBytes fsdp2 = FsdpCopyBytesPerLayer(linears, true, true, 4);
  EXPECT_DOUBLE_EQ(fsdp2.forward, 4 * kLlama3Layer8B);
  EXPECT_DOUBLE_EQ(fsdp2.backward, (4 + 6) * kLlama3Layer8B);
  // DeepSpeed's ZeRO-3: the copy out only.
  const FsdpCopyBytes ds = FsdpCopyBytesPerLayer(linears, true, false, 2);
  EXPECT_DOUBLE_EQ(ds.forward, 4 * kLlama3Layer8B);
  EXPECT_DOUBLE_EQ(ds.backward, 4 * kLlama3Layer8B);
  // Megatron FSDP: none. TP 4 splits the copies with the weights.
  EXPECT_DOUBLE_EQ(FsdpCopyBytesPerLayer(linears, false, false, 4).backward, 0);
  EXPECT_DOUBLE_EQ(
      FsdpCopyBytesPerLayer(RankWeights(LayerLinears(m, false, 4, 1)), true, true, 4).backward,
      10 * kLlama3Layer8B / 4);
}

// Once per step under a pipeline (torchtitan): over 4 microbatches, the copy out (4 bytes per
// weight) once, the accumulation into the FP32 gradient every microbatch (2 read, 4 read, 4
// written) and the copy into the reduce-scatter input (4 read, 4 written) once.
TEST(FsdpCopyTest, OncePerStepBytesByHand) {
  const FsdpCopyBytes b = FsdpCopyBytesPerLayerOncePerStep(kLlama3Layer8B, true, true, 4, 4);
  EXPECT_DOUBLE_EQ(b.forward, 4 * kLlama3Layer8B / 4);
  EXPECT_DOUBLE_EQ(b.backward, 10 * kLlama3Layer8B + 8 * kLlama3Layer8B / 4);
  const FsdpCopyBytes bf16 = FsdpCopyBytesPerLayerOncePerStep(kLlama3Layer8B, true, true, 2, 1);
  EXPECT_DOUBLE_EQ(bf16.backward, 6 * kLlama3Layer8B + 4 * kLlama3Layer8B);
  EXPECT_DOUBLE_EQ(FsdpCopyBytesPerLayerOncePerStep(kLlama3Layer8B, false, false, 4, 4).backward,
                   0);
}

// On one node (FSDP's gathers hidden behind the layers), with one microbatch, the copies add
// exactly their bytes at the HBM rate to the step: 32 layers x 14 bytes per weight.
TEST(FsdpCopyTest, StepGrowsByTheCopiesAtHbmSpeed) {
  PlanRequest plain = testing::PresetRequest("llama3-8b", 1, 8, 4096);
  plain.fp32_gradients = true;
  PlanRequest fsdp2 = plain;
  fsdp2.fsdp_copy_out = fsdp2.fsdp_copy_in = true;
  Layout lay = testing::Degrees(1, 1, 8, 3);
  lay.recompute = model::Recompute::kNone;
  auto a = Evaluate(plain, lay), b = Evaluate(fsdp2, lay);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message();
  ASSERT_EQ(a->time.fsdp_comm_s, b->time.fsdp_comm_s);  // the gathers stay hidden either way
  const double hbm =
      plain.gpu.hbm_bytes_per_s * EfficiencyTable::Builtin().For(plain.gpu, Precision::kBf16).hbm;
  EXPECT_NEAR(b->time.step_s - a->time.step_s, 32 * 14 * kLlama3Layer8B / hbm,
              1e-9 * a->time.step_s);
  // Without sharding (ZeRO-1) there is nothing to copy.
  Layout zero1 = lay;
  zero1.parallel.zero_stage = 1;
  auto c = Evaluate(plain, zero1), d = Evaluate(fsdp2, zero1);
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_DOUBLE_EQ(c->time.step_s, d->time.step_s);
}

// A MoE layer under FSDP with ep = dp: the routed experts have no expert-data-parallel replica to
// be sharded over, so only the dense weights (attention, router) are gathered and copied; with
// ep = dp / 2 the experts are copied too.
TEST(FsdpCopyTest, ExpertsCopiedOnlyWhereSharded) {
  PlanRequest plain = testing::PresetRequest("mixtral-8x7b", 1, 8, 4096);
  plain.fp32_gradients = true;
  PlanRequest fsdp2 = plain;
  fsdp2.fsdp_copy_out = fsdp2.fsdp_copy_in = true;
  const model::Model& m = plain.model;
  auto bytes = [&](int ep) {
    auto linears = LayerLinears(m, true, 1, ep);
    if (ep == 8) {
      std::erase_if(linears, [](const LinearGemm& l) { return l.name.starts_with("expert_"); });
    }
    const FsdpCopyBytes b = FsdpCopyBytesPerLayer(RankWeights(linears), true, true, 4);
    return static_cast<double>(m.num_layers) * (b.forward + b.backward);
  };
  const double hbm =
      plain.gpu.hbm_bytes_per_s * EfficiencyTable::Builtin().For(plain.gpu, Precision::kBf16).hbm;
  for (int ep : {8, 4}) {
    Layout lay = testing::Degrees(1, 1, 8, 3);
    lay.parallel.ep = ep;
    lay.recompute = model::Recompute::kFull;
    auto a = Evaluate(plain, lay), b = Evaluate(fsdp2, lay);
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status().message() : a.status().message());
    ASSERT_EQ(a->time.fsdp_comm_s, b->time.fsdp_comm_s);  // one node: the gathers stay hidden
    EXPECT_NEAR(b->time.step_s - a->time.step_s, bytes(ep) / hbm, 1e-6 * a->time.step_s)
        << "ep " << ep;
  }
  EXPECT_LT(bytes(8), bytes(4) / 2);  // the experts are most of Mixtral's weights
}

}  // namespace
}  // namespace infralens::plan
