// Issue 27: any subset of layout options given to `plan` restricts the search to the layouts that
// keep them all; --tp with --pp gives one layout, evaluated as given; contradictions are usage
// errors naming the flags. Every expectation is a rule stated in the flags' help, checked on each
// ranked layout, or the unrestricted search filtered by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "request/engine_requests.h"

namespace infralens::request {
namespace {

// Llama 3 8B on two DGX H100 nodes (16 GPUs), 128 sequences of 4,096 tokens: a search of a few
// hundred layouts, fast enough for a unit test.
struct Job {
  PlanQuery q;
  std::set<std::string> given = {"--model", "--gpus", "--global-batch", "--seq"};
  Job() {
    q.request.tf.model_name = "llama3-8b";
    q.request.cf.gpus = 16;
    q.request.tf.global_batch = 128;
    q.request.tf.seq = 4096;
    q.top = 1000;
  }
  Job& Set(const std::string& flag) {
    given.insert(flag);
    return *this;
  }
  StatusOr<PlanOutcome> Run() const {
    const std::set<std::string> g = given;
    return ComputePlan(q, [g](const std::string& f) { return g.count(f) > 0; });
  }
};

TEST(PlanSearchConstraintsTest, APinnedPipelineDegreeSearchesTheRest) {
  Job pinned;
  pinned.q.request.cf.pp = 4;
  pinned.Set("--pp");
  auto r = pinned.Run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->evaluated);
  ASSERT_FALSE(r->search.ranked.empty());
  EXPECT_EQ(r->search.constraints, std::vector<std::string>{"pp=4"});
  std::set<int> tps;
  for (const plan::PlanResult& p : r->search.ranked) {
    EXPECT_EQ(p.layout.parallel.pp, 4) << p.layout.ToString();
    tps.insert(p.layout.parallel.tp);
  }
  EXPECT_GT(tps.size(), 1u) << "tp is searched, not left at 1";

  // The winner is the unrestricted search's best layout with pp = 4.
  auto free = Job().Run();
  ASSERT_TRUE(free.ok()) << free.status().message();
  const plan::PlanResult* best = nullptr;
  for (const plan::PlanResult& p : free->search.ranked) {
    if (p.layout.parallel.pp == 4) {
      best = &p;
      break;
    }
  }
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(r->search.ranked.front().layout.ToString(), best->layout.ToString());
  EXPECT_DOUBLE_EQ(r->search.ranked.front().time.step_s, best->time.step_s);
  EXPECT_LT(r->search.evaluated, free->search.evaluated);
}

TEST(PlanSearchConstraintsTest, EveryGivenOptionHoldsOnEveryRankedLayout) {
  Job j;
  j.q.request.cf.tp = 2;
  j.q.request.cf.dp = 2;
  j.q.request.tf.par.vpp = 2;
  j.q.request.cf.order = "pp-dp-cp-ep-tp";
  j.q.request.tf.recompute = "full";
  j.Set("--tp").Set("--dp").Set("--vpp").Set("--order").Set("--recompute");
  auto r = j.Run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->evaluated);
  ASSERT_FALSE(r->search.ranked.empty());
  for (const plan::PlanResult& p : r->search.ranked) {
    const plan::ParallelConfig& par = p.layout.parallel;
    EXPECT_EQ(par.tp, 2);
    EXPECT_EQ(par.dp, 2);
    EXPECT_EQ(par.vpp, 2);
    // tp 2 x dp 2 on 16 GPUs leaves pp x cp = 4; cp is searched only from 32k tokens.
    EXPECT_EQ(par.pp, 4);
    EXPECT_EQ(p.layout.order, "pp-dp-cp-ep-tp");
    EXPECT_EQ(p.layout.recompute, model::Recompute::kFull);
  }
  EXPECT_EQ(r->search.constraints,
            (std::vector<std::string>{"tp=2", "dp=2", "vpp=2", "recompute full",
                                      "order pp-dp-cp-ep-tp"}));
}

// Each option alone (the issue's --tp 4 and --cp 2 among them) searches the rest: more than one
// layout ranked, every one keeping the option, and the output's "searched only" names it.
TEST(PlanSearchConstraintsTest, EachOptionAloneSearchesTheRest) {
  struct Case {
    const char* flag;
    void (*set)(PlanQuery&);
    bool (*holds)(const plan::PlanResult&);
    const char* constraint;
  };
  const Case cases[] = {
      {"--tp", [](PlanQuery& q) { q.request.cf.tp = 4; },
       [](const plan::PlanResult& p) { return p.layout.parallel.tp == 4; }, "tp=4"},
      {"--cp", [](PlanQuery& q) { q.request.cf.cp = 2; },
       [](const plan::PlanResult& p) { return p.layout.parallel.cp == 2; }, "cp=2"},
      {"--zero", [](PlanQuery& q) { q.request.tf.par.zero_stage = 3; },
       [](const plan::PlanResult& p) { return p.layout.parallel.zero_stage == 3; }, "zero=3"},
      {"--micro-batch", [](PlanQuery& q) { q.request.tf.micro_batch = 2; },
       [](const plan::PlanResult& p) { return p.layout.micro_batch == 2; }, "micro-batch 2"},
      {"--first-stage-layers", [](PlanQuery& q) { q.request.tf.par.first_stage_layers = 6; },
       [](const plan::PlanResult& p) {
         return p.layout.parallel.first_stage_layers == 6 && p.layout.parallel.pp > 1;
       },
       "first-stage-layers 6"},
  };
  for (const Case& c : cases) {
    Job j;
    c.set(j.q);
    j.Set(c.flag);
    auto r = j.Run();
    ASSERT_TRUE(r.ok()) << c.flag << ": " << r.status().message();
    ASSERT_FALSE(r->evaluated) << c.flag;
    EXPECT_GT(r->search.ranked.size(), 1u) << c.flag;
    for (const plan::PlanResult& p : r->search.ranked)
      EXPECT_TRUE(c.holds(p)) << c.flag << ": " << p.layout.ToString();
    EXPECT_EQ(r->search.constraints, std::vector<std::string>{c.constraint}) << c.flag;
  }
}

// Every pipelined layout DeepSpeed's PipelineEngine can run: 1F1B (its TrainSchedule), ZeRO 0
// or 1 (its assert); and the search ranked some.
void ExpectDeepSpeedsPipelines(const Job& job) {
  auto d = job.Run();
  ASSERT_TRUE(d.ok()) << d.status().message();
  bool piped = false;
  for (const plan::PlanResult& p : d->search.ranked) {
    if (p.layout.parallel.pp == 1) continue;
    piped = true;
    EXPECT_LE(p.layout.parallel.zero_stage, 1) << p.layout.ToString();
    EXPECT_EQ(p.layout.schedule, schedule::ScheduleKind::k1F1B) << p.layout.ToString();
  }
  EXPECT_TRUE(piped);
}

// --framework restricts the search to the ZeRO stages it implements (data/frameworks/,
// zero_stages and zero_stages_pipelined); --zero, the user's explicit choice, wins over it.
TEST(PlanSearchConstraintsTest, AFrameworkSearchesOnlyItsZeroStages) {
  Job titan;
  titan.q.request.framework = "torchtitan";
  titan.Set("--framework");
  auto t = titan.Run();
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::set<int> stages;
  for (const plan::PlanResult& p : t->search.ranked) stages.insert(p.layout.parallel.zero_stage);
  EXPECT_EQ(stages, (std::set<int>{0, 3}));  // DDP or FSDP2: no ZeRO-1
  EXPECT_NE(std::find(t->search.constraints.begin(), t->search.constraints.end(), "zero 0|3"),
            t->search.constraints.end());
  Job ds;
  ds.q.request.framework = "deepspeed";
  ds.Set("--framework");
  ExpectDeepSpeedsPipelines(ds);
  Job mine = titan;
  mine.q.request.tf.par.zero_stage = 1;
  mine.Set("--zero");
  auto m = mine.Run();
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_FALSE(m->search.ranked.empty());
  for (const plan::PlanResult& p : m->search.ranked) EXPECT_EQ(p.layout.parallel.zero_stage, 1);
}

// --export without --framework keeps the search to what the target framework runs, so that the
// exported layout is one it accepts: DeepSpeed's PipelineEngine (1F1B, ZeRO 0 or 1 with a
// pipeline), torchtitan's DDP or FSDP2. --framework, when given, decides instead.
TEST(PlanSearchConstraintsTest, AnExportSearchesOnlyWhatItsFrameworkRuns) {
  Job ds;
  ds.q.request.export_format = "deepspeed";
  ds.Set("--export");
  ExpectDeepSpeedsPipelines(ds);
  Job titan;
  titan.q.request.export_format = "torchtitan";
  titan.Set("--export");
  auto t = titan.Run();
  ASSERT_TRUE(t.ok()) << t.status().message();
  for (const plan::PlanResult& p : t->search.ranked) {
    EXPECT_TRUE(p.layout.parallel.zero_stage == 0 || p.layout.parallel.zero_stage == 3)
        << p.layout.ToString();
  }
  Job both = titan;
  both.q.request.framework = "megatron-lm";
  both.Set("--framework");
  auto b = both.Run();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE(std::find(b->search.constraints.begin(), b->search.constraints.end(), "zero 0|1|2|3"),
            b->search.constraints.end());
  Job csv;  // a schedule CSV is no framework: nothing restricted
  csv.q.request.export_format = "pytorch-csv";
  csv.Set("--export");
  auto c = csv.Run();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->search.constraints.empty());
}

TEST(PlanSearchConstraintsTest, AScheduleOrSplitAsksForAPipeline) {
  // zbv alone: pp = 1 runs no schedule, so every layout has a pipeline and 2 chunks per rank.
  Job zbv;
  zbv.q.request.tf.schedule_name = "zbv";
  zbv.Set("--schedule");
  auto r = zbv.Run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const plan::PlanResult& p : r->search.ranked) {
    EXPECT_GT(p.layout.parallel.pp, 1) << p.layout.ToString();
    EXPECT_EQ(p.layout.parallel.vpp, 2) << p.layout.ToString();
    EXPECT_EQ(p.layout.schedule, schedule::ScheduleKind::kZBV);
  }
  // A layout string of 4 stages: pp x vpp = 4, the string on every layout.
  Job lay;
  lay.q.request.tf.par.layout = "Et*7|t*8|t*8|t*9L";
  lay.Set("--layout");
  auto l = lay.Run();
  ASSERT_TRUE(l.ok()) << l.status().message();
  ASSERT_FALSE(l->search.ranked.empty());
  for (const plan::PlanResult& p : l->search.ranked) {
    EXPECT_EQ(p.layout.parallel.pp * p.layout.parallel.vpp, 4) << p.layout.ToString();
    EXPECT_EQ(p.layout.parallel.layout, "Et*7|t*8|t*8|t*9L");
  }
  EXPECT_EQ(l->search.constraints, std::vector<std::string>{"layout Et*7|t*8|t*8|t*9L"});
}

TEST(PlanSearchConstraintsTest, TpWithPpIsOneLayoutEvaluatedAsGiven) {
  Job j;
  j.q.request.cf.tp = 2;
  j.q.request.cf.pp = 1;
  j.Set("--tp").Set("--pp");
  auto r = j.Run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->evaluated);
  EXPECT_EQ(r->one.layout.parallel.dp, 8);  // 16 GPUs / tp 2
}

TEST(PlanSearchConstraintsTest, ContradictionsAreUsageErrorsNamingTheFlags) {
  auto refused = [](Job j, const std::string& words) {
    auto r = j.Run();
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  Job zbv4;
  zbv4.q.request.tf.schedule_name = "zbv";
  zbv4.q.request.tf.par.vpp = 4;
  refused(zbv4.Set("--schedule").Set("--vpp"), "--schedule zbv --vpp 4");
  Job flat;
  flat.q.request.cf.pp = 1;
  flat.q.request.tf.par.vpp = 2;
  refused(flat.Set("--pp").Set("--vpp"), "--pp 1 --vpp 2");
  Job twelve;
  twelve.q.request.cf.pp = 3;
  twelve.q.request.cf.dp = 4;
  refused(twelve.Set("--pp").Set("--dp"),
          "--pp 3 --dp 4: multiply to 12, which does not divide the cluster's 16 GPUs");
  Job v_uneven;
  v_uneven.q.request.tf.schedule_name = "dualpipev";
  v_uneven.q.request.tf.par.first_stage_layers = 4;
  refused(v_uneven.Set("--schedule").Set("--first-stage-layers"),
          "--schedule dualpipev --first-stage-layers");
  Job no_batch;
  no_batch.q.request.tf.global_batch = 0;
  no_batch.given.erase("--global-batch");
  refused(no_batch, "--global-batch: required");
}

TEST(PlanSearchConstraintsTest, NothingFittingNamesTheConstraints) {
  // dp 16 on 16 GPUs leaves tp = pp = cp = 1; without ZeRO each GPU holds the whole 70B model's
  // weights, gradients and Adam states, 16 bytes a parameter: over 1 TB.
  Job j;
  j.q.request.tf.model_name = "llama3-70b";
  j.q.request.cf.dp = 16;
  j.q.request.tf.par.zero_stage = 0;
  j.Set("--dp").Set("--zero");
  auto r = j.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("with dp=16, zero=0"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace infralens::request
