// The five-part explanation and the scenarios: structure, closed forms, and contrasts whose
// direction follows from the physics (more microbatches, less bubble; TP inside a node, less TP
// time; CP splits activations by about cp).
#include "lab/explain.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "lab/scenarios.h"
#include "model/presets.h"
#include "plan/testing.h"

namespace infralens::lab {

using plan::Evaluate;
using plan::Layout;
using plan::PlanRequest;
using plan::RankMemory;

namespace {

double Num(const Section& s, const std::string& name) {
  for (const Quantity& q : s.numbers) {
    if (q.name == name) return q.value;
  }
  ADD_FAILURE() << "no " << name << " in " << s.name;
  return 0;
}

TEST(ExplainTest, ClosedFormBubbles) {
  // Narayanan et al. SC21, sec. 2.2: (p-1)/(m+p-1) and (p-1)/(v m+p-1).
  EXPECT_DOUBLE_EQ(ClosedFormBubble(schedule::ScheduleKind::k1F1B, 4, 1, 8), 3.0 / 11);
  EXPECT_DOUBLE_EQ(ClosedFormBubble(schedule::ScheduleKind::kGPipe, 8, 1, 8), 7.0 / 15);
  EXPECT_DOUBLE_EQ(ClosedFormBubble(schedule::ScheduleKind::kInterleaved1F1B, 4, 2, 8), 3.0 / 19);
  EXPECT_DOUBLE_EQ(ClosedFormBubble(schedule::ScheduleKind::k1F1B, 1, 1, 8), 0);
  EXPECT_LT(ClosedFormBubble(schedule::ScheduleKind::kZBV, 4, 2, 8), 0);
}

// Issue 27: under ZeRO-3 with experts, what one GPU holds is the dense weights over dp x cp and
// the experts over the dp x cp / ep ranks that share them (Mixtral tp2 pp4 ep8 on 64 GPUs: dp 8,
// so experts are not sharded at all); in BF16 that is 2 bytes per parameter of the weights.
TEST(ExplainTest, ParametersPerGpuUnderZero3WithExperts) {
  const PlanRequest req = plan::testing::PresetRequest("mixtral-8x7b", 8, 256, 4096);
  Layout l = plan::testing::Degrees(2, 4, 8, 3);
  l.parallel.ep = 8;
  auto r = Evaluate(req, l);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Explanation e = Explain(req, *r, nullptr);
  const RankMemory& w = r->memory.worst();
  ASSERT_GT(w.expert_parameters, 0);
  const double held = Num(e.mechanism, "parameters_per_gpu");
  EXPECT_DOUBLE_EQ(held, (w.parameters - w.expert_parameters) / 8 + w.expert_parameters / 1);
  EXPECT_NEAR(2 * held, w.weights_bytes, 1e-6 * w.weights_bytes);
  // By hand, from Mixtral's shape (h 4096, 8 KV heads of 128, 8 experts of 14336, vocab 32000):
  // pipeline rank 0 holds 8 of the 32 layers and the embedding. Per layer: attention
  // 2 x 4096 x 4096 + 2 x 4096 x 1024 = 41,943,040, two norms 8,192, the router 4096 x 8 =
  // 32,768: 41,984,000, over tp 2 as memory.cc counts every layer parameter (Megatron keeps the
  // norms and the router whole on each TP rank: 20,480 more a layer, 0.003%) = 20,992,000;
  // x 8 = 167,936,000, plus the embedding 32000 x 4096 / 2 = 65,536,000: 233,472,000 dense,
  // sharded over dp 8 by ZeRO-3. Experts: 8 / ep 8 = 1 per rank, 3 x 4096 x 14336 / 2 =
  // 88,080,384 a layer, x 8 = 704,643,072, not sharded (dp 8 / ep 8 = 1 rank shares them).
  // 233,472,000 / 8 + 704,643,072 = 733,827,072.
  EXPECT_DOUBLE_EQ(held, 733'827'072);
}

// Activation offloading is said in the tradeoff, with the bytes the memory model sends to the
// host and the link they cross; it is no communication, so the exposed-communication sentence
// does not list it.
TEST(ExplainTest, OffloadingIsItsOwnTradeoff) {
  PlanRequest req = plan::testing::PresetRequest("llama3-8b", 1, 16, 4096);
  req.cpu_offload_layers = 16;
  Layout l = plan::testing::Degrees(1, 1, 8, 1);
  l.recompute = model::Recompute::kNone;
  auto r = Evaluate(req, l);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Explanation e = Explain(req, *r, nullptr);
  std::string offload, exposed;
  for (const std::string& sentence : e.tradeoff.sentences) {
    if (sentence.starts_with("Activation offloading")) offload = sentence;
    if (sentence.starts_with("Exposed communication")) exposed = sentence;
  }
  EXPECT_NE(offload.find("first 16 layers"), std::string::npos) << offload;
  EXPECT_NE(offload.find("64 GB/s host link"), std::string::npos) << offload;  // PCIe Gen5 x16
  EXPECT_EQ(exposed.find("offloading"), std::string::npos) << exposed;
}

// A selective layout that does not fit names the first heavier module list with which it does:
// Llama 3 70B on 32 H100s, tp 2, dp 16, FSDP, one 8,192-token sequence. The attention core's list
// stores about 34 h bytes per token and layer over tp (80 x 8,192 x 34 x 8,192 / 2 = 91 GB); with
// the dense MLP's 2h + 6f of them recomputed, 29.5 GB, beside 70.6B x 16 B / 32 = 35 GB of sharded
// model state.
TEST(ExplainTest, ALayoutThatDoesNotFitNamesTheModulesThatWouldFit) {
  const PlanRequest req = plan::testing::PresetRequest("llama3-70b", 4, 32, 8192);
  const Layout l = plan::testing::Degrees(2, 1, 16, 3);
  auto r = Evaluate(req, l);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->memory.fits);
  std::string said;
  for (const std::string& sentence : Explain(req, *r, nullptr).problem.sentences) {
    if (sentence.starts_with("Recomputing")) said = sentence;
  }
  EXPECT_NE(said.find("Recomputing core_attn mlp under selective recompute "
                      "(--recompute-modules core_attn,mlp)"),
            std::string::npos)
      << said;
  Layout heavier = l;
  heavier.recompute_modules =
      model::RecomputeModules{model::kRecomputeCoreAttn | model::kRecomputeMlp};
  auto m = plan::EvaluateMemory(req, heavier);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->memory.fits);
  EXPECT_NE(said.find(fmt::format("keeps {:.1f} GiB per GPU",
                                  m->memory.worst().total_bytes / plan::kGiB)),
            std::string::npos)
      << said;
  // torchtitan's selective recompute takes no list: nothing is suggested.
  PlanRequest titan = req;
  titan.framework = "torchtitan";
  for (const std::string& sentence : Explain(titan, *r, nullptr).problem.sentences) {
    EXPECT_FALSE(sentence.starts_with("Recomputing")) << sentence;
  }
}

TEST(ExplainTest, FiveSectionsFromTheEngine) {
  const PlanRequest req = plan::testing::PresetRequest("llama3-70b", 8, 256, 4096);
  const Layout l = plan::testing::Degrees(8, 4, 2, 1);
  auto r = Evaluate(req, l);
  ASSERT_TRUE(r.ok());
  const Explanation e = Explain(req, *r, nullptr);
  std::vector<std::string> names;
  for (const Section* s : e.sections()) {
    names.push_back(s->name);
    EXPECT_FALSE(s->sentences.empty()) << s->name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"problem", "mechanism", "communication", "tradeoff",
                                             "measurement"}));
  // Model state: 16 bytes per parameter (BF16 weights and gradients, FP32 Adam).
  const double params = Num(e.problem, "parameters");
  EXPECT_DOUBLE_EQ(Num(e.problem, "model_state_bytes"), 16 * params);
  EXPECT_GT(params, 70e9);
  EXPECT_LT(params, 71e9);
  // One sentence per collective plus the total.
  EXPECT_EQ(e.communication.sentences.size(), r->comm.items.size() + 1);
  EXPECT_DOUBLE_EQ(Num(e.measurement, "expected_step_s"), r->time.step_s);
  EXPECT_DOUBLE_EQ(Num(e.tradeoff, "bubble_fraction"), r->bubble_fraction);
  const std::string md = RenderExplanationMarkdown(e);
  for (const char* h :
       {"## Problem", "## Mechanism", "## Communication", "## Tradeoff", "## Measurement"}) {
    EXPECT_NE(md.find(h), std::string::npos) << h;
  }
  EXPECT_NE(RenderExplanationJson(e).find("\"name\": \"measurement\""), std::string::npos);
}

TEST(ScenariosTest, AtLeastEightEachAnswered) {
  std::set<std::string> names;
  for (const ScenarioInfo& s : Scenarios()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_FALSE(s.question.empty());
  }
  EXPECT_GE(names.size(), 8u);
  EXPECT_EQ(RunScenario("nope").status().code(), StatusCode::kNotFound);
}

TEST(ScenariosTest, ContrastsPointTheRightWay) {
  auto dp = RunScenario("dp64-oom");
  ASSERT_TRUE(dp.ok()) << dp.status().message();
  EXPECT_FALSE(dp->chosen.memory.fits);
  EXPECT_EQ(dp->explanation.question, Scenarios()[1].question);

  auto few = RunScenario("few-microbatches");
  ASSERT_TRUE(few.ok()) << few.status().message();
  // pp=8 with m=8: the 1F1B closed form says 7/15 of the time idles.
  EXPECT_NEAR(few->chosen.bubble_fraction, 7.0 / 15, 0.05);
  EXPECT_LT(Num(few->explanation.tradeoff, "m64_bubble_fraction"), few->chosen.bubble_fraction / 2);

  auto tp = RunScenario("tp-across-nodes");
  ASSERT_TRUE(tp.ok()) << tp.status().message();
  EXPECT_GT(tp->chosen.time.tp_comm_s, Num(tp->explanation.tradeoff, "tp8_tp_comm_s"));

  auto cp = RunScenario("long-context-cp");
  ASSERT_TRUE(cp.ok()) << cp.status().message();
  const double ratio = Num(cp->explanation.problem, "cp1_activations_bytes") /
                       cp->chosen.memory.worst().activations_bytes;
  EXPECT_GT(ratio, 3.5);  // cp=4 stores a quarter of each sequence
  EXPECT_LT(ratio, 4.5);

  auto net = RunScenario("fsdp-vs-zero1-slow-network");
  ASSERT_TRUE(net.ok()) << net.status().message();
  // FSDP moves three weight-sized passes every microbatch; on one 100 Gb/s NIC per node it loses to
  // ZeRO-1's once-per-step reduce-scatter + all-gather, and the fast network closes most of the
  // gap.
  EXPECT_GT(net->chosen.time.step_s, Num(net->explanation.tradeoff, "zero1_slow_step_s"));
  EXPECT_LT(Num(net->explanation.tradeoff, "fsdp_fast_step_s"), net->chosen.time.step_s);

  auto moe = RunScenario("moe-all-to-all");
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  EXPECT_GT(moe->chosen.time.ep_comm_s, Num(moe->explanation.tradeoff, "ep_inside_node_ep_comm_s"));
}

}  // namespace
}  // namespace infralens::lab
