// analyze(synth(schedule)) recovers what the schedule engine knows: its bubble (in total and per
// rank), its step time and its action order, for every schedule InfraLens generates.
#include "trace/synth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trace/analysis.h"
#include "trace/loader.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

struct Case {
  schedule::ScheduleKind kind;
  int pp, vpp, m;
};

using testing::TestDir;

void CheckRoundTrip(const schedule::Schedule& s, const sim::Costs& costs, const SynthOptions& so,
                    bool hta) {
  const std::string dir = TestDir(s.name + (hta ? "_hta" : ""));
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
    const sim::Costs costs{.uniform = {.f_ms = 1, .b_ms = 2, .i_ms = 1, .w_ms = 1}, .p2p_ms = 0.05};
    CheckRoundTrip(*s, costs, SynthOptions{}, /*hta=*/false);
  }
}

// HTA's definitions on the same files (whole-microsecond times, so HTA's rounding changes nothing),
// several kernels per action, gzip, and the older NCCL kernel names without metadata.
TEST(SynthTest, HtaModeGzipAndOldKernelNames) {
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {2, 2, 4});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs{.uniform = {.f_ms = 1, .b_ms = 2}, .p2p_ms = 0.1};
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
  const sim::Costs costs{.uniform = {.f_ms = 1, .b_ms = 2, .i_ms = 1.25, .w_ms = 0.75},
                         .p2p_ms = 0.0123};
  SynthOptions so;
  so.kernels_per_action = 3;
  CheckRoundTrip(*s, costs, so, /*hta=*/false);
}

TEST(SynthTest, RefusesBadOptions) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {2, 0, 2});
  SynthOptions so;
  so.steps = 0;
  auto w = WriteSynthTrace(*s, sim::Costs{}, so, TestDir("bad"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("--steps"), std::string::npos);
}

TEST(SynthTest, RefusesWhatWouldPassItsByteBoundBeforeWriting) {
  // 1F1B at pp 4, m 8: 64 actions per step; 100,000 steps of 1,000 kernels each with a launch is
  // at least 64 x 2,001 x 100,000 events, 3.8e12 bytes at 300 bytes each: far past 2 GB.
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 0, 8});
  SynthOptions so;
  so.steps = 100'000;
  so.kernels_per_action = 1'000;
  so.cpu_ops_per_kernel = 0;
  const std::string dir = TestDir("huge");
  auto w = WriteSynthTrace(*s, sim::Costs{}, so, dir);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("past the bound of 2 GB"), std::string::npos)
      << w.status().message();
  EXPECT_FALSE(std::filesystem::exists(dir));  // refused before the folder was made
}

TEST(SynthTest, AStaleTemporaryOfADeadSynthDoesNotBlockTheNext) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {2, 0, 2});
  const std::string dir = TestDir("stale");
  std::filesystem::create_directories(dir);
  // What a synth killed mid-write leaves: pid 2^22 + 1 runs nowhere (pid_max <= 2^22).
  const std::string stale = dir + "/.rank0.json.4194305-0-0000abcd.tmp";
  std::ofstream(stale) << "{\"traceEvents\": [";
  auto w = WriteSynthTrace(*s, sim::Costs{}, SynthOptions{}, dir);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank0.json"));
  // Any other file still makes the folder "not empty".
  std::ofstream(dir + "/notes.txt") << "mine";
  std::filesystem::remove(dir + "/rank0.json");
  std::filesystem::remove(dir + "/rank1.json");
  EXPECT_FALSE(WriteSynthTrace(*s, sim::Costs{}, SynthOptions{}, dir).ok());
}

}  // namespace
}  // namespace infralens::trace
