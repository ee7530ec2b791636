// A plan compared with a trace term by term, on hand-made traces whose answers are worked out in
// the comments; a schedule compared with Megatron-style traces (no PP: annotations) whose pipeline
// ranks come from the send/recv peers.
#include "trace/compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "io/schedule_output.h"
#include "sim/compare.h"
#include "sim/simulator.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/synth.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TraceBuilder;

using testing::kAllReduce;

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
    auto t = trace::ReadKinetoTraceBytes(b.Json(), fmt::format("rank{}", r));
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

// The compute the planner slows beside overlapped collectives (breakdown_s.contention) runs as
// longer computation kernels: the trace's compute term compares against compute + contention
// (0.5 + 0.1 ms), and no row of its own.
TEST(CompareTest, ContentionIsComputedTime) {
  std::string plan = kPlan;
  const std::string before = R"("optimizer": 0.00001},)";
  ASSERT_NE(plan.find(before), std::string::npos);
  plan.replace(plan.find(before), before.size(), R"("optimizer": 0.00001, "contention": 0.0001},)");
  auto p = ReadPrediction(plan, "plan.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto a = Analyze(FourRanks(), {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  Comparison c = Compare(*p, *a);
  const CompareRow* compute = Row(c, "term: compute");
  ASSERT_NE(compute, nullptr);
  EXPECT_NEAR(*compute->predicted, 0.6, 1e-12);
  EXPECT_EQ(Row(c, "term: contention"), nullptr);
}

// behaviour.p2p_blocking as `plan --json` writes it (the data file's word) and as plans written
// by earlier versions hold it (two booleans): each rebuilds the same way of waiting.
// kPlan with `behaviour` as its request's behaviour object, read back: what a plan rebuilds.
plan::FrameworkBehaviour RebuiltBehaviour(const std::string& behaviour) {
  const std::string plan = kPlan;
  const std::string json =
      plan.substr(0, plan.rfind('}')) + R"(, "request": {"behaviour": )" + behaviour + "}}";
  auto p = ReadPrediction(json, "plan.json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p->rebuild.behaviour : plan::FrameworkBehaviour{};
}

TEST(CompareTest, PipelineWaitReadAsWordOrOlderBooleans) {
  auto with = [](const std::string& behaviour) { return RebuiltBehaviour(behaviour).p2p_wait; };
  EXPECT_EQ(with(R"({"p2p_blocking": "single_chunk"})"), plan::P2pWait::kBlockingSingleChunk);
  EXPECT_EQ(with(R"({"p2p_blocking": "yes"})"), plan::P2pWait::kBlocking);
  EXPECT_EQ(with(R"({"p2p_blocking": "no"})"), plan::P2pWait::kOverlapped);
  EXPECT_EQ(with(R"({"p2p_blocking": true})"), plan::P2pWait::kBlocking);
  EXPECT_EQ(with(R"({"p2p_blocking": false, "p2p_blocking_single_chunk": true})"),
            plan::P2pWait::kBlockingSingleChunk);
  EXPECT_EQ(with(R"({"p2p_blocking": false})"), plan::P2pWait::kOverlapped);
}

// behaviour.recompute_modules as `plan --json` writes it rebuilds the same modules; a plan from
// before the field, or with a value that does not parse, keeps Megatron-Core's core_attn.
TEST(CompareTest, RecomputeModulesReadFromThePlan) {
  auto with = [](const std::string& behaviour) {
    return RebuiltBehaviour(behaviour).recompute_modules;
  };
  EXPECT_EQ(with(R"({"recompute_modules": "mla_up_proj mlp"})").bits,
            model::kRecomputeMlaUpProj | model::kRecomputeMlp);
  EXPECT_EQ(with(R"({})"), model::RecomputeModules{});
  EXPECT_EQ(with(R"({"recompute_modules": "mlp mlp"})"), model::RecomputeModules{});
}

// A prediction file is the user's: a field of another type than the reader expects is the
// default, never an exception (the fuzz target prediction_json_fuzz found json::value throwing on
// a number where a name was read), and a name is never read as a path.
TEST(CompareTest, FieldsOfAnotherTypeAreDefaults) {
  for (const char* text : {R"({"step_time_s": 1, "name": 5})",
                           R"({"makespan": 1, "ranks": [], "schedule": 7, "time_unit": [3]})",
                           R"({"makespan": 1, "ranks": [{"actions": [{"type": 4}]}]})",
                           R"({"plan": {"step_time_s": 1, "comm": [{"communication": 1,
                               "group": [], "collective": {}, "link": 2}]}})"}) {
    StatusOr<Prediction> p = InvalidArgument("not read");
    EXPECT_NO_THROW(p = ReadPrediction(text, "plan.json")) << text;
    if (!p.ok()) EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << text;
  }
  auto named = ReadPrediction(R"({"step_time_s": 1, "name": 5})", "plan.json");
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->name, "plan");
  auto comm = ReadPrediction(
      R"({"plan": {"step_time_s": 1, "comm": [{"communication": 1, "group": "tp"}]}})", "p.json");
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  ASSERT_EQ(comm->comm.size(), 1u);
  EXPECT_EQ(comm->comm[0].name, "");
  EXPECT_EQ(comm->comm[0].group, "tp");
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

// The schedule engine's prediction, as `infralens schedule --json` writes it (with actions).
Prediction SchedulePrediction(const schedule::Schedule& s, const sim::Costs& costs) {
  auto r = sim::Simulate(s, costs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  JsonWriter w;
  io::WriteScheduleJson(w, s, costs, *r);
  auto p = ReadPrediction(w.str(), "schedule.json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// `trace synth --style megatron` of `s` (no PP: annotations), analysed. Each element of
// `replicas` is one copy of the pipeline, pipeline rank k running as global rank replica[k]: each
// file's distributedInfo rank and world size and every send/recv peer ("Dst Rank", "Src Rank",
// and the peer's group "Rank", the synth's group holding ranks 0..p-1) are renamed, so the stage
// order need not be the rank order. No replicas: one, on ranks 0..p-1.
TraceAnalysis MegatronAnalysis(const schedule::Schedule& s, const sim::Costs& costs,
                               std::vector<std::vector<int64_t>> replicas = {}) {
  SynthOptions so;
  so.megatron = true;
  std::vector<SynthFile> files;
  auto written = SynthTraceFiles(s, costs, so, &files);
  EXPECT_TRUE(written.ok()) << written.status().message();
  if (replicas.empty()) {
    replicas.emplace_back();
    for (int k = 0; k < s.pp; ++k) replicas[0].push_back(k);
  }
  const size_t world = replicas.size() * files.size();
  std::vector<std::string> contents, labels;
  for (const std::vector<int64_t>& rank_of_stage : replicas) {
    for (size_t k = 0; k < files.size(); ++k) {
      nlohmann::json j = nlohmann::json::parse(files[k].content);
      j["distributedInfo"]["rank"] = rank_of_stage[k];
      j["distributedInfo"]["world_size"] = world;
      for (nlohmann::json& e : j["traceEvents"]) {
        auto args = e.find("args");
        if (args == e.end() || !args->is_object()) continue;
        for (const char* key : {"Dst Rank", "Src Rank", "Rank"}) {
          auto it = args->find(key);
          if (it != args->end() && it->is_number_integer()) *it = rank_of_stage[it->get<size_t>()];
        }
      }
      contents.push_back(j.dump());
      labels.push_back(fmt::format("rank{}.json", rank_of_stage[k]));
    }
  }
  std::vector<TraceBytes> in;
  for (size_t k = 0; k < contents.size(); ++k) in.push_back({labels[k], contents[k]});
  auto a = AnalyzeLoaded(LoadTraceBytes(in), {});
  EXPECT_TRUE(a.ok()) << a.status().message();
  return *a;
}

sim::Costs Uniform(double f, double b) {
  sim::Costs c;
  c.uniform.f_ms = f;
  c.uniform.b_ms = b;
  c.p2p_ms = 0;
  return c;
}

// Four stages at f = b = 1 ms but the last, at f = b = 2 ms.
sim::Costs SlowLastOfFour() {
  sim::Costs c = Uniform(1, 1);
  c.per_stage = {c.uniform, c.uniform, c.uniform, {}};
  c.per_stage[3].f_ms = 2;
  c.per_stage[3].b_ms = 2;
  return c;
}

bool HasNote(const Comparison& c, const std::string& part) {
  for (const std::string& n : c.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string Notes(const Comparison& c) { return Join(c.notes, "\n"); }

// Pipeline rank k's bubble row names rank chain[k], and both sides are want_pct[k] percent.
void ExpectBubbleRows(const Comparison& c, const std::vector<int64_t>& chain,
                      const std::vector<double>& want_pct) {
  for (size_t k = 0; k < chain.size(); ++k) {
    SCOPED_TRACE(k);
    const CompareRow* r = Row(c, fmt::format("bubble, pipeline rank {} (rank {})", k, chain[k]));
    ASSERT_NE(r, nullptr);
    EXPECT_NEAR(*r->predicted, want_pct[k], 1e-9);
    EXPECT_NEAR(*r->measured, want_pct[k], 1e-6);
  }
}

// Every pipeline rank k ran the predicted order, on rank chain[k].
void ExpectSameOrder(const Comparison& c, const std::vector<int64_t>& chain) {
  ASSERT_EQ(c.order.size(), chain.size());
  for (size_t k = 0; k < chain.size(); ++k) {
    EXPECT_TRUE(c.order[k].same) << k << ": " << c.order[k].predicted_action << " vs "
                                 << c.order[k].measured_action;
    EXPECT_EQ(c.order[k].rank, chain[k]);
  }
}

TEST(CompareTest, Megatron1F1BMappedBySendRecvPeers) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs = Uniform(1, 1);
  const TraceAnalysis a = MegatronAnalysis(*s, costs);
  ASSERT_FALSE(a.pipeline.recovered);  // nothing from PP: annotations
  const Comparison c = Compare(SchedulePrediction(*s, costs), a);
  EXPECT_EQ(c.mapping.source, "send/recv peers");
  ASSERT_EQ(c.mapping.chains.size(), 1u);
  EXPECT_EQ(c.mapping.chains[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.mapping.schedule, "1f1b");
  // 1F1B, equal f = b = 1 on every stage, free transfers: the makespan is (m + p - 1)(f + b) =
  // 22, each rank computes m(f + b) = 16, so each is idle (p - 1) / (m + p - 1) = 3/11.
  ExpectBubbleRows(c, {0, 1, 2, 3}, std::vector<double>(4, 100.0 * 3 / 11));
  ExpectSameOrder(c, {0, 1, 2, 3});
  EXPECT_TRUE(HasNote(c,
                      "pipeline ranks recovered from send/recv peers: pipeline rank k is the "
                      "rank at stage k of the chain 0 -> 1 -> 2 -> 3"))
      << Notes(c);
  const std::string text = ComparisonText(c);
  EXPECT_NE(text.find("action order, predicted vs recovered from send/recv peers (labels of the "
                      "matched schedule \"1f1b\")"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("PP: annotations"), std::string::npos) << text;
  JsonWriter w(0);
  WriteComparisonJson(w, c);
  auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["pipeline_mapping"]["source"], "send/recv peers");
  EXPECT_EQ(j["pipeline_mapping"]["chains"], nlohmann::json::parse("[[0, 1, 2, 3]]"));
  EXPECT_EQ(j["pipeline_mapping"]["schedule"], "1f1b");
  EXPECT_EQ(j["order"][3]["same"], true);
}

TEST(CompareTest, MegatronInterleavedMappedBySendRecvPeers) {
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {4, 2, 8});
  ASSERT_TRUE(s.ok());
  // Per rank per microbatch f = 1, b = 2; each of the v = 2 chunks takes half.
  const sim::Costs costs = sim::ChunkCosts(Uniform(1, 2), 2);
  const Comparison c = Compare(SchedulePrediction(*s, costs), MegatronAnalysis(*s, costs));
  EXPECT_EQ(c.mapping.source, "send/recv peers");
  EXPECT_EQ(c.mapping.schedule, "interleaved-1f1b");
  // Megatron's interleaved schedule (m a multiple of p): the ramp shrinks to (p - 1)(f + b) / v,
  // so each rank is idle (p - 1) / (v m + p - 1) = 3/19 of the step.
  ExpectBubbleRows(c, {0, 1, 2, 3}, std::vector<double>(4, 100.0 * 3 / 19));
  ExpectSameOrder(c, {0, 1, 2, 3});
}

// The stage order is not the rank order: stage k runs on rank {3, 1, 0, 2}[k], and the last stage
// is the slow one, so the rows and the order only agree when the mapping follows the chain.
TEST(CompareTest, MegatronStagesOnPermutedRanksFollowTheChain) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs = SlowLastOfFour();
  const std::vector<int64_t> chain = {3, 1, 0, 2};
  const TraceAnalysis a = MegatronAnalysis(*s, costs, {chain});
  const Comparison c = Compare(SchedulePrediction(*s, costs), a);
  EXPECT_EQ(c.mapping.source, "send/recv peers");
  ASSERT_EQ(c.mapping.chains.size(), 1u);
  EXPECT_EQ(c.mapping.chains[0], chain);
  // By hand: the last stage (f = b = 2) is the bottleneck. Its first input arrives after the
  // forwards of stages 0..2 (3 ms); from then on it alternates F and B without a break (the
  // others, at half its cost per microbatch, always have its next input ready), m(f + b) = 32
  // ms; then the last backward goes back through stages 2..0 (3 ms). Makespan 38 ms: the last
  // stage is idle 38 - 32 = 6 ms (6/38), each other stage 38 - 16 = 22 ms (22/38).
  ExpectBubbleRows(c, chain, {100.0 * 22 / 38, 100.0 * 22 / 38, 100.0 * 22 / 38, 100.0 * 6 / 38});
  ExpectSameOrder(c, chain);
  EXPECT_TRUE(HasNote(c, "the chain 3 -> 1 -> 0 -> 2")) << Notes(c);
}

// Two data-parallel replicas of the pipeline, each on ranks out of stage order: a row is the
// mean over the ranks at that stage, and the order is checked on the first chain.
TEST(CompareTest, TwoReplicasGiveTheMeanPerStage) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs = SlowLastOfFour();
  const std::vector<int64_t> first = {3, 1, 0, 2}, second = {6, 7, 5, 4};
  const TraceAnalysis a = MegatronAnalysis(*s, costs, {first, second});
  const Comparison c = Compare(SchedulePrediction(*s, costs), a);
  EXPECT_EQ(c.mapping.source, "send/recv peers");
  ASSERT_EQ(c.mapping.chains.size(), 2u);
  // The detection lists chains from the one holding the lowest rank.
  EXPECT_EQ(c.mapping.chains[0], first);
  EXPECT_EQ(c.mapping.chains[1], second);
  // Both replicas run the same steps, so each stage's mean is the one replica's value, worked by
  // hand in MegatronStagesOnPermutedRanksFollowTheChain: 6/38 on the last stage, 22/38 elsewhere.
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    const CompareRow* r = Row(
        c, fmt::format("bubble, pipeline rank {} (ranks {}, {}: mean)", k, first[k], second[k]));
    ASSERT_NE(r, nullptr);
    EXPECT_NEAR(*r->measured, 100.0 * (k == 3 ? 6.0 : 22.0) / 38, 1e-6);
  }
  ASSERT_EQ(c.order.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_TRUE(c.order[k].same) << k;
    EXPECT_EQ(c.order[k].rank, first[k]);
  }
  EXPECT_TRUE(HasNote(c, "each of 2 chains (3 -> 1 -> 0 -> 2; 6 -> 7 -> 5 -> 4)")) << Notes(c);
}

// Data-parallel ranks (all-reduces, no send/recv): no pipeline, and the note says why in the
// detection's words.
TEST(CompareTest, DataParallelTraceGivesTheDetectionsReason) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  auto a = Analyze(FourRanks(), {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_FALSE(a->pipeline.detected);
  const Comparison c = Compare(SchedulePrediction(*s, Uniform(1, 1)), *a);
  EXPECT_TRUE(c.order.empty());
  EXPECT_EQ(c.mapping.source, "");
  EXPECT_TRUE(HasNote(c,
                      "action order not compared: the traces hold no pipeline: no send/recv "
                      "kernels"))
      << Notes(c);
  EXPECT_TRUE(HasNote(c,
                      "no pipeline in the traces (no send/recv kernels): the "
                      "per-pipeline-rank rows are the loaded ranks in rank order"))
      << Notes(c);
  EXPECT_FALSE(HasNote(c, "PP: annotations")) << Notes(c);
  JsonWriter w(0);
  WriteComparisonJson(w, c);
  EXPECT_TRUE(nlohmann::json::parse(w.str())["pipeline_mapping"]["source"].is_null());
}

// A zero-bubble prediction against a trace without PP: annotations: the trace shows ZB-H1's I
// and W as backward work, and its folded order reads as plain 1F1B. The chain still maps the
// pipeline ranks (their bubble rows are measured), but no order is compared, and the note says
// why, rather than a "differs" at the first I that only says the trace cannot see I and W.
TEST(CompareTest, SplitBackwardPredictionsAreNotOrderCheckedAgainstForwardBackwardTraces) {
  auto s = schedule::Generate(schedule::ScheduleKind::kZBH1, {4, 1, 8});
  ASSERT_TRUE(s.ok());
  const sim::Costs costs = Uniform(1, 1);
  const TraceAnalysis a = MegatronAnalysis(*s, costs);
  ASSERT_TRUE(a.pipeline.detected);
  const Comparison c = Compare(SchedulePrediction(*s, costs), a);
  EXPECT_EQ(c.mapping.source, "send/recv peers");
  EXPECT_TRUE(c.order.empty());
  EXPECT_TRUE(HasNote(c,
                      "action order not compared: the prediction splits backwards into input "
                      "and weight gradients (I, W)"))
      << Notes(c);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NE(Row(c, fmt::format("bubble, pipeline rank {} (rank {})", k, k)), nullptr) << k;
  }
  // The same traces against a 1F1B prediction are order-checked (the guard is the prediction's).
  auto one = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 1, 8});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(a.pipeline.schedule_name, "1f1b") << a.pipeline.schedule_note;
  EXPECT_EQ(Compare(SchedulePrediction(*one, costs), a).order.size(), 4u);
}

}  // namespace
}  // namespace infralens::trace
