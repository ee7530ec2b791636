#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

TEST(PlanGoldenTest, SearchLlama8bOnSixteenGpus) {
  auto run = RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16",
                            "--global-batch", "128", "--seq", "4096", "--top", "5", "--explain",
                            "--threads", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The wall time varies; everything else is deterministic.
  std::string out = run.out;
  size_t a = out.find(" in "), b = out.find(" s: ", a);
  ASSERT_NE(a, std::string::npos);
  out.replace(a + 4, b - a - 4, "<t>");
  ExpectGolden("plan_llama3_8b_16gpus.txt", out);
}

TEST(PlanGoldenTest, EvaluateOneLayout) {
  ExpectCliGolden(With(With({"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus",
                             "64", "--global-batch", "512", "--seq", "8192"},
                            Tp8Pp4Vpp5Interleaved()),
                       {"--distributed-optimizer", "--sp"}),
                  "plan_llama3_70b_tp8_pp4.txt");
}

TEST(PlanGoldenTest, ValidateCalibration) {
  // The calibration set as the repository ships it (data/published/): present in every clone.
  const std::string csv = SourcePath("data/published/calibration.csv");
  ExpectCliGolden({"validate", "--published", csv}, "validate_calibration.txt");
}

TEST(PlanGoldenTest, ImpossibleRequestsExitNonZeroWithOneLine) {
  auto big = RunCliCapture({"plan", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gpus",
                            "8", "--global-batch", "8"});
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_NE(big.err.find("does not fit"), std::string::npos) << big.err;
  auto odd = RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "12",
                            "--global-batch", "8"});
  EXPECT_EQ(odd.exit_code, 2);
  EXPECT_NE(odd.err.find("--gpus 12"), std::string::npos) << odd.err;
  auto nobatch =
      RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8"});
  EXPECT_EQ(nobatch.exit_code, 2);
  // `memory` refuses --micro-batch 0; `plan` once searched every micro-batch instead (issue 26).
  auto zero = RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                             "--global-batch", "8", "--micro-batch", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--micro-batch 0: must be at least 1"), std::string::npos) << zero.err;
}

// Issue 12: one layout, one answer. `memory` and `plan` share the recompute default (selective),
// --cluster and --gpus, and both derive dp from the GPU count (64 / (8 x 4) = 2), so the same
// layout holds the same bytes in both.
TEST(PlanGoldenTest, MemoryAndPlanAgreeOnOneLayout) {
  auto mem =
      RunCliCapture({"memory", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64",
                     "--tp", "8", "--pp", "4", "--global-batch", "512", "--seq", "8192", "--json"});
  ASSERT_EQ(mem.exit_code, 0) << mem.err;
  auto plan =
      RunCliCapture({"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64",
                     "--global-batch", "512", "--seq", "8192", "--tp", "8", "--pp", "4", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto m = nlohmann::json::parse(mem.out);
  const auto p = nlohmann::json::parse(plan.out);
  EXPECT_EQ(p["plan"]["recompute"], "selective");
  EXPECT_EQ(m["total_bytes"].get<double>(), p["plan"]["memory"]["total_bytes"].get<double>());
  // --gpus means the same in the commands that place a job.
  for (const char* cmd : {"topology", "comm-plan"}) {
    std::vector<std::string> args = {cmd,    "--cluster", "dgx-h100", "--gpus", "64",
                                     "--tp", "8",         "--pp",     "2"};
    if (std::string(cmd) == "comm-plan") {
      for (const char* a : {"--model", "llama3-70b", "--global-batch", "256"}) args.emplace_back(a);
    }
    auto r = RunCliCapture(args);
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("8 nodes"), std::string::npos) << cmd;
  }
}

// What the planner predicts, the trace comparison reads: plan --json feeds trace compare.
TEST(PlanGoldenTest, TraceCompareReadsPlanJson) {
  auto plan =
      RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                     "--global-batch", "64", "--seq", "4096", "--tp", "2", "--pp", "4", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  // A folder of this process's own: synth refuses a non-empty one, and another build's test run
  // may be using the same TempDir at the same time.
  const std::string dir = ::testing::TempDir() + "/plan_trace_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto synth =
      RunCliCapture({"trace", "synth", "--schedule", "1f1b", "--pp", "4", "-m", "8", "-o", dir});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  const std::string path = ::testing::TempDir() + "/plan.json";
  {
    std::ofstream f(path);
    f << plan.out;
  }
  auto cmp = RunCliCapture({"trace", "compare", path, dir, "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("\"plan\""), std::string::npos) << cmp.out.substr(0, 400);
  EXPECT_NE(cmp.out.find("step"), std::string::npos);
}

}  // namespace
}  // namespace infralens::testing

namespace infralens {
namespace {

using testing::RunCliCapture;

// --efficiency: a team's own measurements over the built-in constants. A GEMM efficiency of
// 0.5 against the built-in 0.72 makes the GEMM part 1.44x slower, so the step grows; the JSON
// says which constants were used and where they came from; a malformed file is one line, exit 2.
TEST(PlanGoldenTest, EfficiencyFileOverlaysTheBuiltInConstants) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "infralens_plan_efficiency_test";
  std::filesystem::create_directories(dir);
  const std::string mine = (dir / "mine.csv").string(), bad = (dir / "bad.csv").string();
  std::ofstream(mine) << "# our GEMM sweep\ngpu,quantity,precision,value,source\n"
                         "H100-SXM,gemm,bf16,0.5,\"our cuBLAS sweep\"\n";
  std::ofstream(bad) << "gpu,quantity,precision,value,source\nH100-SXM,gemm,bf16,1.5,x\n";
  const std::vector<std::string> job = {
      "plan",           "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
      "--global-batch", "64",      "--tp",      "2",         "--pp",     "1",      "--json"};
  auto base = RunCliCapture(job);
  ASSERT_EQ(base.exit_code, 0) << base.err;
  std::vector<std::string> with = job;
  with.insert(with.end(), {"--efficiency", mine});
  auto slow = RunCliCapture(with);
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  const auto b = nlohmann::json::parse(base.out), s = nlohmann::json::parse(slow.out);
  EXPECT_EQ(b["request"]["efficiency"]["gemm"], 0.72);  // data/hw/efficiency.csv, H100 BF16
  EXPECT_EQ(s["request"]["efficiency"]["gemm"], 0.5);
  EXPECT_NE(s["request"]["efficiency"]["gemm_from"].get<std::string>().find("mine.csv"),
            std::string::npos);
  EXPECT_GT(s["plan"]["step_time_s"].get<double>(), b["plan"]["step_time_s"].get<double>());
  std::vector<std::string> broken = job;
  broken.insert(broken.end(), {"--efficiency", bad});
  auto err = RunCliCapture(broken);
  EXPECT_EQ(err.exit_code, 1);  // a malformed input file is a failure (docs/cli.md, exit codes)
  EXPECT_NE(err.err.find("bad.csv line 2, column value: gemm '1.5'"), std::string::npos) << err.err;
  EXPECT_EQ(std::count(err.err.begin(), err.err.end(), '\n'), 1) << err.err;
  // validate takes the same file.
  auto v = RunCliCapture({"validate", "--efficiency", mine, "--json"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace infralens
