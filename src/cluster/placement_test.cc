#include "cluster/placement.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cluster/testing.h"

namespace infralens::cluster {
namespace {

Degrees D(int tp, int cp, int ep, int dp, int pp) {
  Degrees d;
  d[Axis::kTp] = tp;
  d[Axis::kCp] = cp;
  d[Axis::kEp] = ep;
  d[Axis::kDp] = dp;
  d[Axis::kPp] = pp;
  return d;
}

using testing::Preset;

std::vector<int64_t> Ranks(const Placement& p, Axis a, int64_t g) {
  std::vector<int64_t> r;
  p.GroupRanks(a, g, &r);
  return r;
}

// Megatron-LM's initialize_model_parallel docstring: 16 GPUs, tp=2, pp=4 (so dp=2) give
// DP groups [g0,g2],[g1,g3],[g4,g6],...; TP groups [g0,g1],[g2,g3],...; PP groups
// [g0,g4,g8,g12],[g1,g5,g9,g13],[g2,g6,g10,g14],[g3,g7,g11,g15].
TEST(PlacementTest, MegatronDocstringExample) {
  auto p = Placement::Make(D(2, 1, 1, 2, 4), kDefaultOrder, 16);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->NumGroups(Axis::kDp), 8);
  EXPECT_EQ(Ranks(*p, Axis::kDp, 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Ranks(*p, Axis::kDp, 1), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Ranks(*p, Axis::kDp, 2), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(Ranks(*p, Axis::kDp, 7), (std::vector<int64_t>{13, 15}));
  EXPECT_EQ(Ranks(*p, Axis::kTp, 1), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Ranks(*p, Axis::kTp, 7), (std::vector<int64_t>{14, 15}));
  EXPECT_EQ(p->NumGroups(Axis::kPp), 4);
  EXPECT_EQ(Ranks(*p, Axis::kPp, 0), (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(Ranks(*p, Axis::kPp, 3), (std::vector<int64_t>{3, 7, 11, 15}));
}

// tp=8, dp=4, pp=2: rank = tp + 8 dp + 32 pp, worked out by hand for rank 45 = 5 + 8*1 + 32*1.
TEST(PlacementTest, CoordinatesByHand) {
  auto p = Placement::Make(D(8, 1, 1, 4, 2), kDefaultOrder, 64);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Coord(45, Axis::kTp), 5);
  EXPECT_EQ(p->Coord(45, Axis::kDp), 1);
  EXPECT_EQ(p->Coord(45, Axis::kPp), 1);
  EXPECT_EQ(p->Coord(45, Axis::kCp), 0);
  EXPECT_EQ(p->stride(Axis::kTp), 1);
  EXPECT_EQ(p->stride(Axis::kDp), 8);
  EXPECT_EQ(p->stride(Axis::kPp), 32);
  EXPECT_EQ(Ranks(*p, Axis::kTp, p->GroupIndex(45, Axis::kTp)),
            (std::vector<int64_t>{40, 41, 42, 43, 44, 45, 46, 47}));
  EXPECT_EQ(Ranks(*p, Axis::kDp, p->GroupIndex(45, Axis::kDp)),
            (std::vector<int64_t>{37, 45, 53, 61}));
  EXPECT_EQ(Ranks(*p, Axis::kPp, p->GroupIndex(45, Axis::kPp)), (std::vector<int64_t>{13, 45}));
  // Every rank is member Coord(r, a) of its group, for every axis.
  for (int64_t r = 0; r < 64; ++r) {
    for (Axis a : kAllAxes) EXPECT_EQ(p->Member(a, p->GroupIndex(r, a), p->Coord(r, a)), r);
  }
}

// Another order moves the axes: tp-pp-dp gives rank = tp + 8 pp + 16 dp.
TEST(PlacementTest, OrderChangesStrides) {
  auto p = Placement::Make(D(8, 1, 1, 4, 2), "tp-pp-dp", 64);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->OrderString(), "tp-pp-dp-cp-ep");
  EXPECT_EQ(Ranks(*p, Axis::kPp, 0), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(Ranks(*p, Axis::kDp, 0), (std::vector<int64_t>{0, 16, 32, 48}));
  // With cp and ep: tp=2 cp=2 ep=2 dp=2 pp=1 on 16 GPUs, default order: rank = tp + 2cp + 4ep +
  // 8dp.
  auto q = Placement::Make(D(2, 2, 2, 2, 1), kDefaultOrder, 16);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(Ranks(*q, Axis::kCp, 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Ranks(*q, Axis::kEp, 3), (std::vector<int64_t>{3, 7}));   // group 3: tp=1, cp=1 -> 3, 7
  EXPECT_EQ(Ranks(*q, Axis::kDp, 5), (std::vector<int64_t>{5, 13}));  // 5 = 1 + 2*0 + 4*1
}

TEST(PlacementTest, ErrorsAreOneLineAndNameTheValues) {
  auto bad = Placement::Make(D(8, 1, 1, 3, 2), kDefaultOrder, 64);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "parallel degrees tp=8 dp=3 pp=2 multiply to 48, but the cluster has 64 GPUs");
  EXPECT_NE(Placement::Make(D(8, 1, 1, 4, 2), "tp-xx-dp", 64).status().message().find("'xx'"),
            std::string::npos);
  EXPECT_NE(Placement::Make(D(8, 1, 1, 4, 2), "tp-dp-tp-pp", 64).status().message().find("twice"),
            std::string::npos);
  EXPECT_NE(Placement::Make(D(8, 1, 1, 4, 2), "tp-dp", 64).status().message().find("leaves out pp"),
            std::string::npos);
  EXPECT_FALSE(Placement::Make(D(0, 1, 1, 4, 2), kDefaultOrder, 64).ok());
  // Huge degrees do not overflow: 65536^5 is refused by the product check.
  auto huge = Placement::Make(D(65536, 65536, 65536, 65536, 65536), kDefaultOrder, 64);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 65536"), std::string::npos);
}

// The acceptance case: Megatron's placement of tp=8 dp=4 pp=2 on 8 DGX H100 nodes puts
// each TP group in one node, each DP group on one rail, PP across nodes.
TEST(ClassifyTest, MegatronOnEightDgxH100) {
  Cluster c = Preset("dgx-h100", 8);
  auto p = Placement::Make(D(8, 1, 1, 4, 2), kDefaultOrder, 64);
  ASSERT_TRUE(p.ok());
  auto axes = ClassifyAxes(c, *p);
  ASSERT_EQ(axes.size(), 3u);
  EXPECT_EQ(axes[0].axis, Axis::kTp);
  EXPECT_EQ(axes[0].groups, 8);
  EXPECT_EQ(axes[0].groups_per_class[static_cast<int>(LinkClass::kScaleUp)], 8);
  EXPECT_EQ(axes[0].worst.nodes, 1);
  EXPECT_EQ(axes[1].axis, Axis::kDp);
  EXPECT_EQ(axes[1].groups_per_class[static_cast<int>(LinkClass::kRail)], 16);
  EXPECT_EQ(axes[1].worst.max_per_node, 1);
  EXPECT_TRUE(axes[1].worst.rail_aligned);
  EXPECT_EQ(axes[2].axis, Axis::kPp);
  EXPECT_EQ(axes[2].groups_per_class[static_cast<int>(LinkClass::kRail)], 32);
  EXPECT_EQ(axes[2].worst.nodes, 2);
  // Every DP group keeps one local GPU index (one rail) across 4 nodes.
  for (int64_t g = 0; g < p->NumGroups(Axis::kDp); ++g) {
    auto r = Ranks(*p, Axis::kDp, g);
    for (int64_t x : r) EXPECT_EQ(c.LocalOf(x), c.LocalOf(r[0]));
    EXPECT_EQ(c.NodeOf(r[3]) - c.NodeOf(r[0]), 3);
  }
}

TEST(ClassifyTest, LinkClassRules) {
  Cluster h = Preset("dgx-h100", 64);  // two SUs of 32 nodes
  auto cls = [&](const Cluster& c, std::vector<int64_t> r) { return ClassifyGroup(c, r).link; };
  EXPECT_EQ(cls(h, {0, 1, 2, 3}), LinkClass::kScaleUp);
  EXPECT_EQ(cls(h, {3, 11}), LinkClass::kRail);           // local 3 on nodes 0 and 1
  EXPECT_EQ(cls(h, {3, 12}), LinkClass::kSpine);          // local 3 -> local 4: another rail
  EXPECT_EQ(cls(h, {3, 8 * 32 + 3}), LinkClass::kSpine);  // node 0 -> node 32: another SU
  EXPECT_EQ(cls(h, {0, 1, 8, 9}), LinkClass::kRail);      // rails {0,1} on both nodes
  EXPECT_EQ(cls(h, {0, 1, 9, 10}), LinkClass::kSpine);    // rails {0,1} vs {1,2}
  EXPECT_EQ(cls(h, {0, 1, 8}), LinkClass::kSpine);        // {0,1} vs {0}
  EXPECT_EQ(cls(h, {5}), LinkClass::kNone);
  GroupLinks gl = ClassifyGroup(h, std::vector<int64_t>{0, 1, 8, 9, 16, 17});
  EXPECT_EQ(gl.nodes, 3);
  EXPECT_EQ(gl.max_per_node, 2);
  EXPECT_EQ(gl.min_rails_per_node, 2);
  EXPECT_EQ(gl.intra, LinkClass::kScaleUp);

  Cluster p = Preset("h100-pcie", 2);
  EXPECT_EQ(cls(p, {0, 1}), LinkClass::kNvLinkBridge);
  EXPECT_EQ(cls(p, {2, 3}), LinkClass::kNvLinkBridge);
  EXPECT_EQ(cls(p, {1, 2}), LinkClass::kPcie);  // different bridged pairs
  EXPECT_EQ(cls(p, {0, 1, 2, 3}), LinkClass::kPcie);
  EXPECT_EQ(cls(p, {0, 9}), LinkClass::kRail);  // locals 0 and 1 share NIC 0

  Cluster m = Preset("mi300x", 1);
  EXPECT_EQ(cls(m, {0, 7}), LinkClass::kScaleUp);
}

// 16,384 GPUs (2,048 DGX H100 nodes in 64 SUs), tp=8 pp=16 dp=128: rank = tp + 8 dp + 1024 pp.
// DP group 0 = ranks 0, 8, ..., 1016 on nodes 0..127 (4 SUs) -> spine; PP group 0 = nodes
// 0, 128, ..., 1920 -> spine; TP in one node.
TEST(ClassifyTest, SixteenThousandGpuJob) {
  Cluster c = Preset("dgx-h100", 2048);
  auto p = Placement::Make(D(8, 1, 1, 128, 16), kDefaultOrder, 16384);
  ASSERT_TRUE(p.ok());
  auto axes = ClassifyAxes(c, *p);
  ASSERT_EQ(axes.size(), 3u);
  EXPECT_EQ(axes[0].groups_per_class[static_cast<int>(LinkClass::kScaleUp)], 2048);
  EXPECT_EQ(axes[1].axis, Axis::kDp);
  EXPECT_EQ(axes[1].groups_per_class[static_cast<int>(LinkClass::kSpine)], 128);
  EXPECT_EQ(axes[1].worst.sus, 4);
  EXPECT_EQ(axes[2].groups_per_class[static_cast<int>(LinkClass::kSpine)], 1024);
  EXPECT_EQ(axes[2].worst.sus, 16);
}

// Megatron carves expert-parallel groups out of the data-parallel ranks. With tp=2 and Megatron's
// dp=4, ep=2 on 8 GPUs the placement's axes are tp=2, ep=2, dp=2 (rank = tp + 2 (ep + 2 edp)):
// dense data-parallel group of rank 0 = same tp coordinate = {0, 2, 4, 6}; Megatron's expert
// generator (order tp-ep-dp-pp) gives the EP group {0, 2} and the expert-data-parallel {0, 4}.
TEST(MegatronGroupsTest, ExpertParallelIsCarvedOutOfDataParallel) {
  Degrees d;
  d[Axis::kTp] = 2;
  d[Axis::kEp] = 2;
  d[Axis::kDp] = 2;
  auto p = Placement::Make(d, kDefaultOrder, 8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(DataParallelDegree(*p), 4);
  EXPECT_EQ(MegatronDegreesString(*p), "tp=2 ep=2 dp=4");
  auto kinds = MegatronGroups(*p);
  std::vector<std::string> names;
  for (const auto& k : kinds) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tp", "ep", "dp", "edp"}));
  std::vector<int64_t> ranks;
  auto dp = FindGroupKind(*p, "dp");
  ASSERT_TRUE(dp.ok());
  p->GroupRanksOver(dp->axes, 0, &ranks);
  EXPECT_EQ(ranks, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(p->NumSetGroups(dp->axes), 2);
  p->SetGroupRanks(dp->axes, 1, &ranks);
  EXPECT_EQ(ranks, (std::vector<int64_t>{1, 3, 5, 7}));
  auto ep = FindGroupKind(*p, "ep");
  p->GroupRanksOver(ep->axes, 0, &ranks);
  EXPECT_EQ(ranks, (std::vector<int64_t>{0, 2}));
  auto edp = FindGroupKind(*p, "edp");
  p->GroupRanksOver(edp->axes, 0, &ranks);
  EXPECT_EQ(ranks, (std::vector<int64_t>{0, 4}));
  EXPECT_FALSE(FindGroupKind(*p, "pp").ok());
  EXPECT_FALSE(FindGroupKind(*p, "xx").ok());
}

// The cached classification equals the group-by-group one on a grid of clusters of one size that
// differ in each field the answer depends on (GPUs per node, NICs, fabric, SU size), of degrees
// and of orders. The clusters are visited in turn for each placement, so a cache key that left a
// field out would hand one cluster another's answer.
TEST(PlacementTest, CachedAxisClassificationEqualsGroupByGroup) {
  std::vector<Cluster> clusters;
  clusters.push_back(Preset("dgx-h100", 8));  // 64 GPUs, NVSwitch, 8 rails
  Cluster few_nics = Preset("dgx-h100", 8);
  few_nics.node.nics_per_node = 2;
  clusters.push_back(few_nics);
  Cluster small_su = Preset("dgx-h100", 8);
  small_su.nodes_per_su = 2;
  clusters.push_back(small_su);
  Cluster bridge = Preset("dgx-h100", 8);
  bridge.node.fabric = ScaleUpFabric::kNvLinkBridge;
  clusters.push_back(bridge);
  Cluster four_per_node = Preset("dgx-h100", 16);
  four_per_node.node.gpus_per_node = 4;
  four_per_node.node.nics_per_node = 4;
  clusters.push_back(four_per_node);
  const std::vector<Degrees> degrees = {D(8, 1, 1, 4, 2),  D(2, 2, 2, 2, 4),  D(4, 1, 4, 2, 2),
                                        D(1, 1, 1, 64, 1), D(2, 1, 1, 2, 16), D(1, 4, 2, 1, 8)};
  const std::vector<std::string> orders = {std::string(kDefaultOrder), "pp-dp-ep-cp-tp",
                                           "tp-pp-dp-cp-ep", "dp-tp-pp-ep-cp"};
  int compared = 0;
  for (int round = 0; round < 2; ++round) {  // the second round answers from the cache
    for (const Degrees& d : degrees) {
      for (const std::string& order : orders) {
        auto p = Placement::Make(d, order, 64);
        ASSERT_TRUE(p.ok()) << p.status().message();
        for (const Cluster& c : clusters) {
          for (const AxisSet& set : MegatronGroups(*p)) {
            const AxisLinks want = ClassifyAxisSetGroupByGroup(c, *p, set);
            const AxisLinks got = ClassifyAxisSet(c, *p, set);
            SCOPED_TRACE(fmt::format("{} {} {} fabric {} nics {} su {}", d.ToString(), order,
                                     set.name, FabricName(c.node.fabric), c.node.nics_per_node,
                                     c.nodes_per_su));
            EXPECT_EQ(got.name, set.name);
            EXPECT_EQ(got.axes, set.axes);
            EXPECT_EQ(got.axis, set.axes.front());
            EXPECT_EQ(got.degree, want.degree);
            EXPECT_EQ(got.groups, want.groups);
            EXPECT_EQ(got.groups_per_class, want.groups_per_class);
            EXPECT_EQ(got.worst_group, want.worst_group);
            EXPECT_EQ(got.worst_base_rank, want.worst_base_rank);
            EXPECT_EQ(got.worst.link, want.worst.link);
            EXPECT_EQ(got.worst.intra, want.worst.intra);
            EXPECT_EQ(got.worst.nodes, want.worst.nodes);
            EXPECT_EQ(got.worst.max_per_node, want.worst.max_per_node);
            EXPECT_EQ(got.worst.min_per_node, want.worst.min_per_node);
            EXPECT_EQ(got.worst.min_rails_per_node, want.worst.min_rails_per_node);
            EXPECT_EQ(got.worst.sus, want.worst.sus);
            EXPECT_EQ(got.worst.rail_aligned, want.worst.rail_aligned);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 400);
}

// The reference itself, by hand: tp=2 dp=4 pp=8 on 8 DGX H100 nodes (8 GPUs each) with SUs of 2
// nodes: rank = tp + 2 dp + 8 pp. A dp group is {b, b+2, b+4, b+6} inside one node (scale-up,
// 64 / 4 = 16 groups); a pp group strides 8 ranks, one member per node on one local index (one
// rail), so it spans 8 nodes in 4 SUs: spine, all 64 / 8 = 8 groups.
TEST(PlacementTest, GroupByGroupByHand) {
  Cluster c = Preset("dgx-h100", 8);
  c.nodes_per_su = 2;
  auto p = Placement::Make(D(2, 1, 1, 4, 8), kDefaultOrder, 64);
  ASSERT_TRUE(p.ok());
  const AxisLinks dp = ClassifyAxisSetGroupByGroup(c, *p, {"dp", {Axis::kDp}});
  EXPECT_EQ(dp.groups, 16);
  EXPECT_EQ(dp.groups_per_class[static_cast<int>(LinkClass::kScaleUp)], 16);
  const AxisLinks pp = ClassifyAxisSet(c, *p, {"pp", {Axis::kPp}});
  EXPECT_EQ(pp.groups, 8);
  EXPECT_EQ(pp.groups_per_class[static_cast<int>(LinkClass::kSpine)], 8);
  EXPECT_EQ(pp.worst.sus, 4);
  EXPECT_EQ(pp.worst.nodes, 8);
  EXPECT_TRUE(pp.worst.rail_aligned);
}

}  // namespace
}  // namespace infralens::cluster
