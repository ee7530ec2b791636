// Pipelines without PP: annotations: Megatron-style synthetic traces come back as the schedule
// that made them, with each rank's stage and the bubble the closed form gives; traces that are not
// pipelines (the shared real traces, rings, stars) are "idle", never "bubble".
#include "trace/pipeline_detect.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/compare.h"
#include "trace/analysis.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/synth.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TestDir;

// Writes `s` Megatron-style (no PP: annotations) and analyses it.
TraceAnalysis SynthAndAnalyze(const schedule::Schedule& s, const sim::Costs& costs,
                              SynthOptions so = {}) {
  so.megatron = true;
  const std::string dir = TestDir(s.name);
  auto written = WriteSynthTrace(s, costs, so, dir);
  EXPECT_TRUE(written.ok()) << written.status().message();
  auto files = ExpandTracePaths({dir});
  EXPECT_TRUE(files.ok());
  LoadedTraces loaded = LoadTraces(*files);
  EXPECT_TRUE(loaded.errors.empty()) << loaded.errors[0].status.message();
  auto a = Analyze(loaded.traces, {});
  EXPECT_TRUE(a.ok()) << a.status().message();
  std::filesystem::remove_all(dir);
  return *a;
}

sim::Costs Uniform(double f, double b, double p2p) {
  sim::Costs c;
  c.uniform.f_ms = f;
  c.uniform.b_ms = b;
  c.p2p_ms = p2p;
  return c;
}

TEST(PipelineDetectTest, Megatron1F1BIsRecoveredWithStagesAndClosedFormBubble) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const TraceAnalysis a = SynthAndAnalyze(*s, Uniform(1, 2, 0));
  const PipelineResult& p = a.pipeline;
  EXPECT_FALSE(p.recovered);  // nothing from PP: annotations
  ASSERT_TRUE(p.detected) << p.detect_note;
  EXPECT_EQ(p.source, "send/recv peers");
  EXPECT_STREQ(p.GapTerm(), "bubble");
  EXPECT_EQ(p.schedule_name, "1f1b") << p.schedule_note;
  EXPECT_EQ(p.detected_pp, 4);
  EXPECT_EQ(p.detected_vpp, 1);
  EXPECT_EQ(p.detected_microbatches, 8);
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0], (std::vector<int64_t>{0, 1, 2, 3}));
  // 1F1B with uniform stages and free transfers: makespan (m + p - 1)(f + b), each rank computes
  // m(f + b), so every rank is idle (p - 1) / (m + p - 1) = 3/11 of the step.
  ASSERT_EQ(a.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(a.ranks[r].stage, r);
    EXPECT_EQ(a.ranks[r].forwards, 8);
    EXPECT_EQ(a.ranks[r].backwards, 8);
    EXPECT_NEAR(a.ranks[r].bubble_pct, 100.0 * 3 / 11, 1e-6);
    EXPECT_EQ(a.ranks[r].fb_actions, [&] {
      std::vector<std::string> v;
      for (const auto& act : s->ranks[r]) v.push_back(schedule::ToString(act));
      return v;
    }());
  }
}

TEST(PipelineDetectTest, MegatronInterleavedIsRecoveredWithClosedFormBubble) {
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {4, 2, 8});
  ASSERT_TRUE(s.ok());
  // Per rank per microbatch f = 1, b = 2; each of the v = 2 chunks takes half.
  const TraceAnalysis a = SynthAndAnalyze(*s, sim::ChunkCosts(Uniform(1, 2, 0), 2));
  const PipelineResult& p = a.pipeline;
  ASSERT_TRUE(p.detected) << p.detect_note;
  EXPECT_EQ(p.schedule_name, "interleaved-1f1b") << p.schedule_note;
  EXPECT_EQ(p.detected_vpp, 2);
  EXPECT_EQ(p.detected_microbatches, 8);
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0], (std::vector<int64_t>{0, 1, 2, 3}));
  // Megatron's interleaved schedule (m a multiple of p): the ramp shrinks to (p - 1)(f + b) / v,
  // so each rank is idle (p - 1) / (v m + p - 1) = 3/19 of the step.
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(a.ranks[r].stage, r);
    EXPECT_EQ(a.ranks[r].forwards, 16);
    EXPECT_NEAR(a.ranks[r].bubble_pct, 100.0 * 3 / 19, 1e-6);
  }
}

TEST(PipelineDetectTest, MegatronWithTransferLatencyMatchesTheSimulatorPerRank) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs = Uniform(1, 2, 0.05);
  auto sim = sim::Simulate(*s, costs);
  ASSERT_TRUE(sim.ok());
  const TraceAnalysis a = SynthAndAnalyze(*s, costs);
  EXPECT_EQ(a.pipeline.schedule_name, "1f1b") << a.pipeline.schedule_note;
  for (int r = 0; r < 4; ++r) {
    const RankResult& rr = a.ranks[r];
    EXPECT_NEAR(rr.bubble_pct, 100 * sim->ranks[r].idle_ms / sim->makespan_ms, 1e-5) << r;
    // The split: a receive posted early waits inside the send/recv kernel.
    EXPECT_NEAR(rr.bubble_us, rr.pure_idle_us + rr.p2p_wait_us, 1e-6);
    if (r > 0) {
      EXPECT_GT(rr.p2p_wait_us, 0) << r;
    }
  }
}

TEST(PipelineDetectTest, MegatronWithoutPeerMetadataIsNotAPipeline) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {2, 1, 4});
  ASSERT_TRUE(s.ok());
  SynthOptions so;
  so.no_metadata = true;
  const TraceAnalysis a = SynthAndAnalyze(*s, Uniform(1, 2, 0), so);
  EXPECT_FALSE(a.pipeline.detected);
  EXPECT_NE(a.pipeline.detect_note.find("none naming its peer"), std::string::npos)
      << a.pipeline.detect_note;
  EXPECT_STREQ(a.pipeline.GapTerm(), "idle");
}

TEST(PipelineDetectTest, PyTorchPipeliningTracesKeepTheirAnnotationsAndGetStages) {
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {4, 2, 8});
  ASSERT_TRUE(s.ok());
  const std::string dir = TestDir("pp");
  ASSERT_TRUE(WriteSynthTrace(*s, Uniform(1, 2, 0.05), {}, dir).ok());
  LoadedTraces loaded = LoadTraces(*ExpandTracePaths({dir}));
  auto a = Analyze(loaded.traces, {});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->pipeline.detected);
  EXPECT_EQ(a->pipeline.source, "PP: annotations");
  EXPECT_EQ(a->pipeline.schedule_name, "interleaved-1f1b");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(a->ranks[r].stage, r);
  // The send/recv graph agrees: one chain through the four ranks, looped.
  ASSERT_EQ(a->pipeline.chains.size(), 1u);
  EXPECT_EQ(a->pipeline.chains[0], (std::vector<int64_t>{0, 1, 2, 3}));
  std::filesystem::remove_all(dir);
}

// The shared real traces (DDP all-reduce, DLRM all-to-all): no pipeline, and the report says
// "idle" everywhere, never "bubble".
TEST(PipelineDetectTest, SharedRealTracesAreNotPipelines) {
  const std::string root = testing::SharedTracesDir();
  if (root.empty()) GTEST_SKIP() << "shared traces not found";
  for (const char* name : {"hta_ddp_allreduce_rank0", "hta_ddp_allreduce_5step_rank1",
                           "hta_sampled_2rank", "param_dlrm_8rank"}) {
    SCOPED_TRACE(name);
    auto files = ExpandTracePaths({root + "/" + name});
    ASSERT_TRUE(files.ok()) << files.status().message();
    auto a = AnalyzeLoaded(LoadTraces(*files), {});
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_FALSE(a->pipeline.detected) << a->pipeline.detect_note;
    EXPECT_FALSE(a->pipeline.detect_note.empty());
    EXPECT_EQ(a->pipeline.schedule_name, "unknown");
    EXPECT_STREQ(a->pipeline.GapTerm(), "idle");
    for (const RankResult& r : a->ranks) EXPECT_EQ(r.stage, -1);
    const std::string text = AnalysisText(*a);
    EXPECT_EQ(text.find("bubble"), std::string::npos) << text;
    EXPECT_NE(text.find("idle %"), std::string::npos);
    JsonWriter w(0);
    WriteAnalysisJson(w, *a);
    EXPECT_NE(w.str().find("\"detected\":false"), std::string::npos);
    EXPECT_NE(w.str().find("\"gap_term\":\"idle\""), std::string::npos);
  }
}

// Send/recv peers as the detection sees them.
PipeRank Rank(int64_t rank, std::vector<PipePeer> transfers, std::string ops = "",
              std::vector<std::vector<PipePeer>> p2p = {}) {
  PipeRank r;
  r.rank = rank;
  r.transfers = std::move(transfers);
  r.p2p_kernels = static_cast<int64_t>(r.transfers.size());
  r.ops = std::move(ops);
  r.p2p = std::move(p2p);
  r.has_autograd = true;
  return r;
}

TEST(PipelineDetectTest, OneWayRingIsNotAPipeline) {
  std::vector<PipeRank> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(r, {{true, (r + 1) % 4}, {false, (r + 3) % 4}}));
  }
  const PipelineDetection d = DetectPipeline(ranks);
  EXPECT_FALSE(d.detected);
  EXPECT_NE(d.note.find("one way only"), std::string::npos) << d.note;
  EXPECT_EQ(d.stage, (std::vector<int>{-1, -1, -1, -1}));
}

TEST(PipelineDetectTest, EvenTwoWayRingIsNotAPipeline) {
  std::vector<PipeRank> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(
        r, {{true, (r + 1) % 4}, {false, (r + 3) % 4}, {true, (r + 3) % 4}, {false, (r + 1) % 4}}));
  }
  const PipelineDetection d = DetectPipeline(ranks);
  EXPECT_FALSE(d.detected);
  EXPECT_NE(d.note.find("ring"), std::string::npos) << d.note;
}

TEST(PipelineDetectTest, StarIsNotAPipeline) {
  std::vector<PipeRank> ranks;
  ranks.push_back(Rank(0, {{true, 1}, {false, 1}, {true, 2}, {false, 2}, {true, 3}, {false, 3}}));
  for (int r = 1; r < 4; ++r) ranks.push_back(Rank(r, {{true, 0}, {false, 0}}));
  const PipelineDetection d = DetectPipeline(ranks);
  EXPECT_FALSE(d.detected);
  EXPECT_NE(d.note.find("more than a pipeline stage's two neighbours"), std::string::npos)
      << d.note;
}

TEST(PipelineDetectTest, ChainWithAnUnloadedRankGivesNoStages) {
  // Ranks 0 and 1 loaded; rank 1 also exchanges with rank 2, whose trace is missing.
  std::vector<PipeRank> ranks;
  ranks.push_back(Rank(0, {{true, 1}, {false, 1}}, "FPB", {{{true, 1}}}));
  ranks.push_back(Rank(1, {{false, 0}, {true, 0}, {true, 2}, {false, 2}}));
  const PipelineDetection d = DetectPipeline(ranks);
  EXPECT_TRUE(d.detected);
  ASSERT_EQ(d.chains.size(), 1u);
  EXPECT_EQ(d.chains[0], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(d.stage, (std::vector<int>{-1, -1}));
  EXPECT_EQ(d.schedule, "unknown");
  EXPECT_NE(d.note.find("not loaded"), std::string::npos) << d.note;
}

TEST(PipelineDetectTest, TwoReplicasAreTwoChains) {
  // Data-parallel replicas of a two-stage pipeline: 0 -> 2 and 1 -> 3.
  std::vector<PipeRank> ranks;
  ranks.push_back(Rank(0, {{true, 2}, {false, 2}}, "FPB", {{{true, 2}}}));
  ranks.push_back(Rank(1, {{true, 3}, {false, 3}}, "FPB", {{{true, 3}}}));
  ranks.push_back(Rank(2, {{false, 0}, {true, 0}}, "PFB", {{{false, 0}}}));
  ranks.push_back(Rank(3, {{false, 1}, {true, 1}}, "PFB", {{{false, 1}}}));
  const PipelineDetection d = DetectPipeline(ranks);
  ASSERT_TRUE(d.detected);
  ASSERT_EQ(d.chains.size(), 2u);
  EXPECT_EQ(d.stage, (std::vector<int>{0, 0, 1, 1}));
}

// Hostile input stays bounded: many ranks with many transfers to scattered peers and long
// operation strings. The answers say the work was refused or cut; how long it takes is
// bench/trace_bench.cc's BM_DetectPipelineHostile (a timed assertion here failed on a busy
// machine).
TEST(PipelineDetectTest, LargeHostileInputIsBounded) {
  const PipelineDetection d = DetectPipeline(testing::HostilePipeRanks());
  EXPECT_FALSE(d.detected);
  // A long two-rank chain with very many forwards: the matching is refused, not attempted.
  std::vector<PipeRank> two;
  std::string ops0, ops1;
  std::vector<std::vector<PipePeer>> p0, p1;
  for (int k = 0; k < 200'000; ++k) {
    ops0 += "FPB";
    p0.push_back({{true, 1}, {false, 1}});
    ops1 += "PFBP";
    p1.push_back({{false, 0}});
    p1.push_back({{true, 0}});
  }
  two.push_back(Rank(0, {{true, 1}, {false, 1}}, ops0, p0));
  two.push_back(Rank(1, {{false, 0}, {true, 0}}, ops1, p1));
  const PipelineDetection d2 = DetectPipeline(two);
  EXPECT_TRUE(d2.detected);
  EXPECT_EQ(d2.schedule, "unknown");
  EXPECT_NE(d2.schedule_note.find("too many"), std::string::npos) << d2.schedule_note;
  EXPECT_EQ(d2.forwards[0], 200'000);
  EXPECT_EQ(d2.actions[0].size(), 10'000u);
}

// A batch_isend_irecv kernel carries no metadata: its peers come from the record_param_comms
// operators launched just before it on the same thread.
TEST(PipelineDetectTest, BatchedKernelTakesThePeersOfTheCallsBeforeIt) {
  const std::string call =
      R"J({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": %TS%, "dur": 1, "args": {"Collective name": "%C%", "%K%": %P%}})J";
  auto mk = [&](double ts, const char* c, const char* k, int peer) {
    std::string e = call;
    auto rep = [&](const std::string& a, const std::string& b) {
      e.replace(e.find(a), a.size(), b);
    };
    rep("%TS%", fmt::format("{}", ts));
    rep("%C%", c);
    rep("%K%", k);
    rep("%P%", std::to_string(peer));
    return e;
  };
  testing::TraceBuilder b;
  b.Distributed(1, 3)
      .Raw(mk(10, "send", "Dst Rank", 2))
      .Raw(mk(11, "recv", "Src Rank", 0))
      .Launch(7, 12)
      .Kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, 20, 5, 7)
      .Raw(mk(30, "recv", "Src Rank", 2))
      .Launch(8, 31)
      .Kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, 40, 5, 8)
      .Launch(9, 50)
      .Kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, 60, 5, 9);
  const std::string dir = TestDir("batched");
  std::filesystem::create_directories(dir);
  b.Write(dir + "/rank1.json");
  LoadedTraces loaded = LoadTraces({dir + "/rank1.json"});
  ASSERT_EQ(loaded.traces.size(), 1u) << loaded.errors[0].status.message();
  const auto peers = BatchedP2pPeers(loaded.traces[0]);
  ASSERT_EQ(peers.size(), 2u);  // the third kernel had no calls before it
  EXPECT_EQ(peers[0].second, (std::vector<PipePeer>{{true, 2}, {false, 0}}));
  EXPECT_EQ(peers[1].second, (std::vector<PipePeer>{{false, 2}}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace infralens::trace
