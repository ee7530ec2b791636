// `infralens trace synth --record-shapes` -> `trace calibrate -o FILE` -> `plan --efficiency FILE`:
// the constants the planner reports using are the ones the traces were made from.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_test_util.h"
#include "trace/testing.h"

namespace infralens {
namespace {

using testing::RunCliCapture;

class CalibrateCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("infralens_calibrate_cli_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(CalibrateCliTest, SynthCalibratePlanRoundTrip) {
  // Known curves: GEMM 0.62 with d_half 128, FlashAttention-2 0.41, HBM 0.7.
  std::ofstream(Path("known.csv")) << "gpu,quantity,precision,value,source\n"
                                      "H100-SXM,gemm,bf16,0.62,test\n"
                                      "H100-SXM,gemm_half_dim,bf16,128,test\n"
                                      "H100-SXM,attention_fa2,,0.41,test\n"
                                      "H100-SXM,hbm,,0.7,test\n";
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "--efficiency",
                              Path("known.csv"), "--gpu", "H100-SXM", "--model", "llama3-8b",
                              "--tp", "2", "-o", Path("traces")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto cal = RunCliCapture(
      {"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM", "-o", Path("calibrated.csv")});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  // The file is the data (stdout stays empty with -o); the fit is reported on stderr.
  EXPECT_EQ(cal.out, "");
  EXPECT_NE(cal.err.find("gemm bf16"), std::string::npos) << cal.err;
  EXPECT_NE(cal.err.find("default kept"), std::string::npos) << cal.err;  // cuDNN attention
  std::ifstream in(Path("calibrated.csv"));
  const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(csv.find("calibrated from"), std::string::npos) << csv;
  // Without -o the same file goes to stdout; --format table puts the fit there instead.
  auto to_stdout = RunCliCapture({"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, csv);
  auto table = RunCliCapture(
      {"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM", "--format", "table"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("gemm bf16"), std::string::npos) << table.out;
  auto plan = RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                             "--global-batch", "64", "--tp", "2", "--json", "--efficiency",
                             Path("calibrated.csv")});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto e = nlohmann::json::parse(plan.out)["request"]["efficiency"];
  EXPECT_NEAR(e["gemm"].get<double>(), 0.62, 0.0062);
  EXPECT_NEAR(e["gemm_half_dim"].get<double>(), 128, 1.28);
  EXPECT_NEAR(e["attention_fa2"].get<double>(), 0.41, 0.0041);
  EXPECT_NEAR(e["hbm"].get<double>(), 0.7, 0.007);
  EXPECT_NE(e["gemm_from"].get<std::string>().find("calibrated.csv"), std::string::npos);
}

// `trace compare PLAN.json TRACES` predicts the plan's layout again with the constants the traces
// give. Independently: the same layout planned with the known curves themselves (`plan
// --efficiency known.csv`); calibration recovers the curves within 1%, so the two agree to 1%.
TEST_F(CalibrateCliTest, CompareRecalibratesThePlan) {
  std::ofstream(Path("known.csv")) << "gpu,quantity,precision,value,source\n"
                                      "H100-SXM,gemm,bf16,0.62,test\n"
                                      "H100-SXM,gemm_half_dim,bf16,128,test\n"
                                      "H100-SXM,attention_fa2,,0.41,test\n"
                                      "H100-SXM,hbm,,0.7,test\n";
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "--efficiency",
                              Path("known.csv"), "--tp", "2", "-o", Path("traces")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  const std::vector<std::string> layout = {"plan",     "--model",        "llama3-8b",  "--cluster",
                                           "dgx-h100", "--gpus",         "8",          "--seq",
                                           "2048",     "--global-batch", "32",         "--tp",
                                           "2",        "--framework",    "torchtitan", "--json"};
  auto plan = RunCliCapture(layout);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::ofstream(Path("plan.json")) << plan.out;
  std::vector<std::string> with_known = layout;
  with_known.insert(with_known.end(), {"--efficiency", Path("known.csv")});
  auto truth = RunCliCapture(with_known);
  ASSERT_EQ(truth.exit_code, 0) << truth.err;
  const double stated_s = nlohmann::json::parse(plan.out)["plan"]["step_time_s"].get<double>();
  const double truth_s = nlohmann::json::parse(truth.out)["plan"]["step_time_s"].get<double>();
  ASSERT_GT(std::abs(truth_s / stated_s - 1), 0.02);  // the known curves do change the prediction

  auto cmp = RunCliCapture({"trace", "compare", Path("plan.json"), Path("traces"), "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  const auto r = nlohmann::json::parse(cmp.out)["recalibrated"];
  ASSERT_TRUE(r["done"].get<bool>()) << cmp.out;
  EXPECT_NEAR(r["step_time_ms"].get<double>(), 1e3 * stated_s, 1e-6 * 1e3 * stated_s);
  EXPECT_NEAR(r["new_step_time_ms"].get<double>() / (1e3 * truth_s), 1.0, 0.01);

  // A plan written before the JSON carried every behaviour is refused, with the reason.
  auto old_json = nlohmann::json::parse(plan.out);
  old_json["request"]["behaviour"].erase("fp32_gradients");
  std::ofstream(Path("old.json")) << old_json.dump();
  auto old_cmp = RunCliCapture({"trace", "compare", Path("old.json"), Path("traces")});
  ASSERT_EQ(old_cmp.exit_code, 0) << old_cmp.err;
  EXPECT_NE(old_cmp.out.find("not recalibrated: cannot rebuild the plan from its JSON"),
            std::string::npos)
      << old_cmp.out;
}

TEST_F(CalibrateCliTest, UsageErrorsAndTracesWithoutShapes) {
  auto no_gpu = RunCliCapture({"trace", "calibrate", Path("x")});
  EXPECT_EQ(no_gpu.exit_code, 2);
  EXPECT_NE(no_gpu.err.find("--gpu is required"), std::string::npos) << no_gpu.err;
  auto bad_gpu = RunCliCapture({"trace", "calibrate", Path("x"), "--gpu", "H999"});
  EXPECT_EQ(bad_gpu.exit_code, 2);
  trace::testing::TraceBuilder b;
  b.Launch(9, 2).Kernel("gemm", 7, 10, 5, 9);
  b.Write(Path("plain.json"));
  auto none = RunCliCapture(
      {"trace", "calibrate", Path("plain.json"), "--gpu", "H100-SXM", "-o", Path("out.csv")});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no shapes recorded: profile with record_shapes=True"), std::string::npos)
      << none.err;
  EXPECT_FALSE(std::filesystem::exists(Path("out.csv")));  // nothing written on failure
}

}  // namespace
}  // namespace infralens
