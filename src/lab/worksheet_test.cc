// The worksheet: markdown parsing (line numbers in errors), the words of a placement, degrees,
// and the check's findings on hand-written designs whose verdict follows from arithmetic done
// here, not from the program's output.
#include "lab/worksheet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/testing.h"

namespace infralens::lab {

using plan::Evaluate;
using plan::Layout;
using plan::PlanRequest;
using plan::PlanResult;

namespace {

using plan::testing::PresetRequest;
using ::testing::HasSubstr;

StatusOr<WorksheetCheck> Check(const PlanRequest& req, const std::string& md,
                               const PlanResult* best = nullptr) {
  ASSIGN_OR_RETURN(Worksheet w, ParseWorksheet(md));
  ASSIGN_OR_RETURN(LearnerDesign d, InterpretWorksheet(w));
  return CheckWorksheet(req, d, best);
}

const Finding* Find(const WorksheetCheck& c, const std::string& id) {
  for (const Finding& f : c.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// The severity of finding `id`; nullopt when the check has no such finding.
std::optional<Severity> SeverityOf(const WorksheetCheck& c, const std::string& id) {
  const Finding* f = Find(c, id);
  if (f == nullptr) return std::nullopt;
  return f->severity;
}

double Number(const Finding& f, const std::string& name) {
  for (const Quantity& q : f.numbers) {
    if (q.name == name) return q.value;
  }
  ADD_FAILURE() << "no number " << name << " in " << f.id;
  return 0;
}

// The "FSDP all-gather" row's frequency cell for `layout`; "" (and a failure) without one.
std::string FsdpFrequency(const PlanRequest& req, const Layout& layout) {
  auto r = Evaluate(req, layout);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().message();
    return "";
  }
  for (const CommRow& c : FillWorksheet(req, *r).comms) {
    if (c.communication == "FSDP all-gather") return c.frequency;
  }
  ADD_FAILURE() << "no FSDP all-gather row for " << layout.ToString();
  return "";
}

// Issue 27: the FSDP row counts each collective it adds up. Llama 3 8B on 8 GPUs, dp 8 with ZeRO-3,
// 64 sequences of one: 64 / 8 = 8 microbatches; each of its 32 layers gathers its weights before
// the forward and again before the backward and reduce-scatters its gradients, every
// microbatch: 32 x 8 = 256 of each, 768 in all.
TEST(WorksheetFillTest, FsdpCallsAreCountedPerCollective) {
  Layout l;
  l.parallel.dp = 8;
  l.parallel.zero_stage = 3;
  l.recompute = model::Recompute::kSelective;
  EXPECT_THAT(
      FsdpFrequency(PresetRequest("llama3-8b", 1, 64, 4096), l),
      HasSubstr("256 FSDP all-gather of weights (forward) + 256 FSDP all-gather of weights "
                "(backward) + 256 FSDP reduce-scatter of the gradients of weights = 768 calls "
                "per step"));
}

// The same count for the MoE + ZeRO-3 layout, by hand: Mixtral 8x7B tp 2 pp 4 ep 8 on 64
// GPUs (dp 8), 256 sequences of one: 256 / 8 = 32 microbatches; a pipeline rank holds 32 / 4 = 8
// layers, so 8 x 32 = 256 gathers forward, 256 backward and 256 reduce-scatters, 768 calls (not
// the 32 layers of the whole model). The experts are not gathered: dp 8 / ep 8 = 1 rank shares
// each, so ZeRO-3 shards only the dense weights.
TEST(WorksheetFillTest, FsdpCallsWithExpertsCountOneStagesLayers) {
  Layout l = plan::testing::Degrees(2, 4, 8, 3);
  l.parallel.ep = 8;
  EXPECT_THAT(
      FsdpFrequency(PresetRequest("mixtral-8x7b", 8, 256, 4096), l),
      HasSubstr("256 FSDP all-gather of dense weights (forward) + 256 FSDP all-gather of dense "
                "weights (backward) + 256 FSDP reduce-scatter of the gradients of dense "
                "weights = 768 calls per step"));
}

TEST(MarkdownTablesTest, ReadsPipeTablesWithEscapesAndPadding) {
  const std::string md =
      "# notes\n\nsome prose\n\n| A | B \\| C | D |\n|:--|:-:|--:|\n| 1 | **2** | `3` |\n| x "
      "|\n\nafter\n"
      "Axis | Degree\n--- | ---\nTP | 8\n";
  auto t = ParseMarkdownTables(md);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].header, (std::vector<std::string>{"A", "B | C", "D"}));
  EXPECT_EQ((*t)[0].header_line, 5);
  EXPECT_EQ((*t)[0].rows[0], (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ((*t)[0].rows[1], (std::vector<std::string>{"x", "", ""}));
  EXPECT_EQ((*t)[0].row_lines, (std::vector<int>{7, 8}));
  EXPECT_EQ((*t)[1].rows[0], (std::vector<std::string>{"TP", "8"}));
}

// The blank template is the form the check reads: both tables, every axis and collective, every
// answer cell empty.
TEST(WorksheetTemplateTest, BlankTemplateParsesWithEmptyAnswers) {
  auto w = ParseWorksheet(BlankWorksheetMarkdown());
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(w->has_comm_table);
  ASSERT_EQ(w->axes.size(), 6u);  // TP, PP, DP, CP, EP, FSDP/ZeRO
  for (const AxisRow& a : w->axes) {
    EXPECT_TRUE(a.degree.empty()) << a.axis;
    EXPECT_TRUE(a.placement.empty()) << a.axis;
  }
  EXPECT_EQ(w->comms.size(), 6u);
}

TEST(MarkdownTablesTest, ErrorsNameTheLine) {
  auto no_delim = ParseMarkdownTables("title\n\n| Axis | Degree |\n| TP | 8 |\n");
  ASSERT_FALSE(no_delim.ok());
  EXPECT_EQ(no_delim.status().message().rfind("line 3:", 0), 0u) << no_delim.status().message();
  auto wide = ParseMarkdownTables("| a | b |\n| - | - |\n| 1 | 2 | 3 |\n");
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message().rfind("line 3: 3 cells", 0), 0u) << wide.status().message();
  auto delim = ParseMarkdownTables("| a | b |\n| - |\n");
  ASSERT_FALSE(delim.ok());
  auto none = ParseWorksheet("no tables here\n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("| Axis | Degree | Placement | Reason |"),
            std::string::npos);
}

// A table without its required column, or a second table of a kind: the line of its header.
TEST(MarkdownTablesTest, MissingColumnsAndSecondTablesNameTheLine) {
  auto message = [](std::string_view md) {
    auto w = ParseWorksheet(md);
    return w.ok() ? std::string("ok") : std::string(w.status().message());
  };
  EXPECT_EQ(message("x\n\n| Axis | Reason |\n|--|--|\n"),
            "line 3: the axis table has no Degree column (expected | Axis | Degree | Placement | "
            "Reason |)");
  EXPECT_EQ(message("| Communication | Risk |\n|--|--|\n"),
            "line 1: the communication table has no Preferred link column (expected | "
            "Communication | Frequency | Preferred link | Risk |)");
  EXPECT_EQ(message("| Axis | Degree |\n|--|--|\n\n| Axis | Degree |\n|--|--|\n"),
            "line 4: a second | Axis | ... | table (the first is above)");
  EXPECT_EQ(message("| Communication | Link |\n|--|--|\n\n| Communication | Link |\n|--|--|\n"),
            "line 4: a second | Communication | ... | table (the first is above)");
}

TEST(WorksheetWordsTest, Placements) {
  EXPECT_EQ(ParseWhere("inside a node over NVLink"), Where::kInsideNode);
  EXPECT_EQ(ParseWhere("NVSwitch, same node"), Where::kInsideNode);
  EXPECT_EQ(ParseWhere("intra-node"), Where::kInsideNode);
  EXPECT_EQ(ParseWhere("across nodes"), Where::kAcrossNodes);
  EXPECT_EQ(ParseWhere("over InfiniBand between nodes"), Where::kAcrossNodes);
  EXPECT_EQ(ParseWhere("across nodes, same rail"), Where::kSameRail);
  EXPECT_EQ(ParseWhere("rail-aligned"), Where::kSameRail);
  EXPECT_EQ(ParseWhere("inside a node, DP goes across nodes"),
            Where::kInsideNode);  // the first place named
  EXPECT_EQ(ParseWhere(""), Where::kUnspecified);
  EXPECT_EQ(ParseWhere("wherever"), Where::kUnclear);
  EXPECT_EQ(ParseLinkWish("NVLink").link, cluster::LinkClass::kScaleUp);
  EXPECT_TRUE(ParseLinkWish("IB").network);
  EXPECT_EQ(ParseLinkWish("PCIe").link, cluster::LinkClass::kPcie);
  EXPECT_EQ(ParseLinkWish("rail").link, cluster::LinkClass::kRail);
  EXPECT_FALSE(ParseLinkWish("").given);
  EXPECT_FALSE(ParseLinkWish("fast one").understood);
}

TEST(WorksheetWordsTest, DegreesAndAxes) {
  const std::string md =
      "| Axis | Degree | Placement | Reason |\n|---|---|---|---|\n"
      "| Tensor parallel | TP=8 | inside a node | |\n| PP | 4-way | across nodes | |\n| dp | x2 | "
      "| |\n"
      "| FSDP/ZeRO | ZeRO-1 | | |\n| CP | none | | |\n";
  auto w = ParseWorksheet(md);
  ASSERT_TRUE(w.ok());
  auto d = InterpretWorksheet(*w);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->at(WorksheetAxis::kTp).degree, 8);
  EXPECT_EQ(d->at(WorksheetAxis::kTp).where, Where::kInsideNode);
  EXPECT_EQ(d->at(WorksheetAxis::kPp).degree, 4);
  EXPECT_EQ(d->at(WorksheetAxis::kDp).degree, 2);
  EXPECT_EQ(d->at(WorksheetAxis::kZero).degree, 1);
  EXPECT_EQ(d->at(WorksheetAxis::kCp).degree, 1);
  EXPECT_EQ(d->at(WorksheetAxis::kPp).line, 4);

  for (auto [text, stage] : std::vector<std::pair<std::string, int>>{{"FSDP", 3},
                                                                     {"stage 3", 3},
                                                                     {"ZeRO2", 2},
                                                                     {"distributed optimizer", 1},
                                                                     {"none", 0},
                                                                     {"-", 0}}) {
    auto z = InterpretWorksheet(
        *ParseWorksheet("| Axis | Degree |\n|--|--|\n| ZeRO | " + text + " |\n"));
    ASSERT_TRUE(z.ok()) << text;
    EXPECT_EQ(z->at(WorksheetAxis::kZero).degree, stage) << text;
  }
  auto bad = InterpretWorksheet(
      *ParseWorksheet("| Axis | Degree |\n|--|--|\n| TP | 8 |\n| PP | eight |\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("line 4: PP degree 'eight'", 0), 0u)
      << bad.status().message();
  auto unknown = InterpretWorksheet(*ParseWorksheet("| Axis | Degree |\n|--|--|\n| XP | 8 |\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().rfind("line 3: axis 'XP'", 0), 0u);
  auto twice =
      InterpretWorksheet(*ParseWorksheet("| Axis | Degree |\n|--|--|\n| TP | 8 |\n| tp | 4 |\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("line 4: TP appears twice (first on line 3)"),
            std::string::npos);
}

// Llama-3 70B with DP=64 on 64 H100s: every GPU holds the whole model state, 16 bytes per
// parameter (2 + 2 + 12, ZeRO's accounting) x about 70.6e9 parameters = about 1.13e12 bytes,
// against 80 GiB of HBM.
TEST(WorksheetCheckTest, Dp64ForLlama70bIsOutOfMemory) {
  const std::string md =
      "| Axis | Degree | Placement | Reason |\n|---|---|---|---|\n| TP | 1 | | |\n| PP | 1 | | |\n"
      "| DP | 64 | across all nodes | 64 GPUs means DP=64 |\n| FSDP/ZeRO | none | | |\n";
  auto c = Check(PresetRequest("llama3-70b", 8, 512, 8192), md);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->evaluated);
  EXPECT_EQ(SeverityOf(*c, "fit"), Severity::kError);
  const Finding* f = Find(*c, "dp-equals-gpus-ignores-memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->line, 5);
  const double state = Number(*f, "model_state_bytes_per_gpu");
  EXPECT_GT(state, 1.0e12);
  EXPECT_LT(state, 1.2e12);
  EXPECT_GT(state / (80.0 * (1 << 30)), 13);  // more than 13 H100s' worth
}

// GPT-3 175B with TP=16 on 8-GPU nodes: a TP group of 16 consecutive ranks spans 2 nodes.
TEST(WorksheetCheckTest, Tp16AcrossNodesIsFound) {
  const std::string md =
      "| Axis | Degree | Placement | Reason |\n|---|---|---|---|\n| TP | 16 | across nodes | big "
      "layers |\n"
      "| PP | 4 | across nodes | |\n| DP | 1 | | |\n| FSDP/ZeRO | ZeRO-1 | | |\n\n"
      "| Communication | Frequency | Preferred link | Risk |\n|---|---|---|---|\n"
      "| TP collectives | every layer | NVLink | latency |\n| PP send/recv | per microbatch | IB | "
      "free |\n";
  auto c = Check(PresetRequest("gpt3-175b", 8, 64, 2048), md);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->evaluated);
  const Finding* f = Find(*c, "tp-across-nodes");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kError);
  EXPECT_EQ(Number(*f, "nodes_per_tp_group"), 2);
  EXPECT_GT(Number(*f, "tp_comm_s"), 0);
  // The learner prefers NVLink for TP; it crosses the network.
  bool mismatch = false;
  for (const Finding& x : c->findings)
    mismatch = mismatch || (x.id == "link-mismatch" && x.line == 10);
  EXPECT_TRUE(mismatch);
  // 64 sequences over dp=1 with 4 stages: m is small against p, and PP's risk says "free".
  const Finding* pp = Find(*c, "pp-across-nodes-is-not-free");
  ASSERT_NE(pp, nullptr);
  EXPECT_GT(Number(*pp, "bubble_fraction"), 0);
}

TEST(WorksheetCheckTest, NumbersWithoutPlacementAreNotADesign) {
  const std::string md =
      "| Axis | Degree | Placement | Reason |\n|---|---|---|---|\n| TP | 8 | | |\n| PP | 2 | | "
      "|\n| DP | 4 | | |\n"
      "| FSDP/ZeRO | ZeRO-1 | | |\n";
  auto c = Check(PresetRequest("llama3-70b", 8, 512, 8192), md);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(SeverityOf(*c, "tuple-without-placement"), Severity::kError);
  EXPECT_NE(Find(*c, "communication-table-missing"), nullptr);
}

TEST(WorksheetCheckTest, PlacementsChooseTheRankOrder) {
  // DP said to be inside a node, TP across nodes: DP varies fastest, so a DP group of 8 fills a
  // node and each TP group of 8 spans 8 nodes.
  const std::string md =
      "| Axis | Degree | Placement | Reason |\n|---|---|---|---|\n| TP | 8 | across nodes | |\n"
      "| DP | 8 | inside a node | |\n| FSDP/ZeRO | FSDP | | |\n";
  auto c = Check(PresetRequest("llama3-8b", 8, 64, 4096), md);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->evaluated) << c->findings.front().detail;
  EXPECT_EQ(c->result.layout.order.rfind("dp", 0), 0u) << c->result.layout.order;
  EXPECT_NE(Find(*c, "tp-across-nodes"), nullptr);
  const Finding* dp = nullptr;
  for (const Finding& f : c->findings) {
    if (f.id == "placement" && f.line == 4) dp = &f;
  }
  ASSERT_NE(dp, nullptr) << "DP inside a node should hold";
}

TEST(WorksheetCheckTest, DegreesThatDoNotMultiplyAreAnError) {
  auto c = Check(PresetRequest("llama3-8b", 8, 64),
                 "| Axis | Degree |\n|--|--|\n| TP | 8 |\n| PP | 2 |\n| DP | 8 |\n");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->evaluated);
  const Finding* f = Find(*c, "degrees");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Number(*f, "product"), 128);
  // EP counted outside DP is re-read as Megatron counts it: DP=8 x EP=8 = dp 64.
  auto ep = Check(PresetRequest("mixtral-8x7b", 8, 256, 4096),
                  "| Axis | Degree | Placement |\n|--|--|--|\n| DP | 8 | across nodes |\n| EP | 8 "
                  "| inside a node |\n"
                  "| ZeRO | 1 | |\n");
  ASSERT_TRUE(ep.ok());
  EXPECT_NE(Find(*ep, "dp-counts-ep"), nullptr);
  EXPECT_TRUE(ep->evaluated);
  EXPECT_EQ(ep->result.layout.parallel.dp, 64);
}

TEST(WorksheetFillTest, RowsForTheLabAndReasonsWithNumbers) {
  const PlanRequest req = PresetRequest("llama3-70b", 8, 512, 8192);
  Layout l = plan::testing::Degrees(8, 4, 2, 1);
  auto r = Evaluate(req, l);
  ASSERT_TRUE(r.ok());
  const Worksheet w = FillWorksheet(req, *r);
  std::vector<std::string> axes, comms;
  for (const auto& a : w.axes) axes.push_back(a.axis);
  for (const auto& c : w.comms) comms.push_back(c.communication);
  EXPECT_EQ(axes, (std::vector<std::string>{"TP", "PP", "DP", "FSDP/ZeRO"}));
  ASSERT_EQ(comms.size(), 4u);
  EXPECT_EQ(comms[0], "TP collectives");
  EXPECT_EQ(comms[1], "PP send/recv");
  EXPECT_EQ(w.axes[0].placement, "inside a node over NVLink/NVSwitch");
  EXPECT_NE(w.axes[1].placement.find("across 4 nodes"),
            std::string::npos);  // 4 stages, 16 ranks apart
  EXPECT_NE(w.axes[1].reason.find("80 layers in 4 stages (20 layers per stage)"),
            std::string::npos);
  // The filled worksheet reads back as the same design.
  auto back = InterpretWorksheet(*ParseWorksheet(RenderWorksheetMarkdown(w)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->at(WorksheetAxis::kTp).degree, 8);
  EXPECT_EQ(back->at(WorksheetAxis::kPp).degree, 4);
  EXPECT_EQ(back->at(WorksheetAxis::kDp).degree, 2);
  EXPECT_EQ(back->at(WorksheetAxis::kZero).degree, 1);
  EXPECT_EQ(back->at(WorksheetAxis::kTp).where, Where::kInsideNode);
  EXPECT_EQ(back->at(WorksheetAxis::kPp).where,
            Where::kSameRail);  // "across 4 nodes (network, same rail)"
}

// Round trip: the worksheet the engine fills for the planner's best, read back as a learner's,
// is that same layout, and the check finds nothing wrong with it.
TEST(WorksheetFillTest, TheBestPlansOwnWorksheetChecksAsTheBest) {
  const PlanRequest req = PresetRequest("llama3-70b", 8, 512, 8192);
  auto best = BestPlan(req);
  ASSERT_TRUE(best.ok()) << best.status().message();
  const std::string md = RenderWorksheetMarkdown(FillWorksheet(req, *best));
  auto c = Check(req, md, &*best);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->evaluated);
  EXPECT_EQ(c->result.layout.ToString(), best->layout.ToString());
  for (const Finding& f : c->findings) {
    EXPECT_TRUE(f.severity == Severity::kOk || f.severity == Severity::kInfo)
        << f.id << ": " << f.title;
  }
  EXPECT_EQ(SeverityOf(*c, "throughput"), Severity::kOk);
  const Finding* t = Find(*c, "throughput");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->title, "this is the planner's best layout");
}

// The same round trip where the best layout needs a heavier selective list: Llama 3 70B at
// 12,288 tokens on tp 8 x dp 8 with the distributed optimizer fits without full recompute only
// when the MLP is recomputed as well (docs/planner.md, "The search"). The check tries the lists as
// the search does, so it reads the worksheet back as that layout, not as full recompute.
TEST(WorksheetFillTest, ABestPlanWithAHeavierRecomputeListChecksAsItself) {
  const PlanRequest req = PresetRequest("llama3-70b", 8, 64, 12288);
  plan::SearchOptions opt;
  opt.fix_tp = 8;
  opt.fix_pp = 1;
  opt.fix_dp = 8;
  opt.fix_zero = 1;
  opt.fix_sp = 1;
  opt.max_micro_batch = 4;  // the micro-batches the check tries
  opt.top_k = 1;
  auto sr = plan::Search(req, opt);
  ASSERT_TRUE(sr.ok()) << sr.status().message();
  const PlanResult& best = sr->ranked.front();
  ASSERT_EQ(best.layout.recompute, model::Recompute::kSelective);
  ASSERT_EQ(best.layout.recompute_modules,
            model::RecomputeModules{model::kRecomputeCoreAttn | model::kRecomputeMlp});
  auto c = Check(req, RenderWorksheetMarkdown(FillWorksheet(req, best)), &best);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->evaluated);
  EXPECT_EQ(c->result.layout.ToString(), best.layout.ToString());
  EXPECT_NE(c->knobs.find("selective (core_attn mlp) recompute"), std::string::npos) << c->knobs;
  EXPECT_EQ(SeverityOf(*c, "throughput"), Severity::kOk);
}

TEST(WorksheetWordsTest, ADegreeIsAWholeIntegerNotTheStartOfOne) {
  // Once read as 1, 2 and 1 (the digits before the first other character).
  for (const std::string cell : {"1e400", "2abc", "1.5"}) {
    auto d =
        InterpretWorksheet(*ParseWorksheet("| Axis | Degree |\n|--|--|\n| TP | " + cell + " |\n"));
    ASSERT_FALSE(d.ok()) << cell;
    EXPECT_NE(d.status().message().find("TP degree '" + cell + "'"), std::string::npos)
        << d.status().message();
  }
  auto x = InterpretWorksheet(*ParseWorksheet("| Axis | Degree |\n|--|--|\n| TP | 8x |\n"));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->at(WorksheetAxis::kTp).degree, 8);
}

}  // namespace
}  // namespace infralens::lab
