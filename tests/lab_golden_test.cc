// Golden tests for lab 12 (worksheet), lab 09 (explain, scenarios) and the exports.
#include <gtest/gtest.h>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

const std::vector<std::string> kLlama70b = {"--model", "llama3-70b", "--cluster",      "dgx-h100",
                                            "--nodes", "8",          "--global-batch", "512",
                                            "--seq",   "8192"};

// The design of the worksheet in tests/data/worksheet_good.md, as flags.
const std::vector<std::string> kTp8Pp2 = {"--tp", "8", "--pp", "2", "--distributed-optimizer",
                                          "--sp"};

TEST(WorksheetGoldenTest, FilledForTheBestPlan) {
  ExpectCliGolden(With({"worksheet", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus",
                        "64", "--global-batch", "512", "--seq", "8192"},
                       {}),
                  "worksheet_llama3_70b_64.md");
}

// The worksheet of tests/data/worksheet_good.md's own design, filled by the engine: the degrees
// column must read TP 8, PP 2, DP 64 / 16 = 4, ZeRO-1.
TEST(WorksheetGoldenTest, FilledForAGivenLayout) {
  auto run = RunCliCapture(With(With({"worksheet"}, kLlama70b), kTp8Pp2));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("The layout given: tp=8 pp=2 dp=4 zero=1 sp"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("| DP | 4 |"), std::string::npos) << run.out;
  ExpectGolden("worksheet_llama3_70b_tp8_pp2.md", run.out);
}

TEST(WorksheetGoldenTest, CheckGoodDesign) {
  ExpectCliGolden(
      With({"worksheet", "check", SourcePath("tests/data/worksheet_good.md")}, kLlama70b),
      "worksheet_check_good.md");
}

TEST(WorksheetGoldenTest, CheckTp16AcrossNodesJson) {
  ExpectCliGolden(
      {"worksheet", "check", SourcePath("tests/data/worksheet_tp16_across_nodes.md"), "--model",
       "gpt3-175b", "--cluster", "dgx-h100", "--nodes", "8", "--global-batch", "64", "--json"},
      "worksheet_check_tp16.json");
}

TEST(WorksheetGoldenTest, CheckDp64) {
  ExpectCliGolden(
      With({"worksheet", "check", SourcePath("tests/data/worksheet_dp64.md")}, kLlama70b),
      "worksheet_check_dp64.md");
}

TEST(WorksheetGoldenTest, UnparseableInputNamesTheLine) {
  auto run = RunCliCapture(
      With({"worksheet", "check", SourcePath("tests/data/worksheet_bad_degree.md")}, kLlama70b));
  EXPECT_EQ(run.exit_code, 1);  // a malformed input file is a failure (docs/cli.md, exit codes)
  EXPECT_NE(run.err.find("worksheet_bad_degree.md: line 4: PP degree 'a few'"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

TEST(ExplainGoldenTest, GivenLayoutMarkdown) {
  ExpectCliGolden(With(With({"explain"}, kLlama70b), kTp8Pp2), "explain_llama3_70b_tp8_pp2.md");
}

TEST(ExplainGoldenTest, PlannersBestJson) {
  ExpectCliGolden({"explain", "--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "2",
                   "--global-batch", "128", "--seq", "4096", "--json"},
                  "explain_llama3_8b_best.json");
}

TEST(ScenariosGoldenTest, ListAnsweredLive) { ExpectCliGolden({"scenarios"}, "scenarios.md"); }

TEST(ScenariosGoldenTest, Dp64Oom) {
  ExpectCliGolden({"scenarios", "dp64-oom"}, "scenarios_dp64_oom.md");
}

TEST(ScenariosGoldenTest, FewMicrobatchesJson) {
  ExpectCliGolden({"scenarios", "few-microbatches", "--json"}, "scenarios_few_microbatches.json");
}

TEST(ScenariosGoldenTest, UnknownNameIsOneLineExitTwo) {
  auto run = RunCliCapture({"scenarios", "dp-oom"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("did you mean"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

TEST(ExportGoldenTest, MegatronDeepSpeedTorchtitan) {
  const auto base = With(With(With({"explain"}, kLlama70b), Tp8Pp4Vpp5Interleaved()),
                         {"--distributed-optimizer", "--sp"});
  ExpectCliGolden(With(base, {"--export", "megatron"}), "export_megatron_llama3_70b.sh");
  auto ds =
      ExpectCliGolden(With(base, {"--export", "deepspeed"}), "export_deepspeed_llama3_70b.json");
  ExpectGolden("export_deepspeed_llama3_70b.notes", ds.err);
  ExpectCliGolden(With(base, {"--export", "torchtitan"}), "export_torchtitan_llama3_70b.toml");
}

TEST(ExportGoldenTest, MegatronMoe) {
  ExpectCliGolden({"explain",
                   "--model",
                   "mixtral-8x7b",
                   "--cluster",
                   "dgx-h100",
                   "--nodes",
                   "8",
                   "--global-batch",
                   "256",
                   "--seq",
                   "4096",
                   "--tp",
                   "2",
                   "--pp",
                   "4",
                   "--ep",
                   "8",
                   "--sp",
                   "--distributed-optimizer",
                   "--recompute",
                   "full",
                   "--export",
                   "megatron"},
                  "export_megatron_mixtral.sh");
}

TEST(ExportGoldenTest, PytorchCsv) {
  ExpectCliGolden(
      {"explain", "--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "1", "--global-batch",
       "8", "--tp", "2", "--pp", "4", "--schedule", "zbv", "--export", "pytorch-csv"},
      "export_pytorch_llama3_8b_zbv.csv");
}

TEST(ExportGoldenTest, UnknownFormatIsOneLineExitTwo) {
  auto run = RunCliCapture(With(With({"explain"}, kLlama70b), {"--export", "yaml"}));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(
      run.err.find("--export yaml: expected one of megatron, deepspeed, torchtitan, pytorch-csv"),
      std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace infralens::testing
