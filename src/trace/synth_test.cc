// analyze(synth(schedule)) recovers what the schedule engine knows: its bubble (in total and per
// rank), its step time and its action order, for every schedule InfraLens generates.
#include "trace/synth.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "trace/analysis.h"
#include "trace/loader.h"

namespace infralens::trace {
namespace {

struct Case {
  schedule::ScheduleKind kind;
  int pp, vpp, m;
};

std::string TempDir(const std::string& name) {
  // Test processes run in parallel under ctest: the folder carries the test's name.
  std::string d = ::testing::TempDir() + "/infralens_synth_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + name;
  std::filesystem::remove_all(d);
  return d;
}

void CheckRoundTrip(const schedule::Schedule& s, const sim::Costs& costs, const SynthOptions& so,
                    bool hta) {
  const std::string dir = TempDir(s.name + (hta ? "_hta" : ""));
  auto written = WriteSynthTrace(s, costs, so, dir);
  ASSERT_TRUE(written.ok()) << written.status().message();
  auto sim = sim::Simulate(s, costs);
  ASSERT_TRUE(sim.ok());
  auto files = ExpandTracePaths({dir});
  ASSERT_TRUE(files.ok()) << files.status().message();
  LoadedTraces loaded = LoadTraces(*files);
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors[0].status.message();
  ASSERT_EQ(loaded.traces.size(), static_cast<size_t>(s.pp));
  AnalysisOptions o;
  o.hta_compat = hta;
  auto a = Analyze(loaded.traces, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const PipelineResult& p = a->pipeline;
  // The simulator's bubble: total idle over P x makespan, ramp included.
  EXPECT_TRUE(p.has_steps);
  EXPECT_EQ(p.windows, so.steps - 1);  // the last step is dropped
  EXPECT_NEAR(p.step_time_us, sim->makespan_ms * 1000, 1e-3);
  EXPECT_NEAR(p.bubble_fraction, sim->bubble_fraction, 1e-7);
  for (int r = 0; r < s.pp; ++r) {
    EXPECT_NEAR(a->ranks[r].bubble_pct, 100 * sim->ranks[r].idle_ms / sim->makespan_ms, 1e-5)
        << "rank " << r;
  }
  // The action order that ran is the schedule's, and it is recognised by name.
  ASSERT_TRUE(p.recovered) << p.recover_note;
  EXPECT_EQ(p.schedule.ranks, s.ranks);
  EXPECT_EQ(p.schedule.vpp, s.vpp);
  EXPECT_EQ(p.schedule.microbatches, s.microbatches);
  EXPECT_NE(std::find(p.matches.begin(), p.matches.end(), s.name), p.matches.end())
      << p.recover_note;
  std::filesystem::remove_all(dir);
}

TEST(SynthTest, AnalyzeRecoversEveryScheduleBubbleAndOrder) {
  for (const auto& info : schedule::AllSchedules()) {
    SCOPED_TRACE(std::string(info.name));
    auto s = schedule::Generate(info.kind, {4, 0, 8});
    ASSERT_TRUE(s.ok()) << s.status().message();
    sim::Costs costs;
    costs.uniform.f_ms = 1;
    costs.uniform.b_ms = 2;
    costs.uniform.i_ms = 1;
    costs.uniform.w_ms = 1;
    costs.p2p_ms = 0.05;
    CheckRoundTrip(*s, costs, SynthOptions{}, /*hta=*/false);
  }
}

// HTA's definitions on the same files (whole-microsecond times, so HTA's rounding changes nothing),
// several kernels per action, gzip, and the older NCCL kernel names without metadata.
TEST(SynthTest, HtaModeGzipAndOldKernelNames) {
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {2, 2, 4});
  ASSERT_TRUE(s.ok());
  sim::Costs costs;
  costs.uniform.f_ms = 1;
  costs.uniform.b_ms = 2;
  costs.p2p_ms = 0.1;
  SynthOptions so;
  so.steps = 4;
  so.kernels_per_action = 4;  // 250 us kernels: whole microseconds, as HTA mode needs
  so.gzip = true;
  so.no_metadata = true;
  CheckRoundTrip(*s, costs, so, /*hta=*/true);
  CheckRoundTrip(*s, costs, so, /*hta=*/false);
}

// Kernels that split an action into thirds (333.333... us) still meet exactly: times are written
// as whole nanoseconds.
TEST(SynthTest, FractionalKernelBoundaries) {
  auto s = schedule::Generate(schedule::ScheduleKind::kZBH1, {3, 0, 6});
  ASSERT_TRUE(s.ok());
  sim::Costs costs;
  costs.uniform.f_ms = 1;
  costs.uniform.b_ms = 2;
  costs.uniform.i_ms = 1.25;
  costs.uniform.w_ms = 0.75;
  costs.p2p_ms = 0.0123;
  SynthOptions so;
  so.kernels_per_action = 3;
  CheckRoundTrip(*s, costs, so, /*hta=*/false);
}

TEST(SynthTest, RefusesBadOptions) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {2, 0, 2});
  SynthOptions so;
  so.steps = 0;
  auto w = WriteSynthTrace(*s, sim::Costs{}, so, TempDir("bad"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("--steps"), std::string::npos);
}

}  // namespace
}  // namespace infralens::trace
