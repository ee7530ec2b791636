// The streaming path (rank action streams, SimulateGenerated, StreamPytorchCsv) against the listed
// one (Generate, SimulateSummary, WritePytorchCsv) on small cases of every schedule, and against
// closed forms on a larger one.
#include "sim/stream_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/pytorch_csv.h"
#include "schedule/rank_actions.h"

namespace infralens::sim {
namespace {

using schedule::ScheduleKind;

// Every (kind, pp, vpp, m) of a small grid that Generate accepts.
std::vector<schedule::Schedule> SmallShapes() {
  std::vector<schedule::Schedule> shapes;
  for (const auto& info : schedule::AllSchedules()) {
    for (int pp : {1, 2, 3, 4, 8}) {
      for (int vpp : {0, 1, 2, 3}) {
        for (int m : {1, 2, 4, 7, 8, 16, 24}) {
          auto shape = schedule::GenerateShape(info.kind, {pp, vpp, m}, schedule::kMaxActions);
          if (shape.ok()) shapes.push_back(std::move(shape).value());
        }
      }
    }
  }
  return shapes;
}

std::string Streamed(const schedule::Schedule& shape) {
  std::string out;
  Status st = io::StreamPytorchCsv(shape, [&out](std::string_view piece) {
    out.append(piece);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

std::string Label(const schedule::Schedule& s) {
  return s.name + " pp " + std::to_string(s.pp) + " vpp " + std::to_string(s.vpp) + " m " +
         std::to_string(s.microbatches);
}

TEST(StreamSimulatorTest, EverySmallScheduleStreamsTheSameCsvAsItsLists) {
  int kinds_seen = 0;
  ScheduleKind last = ScheduleKind::kCustom;
  for (const schedule::Schedule& shape : SmallShapes()) {
    auto listed = schedule::Generate(shape.kind, {shape.pp, shape.vpp, shape.microbatches});
    ASSERT_TRUE(listed.ok()) << listed.status().message();
    EXPECT_EQ(Streamed(shape), io::WritePytorchCsv(*listed)) << Label(shape);
    if (shape.kind != last) ++kinds_seen, last = shape.kind;
  }
  EXPECT_EQ(kinds_seen, static_cast<int>(schedule::AllSchedules().size()));
}

void ExpectSameSummary(const SimResult& a, const SimResult& b, const std::string& label) {
  // Bit for bit: the same additions in the same order.
  EXPECT_EQ(a.makespan_ms, b.makespan_ms) << label;
  EXPECT_EQ(a.bubble_fraction, b.bubble_fraction) << label;
  EXPECT_EQ(a.span_bubble_fraction, b.span_bubble_fraction) << label;
  ASSERT_EQ(a.ranks.size(), b.ranks.size()) << label;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].actions, b.ranks[r].actions) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].busy_ms, b.ranks[r].busy_ms) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].idle_ms, b.ranks[r].idle_ms) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].first_start_ms, b.ranks[r].first_start_ms) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].last_end_ms, b.ranks[r].last_end_ms) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].span_idle_ms, b.ranks[r].span_idle_ms) << label << " rank " << r;
    EXPECT_EQ(a.ranks[r].peak_activations, b.ranks[r].peak_activations) << label << " rank " << r;
  }
}

TEST(StreamSimulatorTest, EverySmallScheduleSimulatesAsSimulateSummary) {
  Costs uneven;  // costs that differ per stage and a p2p latency, so every dependency matters
  uneven.uniform = {1.25, 2.5, 1.5, 1.0, 3.0};
  uneven.p2p_ms = 0.375;
  for (const schedule::Schedule& shape : SmallShapes()) {
    auto listed = schedule::Generate(shape.kind, {shape.pp, shape.vpp, shape.microbatches});
    ASSERT_TRUE(listed.ok());
    for (bool per_stage : {false, true}) {
      Costs c = uneven;
      if (per_stage) {
        for (int st = 0; st < shape.num_stages(); ++st) {
          c.per_stage.push_back(
              {1.0 + 0.125 * st, 2.0 + 0.25 * (st % 3), 1.0 + 0.5 * (st % 2), 1.0, -1.0});
        }
      }
      auto want = SimulateSummary(*listed, c);
      auto got = SimulateGenerated(shape, c);
      ASSERT_TRUE(want.ok()) << Label(shape) << ": " << want.status().message();
      ASSERT_TRUE(got.ok()) << Label(shape) << ": " << got.status().message();
      ExpectSameSummary(*got, *want, Label(shape) + (per_stage ? " per stage" : ""));
    }
  }
}

// Interleaved 1F1B, P = 8, v = 4, m = 1024 (P divides m; 65,536 actions): each rank runs v m
// forwards and v m backwards, so busy = v m (f + b) with per-chunk costs f, b; Narayanan et al.
// SC21 Section 2.2.2: makespan = m (F + B) + (P - 1)(f + b) with F = v f, B = v b. The CSV has one
// line per rank and one cell per action.
TEST(StreamSimulatorTest, LargerInterleavedMatchesClosedForms) {
  const int P = 8, v = 4, m = 1024;
  const double f = 0.5, b = 1.0;
  auto shape =
      schedule::GenerateShape(ScheduleKind::kInterleaved1F1B, {P, v, m}, schedule::kMaxActions);
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  Costs c;
  c.uniform = {f, b, b / 2, b / 2, -1};
  auto r = SimulateGenerated(*shape, c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const RankMetrics& rm : r->ranks) {
    EXPECT_EQ(rm.actions, 2 * v * m);
    EXPECT_DOUBLE_EQ(rm.busy_ms, v * m * (f + b));
  }
  EXPECT_DOUBLE_EQ(r->makespan_ms, m * (v * f + v * b) + (P - 1) * (f + b));
  const std::string csv = Streamed(*shape);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), P);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), ',') + P,
            int64_t{2} * P * v * m);  // cells - 1 per line
  EXPECT_EQ(csv.substr(0, 4), "0F0,");
}

TEST(StreamSimulatorTest, RefusesLoadedSchedulesAndBadCosts) {
  schedule::Schedule custom;
  custom.pp = 1;
  EXPECT_FALSE(SimulateGenerated(custom, Costs{}).ok());
  auto shape = schedule::GenerateShape(ScheduleKind::k1F1B, {2, 1, 4}, schedule::kMaxActions);
  ASSERT_TRUE(shape.ok());
  Costs bad;
  bad.uniform.f_ms = -1;
  EXPECT_FALSE(SimulateGenerated(*shape, bad).ok());
}

TEST(StreamSimulatorTest, SinkErrorStopsTheCsv) {
  auto shape = schedule::GenerateShape(ScheduleKind::k1F1B, {4, 1, 8}, schedule::kMaxActions);
  ASSERT_TRUE(shape.ok());
  int calls = 0;
  Status st = io::StreamPytorchCsv(*shape, [&calls](std::string_view) {
    ++calls;
    return IoError("disk full");
  });
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace infralens::sim
