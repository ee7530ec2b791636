// The search's shortcuts give the exhaustive search's answer: the lower-bound pruning
// (SearchOptions::prune), the shared simulation memo and the threads change which layouts are
// simulated, never the ranking, the values or the family verdicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "model/presets.h"
#include "plan/planner.h"
#include "plan/recompute_lists.h"

namespace infralens::plan {
namespace {

PlanRequest Request(const std::string& model, const std::string& cluster, const std::string& gpu,
                    int nodes, int64_t global_batch, int64_t seq) {
  PlanRequest req;
  req.model = *model::FindPreset(model);
  req.cluster = *cluster::FindClusterPreset(cluster);
  req.cluster.num_nodes = nodes;
  req.gpu = *hw::FindGpu(gpu);
  req.global_batch = global_batch;
  req.seq_len = seq;
  return req;
}

// Everything a search answers, as text, with every double printed bit for bit (%a).
std::string Answer(const SearchResult& sr) {
  std::string out;
  auto num = [&out](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %a", v);
    out += buf;
  };
  for (const PlanResult& r : sr.ranked) {
    out += r.layout.ToString();
    num(r.time.step_s);
    num(r.time.compute_s);
    num(r.time.bubble_s);
    num(r.time.pp_comm_s);
    num(r.time.dp_comm_s);
    num(r.memory.worst().total_bytes);
    num(r.mfu);
    num(r.bubble_fraction);
    out += "\n";
  }
  out += sr.winner_reason + "\n";
  for (const FamilyVerdict& f : sr.families) {
    out += f.family + ": " + f.verdict + " " + std::to_string(f.candidates) + "\n";
  }
  out += std::to_string(sr.evaluated) + " " + std::to_string(sr.pruned) + " " +
         std::to_string(sr.layouts) + "\n";
  return out;
}

struct Case {
  const char* model;
  const char* cluster;
  const char* gpu;
  int nodes;
  int64_t batch, seq;
  int top_k;
};

// A grid of dense and MoE models, two GPU generations, sizes and k; small enough to search
// exhaustively in a test (micro-batches up to 2).
const Case kGrid[] = {
    {"llama3-8b", "dgx-h100", "H100-SXM", 2, 128, 4096, 10},
    {"llama3-8b", "dgx-a100", "A100-80GB", 1, 64, 8192, 3},
    {"llama2-13b", "dgx-a100", "A100-80GB", 4, 256, 4096, 5},
    {"llama3-70b", "dgx-h100", "H100-SXM", 4, 64, 8192, 1},
    {"mixtral-8x7b", "dgx-h100", "H100-SXM", 2, 64, 32768, 10},
};

TEST(SearchPruningTest, PrunedSearchGivesTheExhaustiveAnswer) {
  for (const Case& c : kGrid) {
    const PlanRequest req = Request(c.model, c.cluster, c.gpu, c.nodes, c.batch, c.seq);
    SearchOptions opt;
    opt.top_k = c.top_k;
    opt.max_micro_batch = 2;
    opt.prune = false;
    auto all = Search(req, opt);
    ASSERT_TRUE(all.ok()) << c.model << ": " << all.status().message();
    opt.prune = true;
    auto pruned = Search(req, opt);
    ASSERT_TRUE(pruned.ok()) << c.model << ": " << pruned.status().message();
    EXPECT_EQ(Answer(*pruned), Answer(*all)) << c.model << " on " << c.nodes << " nodes";
    // Without pruning every layout that fits is simulated; the bound must skip some.
    EXPECT_LE(pruned->simulated, all->simulated) << c.model;
    EXPECT_GT(pruned->simulated, 0) << c.model;
  }
}

// A framework's ZeRO stages (SearchOptions::zero_stages, zero_stages_pipelined) restrict the
// layouts, not their values: the restricted ranking is the full ranking with the other stages
// left out.
TEST(SearchZeroStagesTest, OnlyTheGivenStagesInTheRankedOrder) {
  const PlanRequest req = Request("llama3-8b", "dgx-h100", "H100-SXM", 2, 128, 4096);
  SearchOptions opt;
  opt.max_micro_batch = 2;
  opt.top_k = 100000;
  auto all = Search(req, opt);
  ASSERT_TRUE(all.ok()) << all.status().message();
  opt.zero_stages = {0, 3};
  opt.zero_stages_pipelined = {1};
  opt.top_k = 40;
  auto some = Search(req, opt);
  ASSERT_TRUE(some.ok()) << some.status().message();
  auto allowed = [](const Layout& l) {
    const int z = l.parallel.zero_stage;
    return l.parallel.pp > 1 ? z == 1 : (z == 0 || z == 3);
  };
  std::vector<std::string> expected;
  for (const PlanResult& r : all->ranked) {
    if (allowed(r.layout) && expected.size() < some->ranked.size()) {
      expected.push_back(r.layout.ToString());
    }
  }
  std::vector<std::string> got;
  bool pipelined = false, flat = false, excluded = false;
  for (const PlanResult& r : some->ranked) {
    EXPECT_TRUE(allowed(r.layout)) << r.layout.ToString();
    got.push_back(r.layout.ToString());
    (r.layout.parallel.pp > 1 ? pipelined : flat) = true;
  }
  for (const PlanResult& r : all->ranked) excluded = excluded || !allowed(r.layout);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), 40u);
  // The case checks something: both depths ranked, and the full search had other stages.
  EXPECT_TRUE(pipelined && flat && excluded);
  const std::vector<std::string> c = opt.Constraints();
  EXPECT_NE(std::find(c.begin(), c.end(), "zero 0|3 (1 with pp > 1)"), c.end());
  opt.zero_stages_pipelined = {0, 3};
  const std::vector<std::string> same = opt.Constraints();
  EXPECT_NE(std::find(same.begin(), same.end(), "zero 0|3"), same.end());
  // With nothing to shard over (dp = 1) a framework's stages all mean stage 0: those layouts are
  // still searched, as stage 0 (MegaScale lists ZeRO-2 alone).
  opt.zero_stages = opt.zero_stages_pipelined = {2};
  opt.fix_tp = 8;
  opt.fix_pp = 2;  // 16 GPUs: dp 1
  auto solo = Search(req, opt);
  ASSERT_TRUE(solo.ok()) << solo.status().message();
  ASSERT_FALSE(solo->ranked.empty());
  for (const PlanResult& r : solo->ranked) EXPECT_EQ(r.layout.parallel.zero_stage, 0);
}

// Which layouts are simulated does not depend on the number of threads (fixed chunks, each
// chunk's thresholds from the chunks before it).
TEST(SearchPruningTest, SameAnswerAndWorkOnOneThreadOrFour) {
  const PlanRequest req = Request("mixtral-8x7b", "dgx-h100", "H100-SXM", 2, 64, 32768);
  SearchOptions opt;
  opt.max_micro_batch = 2;
  opt.threads = 1;
  auto one = Search(req, opt);
  opt.threads = 4;
  auto four = Search(req, opt);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_EQ(Answer(*one), Answer(*four));
  EXPECT_EQ(one->simulated, four->simulated);
}

// Both bounds are below the step of every layout they bound (and not far below: compute is most of
// these steps). Evaluate with the memo gives the same values, bit for bit, as without.
TEST(SearchPruningTest, LowerBoundIsBelowTheStepAndTheMemoIsExact) {
  const PlanRequest req = Request("llama3-8b", "dgx-h100", "H100-SXM", 2, 128, 4096);
  sim::SummaryMemo memo;
  int checked = 0;
  for (int tp : {1, 2, 4}) {
    for (int pp : {1, 2, 4}) {
      for (auto kind : {schedule::ScheduleKind::k1F1B, schedule::ScheduleKind::kInterleaved1F1B,
                        schedule::ScheduleKind::kZBH1, schedule::ScheduleKind::kZBV,
                        schedule::ScheduleKind::kDualPipeV}) {
        if (pp == 1 && kind != schedule::ScheduleKind::k1F1B) continue;
        for (int zero : {0, 1, 3}) {
          Layout l;
          const int v = schedule::Info(kind).default_vpp == 1 ? 1 : 2;
          l.parallel = {tp, pp, v, 16 / (tp * pp), 1, 1, zero, tp > 1};
          l.schedule = kind;
          l.recompute = model::Recompute::kSelective;
          auto mem = EvaluateMemory(req, l);
          ASSERT_TRUE(mem.ok()) << l.ToString() << ": " << mem.status().message();
          auto bound = StepTimeLowerBound(req, *mem);
          auto plain = Evaluate(req, l);
          EvaluateOptions eo;
          eo.memo = &memo;
          double tight = -1;
          eo.bound_s = &tight;
          auto memoised = Evaluate(req, l, eo);
          ASSERT_TRUE(bound.ok() && plain.ok() && memoised.ok()) << l.ToString();
          EXPECT_LE(*bound, plain->time.step_s) << l.ToString();
          EXPECT_GT(*bound, 0.5 * plain->time.step_s) << l.ToString();
          // The bound with communication, before simulating: below the step, and closer.
          EXPECT_LE(tight, plain->time.step_s) << l.ToString();
          EXPECT_GT(tight, 0.8 * plain->time.step_s) << l.ToString();
          // Asked to skip what is slower than the bound less a little, Evaluate does not.
          bool skipped = true;
          EvaluateOptions skip;
          skip.skip_slower_than_s = tight * 0.999;
          skip.skipped = &skipped;
          auto r = Evaluate(req, l, skip);
          ASSERT_TRUE(r.ok());
          EXPECT_TRUE(skipped) << l.ToString();
          skip.skip_slower_than_s = plain->time.step_s;
          r = Evaluate(req, l, skip);
          ASSERT_TRUE(r.ok());
          EXPECT_FALSE(skipped) << l.ToString();
          EXPECT_EQ(r->time.step_s, plain->time.step_s) << l.ToString();
          EXPECT_EQ(memoised->time.step_s, plain->time.step_s) << l.ToString();
          EXPECT_EQ(memoised->time.bubble_s, plain->time.bubble_s) << l.ToString();
          EXPECT_EQ(memoised->time.pp_comm_s, plain->time.pp_comm_s) << l.ToString();
          EXPECT_EQ(memoised->bubble_fraction, plain->bubble_fraction) << l.ToString();
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 50);
  // The ZeRO stages do not change the pipeline's stage costs: two of every three were memo hits.
  EXPECT_GT(memo.hits(), 0);
}

// A partial search stopped during the memory pass (SearchOptions::stop is asked once per 256
// layouts there) still answers: the most promising layout whose memory is known is simulated.
TEST(SearchPruningTest, StoppedInTheMemoryPassStillRanksOneLayout) {
  const PlanRequest req = Request("mixtral-8x7b", "dgx-h100", "H100-SXM", 2, 64, 32768);
  SearchOptions opt;
  opt.threads = 1;
  opt.keep_partial = true;
  int asked = 0;
  // after 2,048 layouts of the memory pass (the most promising schedules at 32K tokens hold
  // layouts that do not fit: the first 1,024 have none)
  opt.stop = [&asked] { return ++asked > 8; };
  auto sr = Search(req, opt);
  ASSERT_TRUE(sr.ok()) << sr.status().message();
  EXPECT_TRUE(sr->partial);
  EXPECT_EQ(sr->simulated, 1);
  ASSERT_EQ(sr->ranked.size(), 1u);
  EXPECT_LT(sr->evaluated + sr->pruned, sr->layouts);
  // Without keep_partial the stopped search is an error, as before.
  asked = 0;
  opt.keep_partial = false;
  EXPECT_FALSE(Search(req, opt).ok());
}

// Selective recompute's heavier module lists (plan/recompute_lists.h). Llama 3 70B on 64 H100s,
// tp 8, dp 8, ZeRO-1, micro-batch 2 of 8,192 tokens: Megatron-Core's default list (the attention
// core) stores about 34 h bytes per token and layer over tp, 2 x 80 x 8,192 x 34 x 8,192 / 8 =
// 45.6 GB beside 48 GB of weights, gradients and sharded optimizer states, over the 76 GiB usable;
// the dense MLP's 2h + 6f of them (188,416 bytes, docs/memory.md) recomputed leaves 14.8 GB: the
// search's one heavier list for a dense model (its norms are fused into the projections).
TEST(SearchRecomputeListsTest, AHeavierListWhereTheRequestsDoesNotFit) {
  const PlanRequest req = Request("llama3-70b", "dgx-h100", "H100-SXM", 8, 64, 8192);
  SearchOptions opt;
  opt.fix_tp = 8;
  opt.fix_pp = 1;
  opt.fix_zero = 1;
  opt.fix_recompute = static_cast<int>(model::Recompute::kSelective);
  opt.fix_micro_batch = 2;
  auto sr = Search(req, opt);
  ASSERT_TRUE(sr.ok()) << sr.status().message();
  ASSERT_EQ(sr->ranked.size(), 1u);
  const Layout& win = sr->ranked[0].layout;
  using enum model::RecomputeModule;
  ASSERT_TRUE(win.recompute_modules.has_value());
  EXPECT_EQ(win.recompute_modules->bits, uint32_t{kRecomputeCoreAttn | kRecomputeMlp});
  EXPECT_EQ(win.ToString(), "tp=8 pp=1 dp=8 zero=1 sp selective=core_attn,mlp mb=2");
  EXPECT_TRUE(sr->ranked[0].memory.fits);
  // The request's list on the same layout does not fit.
  Layout lighter = win;
  lighter.recompute_modules.reset();
  auto r = EvaluateMemory(req, lighter);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->memory.fits) << lighter.ToString();
  // Its list costs the MLP's forward again: slower than the default list's step, faster than
  // recomputing every layer in full (which also fits).
  Layout full = win;
  full.recompute = model::Recompute::kFull;
  full.recompute_modules.reset();
  auto fr = Evaluate(req, full);
  ASSERT_TRUE(fr.ok()) << fr.status().message();
  ASSERT_TRUE(fr->memory.fits);
  EXPECT_LT(sr->ranked[0].time.step_s, fr->time.step_s);
  // The user's own list is the only one tried: then nothing fits.
  opt.fix_recompute_modules = true;
  auto fixed = Search(req, opt);
  EXPECT_FALSE(fixed.ok());
}

// Across a whole ranking, a layout with a heavier list is one whose lighter lists do not fit.
TEST(SearchRecomputeListsTest, AHeavierListOnlyWhereEveryLighterOneDoesNotFit) {
  const PlanRequest req = Request("llama3-70b", "dgx-h100", "H100-SXM", 4, 64, 8192);
  SearchOptions opt;
  opt.top_k = 100000;
  opt.max_micro_batch = 2;
  opt.fix_recompute = static_cast<int>(model::Recompute::kSelective);
  auto sr = Search(req, opt);
  ASSERT_TRUE(sr.ok()) << sr.status().message();
  const std::vector<model::RecomputeModules> lists =
      HeavierRecomputeModules(req.model, req.recompute_modules);
  int heavier = 0;
  for (const PlanResult& r : sr->ranked) {
    ASSERT_TRUE(r.layout.recompute_modules.has_value()) << r.layout.ToString();
    if (*r.layout.recompute_modules == req.recompute_modules) continue;
    ++heavier;
    const auto at = std::find(lists.begin(), lists.end(), *r.layout.recompute_modules);
    ASSERT_NE(at, lists.end()) << r.layout.ToString();
    std::vector<model::RecomputeModules> lighter(lists.begin(), at);
    lighter.push_back(req.recompute_modules);
    for (const model::RecomputeModules& l : lighter) {
      Layout same = r.layout;
      same.recompute_modules = l;
      auto m = EvaluateMemory(req, same);
      ASSERT_TRUE(m.ok()) << m.status().message();
      EXPECT_FALSE(m->memory.fits)
          << same.ToString() << " fits, yet " << r.layout.ToString() << " was ranked";
    }
  }
  // The case checks something: some layouts needed a heavier list, others the default.
  EXPECT_GT(heavier, 0);
  EXPECT_LT(heavier, static_cast<int>(sr->ranked.size()));
}

}  // namespace
}  // namespace infralens::plan
