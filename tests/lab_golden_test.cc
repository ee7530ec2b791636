// Golden tests for lab 12 (worksheet), lab 09 (explain, scenarios) and the exports.
#include <gtest/gtest.h>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

const std::vector<std::string> kLlama70b = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--nodes", "8",
                                            "--global-batch", "512", "--seq", "8192"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// The design of the worksheet in tests/data/worksheet_good.md, as flags.
const std::vector<std::string> kTp8Pp2 = {"--tp", "8", "--pp", "2", "--distributed-optimizer", "--sp"};

TEST(WorksheetGoldenTest, FilledForTheBestPlan) {
  auto run = RunCliCapture(With({"worksheet", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64",
                                 "--global-batch", "512", "--seq", "8192"},
                                {}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("worksheet_llama3_70b_64.md", run.out);
}

// The worksheet of tests/data/worksheet_good.md's own design, filled by the engine: the degrees
// column must read TP 8, PP 2, DP 64 / 16 = 4, ZeRO-1.
TEST(WorksheetGoldenTest, FilledForAGivenLayout) {
  auto run = RunCliCapture(With(With({"worksheet"}, kLlama70b), kTp8Pp2));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("The layout given: tp=8 pp=2 dp=4 zero=1 sp"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("| DP | 4 |"), std::string::npos) << run.out;
  ExpectGolden("worksheet_llama3_70b_tp8_pp2.md", run.out);
}

TEST(WorksheetGoldenTest, CheckGoodDesign) {
  auto run = RunCliCapture(With({"worksheet", "check", SourcePath("tests/data/worksheet_good.md")}, kLlama70b));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("worksheet_check_good.md", run.out);
}

TEST(WorksheetGoldenTest, CheckTp16AcrossNodesJson) {
  auto run = RunCliCapture({"worksheet", "check", SourcePath("tests/data/worksheet_tp16_across_nodes.md"), "--model",
                            "gpt3-175b", "--cluster", "dgx-h100", "--nodes", "8", "--global-batch", "64", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("worksheet_check_tp16.json", run.out);
}

TEST(WorksheetGoldenTest, CheckDp64) {
  auto run = RunCliCapture(With({"worksheet", "check", SourcePath("tests/data/worksheet_dp64.md")}, kLlama70b));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("worksheet_check_dp64.md", run.out);
}

TEST(WorksheetGoldenTest, UnparseableInputNamesTheLine) {
  auto run = RunCliCapture(With({"worksheet", "check", SourcePath("tests/data/worksheet_bad_degree.md")}, kLlama70b));
  EXPECT_EQ(run.exit_code, 1);  // a malformed input file is a failure (docs/cli.md, exit codes)
  EXPECT_NE(run.err.find("worksheet_bad_degree.md: line 4: PP degree 'a few'"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

TEST(ExplainGoldenTest, GivenLayoutMarkdown) {
  auto run = RunCliCapture(With(With({"explain"}, kLlama70b), kTp8Pp2));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("explain_llama3_70b_tp8_pp2.md", run.out);
}

TEST(ExplainGoldenTest, PlannersBestJson) {
  auto run = RunCliCapture({"explain", "--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "2",
                            "--global-batch", "128", "--seq", "4096", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("explain_llama3_8b_best.json", run.out);
}

TEST(ScenariosGoldenTest, ListAnsweredLive) {
  auto run = RunCliCapture({"scenarios"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("scenarios.md", run.out);
}

TEST(ScenariosGoldenTest, Dp64Oom) {
  auto run = RunCliCapture({"scenarios", "dp64-oom"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("scenarios_dp64_oom.md", run.out);
}

TEST(ScenariosGoldenTest, FewMicrobatchesJson) {
  auto run = RunCliCapture({"scenarios", "few-microbatches", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("scenarios_few_microbatches.json", run.out);
}

TEST(ScenariosGoldenTest, UnknownNameIsOneLineExitTwo) {
  auto run = RunCliCapture({"scenarios", "dp-oom"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("did you mean"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

TEST(ExportGoldenTest, MegatronDeepSpeedTorchtitan) {
  const auto base = With(With({"explain"}, kLlama70b), {"--tp", "8", "--pp", "4", "--vpp", "5", "--schedule",
                                                        "interleaved-1f1b", "--distributed-optimizer", "--sp"});
  auto meg = RunCliCapture(With(base, {"--export", "megatron"}));
  ASSERT_EQ(meg.exit_code, 0) << meg.err;
  ExpectGolden("export_megatron_llama3_70b.sh", meg.out);
  auto ds = RunCliCapture(With(base, {"--export", "deepspeed"}));
  ASSERT_EQ(ds.exit_code, 0) << ds.err;
  ExpectGolden("export_deepspeed_llama3_70b.json", ds.out);
  ExpectGolden("export_deepspeed_llama3_70b.notes", ds.err);
  auto tt = RunCliCapture(With(base, {"--export", "torchtitan"}));
  ASSERT_EQ(tt.exit_code, 0) << tt.err;
  ExpectGolden("export_torchtitan_llama3_70b.toml", tt.out);
}

TEST(ExportGoldenTest, MegatronMoe) {
  auto run = RunCliCapture({"explain", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--nodes", "8",
                            "--global-batch", "256", "--seq", "4096", "--tp", "2", "--pp", "4", "--ep", "8", "--sp",
                            "--distributed-optimizer", "--recompute", "full", "--export", "megatron"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("export_megatron_mixtral.sh", run.out);
}

TEST(ExportGoldenTest, PytorchCsv) {
  auto run = RunCliCapture({"explain", "--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "1",
                            "--global-batch", "8", "--tp", "2", "--pp", "4", "--schedule", "zbv", "--export",
                            "pytorch-csv"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("export_pytorch_llama3_8b_zbv.csv", run.out);
}

TEST(ExportGoldenTest, UnknownFormatIsOneLineExitTwo) {
  auto run = RunCliCapture(With(With({"explain"}, kLlama70b), {"--export", "yaml"}));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--export yaml: expected one of megatron, deepspeed, torchtitan, pytorch-csv"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace infralens::testing
