// Every generated schedule checked against closed forms from the papers, derived by hand in the
// comments, not against the program's own output.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::schedule {
namespace {

sim::SimResult Simulated(ScheduleKind kind, int pp, int vpp, int m, sim::StageCosts c,
                         double p2p = 0) {
  auto s = Generate(kind, {pp, vpp, m});
  EXPECT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(ValidateStructure(*s).ok()) << ValidateStructure(*s).message();
  sim::Costs costs;
  costs.uniform = c;
  costs.p2p_ms = p2p;
  auto r = sim::Simulate(*s, costs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

sim::StageCosts FB(double f, double b) { return {f, b, b / 2, b / 2, -1}; }
sim::StageCosts FIW(double f, double i, double w) { return {f, i + w, i, w, -1}; }

int MaxPeak(const sim::SimResult& r) {
  int p = 0;
  for (const auto& rm : r.ranks) p = std::max(p, rm.peak_activations);
  return p;
}

// The old pipeline_schedule_viz.py reported 68.6% for this case; the truth is 3/11.
TEST(FillDrainTest, FourStagesEightMicrobatchesIsThreeElevenths) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
    auto r = Simulated(kind, 4, 1, 8, FB(1, 1));
    EXPECT_DOUBLE_EQ(r.makespan_ms, 22.0);
    EXPECT_NEAR(r.bubble_fraction, 3.0 / 11.0, 1e-12);
  }
}

// GPipe and 1F1B: makespan (m+P-1)(F+B), bubble (P-1)/(m+P-1), for any F and B.
TEST(FillDrainTest, MakespanAndBubbleClosedForm) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int m : {P, P + 1, 2 * P, 13, 32}) {
        for (auto [f, b] : {std::pair{1.0, 1.0}, {1.0, 2.0}, {2.5, 3.0}}) {
          auto r = Simulated(kind, P, 1, m, FB(f, b));
          EXPECT_NEAR(r.makespan_ms, (m + P - 1) * (f + b), 1e-9) << P << " " << m;
          EXPECT_NEAR(r.bubble_fraction, double(P - 1) / (m + P - 1), 1e-12);
        }
      }
    }
  }
}

// GPipe holds every microbatch; 1F1B holds min(P - r, m) on rank r.
TEST(FillDrainTest, PeakActivations) {
  for (int P : {2, 4, 8}) {
    for (int m : {P, 2 * P, 20}) {
      auto g = Simulated(ScheduleKind::kGPipe, P, 1, m, FB(1, 2));
      auto o = Simulated(ScheduleKind::k1F1B, P, 1, m, FB(1, 2));
      for (int r = 0; r < P; ++r) {
        EXPECT_EQ(g.ranks[r].peak_activations, m);
        EXPECT_EQ(o.ranks[r].peak_activations, std::min(P - r, m));
      }
    }
  }
}

// Narayanan et al. SC21 Section 2.2.2: with v chunks and per-chunk costs f, b (a rank's forward
// F = v f) the bubble costs (P-1)(f+b), so makespan = m(F+B) + (P-1)(f+b) when P divides m, and
// the paper's bubble over ideal time is (P-1)/(v m). Rank r warms up with 2(P-1-r) + (v-1)P
// chunk forwards (Megatron-LM schedules.py), so it peaks at that plus one, capped at v m.
TEST(InterleavedTest, MegatronClosedForms) {
  for (int P : {2, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int m : {P, 2 * P, 4 * P}) {
        for (auto [f, b] : {std::pair{1.0, 2.0}, {0.5, 1.5}}) {
          auto r = Simulated(ScheduleKind::kInterleaved1F1B, P, v, m, FB(f, b));
          const double F = v * f, B = v * b;
          EXPECT_NEAR(r.makespan_ms, m * (F + B) + (P - 1) * (f + b), 1e-9)
              << P << " " << v << " " << m;
          double ideal = m * (F + B);
          EXPECT_NEAR((r.makespan_ms - ideal) / ideal, double(P - 1) / (v * m), 1e-12);
          EXPECT_NEAR(r.bubble_fraction, double(P - 1) / (v * m + P - 1), 1e-12);
          for (int rank = 0; rank < P; ++rank) {
            EXPECT_EQ(r.ranks[rank].peak_activations,
                      std::min(2 * (P - 1 - rank) + (v - 1) * P + 1, v * m));
          }
        }
      }
    }
  }
}

// PyTorch allows m that is not a multiple of P when m is a multiple of max(1, m // P) rounds.
TEST(InterleavedTest, MicrobatchesNotAMultipleOfRanks) {
  for (auto [P, m] : {std::pair{4, 6}, {4, 10}, {4, 3}, {8, 12}, {3, 4}}) {
    auto s = Generate(ScheduleKind::kInterleaved1F1B, {P, 2, m});
    ASSERT_TRUE(s.ok()) << P << " " << m << ": " << s.status().message();
    ASSERT_TRUE(ValidateStructure(*s).ok());
    sim::Costs c;
    auto r = sim::Simulate(*s, c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    // Never worse than fill-drain over the same chunks, never better than no bubble at all.
    double F = 2 * c.uniform.f_ms, B = 2 * c.uniform.b_ms;
    EXPECT_GE(r->makespan_ms, m * (F + B) - 1e-9);
    EXPECT_LE(r->makespan_ms, (m + P - 1) * (F + B) + 1e-9);
  }
  // 9 microbatches on 4 ranks is 2 rounds of 4.5: PyTorch refuses it, and so do we.
  auto bad = Generate(ScheduleKind::kInterleaved1F1B, {4, 2, 9});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-m 9"), std::string::npos);
}

// The counts the refusal suggests pass PyTorch's rule themselves. By hand, pp = 64: m = 1,000 is 15
// rounds with 10 left over; below it 990 (15 rounds of 66), above it 1,005 (15 of 67). m = 20,000
// is 312 rounds with 32 over; 19,968 = 64 x 312 below, and above it 20,032 = 64 x 313 (multiples
// of 312 skip from 19,968 to 20,280, which is 316 rounds with 56 over).
TEST(InterleavedTest, RefusedCountsSuggestCountsThatRun) {
  for (auto [m, below, above] : {std::tuple{1000, 990, 1005}, {20'000, 19'968, 20'032}}) {
    ScheduleParams p{64, 2, m};
    auto bad = Generate(ScheduleKind::kInterleaved1F1B, p);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find(fmt::format("try -m {} or -m {}", below, above)),
              std::string::npos)
        << bad.status().message();
    for (int good : {below, above}) {
      EXPECT_TRUE(Generate(ScheduleKind::kInterleaved1F1B, {64, 2, good}).ok()) << good;
    }
  }
}

// Looped BFS runs every microbatch through chunk 0 first: it holds all v*m chunk activations,
// and with P dividing m its makespan equals interleaved 1F1B's (the ramp is paid once per chunk
// at 1/v of the cost).
TEST(LoopedBfsTest, HoldsEverythingAndMatchesInterleavedMakespan) {
  for (int P : {2, 4}) {
    for (int m : {P, 4 * P}) {
      auto bfs = Simulated(ScheduleKind::kLoopedBFS, P, 2, m, FB(1, 2));
      auto il = Simulated(ScheduleKind::kInterleaved1F1B, P, 2, m, FB(1, 2));
      EXPECT_NEAR(bfs.makespan_ms, il.makespan_ms, 1e-9);
      for (const auto& rm : bfs.ranks) EXPECT_EQ(rm.peak_activations, 2 * m);
    }
  }
}

// Qi et al. 2024, Section 3.1: ZB-H1 keeps 1F1B's memory (P microbatches) and shrinks the bubble
// to (P-1)(F+I-W): makespan m(F+I+W) + (P-1)(F+I-W) when W <= I.
TEST(ZeroBubbleTest, H1ClosedForm) {
  for (int P : {2, 4, 8}) {
    for (int m : {P, 2 * P, 3 * P + 1}) {
      for (auto [f, i, w] :
           {std::tuple{1.0, 1.0, 1.0}, {1.0, 2.0, 1.0}, {2.0, 2.0, 1.0}, {1.0, 1.0, 0.5}}) {
        auto r = Simulated(ScheduleKind::kZBH1, P, 1, m, FIW(f, i, w));
        EXPECT_NEAR(r.makespan_ms, m * (f + i + w) + (P - 1) * (f + i - w), 1e-9)
            << P << " " << m << " " << f << i << w;
        for (const auto& rm : r.ranks) EXPECT_LE(rm.peak_activations, P);
        EXPECT_EQ(MaxPeak(r), std::min(P, m));
      }
    }
  }
}

// ZB-H2: with F = I = W and m >= 2P no rank idles inside its span; rank r starts at r F, so the
// makespan is (P-1)F + 3mF; ranks hold up to 2P microbatches.
TEST(ZeroBubbleTest, H2HasNoIdleInsideSpans) {
  for (int P : {2, 3, 4, 8}) {
    for (int m : {2 * P, 3 * P, 5 * P + 1}) {
      auto r = Simulated(ScheduleKind::kZBH2, P, 1, m, FIW(1, 1, 1));
      EXPECT_NEAR(r.span_bubble_fraction, 0.0, 1e-12) << P << " " << m;
      for (const auto& rm : r.ranks) EXPECT_NEAR(rm.span_idle_ms, 0.0, 1e-12);
      EXPECT_NEAR(r.makespan_ms, (P - 1) + 3.0 * m, 1e-9);
      EXPECT_NEAR(r.bubble_fraction, double(P - 1) / (P - 1 + 3 * m), 1e-12);
      EXPECT_EQ(MaxPeak(r), 2 * P);
      for (const auto& rm : r.ranks) EXPECT_LE(rm.peak_activations, 2 * P);
    }
  }
}

// ZB-H2 still runs (with some idle) for P <= m < 2P, and never beats the no-bubble bound.
TEST(ZeroBubbleTest, H2FewMicrobatches) {
  for (int P : {2, 4}) {
    for (int m = P; m < 2 * P; ++m) {
      auto r = Simulated(ScheduleKind::kZBH2, P, 1, m, FIW(1, 1, 1));
      EXPECT_GE(r.makespan_ms, (P - 1) + 3.0 * m - 1e-9);
    }
  }
}

// ZB-V (Qi et al. 2024, Section 6): two chunks per rank in a V; with F = I = W per chunk there is
// no idle inside any rank's span, and peak memory equals 1F1B's: 2P half-size chunk activations.
TEST(ZeroBubbleTest, ZbvIsZeroBubbleWithOneF1BMemory) {
  for (int P : {2, 4, 8}) {
    for (int m : {2 * P, 4 * P}) {
      auto r = Simulated(ScheduleKind::kZBV, P, 2, m, FIW(1, 1, 1));
      EXPECT_NEAR(r.span_bubble_fraction, 0.0, 1e-12) << P << " " << m;
      EXPECT_EQ(MaxPeak(r), 2 * P);
      // Every rank works 2 chunks x m microbatches x 3 unit actions.
      for (const auto& rm : r.ranks) EXPECT_NEAR(rm.busy_ms, 6.0 * m, 1e-9);
    }
  }
}

// The V placement: rank r holds stages r and 2P-1-r.
TEST(PlacementTest, VShape) {
  auto s = Generate(ScheduleKind::kZBV, {4, 2, 8});
  ASSERT_TRUE(s.ok());
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s->stage_to_rank[r], r);
    EXPECT_EQ(s->stage_to_rank[7 - r], r);
  }
}

// DualPipeV (DeepSeek-V3 report; PyTorch ScheduleDualPipeV) holds 2P+1 chunk activations on
// every rank.
TEST(DualPipeVTest, PeakIsTwoPPlusOne) {
  for (int P : {2, 4, 8}) {
    for (int m : {2 * P, 2 * P + 3, 4 * P}) {
      auto r = Simulated(ScheduleKind::kDualPipeV, P, 2, m, FIW(1, 1, 1));
      for (const auto& rm : r.ranks) EXPECT_EQ(rm.peak_activations, 2 * P + 1) << P << " " << m;
    }
  }
}

// Overlapping a forward with a backward is DualPipeV's point: when the pair costs less than F+B,
// the makespan drops, and with --fb = f + b it costs exactly the work.
TEST(DualPipeVTest, OverlapShortensTheIteration) {
  auto plain = Simulated(ScheduleKind::kDualPipeV, 4, 2, 16, {1, 2, 1, 1, -1});
  auto overlapped = Simulated(ScheduleKind::kDualPipeV, 4, 2, 16, {1, 2, 1, 1, 2.0});
  EXPECT_LT(overlapped.makespan_ms, plain.makespan_ms);
  // Busy time: every (stage, microbatch) does F, and B or I+W; 2 chunks x 16 mbs x 3 ms per rank.
  for (const auto& rm : plain.ranks) EXPECT_NEAR(rm.busy_ms, 2 * 16 * 3.0, 1e-9);
}

// A point-to-point latency delays every cross-rank hop: for 1F1B the critical path crosses
// 2(P-1) boundaries, so the makespan grows by at least 2(P-1) p2p.
TEST(SimulatorTest, P2pLatencyOnTheCriticalPath) {
  for (int P : {2, 4}) {
    auto base = Simulated(ScheduleKind::kGPipe, P, 1, 8, FB(1, 2));
    auto slow = Simulated(ScheduleKind::kGPipe, P, 1, 8, FB(1, 2), 0.25);
    // GPipe's critical path: F ramp (P-1 hops), then B chain back (P-1 hops).
    EXPECT_NEAR(slow.makespan_ms - base.makespan_ms, 2 * (P - 1) * 0.25, 1e-9);
  }
  // Adjacent stages on the same rank (the V's turn) pay no p2p: with one rank there is no hop.
  auto single = Simulated(ScheduleKind::kZBV, 1, 2, 4, FIW(1, 1, 1), 5.0);
  EXPECT_NEAR(single.makespan_ms, 4 * 2 * 3.0, 1e-9);
}

TEST(GenerateTest, RejectsInvalidCombinationsNamingTheValue) {
  struct Case {
    ScheduleKind kind;
    ScheduleParams p;
    const char* needle;
  };
  const Case cases[] = {
      {ScheduleKind::kGPipe, {0, 1, 8}, "--pp 0"},
      {ScheduleKind::kGPipe, {4, 1, 0}, "-m 0"},
      {ScheduleKind::k1F1B, {8, 1, 4}, "m >= pp"},
      {ScheduleKind::kZBV, {4, 3, 8}, "--vpp 3"},
      {ScheduleKind::kDualPipeV, {4, 2, 7}, "-m 7"},
      {ScheduleKind::kGPipe, {4, 2, 8}, "--vpp 2"},
      {ScheduleKind::kInterleaved1F1B, {4, 1, 8}, "--vpp 1"},
      {ScheduleKind::kGPipe, {10000, 1, 10000}, "10 million"},
      // One microbatch past the limit: 1000 x 1 x 5001 x 2 = 10,002,000 > 10,000,000.
      {ScheduleKind::kGPipe, {1000, 1, 5001}, "up to 10002000 actions"},
      // The product of three int32 values overflows int64: refused, not wrapped to a small count.
      {ScheduleKind::kInterleaved1F1B, {2147483647, 2147483647, 2147483647}, "more than 9e18"},
  };
  for (const auto& c : cases) {
    auto s = Generate(c.kind, c.p);
    ASSERT_FALSE(s.ok()) << c.needle;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.needle), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos);
  }
}

TEST(ActionUpperBoundTest, ClosedFormAndSaturation) {
  // P x v x m x (2, or 3 with I and W), v defaulting per schedule (zbv: 2, gpipe: 1).
  EXPECT_EQ(ActionUpperBound(ScheduleKind::kGPipe, {4, 0, 8}), 4 * 1 * 8 * 2);
  EXPECT_EQ(ActionUpperBound(ScheduleKind::kZBV, {4, 0, 8}), 4 * 2 * 8 * 3);
  EXPECT_EQ(ActionUpperBound(ScheduleKind::kInterleaved1F1B, {4, 3, 8}), 4 * 3 * 8 * 2);
  // Generate makes no more than the bound (exactly 2 per stage and microbatch for 1F1B).
  auto s = Generate(ScheduleKind::k1F1B, {4, 0, 8});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_actions(), ActionUpperBound(ScheduleKind::k1F1B, {4, 0, 8}));
  // 2^21 cubed is 2^63, one past INT64_MAX.
  EXPECT_EQ(ActionUpperBound(ScheduleKind::kInterleaved1F1B, {1 << 21, 1 << 21, 1 << 21}),
            INT64_MAX);
  EXPECT_EQ(ActionUpperBound(ScheduleKind::kGPipe, {0, 0, 8}), 0);
  EXPECT_EQ(SaturatingMul(INT64_MAX / 2, 2), INT64_MAX - 1);
  EXPECT_EQ(SaturatingMul(INT64_MAX / 2 + 1, 2), INT64_MAX);
}

TEST(ParseScheduleKindTest, NamesAliasesAndSuggestions) {
  EXPECT_EQ(*ParseScheduleKind("1F1B"), ScheduleKind::k1F1B);
  EXPECT_EQ(*ParseScheduleKind("Interleaved1F1B"), ScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(*ParseScheduleKind("interleaved-1f1b"), ScheduleKind::kInterleaved1F1B);
  EXPECT_EQ(*ParseScheduleKind("ZBVZeroBubble"), ScheduleKind::kZBV);
  EXPECT_EQ(*ParseScheduleKind("DualPipeV"), ScheduleKind::kDualPipeV);
  EXPECT_EQ(*ParseScheduleKind("zb_h1"), ScheduleKind::kZBH1);
  EXPECT_EQ(*ParseScheduleKind("LoopedBFS"), ScheduleKind::kLoopedBFS);
  auto bad = ParseScheduleKind("gpiep");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'gpipe'"), std::string::npos);
}

// Every schedule, many shapes: structurally complete, deadlock-free, and every rank's busy time is
// exactly its share of the work.
TEST(GenerateTest, EveryScheduleIsCompleteAndRuns) {
  for (const auto& info : AllSchedules()) {
    for (int P : {1, 2, 3, 4, 5, 8}) {
      for (int m : {1, 2, 3, 4, 7, 8, 16, 17}) {
        auto s = Generate(info.kind, {P, 0, m});
        if (!s.ok()) continue;  // combinations the schedule refuses are tested above
        ASSERT_TRUE(ValidateStructure(*s).ok())
            << info.name << " P=" << P << " m=" << m << ": " << ValidateStructure(*s).message();
        sim::Costs c;
        c.uniform = {1, 2, 1, 1, -1};
        auto r = sim::Simulate(*s, c);
        ASSERT_TRUE(r.ok()) << info.name << " P=" << P << " m=" << m << ": "
                            << r.status().message();
        for (const auto& rm : r->ranks) {
          EXPECT_NEAR(rm.busy_ms, s->vpp * m * 3.0, 1e-9) << info.name << " P=" << P << " m=" << m;
        }
      }
    }
  }
}

}  // namespace
}  // namespace infralens::schedule
