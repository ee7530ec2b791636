// The module lists a search tries beyond the request's, by hand from each model's shape and
// Megatron-Core's two kinds of module (output-discarding first, then checkpointed).
#include "plan/recompute_lists.h"

#include <gtest/gtest.h>

#include "model/presets.h"

namespace infralens::plan {
namespace {

model::RecomputeModules Of(std::initializer_list<model::RecomputeModule> modules) {
  model::RecomputeModules out{0};
  for (model::RecomputeModule m : modules) out.bits |= m;
  return out;
}

TEST(RecomputeListsTest, DenseModelAddsTheMlp) {
  // Llama 3 8B: no experts, no MLA, so no norm of its own (both are fused into the projections
  // after them) and the one heavier list is the MLP's. From Megatron-Core's default.
  const auto lists = HeavierRecomputeModules(*model::FindPreset("llama3-8b"), {});
  ASSERT_EQ(lists.size(), 1u);
  using enum model::RecomputeModule;
  EXPECT_EQ(lists[0], Of({kRecomputeCoreAttn, kRecomputeMlp}));
}

TEST(RecomputeListsTest, DeepSeekAddsEveryKindItHas) {
  // DeepSeek-V3: MLA, three dense layers before the MoE ones, one shared expert.
  const model::Model m = *model::FindPreset("deepseek-v3");
  ASSERT_TRUE(m.is_mla());
  ASSERT_EQ(m.num_shared_experts, 1);
  const auto lists = HeavierRecomputeModules(m, {});
  ASSERT_EQ(lists.size(), 3u);
  using enum model::RecomputeModule;
  const auto cheap =
      Of({kRecomputeCoreAttn, kRecomputeLayernorm, kRecomputeMoeAct, kRecomputeMlaUpProj});
  EXPECT_EQ(lists[0], cheap);
  EXPECT_EQ(lists[1].bits, cheap.bits | kRecomputeMlp | kRecomputeSharedExperts);
  EXPECT_EQ(lists[2].bits, cheap.bits | kRecomputeMlp | kRecomputeSharedExperts | kRecomputeMoe);
}

TEST(RecomputeListsTest, MixtralHasNoDenseMlpSoThatStepIsLeftOut) {
  // Mixtral 8x7B: every layer MoE, no shared expert, so mlp and shared_experts add nothing.
  const auto lists = HeavierRecomputeModules(*model::FindPreset("mixtral-8x7b"), {});
  ASSERT_EQ(lists.size(), 2u);
  using enum model::RecomputeModule;
  EXPECT_EQ(lists[0], Of({kRecomputeCoreAttn, kRecomputeLayernorm, kRecomputeMoeAct}));
  EXPECT_EQ(lists[1],
            Of({kRecomputeCoreAttn, kRecomputeLayernorm, kRecomputeMoeAct, kRecomputeMoe}));
}

TEST(RecomputeListsTest, StartsFromTheRequestsListAndStopsWhenNothingIsLeft) {
  using enum model::RecomputeModule;
  const model::Model llama = *model::FindPreset("llama3-8b");
  // NeMo's style of list without the attention core: only what it lacks is added.
  const model::Model dsv3 = *model::FindPreset("deepseek-v3");
  const auto from_recipe = HeavierRecomputeModules(dsv3, Of({kRecomputeMlaUpProj, kRecomputeMlp}));
  ASSERT_EQ(from_recipe.size(), 3u);
  EXPECT_EQ(from_recipe[0],
            Of({kRecomputeMlaUpProj, kRecomputeMlp, kRecomputeLayernorm, kRecomputeMoeAct}));
  EXPECT_EQ(from_recipe[1].bits, from_recipe[0].bits | kRecomputeSharedExperts);
  EXPECT_EQ(from_recipe[2].bits, from_recipe[1].bits | kRecomputeMoe);
  // Every module a dense model has: nothing heavier to try.
  EXPECT_TRUE(HeavierRecomputeModules(llama, Of({kRecomputeMlp})).empty());
}

}  // namespace
}  // namespace infralens::plan
