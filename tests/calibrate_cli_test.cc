// `infralens trace synth --record-shapes` -> `trace calibrate -o FILE` -> `plan --efficiency FILE`:
// the constants the planner reports using are the ones the traces were made from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_test_util.h"
#include "trace/testing.h"

namespace infralens {
namespace {

using ::testing::HasSubstr;
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
  // known.csv: the known curves, GEMM 0.62 with d_half 128, FlashAttention-2 0.41, HBM 0.7.
  void WriteKnownCurves() const {
    std::ofstream(Path("known.csv")) << "gpu,quantity,precision,value,source\n"
                                        "H100-SXM,gemm,bf16,0.62,test\n"
                                        "H100-SXM,gemm_half_dim,bf16,128,test\n"
                                        "H100-SXM,attention_fa2,,0.41,test\n"
                                        "H100-SXM,hbm,,0.7,test\n";
  }
  std::filesystem::path dir_;
};

TEST_F(CalibrateCliTest, SynthCalibratePlanRoundTrip) {
  WriteKnownCurves();
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "--efficiency",
                              Path("known.csv"), "--gpu", "H100-SXM", "--model", "llama3-8b",
                              "--tp", "2", "-o", Path("traces")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto cal = RunCliCapture(
      {"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM", "-o", Path("calibrated.csv")});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  // The file is the data (stdout stays empty with -o); the fit is reported on stderr.
  EXPECT_EQ(cal.out, "");
  EXPECT_THAT(cal.err, HasSubstr("gemm bf16"));
  EXPECT_THAT(cal.err, HasSubstr("default kept"));  // cuDNN attention
  std::ifstream in(Path("calibrated.csv"));
  const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(csv, HasSubstr("calibrated from"));
  // Without -o the same file goes to stdout; --format table puts the fit there instead.
  auto to_stdout = RunCliCapture({"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, csv);
  auto table = RunCliCapture(
      {"trace", "calibrate", Path("traces"), "--gpu", "H100-SXM", "--format", "table"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("gemm bf16"));
  auto plan = RunCliCapture({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                             "--global-batch", "64", "--tp", "2", "--pp", "1", "--json",
                             "--efficiency", Path("calibrated.csv")});
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
  WriteKnownCurves();
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "--efficiency",
                              Path("known.csv"), "--tp", "2", "-o", Path("traces")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  const std::vector<std::string> layout = {
      "plan", "--model", "llama3-8b", "--cluster",      "dgx-h100",   "--gpus",
      "8",    "--seq",   "2048",      "--global-batch", "32",         "--tp",
      "2",    "--pp",    "1",         "--framework",    "torchtitan", "--json"};
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

  // Every behaviour the plan states is read back: ZeRO-3 under torchtitan (FSDP2's copies), a MoE
  // layout under NeMo's DeepSeek-V3 recipe (DeepEP, the A2A overlap) and FP8 as torchao runs it
  // each rebuild to the step they state, or the comparison would say "not recalibrated".
  const std::vector<std::vector<std::string>> others = {
      {"plan", "--model",        "llama3-8b",  "--cluster",   "dgx-h100", "--gpus", "8", "--seq",
       "2048", "--global-batch", "32",         "--tp",        "1",        "--pp",   "1", "--zero",
       "3",    "--framework",    "torchtitan", "--precision", "fp8",      "--json"},
      {"plan",
       "--model",
       "deepseek-v3",
       "--cluster",
       "dgx-b200",
       "--gpus",
       "256",
       "--seq",
       "4096",
       "--global-batch",
       "1024",
       "--tp",
       "1",
       "--pp",
       "8",
       "--vpp",
       "2",
       "--ep",
       "32",
       "--zero",
       "1",
       "--recompute",
       "full",
       "--schedule",
       "interleaved-1f1b",
       "--layout",
       "Ett|(tttt|)*14tttL",
       "--precision",
       "fp8",
       "--framework",
       "nemo",
       "--json"},
      // DeepSpeed's ZeRO-3, fetched per parameter within stage3_max_live_parameters.
      {"plan", "--model",        "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--seq",
       "2048", "--global-batch", "32",        "--tp",      "1",        "--pp",   "1",  "--zero",
       "3",    "--framework",    "deepspeed", "--json"},
      // torchtitan's sequence parallelism over [batch, seq, hidden] (sp_sequence_dim 1: the
      // collectives' re-chunking copies) and its eager loss.
      {"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "2048",
       "--global-batch", "32", "--tp", "2", "--pp", "1", "--sp", "--framework", "torchtitan",
       "--json"},
      // torchtitan's async TP: its fused reduce-scatters sum their partials after the last step
      // (tp_overlap_rs_reduction after) and split into tp steps.
      {"plan",  "--model",     "llama3-8b",      "--cluster",    "dgx-h100", "--gpus", "8",
       "--seq", "2048",        "--global-batch", "32",           "--tp",     "2",      "--pp",
       "1",     "--framework", "torchtitan",     "--tp-overlap", "yes",      "--json"},
      // torchtitan's FSDP under a pipeline: gathered once per step (fsdp_with_pp per_step).
      {"plan", "--model",        "llama3-8b",  "--cluster", "dgx-h100", "--gpus", "16", "--seq",
       "2048", "--global-batch", "32",         "--tp",      "1",        "--pp",   "2",  "--zero",
       "3",    "--framework",    "torchtitan", "--json"},
      // Megatron-LM's sequence-parallel backward (gathered again) and Transformer Engine's TP
      // overlap with the SMs its userbuffers hold and its reduce-scatters in 4 steps at tp 2.
      {"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "2048",
       "--global-batch", "32", "--tp", "2", "--pp", "1", "--sp", "--framework", "megatron-lm",
       "--json"},
      {"plan",
       "--model",
       "llama3-8b",
       "--cluster",
       "dgx-h100",
       "--gpus",
       "8",
       "--seq",
       "2048",
       "--global-batch",
       "32",
       "--tp",
       "2",
       "--pp",
       "1",
       "--sp",
       "--framework",
       "megatron-lm",
       "--tp-overlap",
       "yes",
       "--tp-overlap-sms",
       "24,8",
       "--json"}};
  for (const auto& args : others) {
    auto other = RunCliCapture(args);
    ASSERT_EQ(other.exit_code, 0) << other.err;
    std::ofstream(Path("other.json")) << other.out;
    auto other_cmp =
        RunCliCapture({"trace", "compare", Path("other.json"), Path("traces"), "--json"});
    ASSERT_EQ(other_cmp.exit_code, 0) << other_cmp.err;
    EXPECT_TRUE(nlohmann::json::parse(other_cmp.out)["recalibrated"]["done"].get<bool>())
        << args[2] << ": " << other_cmp.out.substr(0, 2000);
  }

  // A plan written before the JSON carried every behaviour is refused, with the reason.
  auto old_json = nlohmann::json::parse(plan.out);
  old_json["request"]["behaviour"].erase("fp32_gradients");
  std::ofstream(Path("old.json")) << old_json.dump();
  auto old_cmp = RunCliCapture({"trace", "compare", Path("old.json"), Path("traces")});
  ASSERT_EQ(old_cmp.exit_code, 0) << old_cmp.err;
  EXPECT_THAT(old_cmp.out, HasSubstr("not recalibrated: cannot rebuild the plan from its JSON"));
}

// The GPU from the traces' deviceProperties when --gpu is not given; --gpu wins (with a note).
TEST_F(CalibrateCliTest, GpuFromDeviceProperties) {
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "--tp", "2", "-o", Path("t")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  std::ifstream in(Path("t/rank0.json"));
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(json.substr(0, 1), "{");
  auto with_device = [&](const std::string& dir, const std::string& name, int64_t mem) {
    std::filesystem::create_directories(Path(dir));
    std::ofstream(Path(dir + "/rank0.json"))
        << "{\"deviceProperties\": [{\"id\": 0, \"name\": \"" << name
        << "\", \"totalGlobalMem\": " << mem << ", \"computeMajor\": 9}], " << json.substr(1);
  };
  with_device("h100", "NVIDIA H100 80GB HBM3", 85029158912);
  with_device("a100", "NVIDIA A100-SXM4-80GB", 85198045184);
  with_device("v100", "Tesla V100-SXM2-32GB", 34089730048);
  // One file (one rank) listing two kinds of device.
  with_device("mixed",
              "NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85029158912}, {\"id\": 1, "
              "\"name\": \"NVIDIA A100-SXM4-80GB",
              85198045184);
  auto h = RunCliCapture({"trace", "calibrate", Path("h100"), "--format", "table"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_THAT(h.out, HasSubstr("calibration for H100-SXM"));
  EXPECT_THAT(
      h.out, HasSubstr("GPU H100-SXM from the traces' deviceProperties ('NVIDIA H100 80GB HBM3')"));
  // The default cluster (dgx-h100) holds H100-SXM: its link rows are tried (too few samples).
  EXPECT_THAT(h.out, HasSubstr("scale_up_link"));
  // A100 traces: the default cluster is not theirs, so no link rows, and the note says so.
  auto a = RunCliCapture({"trace", "calibrate", Path("a100"), "--format", "table"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("calibration for A100-80GB"));
  EXPECT_THAT(a.out,
              HasSubstr("the default cluster dgx-h100 holds H100-SXM, not A100-80GB; name the "
                        "cluster with --cluster"));
  auto a_cluster = RunCliCapture(
      {"trace", "calibrate", Path("a100"), "--cluster", "dgx-a100", "--format", "table"});
  ASSERT_EQ(a_cluster.exit_code, 0) << a_cluster.err;
  EXPECT_THAT(a_cluster.out, HasSubstr("dgx-a100's value kept"));
  // Two GPUs, or one no preset models: one line, exit 2, saying to name the GPU with --gpu.
  auto mixed = RunCliCapture({"trace", "calibrate", Path("mixed")});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_THAT(mixed.err, HasSubstr("the traces name different GPUs"));
  EXPECT_THAT(mixed.err, HasSubstr("name the GPU the traces ran on with --gpu"));
  auto v = RunCliCapture({"trace", "calibrate", Path("v100")});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_THAT(v.err,
              HasSubstr("device 'Tesla V100-SXM2-32GB' with 31.7 GiB matches no GPU preset"));
  // --gpu wins over the traces, and says they disagree.
  auto forced =
      RunCliCapture({"trace", "calibrate", Path("a100"), "--gpu", "H100-SXM", "--format", "table"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_THAT(forced.out, HasSubstr("calibration for H100-SXM"));
  EXPECT_THAT(forced.out,
              HasSubstr("--gpu H100-SXM differs from the traces' deviceProperties ('NVIDIA "
                        "A100-SXM4-80GB', A100-80GB): --gpu wins"));
}

TEST_F(CalibrateCliTest, UsageErrorsAndTracesWithoutShapes) {
  auto bad_gpu = RunCliCapture({"trace", "calibrate", Path("x"), "--gpu", "H999"});
  EXPECT_EQ(bad_gpu.exit_code, 2);
  trace::testing::TraceBuilder b;
  b.Launch(9, 2).Kernel("gemm", 7, 10, 5, 9);
  b.Write(Path("plain.json"));
  // Traces with shapes, no --gpu and no deviceProperties (the synth writes none): one line
  // saying to name the GPU with --gpu, a usage error.
  auto synth = RunCliCapture({"trace", "synth", "--record-shapes", "-o", Path("shaped")});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto no_gpu = RunCliCapture({"trace", "calibrate", Path("shaped")});
  EXPECT_EQ(no_gpu.exit_code, 2);
  EXPECT_THAT(no_gpu.err,
              HasSubstr("no deviceProperties in 1 trace file to name the GPU; name the GPU "
                        "the traces ran on with --gpu"));
  // Without shapes, that comes first, named GPU or not: a failure (exit 1), not a usage error.
  auto unshaped = RunCliCapture({"trace", "calibrate", Path("plain.json")});
  EXPECT_EQ(unshaped.exit_code, 1);
  EXPECT_THAT(unshaped.err, HasSubstr("no shapes recorded: profile with record_shapes=True"));
  auto none = RunCliCapture(
      {"trace", "calibrate", Path("plain.json"), "--gpu", "H100-SXM", "-o", Path("out.csv")});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("no shapes recorded: profile with record_shapes=True"));
  EXPECT_FALSE(std::filesystem::exists(Path("out.csv")));  // nothing written on failure
}

}  // namespace
}  // namespace infralens
