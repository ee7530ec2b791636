// Megatron-Core's layout strings: expansion, the rules Megatron asserts, and the balanced split
// the search and validate fall back to, each checked by hand.
#include "plan/layer_layout.h"

#include <gtest/gtest.h>

#include <numeric>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/planner.h"
#include "plan/testing.h"

namespace infralens::plan {
namespace {

// Ranks of 7, 8, 8 and 7 layers over 2 chunks each: chunk 0 of the 7-layer ranks holds 3, chunk
// 1 holds 4 (lighter first); the 8-layer ranks 4 and 4; the string parses back to that split.
TEST(LayerLayoutTest, LayoutOfRanksSpreadsEachRankOverItsChunks) {
  const std::string s = LayerLayoutOfRanks({7, 8, 8, 7}, 2);
  EXPECT_EQ(s, "Ettt|tttt|tttt|ttt|tttt|tttt|tttt|ttttL");
  auto counts = ParseLayerLayout(s, 30, 8);
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(*counts, (std::vector<int64_t>{3, 4, 4, 3, 4, 4, 4, 4}));
  EXPECT_EQ(LayerLayoutOfRanks({2, 2}, 1), "Ett|ttL");
}

TEST(LayerLayoutTest, ExpandsRepetitionAndGroups) {
  // arguments.py's own example with its MTP layers replaced by transformer layers:
  // "E|(t|)*3,t|t||L" = E | t | t | t | t | t | (empty) | L: 8 stages, 5 layers.
  auto c = ParseLayerLayout("E|(t|)*3,t|t||L", 5, 8);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c, (std::vector<int64_t>{0, 1, 1, 1, 1, 1, 0, 0}));
  // "t*3" repeats a symbol; groups nest: "Ettt|t|ttt|tL", 8 layers over 4 stages.
  auto d = ParseLayerLayout("Et*3|t|((t*3|t)*1)L", 8, 4);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(*d, (std::vector<int64_t>{3, 1, 3, 1}));
  EXPECT_EQ(*LayerLayoutStages("E|(t|)*3,t|t||L"), 8);
}

TEST(LayerLayoutTest, BalancedSplitOfDeepSeekV3) {
  // 61 layers + E + L = 63 units over 16 stages: 15 stages of 4 units and the first of 3 (E and
  // 2 layers); the last holds 3 layers and L. 2 + 14 x 4 + 3 = 61.
  const std::string s = BalancedLayerLayout(61, 16);
  EXPECT_EQ(s, "Ett|(tttt|)*14tttL");
  auto c = ParseLayerLayout(s, 61, 16);
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::vector<int64_t> want(16, 4);
  want.front() = 2;
  want.back() = 3;
  EXPECT_EQ(*c, want);
  // Every split it writes parses back to the layers and stages it was made for.
  for (int64_t layers : {4, 7, 61, 95, 126}) {
    for (int64_t stages : {1, 2, 3, 8, 16, 32}) {
      if (layers + 2 < stages) continue;
      auto r = ParseLayerLayout(BalancedLayerLayout(layers, stages), layers, stages);
      ASSERT_TRUE(r.ok()) << layers << "/" << stages << ": " << r.status().message();
      EXPECT_EQ(std::accumulate(r->begin(), r->end(), int64_t{0}), layers);
      const auto [lo, hi] = std::minmax_element(r->begin(), r->end());
      EXPECT_LE(*hi - *lo, 2) << layers << "/" << stages;  // units differ by 1; E, L add 1
    }
  }
}

TEST(LayerLayoutTest, RefusesWhatMegatronRefuses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Et|tL", "places 2 layers (t); the model has 3"},
      {"Et|t|tL", "has 3 stages; pp x vpp = 2"},
      {"t|EtL", "the embedding (E) must be in the first stage"},
      {"EtL|t", "the loss (L) must be in the last stage"},
      {"Et|tm|L", "MTP layers (m) are not modelled"},
      {"Et|t", "0 L"},
      {"Ex|tL", "'x' at character 2"},
      // A control character is shown escaped, so that the message stays one line (the fuzzer's
      // find: "Et\n...").
      {std::string("Et\n|tL"), "at character 3"},
      {"E(t|tL", "unbalanced '('"},
      {"Et*|tL", "without a count"},
      {"E(t*9999999)*9999999|L", "expands past"},
      // Empty groups repeated a million times each add nothing and cost nothing: still 2 stages
      // of the wrong layer count, refused at once.
      {"E()*9999999()*9999999()*9999999|L", "places 0 layers (t); the model has 3"},
  };
  for (const auto& [layout, want] : cases) {
    auto r = ParseLayerLayout(layout, 3, 2);
    ASSERT_FALSE(r.ok()) << layout;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << layout << " -> " << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  }
}

// The general form and Megatron's first/last form describe the same split the same way: Llama
// 3.1 405B over pp 16 with 7 layers on the end ranks (7 + 14 x 8 + 7 = 126) predicts the same
// step, exactly.
TEST(LayerLayoutTest, SameSplitSameStepAsTheFirstLastForm) {
  const PlanRequest req = testing::PresetRequest("llama3-405b", 32, 256, 8192);
  Layout a = testing::Degrees(8, 16, 2, 1);
  a.parallel.vpp = 1;
  a.recompute = model::Recompute::kSelective;
  Layout b = a;
  a.parallel.first_stage_layers = 7;
  a.parallel.last_stage_layers = 7;
  b.parallel.layout = "Et*7|(t*8|)*14t*7L";
  auto ra = Evaluate(req, a), rb = Evaluate(req, b);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  EXPECT_DOUBLE_EQ(ra->time.step_s, rb->time.step_s);
  EXPECT_DOUBLE_EQ(ra->memory.worst().total_bytes, rb->memory.worst().total_bytes);
}

}  // namespace
}  // namespace infralens::plan
