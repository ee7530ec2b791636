#include "collective/collective.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "cluster/testing.h"

namespace infralens::collective {
namespace {

using cluster::Cluster;
using cluster::LinkClass;

constexpr double kGiB = 1073741824.0;

using cluster::testing::Preset;

std::vector<int64_t> Iota(int64_t n, int64_t first = 0, int64_t step = 1) {
  std::vector<int64_t> r(n);
  for (int64_t i = 0; i < n; ++i) r[i] = first + i * step;
  return r;
}

Request Req(Collective c, double bytes, Algorithm a = Algorithm::kAuto) {
  Request r;
  r.collective = c;
  r.size_bytes = static_cast<int64_t>(bytes);
  r.algorithm = a;
  return r;
}

Estimate Must(const Cluster& c, const std::vector<int64_t>& ranks, const Request& r) {
  auto e = EstimateCollective(c, ranks, r);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? *e : Estimate{};
}

// The textbook case: a 1 GiB ring all-reduce over 8 GPUs at 450 GB/s and 5 us per step is
// 2(n-1) * 5 us = 70 us of latency plus 2(n-1)/n * 1 GiB / 450e9 B/s = 4175.66 us.
TEST(AlphaBetaTest, TextbookRingAllReduce) {
  Request r = Req(Collective::kAllReduce, kGiB, Algorithm::kRing);
  r.overrides.bytes_per_s = 450e9;
  r.overrides.step_latency_s = 5e-6;
  Estimate e = Must(Preset("dgx-h100", 1), Iota(8), r);
  EXPECT_EQ(e.algorithm, Algorithm::kRing);
  EXPECT_EQ(e.protocol, Protocol::kSimple);
  EXPECT_NEAR(e.latency_s * 1e6, 70.0, 1e-9);
  EXPECT_NEAR(e.bandwidth_s * 1e6, 4175.66, 0.01);
  EXPECT_DOUBLE_EQ(e.bandwidth_s, 2.0 * 7 / 8 * kGiB / 450e9);
  EXPECT_NEAR(e.time_s * 1e6, 4245.66, 0.01);
  EXPECT_EQ(e.bottleneck, LinkClass::kScaleUp);
  ASSERT_EQ(e.links.size(), 1u);
  EXPECT_DOUBLE_EQ(e.links[0].bytes_per_gpu, 2.0 * 7 / 8 * kGiB);
  EXPECT_EQ(e.links[0].steps, 14);
}

// nccl-tests' factors (doc/PERFORMANCE.md): 2(n-1)/n, (n-1)/n, (n-1)/n, (n-1)/n, 1, 1.
TEST(BusBwTest, Factors) {
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(Collective::kSendRecv, 2), 1.0);
}

// With zero latency, every collective's busbw on one node equals the link bandwidth: that is
// what busbw is defined to measure ("the speed of the hardware bottleneck").
TEST(BusBwTest, EqualsLinkBandwidthAtZeroLatency) {
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kAllToAll, Collective::kBroadcast, Collective::kSendRecv}) {
    Request r = Req(c, 64 * 1048576.0);
    r.overrides.bytes_per_s = 100e9;
    r.overrides.step_latency_s = 0;
    Estimate e = Must(Preset("dgx-h100", 1), Iota(8), r);
    EXPECT_NEAR(e.busbw_bytes_per_s, 100e9, 1e-3) << CollectiveName(c);
    EXPECT_NEAR(e.algbw_bytes_per_s * e.busbw_factor, e.busbw_bytes_per_s, 1e-3);
  }
}

// Default model, 8x H100 in one node, 1 GiB: NCCL's Simple protocol on a ring, latency
// 8.4 us base + 14 steps x 3.4 us (tuning.cc), bandwidth 370 GB/s achieved.
TEST(DefaultModelTest, DgxH100AllReduceLargeMessage) {
  Request r = Req(Collective::kAllReduce, kGiB);
  r.algorithm = Algorithm::kRing;
  Estimate e = Must(Preset("dgx-h100", 1), Iota(8), r);
  EXPECT_EQ(e.algorithm, Algorithm::kRing);
  EXPECT_EQ(e.protocol, Protocol::kSimple);
  const double expect = 8.4e-6 + 14 * 3.4e-6 + 1.75 * kGiB / 370e9;
  EXPECT_NEAR(e.time_s, expect, 1e-9);
  EXPECT_NEAR(e.busbw_bytes_per_s, 1.75 * kGiB / expect,
              1);  // ~366 GB/s: 370 less the latency share
}

// NVLink SHARP on 8x H100: the switch reduces and multicasts, so each GPU moves S, not 1.75 S, at
// NVLS's 268.6 GB/s, after NCCL's 25 us NVLS latency (tuning.cc). That reproduces the measurement
// the efficiency comes from (nccl-tests all_reduce_perf, 2 GiB: 8019.8 us, busbw 468.60 GB/s,
// src/cluster/cluster_presets.cc), and auto takes it over the ring's 1.75 x 2 GiB / 370 GB/s.
TEST(DefaultModelTest, DgxH100AllReduceRunsOnNvlsAtLargeSizes) {
  Estimate e = Must(Preset("dgx-h100", 1), Iota(8), Req(Collective::kAllReduce, 2 * kGiB));
  EXPECT_EQ(e.algorithm, Algorithm::kNvls);
  EXPECT_EQ(e.protocol, Protocol::kSimple);
  EXPECT_NEAR(e.time_s, 8019.8e-6, 1e-9);
  EXPECT_NEAR(e.busbw_bytes_per_s, 468.60e9, 0.01e9);
  ASSERT_EQ(e.links.size(), 1u);
  EXPECT_EQ(e.links[0].link, LinkClass::kScaleUp);
  EXPECT_DOUBLE_EQ(e.links[0].bytes_per_gpu, 2 * kGiB);  // S, not 2 (n - 1) / n S
  // Small messages stay on the ring: NVLS's 25 us is more than a ring's LL latency.
  EXPECT_NE(Must(Preset("dgx-h100", 1), Iota(8), Req(Collective::kAllReduce, 8192)).algorithm,
            Algorithm::kNvls);
}

// NVLS needs one NVSwitch domain of Hopper or later, and is an all-reduce: asked for elsewhere
// it is refused naming why; auto never lists it there.
TEST(DefaultModelTest, NvlsOnlyWhereTheSwitchReduces) {
  Request r = Req(Collective::kAllReduce, kGiB);
  r.algorithm = Algorithm::kNvls;
  auto a100 = EstimateCollective(Preset("dgx-a100", 1), Iota(8), r);
  ASSERT_FALSE(a100.ok());
  EXPECT_NE(a100.status().message().find("without NVLS"), std::string::npos)
      << a100.status().message();
  auto two_nodes = EstimateCollective(Preset("dgx-h100", 2), Iota(16), r);
  ASSERT_FALSE(two_nodes.ok());
  EXPECT_NE(two_nodes.status().message().find("16 rank(s) on 2 node(s)"), std::string::npos)
      << two_nodes.status().message();
  r.collective = Collective::kAllGather;
  EXPECT_FALSE(EstimateCollective(Preset("dgx-h100", 1), Iota(8), r).ok());
  for (const auto& [preset, gpus] : {std::pair{"dgx-a100", 8}, std::pair{"dgx-h100", 16}}) {
    auto all = EstimateAlgorithms(Preset(preset, 2), Iota(gpus), Req(Collective::kAllReduce, kGiB));
    ASSERT_TRUE(all.ok());
    for (const Estimate& e : *all) EXPECT_NE(e.algorithm, Algorithm::kNvls) << preset;
  }
}

// 8 KiB: the LL protocol wins (3.6 + 14 x 0.47 us latency, a quarter of the bandwidth).
TEST(DefaultModelTest, SmallMessagesPickLowLatencyProtocol) {
  Estimate e = Must(Preset("dgx-h100", 1), Iota(8), Req(Collective::kAllReduce, 8192));
  EXPECT_EQ(e.protocol, Protocol::kLL);
  EXPECT_NEAR(e.time_s, 3.6e-6 + 14 * 0.47e-6 + 1.75 * 8192 / (370e9 / 4), 1e-12);
  // The message-size curve: busbw grows with size toward the ring's 370 GB/s, then NVLS's
  // 1.75 x 268.6 = 470 GB/s.
  double last = 0;
  for (double bytes = 1024; bytes <= 4 * kGiB; bytes *= 8) {
    double bw =
        Must(Preset("dgx-h100", 1), Iota(8), Req(Collective::kAllReduce, bytes)).busbw_bytes_per_s;
    EXPECT_GT(bw, last);
    EXPECT_LT(bw, 1.75 * 268.6e9);
    last = bw;
  }
}

// A DP group of 2 on one rail: each GPU's share of the NICs is 8 x 47 GB/s / 8 = 47 GB/s.
TEST(NetworkTest, RailPairAtZeroLatency) {
  Request r = Req(Collective::kAllReduce, kGiB, Algorithm::kRing);
  r.overrides.step_latency_s = 0;
  Estimate e = Must(Preset("dgx-h100", 2), {3, 11}, r);
  EXPECT_NEAR(e.time_s, kGiB / 47e9, 1e-12);  // 2(2-1)/2 S / B
  EXPECT_EQ(e.bottleneck, LinkClass::kRail);
  EXPECT_NEAR(e.busbw_bytes_per_s, 47e9, 1);
}

// 16 GPUs on 2 nodes, zero latency. Flat ring: one NIC carries v = 2*15/16 S -> v / 47 GB/s.
// Multi-rail: 8 rings, v/8 per NIC -> v / (8 * 47 GB/s); NVLink carries 7/8 v at 370 GB/s.
// Hierarchical: 2 x 7/8 S / 370 GB/s + 2(2-1)/2 (S/8) / 47 GB/s. Auto picks multi-rail.
TEST(NetworkTest, RingMultiRailHierarchicalOnTwoNodes) {
  Cluster c = Preset("dgx-h100", 2);
  const double s = kGiB, v = 2.0 * 15 / 16 * s;
  auto run = [&](Algorithm a) {
    Request r = Req(Collective::kAllReduce, s, a);
    r.overrides.step_latency_s = 0;
    return Must(c, Iota(16), r);
  };
  EXPECT_NEAR(run(Algorithm::kRing).time_s, v / 47e9, 1e-12);
  Estimate mr = run(Algorithm::kMultiRailRing);
  EXPECT_NEAR(mr.time_s, v / (8 * 47e9), 1e-12);
  EXPECT_EQ(mr.bottleneck, LinkClass::kRail);
  ASSERT_EQ(mr.links.size(), 2u);
  EXPECT_EQ(mr.links[0].link, LinkClass::kScaleUp);
  EXPECT_NEAR(mr.links[0].bytes_per_gpu, v * 7 / 8, 1);
  EXPECT_NEAR(mr.links[1].bytes_per_gpu, v / 8, 1);
  EXPECT_NEAR(run(Algorithm::kHierarchical).time_s, 2 * 7.0 / 8 * s / 370e9 + (s / 8) / 47e9,
              1e-12);
  EXPECT_EQ(run(Algorithm::kAuto).algorithm, Algorithm::kMultiRailRing);
}

// Overridden alpha and beta on 2 nodes x 8: tree = 2 (7 + log2 2) steps, 2S/B on NVLink;
// hierarchical all_reduce over 4 nodes = 2 x 7 + 2 x 3 steps, 2 x 7/8 S/B + 2 x 3/4 (S/8) / B.
TEST(AlphaBetaTest, TreeAndHierarchicalClosedForms) {
  const double a = 2e-6, b = 100e9, s = 256 * 1048576.0;
  Request r = Req(Collective::kAllReduce, s, Algorithm::kTree);
  r.overrides = {b, a};
  EXPECT_NEAR(Must(Preset("dgx-h100", 2), Iota(16), r).time_s, 16 * a + 2 * s / b, 1e-12);
  r.algorithm = Algorithm::kHierarchical;
  EXPECT_NEAR(Must(Preset("dgx-h100", 4), Iota(32), r).time_s,
              20 * a + 2 * 7.0 / 8 * s / b + 2 * 0.75 * s / 8 / b, 1e-12);
  // all_gather: inter-node then intra-node; (4-1) + (8-1) steps.
  r.collective = Collective::kAllGather;
  EXPECT_NEAR(Must(Preset("dgx-h100", 4), Iota(32), r).time_s,
              10 * a + 0.75 * s / 8 / b + 7.0 / 8 * s / b, 1e-12);
}

// all_to_all over 2 nodes x 8: each GPU sends 7/16 S over NVLink and 8/16 S over the network.
TEST(NetworkTest, AllToAllSplitsBytesByDestination) {
  Request r = Req(Collective::kAllToAll, kGiB);
  r.overrides.step_latency_s = 0;
  Estimate e = Must(Preset("dgx-h100", 2), Iota(16), r);
  EXPECT_EQ(e.algorithm, Algorithm::kPairwise);
  EXPECT_NEAR(e.time_s, 0.5 * kGiB / 47e9, 1e-12);
  EXPECT_NEAR(e.links[0].bytes_per_gpu, 7.0 / 16 * kGiB, 1);
  EXPECT_NEAR(e.links[1].bytes_per_gpu, 8.0 / 16 * kGiB, 1);
}

// Pipeline send_recv between ranks 13 and 45 (nodes 1 and 5, local 5): one rail hop.
TEST(NetworkTest, SendRecvAcrossNodes) {
  Request r = Req(Collective::kSendRecv, 64 * 1048576.0);
  r.overrides.step_latency_s = 1e-6;
  Estimate e = Must(Preset("dgx-h100", 8), {13, 45}, r);
  EXPECT_EQ(e.algorithm, Algorithm::kDirect);
  EXPECT_EQ(e.bottleneck, LinkClass::kRail);
  EXPECT_NEAR(e.time_s, 1e-6 + 64 * 1048576.0 / 47e9, 1e-12);
  EXPECT_DOUBLE_EQ(e.busbw_factor, 1.0);
}

// MI300X full mesh: a pair uses one of the 7 links (448/7 = 64 GB/s x 0.75); all 8 use all 7.
TEST(FullMeshTest, PairsUseOneLink) {
  Request r = Req(Collective::kAllReduce, kGiB, Algorithm::kRing);
  r.overrides.step_latency_s = 0;
  Cluster c = Preset("mi300x", 1);
  EXPECT_NEAR(Must(c, {0, 1}, r).time_s, kGiB / (64e9 * 0.75), 1e-12);
  EXPECT_NEAR(Must(c, Iota(8), r).time_s, 1.75 * kGiB / (448e9 * 0.75), 1e-12);
}

// H100 PCIe server: a bridged pair runs at NVLink speed, four GPUs fall back to PCIe.
TEST(BridgeTest, PairsAndPcie) {
  Request r = Req(Collective::kAllGather, kGiB, Algorithm::kRing);
  r.overrides.step_latency_s = 0;
  Cluster c = Preset("h100-pcie", 1);
  Estimate pair = Must(c, {0, 1}, r);
  EXPECT_EQ(pair.bottleneck, LinkClass::kNvLinkBridge);
  EXPECT_NEAR(pair.time_s, 0.5 * kGiB / (300e9 * 370.0 / 450), 1e-12);
  Estimate four = Must(c, {0, 1, 2, 3}, r);
  EXPECT_EQ(four.bottleneck, LinkClass::kPcie);
  EXPECT_NEAR(four.time_s, 0.75 * kGiB / (64e9 * 0.75), 1e-12);
}

TEST(ErrorsTest, OneLineInvalidArgument) {
  Cluster c = Preset("dgx-h100", 2);
  auto check = [&](const std::vector<int64_t>& ranks, const Request& r, const char* needle) {
    auto e = EstimateCollective(c, ranks, r);
    ASSERT_FALSE(e.ok()) << needle;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(needle), std::string::npos) << e.status().message();
    EXPECT_EQ(e.status().message().find('\n'), std::string::npos);
  };
  check(Iota(8), Req(Collective::kAllGather, 1024, Algorithm::kTree),
        "does not apply to all_gather");
  check(Iota(8), Req(Collective::kAllReduce, 1024, Algorithm::kHierarchical),
        "needs a group on 2 or more nodes");
  check(Iota(12), Req(Collective::kAllReduce, 1024, Algorithm::kHierarchical), "4..8 per node");
  check({0}, Req(Collective::kAllReduce, 1024), "at least 2");
  check(Iota(8), Req(Collective::kAllReduce, 0), "more than 0");
  check({0, 99}, Req(Collective::kAllReduce, 1024), "0..15");
  check(Iota(8), Req(Collective::kAllToAll, 1024, Algorithm::kRing), "auto or pairwise");
  Request neg = Req(Collective::kAllReduce, 1024);
  neg.overrides.bytes_per_s = -5e9;
  check(Iota(8), neg, "--bandwidth -5");
}

TEST(ParseTest, NamesRoundTrip) {
  EXPECT_EQ(*ParseCollective("all_reduce"), Collective::kAllReduce);
  EXPECT_EQ(*ParseCollective("AllGather"), Collective::kAllGather);
  EXPECT_EQ(*ParseCollective("reduce-scatter"), Collective::kReduceScatter);
  EXPECT_EQ(*ParseCollective("sendrecv"), Collective::kSendRecv);
  EXPECT_FALSE(ParseCollective("gather").ok());
  EXPECT_EQ(*ParseAlgorithm("multi-rail"), Algorithm::kMultiRailRing);
  EXPECT_EQ(*ParseAlgorithm("HIERARCHICAL"), Algorithm::kHierarchical);
  EXPECT_FALSE(ParseAlgorithm("butterfly").ok());
}

}  // namespace
}  // namespace infralens::collective
