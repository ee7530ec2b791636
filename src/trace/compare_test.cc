// A plan compared with a trace term by term, on hand-made traces whose answers are worked out in
// the comments.
#include "trace/compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "io/kineto_reader.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TraceBuilder;

const char* kAllReduce =
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

// Collective metadata of a group known only by its name and ranks (no description).
std::string GroupArgs(const std::string& pg_name, const std::string& ranks) {
  return fmt::format(
      R"J(, "Collective name": "allreduce", "In msg nelems": 1000000, "Out msg nelems": 1000000, "Group size": 2, "dtype": "Float", "Process Group Name": "{}", "Process Group Description": "undefined", "Process Group Ranks": "{}")J",
      pg_name, ranks);
}

// A plan with tp 2, dp 2 in Megatron's default order: TP groups {0,1} {2,3}, DP groups {0,2}
// {1,3}. The DP all-reduce of 4e6 bytes is predicted at 100 us a call: 40 GB/s algbw, and
// busbw = algbw x 2(n-1)/n = 40 GB/s for n = 2.
const char* kPlan = R"J({"plan": {
  "step_time_s": 0.00065,
  "bubble_fraction": 0,
  "parallel": {"tp": 2, "pp": 1, "vpp": 1, "dp": 2, "cp": 1, "ep": 1, "order": "tp-cp-ep-dp-pp"},
  "breakdown_s": {"compute": 0.0005, "tp_comm": 0.0001, "cp_comm": 0, "ep_comm": 0,
                  "pp_comm": 0, "bubble": 0, "dp_comm": 0.00003, "fsdp_comm": 0.00001,
                  "optimizer": 0.00001},
  "comm": [{"communication": "DP gradient all-reduce", "group": "dp", "group_size": 2,
            "collective": "all_reduce", "link": "scale-up", "message_bytes": 4000000,
            "count_per_step": 1, "time_per_step_s": 0.0001}]}})J";

// Each rank: compute [0, 600) and [950, 1000); its TP all-reduce [600, 700) and its DP
// all-reduce [700, 900), neither under computation; nothing at all in [900, 950).
// Measured per rank: compute 650 us, tp 100, dp 200, idle 50. DP busbw: 4e6 bytes in 200 us =
// 20 GB/s algbw, x 1 = 20 GB/s.
std::vector<RankTrace> FourRanks() {
  std::vector<RankTrace> out;
  for (int r = 0; r < 4; ++r) {
    const int tp0 = r / 2 * 2, dp0 = r % 2;
    TraceBuilder b;
    b.Distributed(r, 4)
        .Kernel("sm90_xmma_gemm_bf16", 7, 0, 600)
        .Kernel(kAllReduce, 20, 600, 100, -1, GroupArgs("1", fmt::format("[{}, {}]", tp0, tp0 + 1)))
        .Kernel(kAllReduce, 21, 700, 200, -1, GroupArgs("2", fmt::format("[{}, {}]", dp0, dp0 + 2)))
        .Kernel("sm90_xmma_gemm_bf16", 7, 950, 50);
    auto t = io::ReadKinetoTraceBytes(b.Json(), fmt::format("rank{}", r));
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (t.ok()) out.push_back(std::move(t).value());
  }
  return out;
}

const CompareRow* Row(const Comparison& c, const std::string& metric) {
  for (const CompareRow& r : c.rows) {
    if (r.metric == metric) return &r;
  }
  return nullptr;
}

TEST(CompareTest, PlanTermsByHand) {
  auto p = ReadPrediction(kPlan, "plan.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->degrees.at("tp"), 2);
  ASSERT_EQ(p->comm.size(), 1u);
  auto a = Analyze(FourRanks(), {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  Comparison c = Compare(*p, *a);

  const CompareRow* compute = Row(c, "term: compute");
  ASSERT_NE(compute, nullptr);
  EXPECT_DOUBLE_EQ(*compute->predicted, 0.5);
  EXPECT_DOUBLE_EQ(*compute->measured, 0.65);
  const CompareRow* tp = Row(c, "term: tp_comm");
  ASSERT_NE(tp, nullptr);
  EXPECT_DOUBLE_EQ(*tp->measured, 0.1);
  // DP and FSDP are one group in the trace: predicted 0.03 + 0.01.
  const CompareRow* dp = Row(c, "term: dp_comm (with FSDP)");
  ASSERT_NE(dp, nullptr);
  EXPECT_DOUBLE_EQ(*dp->predicted, 0.04);
  EXPECT_DOUBLE_EQ(*dp->measured, 0.2);
  const CompareRow* idle = Row(c, "term: bubble (idle)");  // no pipeline in these traces
  ASSERT_NE(idle, nullptr);
  EXPECT_DOUBLE_EQ(*idle->measured, 0.05);
  const CompareRow* opt = Row(c, "term: optimizer");
  ASSERT_NE(opt, nullptr);
  EXPECT_FALSE(opt->measured.has_value());
  EXPECT_EQ(Row(c, "term: communication on no axis of the plan"), nullptr);

  // Largest differences: dp +0.16, compute +0.15, idle +0.05.
  ASSERT_EQ(c.largest.size(), 3u);
  EXPECT_EQ(c.largest[0].term, "dp_comm");
  EXPECT_EQ(c.largest[1].term, "compute");
  EXPECT_EQ(c.largest[2].term, "bubble");
  EXPECT_EQ(c.largest[0].cause,
            "all_reduce measured 20 GB/s busbw vs 40 predicted on the "
            "scale-up links");
  const std::string text = ComparisonText(c);
  EXPECT_NE(text.find("largest differences"), std::string::npos);
  EXPECT_NE(text.find("dp_comm: measured 0.200 ms vs 0.040 predicted (+0.160)"), std::string::npos)
      << text;
}

TEST(CompareTest, GroupsPlacedByRanksThenByName) {
  Prediction p;
  p.degrees = {{"tp", 2}, {"cp", 2}, {"dp", 2}, {"pp", 2}};  // 16 ranks, tp fastest
  // tp stride 1, cp stride 2, dp stride 4, pp stride 8.
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {4, 5}, p), "tp");
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {1, 3}, p), "cp");
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {2, 6}, p), "dp");
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {3, 11}, p), "pp");
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {0, 2, 4, 6}, p), "dp");  // Megatron's DP group with CP
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {0, 1, 2, 3}, p), "");    // tp x cp: no axis of the plan
  // Another order: dp fastest.
  p.order = "dp-tp-cp-pp";
  EXPECT_EQ(PlanAxisOfGroup("pg 3", {0, 1}, p), "dp");
  // Ranks the layout cannot hold, or none: the name decides.
  EXPECT_EQ(PlanAxisOfGroup("TENSOR_MODEL_PARALLEL_GROUP", {}, p), "tp");
  EXPECT_EQ(PlanAxisOfGroup("dp_shard", {0, 99}, p), "dp");
  EXPECT_EQ(PlanAxisOfGroup("EXPERT_MODEL_PARALLEL_GROUP", {}, p), "ep");
  EXPECT_EQ(PlanAxisOfGroup("pp", {}, p), "pp");
  EXPECT_EQ(PlanAxisOfGroup("default_pg", {}, p), "");
}

TEST(CompareTest, PlanWithBadDegreeRefused) {
  auto p = ReadPrediction(R"({"plan": {"step_time_s": 1, "parallel": {"tp": 0.5}}})", "x.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("parallel.tp is 0.5"), std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace infralens::trace
