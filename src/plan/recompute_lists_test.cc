// The module lists a search tries beyond the request's, by hand from each model's shape and
// Megatron-Core's two kinds of module (output-discarding first, then checkpointed).
#include "plan/recompute_lists.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "model/presets.h"
#include "plan/planner.h"
#include "plan/testing.h"

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

// What the search's shortcut rests on (a heavier list where a lighter one fits is never looked
// at): along each chain the step never gets faster, since a heavier list only adds recompute, and
// the memory never grows, since each module added leaves its activations unstored.
TEST(RecomputeListsTest, AlongTheListsTheStepNeverShrinksAndTheMemoryNeverGrows) {
  struct Case {
    const char* model;
    int nodes;
    Layout layout;
  };
  Layout moe = LayoutOf(1, 4, 64, 1, 8, 1, 0, 1, schedule::ScheduleKind::k1F1B,
                        model::Recompute::kSelective);
  Layout dense = testing::Degrees(8, 2, 4, 1);
  dense.micro_batch = 2;
  Layout deepseek = moe;  // 61 layers: Megatron's general layout over 4 x 4 stages
  deepseek.parallel.vpp = 4;
  deepseek.parallel.layout = "Ett|(tttt|)*14tttL";
  deepseek.schedule = schedule::ScheduleKind::kInterleaved1F1B;
  for (const Case& c : {Case{"llama3-70b", 8, dense}, Case{"mixtral-8x7b", 32, moe},
                        Case{"deepseek-v3", 32, deepseek}}) {
    const PlanRequest req = testing::PresetRequest(c.model, c.nodes, 512, 4096);
    double step = 0, bytes = std::numeric_limits<double>::infinity();
    std::vector<model::RecomputeModules> lists = {req.recompute_modules};
    for (const auto& l : HeavierRecomputeModules(req.model, req.recompute_modules)) {
      lists.push_back(l);
    }
    ASSERT_GE(lists.size(), 2u) << c.model;
    for (const model::RecomputeModules& list : lists) {
      Layout l = c.layout;
      l.recompute_modules = list;
      auto r = Evaluate(req, l);
      ASSERT_TRUE(r.ok()) << c.model << " " << l.ToString() << ": " << r.status().message();
      EXPECT_GE(r->time.step_s, step) << c.model << " " << l.ToString();
      EXPECT_LE(r->memory.worst().total_bytes, bytes) << c.model << " " << l.ToString();
      step = r->time.step_s;
      bytes = r->memory.worst().total_bytes;
    }
  }
}

}  // namespace
}  // namespace infralens::plan
