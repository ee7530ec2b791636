#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace infralens::sim {
namespace {

using schedule::Action;
using schedule::Placement;
using schedule::Schedule;

Schedule Manual(int pp, int vpp, int m, std::vector<std::vector<Action>> ranks) {
  Schedule s;
  s.pp = pp;
  s.vpp = vpp;
  s.microbatches = m;
  schedule::SetPlacement(s, Placement::kLoop);
  s.ranks = std::move(ranks);
  return s;
}

// Two ranks, two microbatches, 1F1B, hand-timed with F=1, B=2 and a 0.5 ms hop:
//   rank 0: F0 [0,1]  F1 [1,2]                          B0 [5,7]       B1 [8,10]
//   rank 1:      F0 [1.5,2.5] B0 [2.5,4.5] F1 [4.5,5.5] B1 [5.5,7.5]
// Rank 1's F1 has its input at 2.5 but waits for its own B0 (ends 4.5). Rank 0's B0 waits for
// rank 1's B0 (4.5) plus the hop; its B1 for rank 1's B1 (7.5) plus the hop.
TEST(SimulatorTest, HandTimedTwoRankCase) {
  Schedule s = Manual(2, 1, 2,
                      {{Action::F(0, 0), Action::F(0, 1), Action::B(0, 0), Action::B(0, 1)},
                       {Action::F(1, 0), Action::B(1, 0), Action::F(1, 1), Action::B(1, 1)}});
  Costs c;
  c.uniform = {1, 2, 1, 1, -1};
  c.p2p_ms = 0.5;
  auto r = Simulate(s, c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->start_ms[1][0], 1.5);  // F(1,0) after F(0,0) + hop
  EXPECT_DOUBLE_EQ(r->start_ms[1][1], 2.5);  // B(1,0) right after its own forward
  EXPECT_DOUBLE_EQ(r->start_ms[1][2], 4.5);  // F(1,1): rank busy until 4.5
  EXPECT_DOUBLE_EQ(r->start_ms[1][3], 5.5);
  EXPECT_DOUBLE_EQ(r->start_ms[0][2], 5.0);  // B(0,0) after B(1,0) ends 4.5 + hop
  EXPECT_DOUBLE_EQ(r->start_ms[0][3], 8.0);  // B(0,1) after B(1,1) ends 7.5 + hop
  EXPECT_DOUBLE_EQ(r->makespan_ms, 10.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].busy_ms, 6.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].idle_ms, 4.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].first_start_ms, 1.5);
  EXPECT_DOUBLE_EQ(r->ranks[1].span_ms, 6.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].span_idle_ms, 0.0);
  // bubble = (4 + 4) / (2 * 10)
  EXPECT_DOUBLE_EQ(r->bubble_fraction, 0.4);
  EXPECT_DOUBLE_EQ(r->span_bubble_fraction, (4.0 + 0.0) / (10.0 + 6.0));
}

TEST(SimulatorTest, PerStageCostsMakeTheSlowStageTheBottleneck) {
  auto s = schedule::Generate(schedule::ScheduleKind::kGPipe, {3, 1, 6});
  ASSERT_TRUE(s.ok());
  Costs c;
  c.uniform = {1, 1, 0.5, 0.5, -1};
  c.per_stage = {c.uniform, c.uniform, c.uniform};
  c.per_stage[1] = {3, 3, 1.5, 1.5, -1};
  auto r = Simulate(*s, c);
  ASSERT_TRUE(r.ok());
  // Forwards: the slow stage 1 paces the pipe: F(1,i) ends 4 + 3i, so F(2,5) ends 20.
  // Backwards: stage 2 runs B0..B5 in [20,26]; stage 1's B(i) waits for B(2,i) and for itself:
  // [21 + 3i, 24 + 3i], the last ending at 39; stage 0's last B follows it: [39,40].
  EXPECT_DOUBLE_EQ(r->makespan_ms, 40.0);
}

TEST(SimulatorTest, BackwardBeforeItsForwardIsADeadlockNamingTheAction) {
  Schedule s = Manual(1, 1, 1, {{Action::B(0, 0), Action::F(0, 0)}});
  auto r = Simulate(s, Costs{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("deadlock"), std::string::npos);
  EXPECT_NE(msg.find("0B0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0F0"), std::string::npos) << msg;
}

TEST(SimulatorTest, CrossRankCycleNamesBothRanks) {
  // Rank 0 runs B0 before F1; rank 1 needs F1 before it can send B0's gradient back. Rank 1's
  // order: F0, F1, B0, B1: it waits for 0F1, which rank 0 runs only after its 0B0, which waits for
  // 1B0.
  Schedule s = Manual(2, 1, 2,
                      {{Action::F(0, 0), Action::B(0, 0), Action::F(0, 1), Action::B(0, 1)},
                       {Action::F(1, 0), Action::F(1, 1), Action::B(1, 0), Action::B(1, 1)}});
  auto r = Simulate(s, Costs{});
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0B0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1F1"), std::string::npos) << msg;
}

TEST(SimulatorTest, RejectsBadCosts) {
  auto s = schedule::Generate(schedule::ScheduleKind::kGPipe, {2, 1, 2});
  Costs c;
  c.uniform.f_ms = -1;
  auto r = Simulate(*s, c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--f -1"), std::string::npos);
  c.uniform.f_ms = 1;
  c.p2p_ms = std::nan("");
  EXPECT_FALSE(Simulate(*s, c).ok());
}

// Peak activations depend only on order: F allocates, B (or W after I) frees.
TEST(PeakActivationsTest, CountsByOrder) {
  Schedule s = Manual(1, 1, 3,
                      {{Action::F(0, 0), Action::F(0, 1), Action::I(0, 0), Action::F(0, 2),
                        Action::W(0, 0), Action::I(0, 1), Action::W(0, 1), Action::B(0, 2)}});
  EXPECT_EQ(PeakActivations(s)[0], 3);  // I does not free: 0, 1 and 2 are all held after F2
}

}  // namespace
}  // namespace infralens::sim

namespace infralens::sim {
namespace {

// SimulateSummary leaves out the per-action times and nothing else: every metric bit for bit,
// and the metrics are what the recorded times say (first start, last end, busy as their sum).
TEST(SimulatorTest, SummaryEqualsTheFullSimulation) {
  using schedule::ScheduleKind;
  for (ScheduleKind kind :
       {ScheduleKind::kGPipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B,
        ScheduleKind::kZBH1, ScheduleKind::kZBV, ScheduleKind::kDualPipeV}) {
    auto s = schedule::Generate(kind, {4, 0, 16});
    ASSERT_TRUE(s.ok()) << s.status().message();
    Costs c;
    for (int st = 0; st < s->num_stages(); ++st) {
      // Uneven stages: the last one heavier, as the output layer makes it.
      const double extra = st == s->num_stages() - 1 ? 0.7 : 0.0;
      c.per_stage.push_back({1.0 + 0.1 * st + extra, 2.1 + extra, 1.05, 1.05 + extra, 2.5});
    }
    c.p2p_ms = 0.03;
    auto full = Simulate(*s, c);
    auto summary = SimulateSummary(*s, c);
    ASSERT_TRUE(full.ok() && summary.ok());
    const std::string name(schedule::Info(kind).name);
    EXPECT_TRUE(summary->start_ms.empty() && summary->end_ms.empty()) << name;
    EXPECT_EQ(summary->makespan_ms, full->makespan_ms) << name;
    EXPECT_EQ(summary->bubble_fraction, full->bubble_fraction) << name;
    EXPECT_EQ(summary->span_bubble_fraction, full->span_bubble_fraction) << name;
    ASSERT_EQ(summary->ranks.size(), full->ranks.size());
    for (size_t r = 0; r < full->ranks.size(); ++r) {
      const RankMetrics &a = summary->ranks[r], &b = full->ranks[r];
      EXPECT_EQ(a.busy_ms, b.busy_ms) << name << " rank " << r;
      EXPECT_EQ(a.first_start_ms, b.first_start_ms) << name << " rank " << r;
      EXPECT_EQ(a.last_end_ms, b.last_end_ms) << name << " rank " << r;
      EXPECT_EQ(a.peak_activations, b.peak_activations) << name << " rank " << r;
      // Against the recorded times themselves.
      EXPECT_EQ(b.first_start_ms, full->start_ms[r].front());
      EXPECT_EQ(b.last_end_ms, full->end_ms[r].back());
      double busy = 0;
      for (size_t k = 0; k < full->end_ms[r].size(); ++k)
        busy += full->end_ms[r][k] - full->start_ms[r][k];
      EXPECT_EQ(b.busy_ms, busy);
    }
  }
}

}  // namespace
}  // namespace infralens::sim
