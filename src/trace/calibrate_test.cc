#include "trace/calibrate.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "model/presets.h"
#include "plan/gemm_time.h"
#include "plan/planner.h"
#include "trace/calibrate_synth.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TraceBuilder;

hw::Gpu H100() { return *hw::FindGpu("H100-SXM"); }

const CurveFit* FindFit(const Calibration& c, std::string_view name, std::string_view precision) {
  for (const auto& f : c.fits) {
    if (f.name == name && f.precision == precision) return &f;
  }
  return nullptr;
}

// A CPU operator as PyTorch's profiler writes it with record_shapes=True.
std::string CpuOp(const std::string& name, double ts, double dur, long ext, const std::string& dims,
                  const std::string& types, const std::string& concrete = "") {
  return fmt::format(
      R"J({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": {}, "args": {{"External id": {}, "Input Dims": {}, "Input type": {}{}}}}})J",
      name, ts, dur, ext, dims, types,
      concrete.empty() ? "" : ", \"Concrete Inputs\": " + concrete);
}

std::string LaunchWithExt(long correlation, long ext, double ts) {
  return fmt::format(
      R"J({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 2, "args": {{"External id": {}, "correlation": {}}}}})J",
      ts, ext, correlation);
}

RankTrace Read(const std::string& json) {
  auto t = trace::ReadKinetoTraceBytes(json, "test.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *std::move(t) : RankTrace{};
}

TEST(CalibrateTest, ParsesInputDimsAndStringLists) {
  std::vector<std::vector<int64_t>> d;
  ASSERT_TRUE(ParseInputDims("[[256], [16, 13], [13, 256], [], []]", &d));
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[1], (std::vector<int64_t>{16, 13}));
  EXPECT_TRUE(d[3].empty());
  EXPECT_TRUE(ParseInputDims("[]", &d));
  EXPECT_TRUE(d.empty());
  for (const char* bad : {"", "[", "[[1, 2]", "[[1, x]]", "[[1], 2]", "[[-1]]", "[[1]] extra"})
    EXPECT_FALSE(ParseInputDims(bad, &d)) << bad;
  std::vector<std::string> s;
  ASSERT_TRUE(ParseStringList(R"(["float", "c10::BFloat16", ""])", &s));
  EXPECT_EQ(s, (std::vector<std::string>{"float", "c10::BFloat16", ""}));
  EXPECT_FALSE(ParseStringList(R"(["a", )", &s));
}

// Points exactly on z = (k + k_half) / e give back e and k_half.
TEST(CalibrateTest, GemmKLoopFitRecoversExactParameters) {
  std::vector<double> k = {32, 64, 128, 512, 2048, 8192}, z;
  for (double x : k) z.push_back((x + 128) / 0.62);
  double e = 0, h = 0;
  ASSERT_TRUE(FitGemmKLoop(k, z, &e, &h));
  EXPECT_NEAR(e, 0.62, 1e-9);
  EXPECT_NEAR(h, 128, 1e-6);
  // One distinct k cannot separate the slope from the intercept.
  EXPECT_FALSE(FitGemmKLoop({4096, 4096, 4096}, {7000, 7000, 7100}, &e, &h));
}

// One aten::mm [1024, 2048] x [2048, 4096] in BF16 whose kernel ran 100 us, joined through the
// launch's External id: 2 M N K = 17.18 GFLOP in 100 us is 171.8 TFLOP/s, 0.1737 of the H100
// SXM's 989 TFLOP/s dense BF16 peak.
TEST(CalibrateTest, GemmSampleFromShapesAndKernelTime) {
  TraceBuilder b;
  b.Raw(CpuOp("aten::mm", 10, 30, 7, "[[1024, 2048], [2048, 4096]]",
              R"(["c10::BFloat16", "c10::BFloat16"])"));
  b.Raw(LaunchWithExt(500, 7, 20));
  b.Kernel("sm90_xmma_gemm_bf16bf16", 7, 50, 100, 500);
  RankTrace t = Read(b.Json());
  ASSERT_EQ(t.shaped_ops.size(), 1u);
  auto c = Calibrate({t}, CalibrationOptions{H100()});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->gemm.size(), 1u);
  const GemmSample& g = c->gemm[0];
  EXPECT_EQ(g.m, 1024);
  EXPECT_EQ(g.k, 2048);
  EXPECT_EQ(g.n, 4096);
  EXPECT_EQ(g.precision, "bf16");
  EXPECT_DOUBLE_EQ(g.flops, 2.0 * 1024 * 2048 * 4096);
  EXPECT_DOUBLE_EQ(g.kernel_us, 100);
  EXPECT_NEAR(g.efficiency, 2.0 * 1024 * 2048 * 4096 / 100e-6 / H100().bf16_flops_per_s, 1e-12);
  EXPECT_EQ(c->joined_by_time, 0);
  // One sample is below the minimum: the default is kept and the fit says so.
  const CurveFit* f = FindFit(*c, "gemm", "bf16");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->fitted);
  EXPECT_EQ(f->samples, 1);
  EXPECT_DOUBLE_EQ(f->value, f->default_value);
  EXPECT_NE(f->note.find("default kept"), std::string::npos);
  EXPECT_EQ(CalibrationCsv(*c).find("\nH100-SXM,"), std::string::npos);  // nothing fitted
}

// Older traces: the launch's "External id" is its own correlation (no link to the operator), so
// the innermost operator on the thread holding the launch is taken: aten::addmm inside
// aten::linear. addmm(bias [N], A [M, K], B [K, N]) in FP32 is reported, not fitted.
TEST(CalibrateTest, JoinsByTimeWhenTheLaunchIsNotLinked) {
  TraceBuilder b;
  b.Raw(CpuOp("aten::linear", 10, 100, 3, "[[16, 13], [256, 13], [256]]",
              R"(["float", "float", "float"])"));
  b.Raw(CpuOp("aten::addmm", 20, 50, 4, "[[256], [16, 13], [13, 256], [], []]",
              R"(["float", "float", "float", "Scalar", "Scalar"])"));
  b.Raw(LaunchWithExt(40875, 40875, 30));
  b.Kernel("gemmSN_TN_kernel", 7, 60, 8, 40875);
  RankTrace t = Read(b.Json());
  ASSERT_EQ(t.shaped_ops.size(), 2u);
  auto c = Calibrate({t}, CalibrationOptions{H100()});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->gemm.size(), 1u);
  EXPECT_EQ(c->gemm[0].op, "aten::addmm");
  EXPECT_EQ(c->gemm[0].precision, "fp32");
  EXPECT_DOUBLE_EQ(c->gemm[0].flops, 2.0 * 16 * 13 * 256);
  EXPECT_EQ(c->joined_by_time, 1);
  EXPECT_EQ(c->ops_without_kernels, 1);  // the linear: its kernel belongs to the addmm
}

// Causal flash attention forward, B 2, H 8, S 1024, D 128: 4 B H S^2 D / 2 = 4.29 GFLOP;
// its backward 2.5x that.
TEST(CalibrateTest, AttentionFlopsCausalAndBackward) {
  TraceBuilder b;
  const std::string q = "[2, 8, 1024, 128]";
  b.Raw(CpuOp(
      "aten::_scaled_dot_product_flash_attention", 10, 20, 5,
      fmt::format("[{}, {}, {}, [], [], [], []]", q, q, q),
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", ""])",
      R"(["", "", "", "0.", "True", "False", ""])"));
  b.Raw(LaunchWithExt(600, 5, 15));
  b.Kernel("flash_fwd_kernel", 7, 40, 20, 600);
  b.Raw(CpuOp(
      "aten::_flash_attention_backward", 100, 20, 6,
      "[[2, 1024, 8, 128], [2, 1024, 8, 128], [2, 1024, 8, 128], [2, 1024, 8, 128], "
      "[2, 1024, 8, 128], [2, 8, 1024], [], [], [], [], [], [], [], []]",
      R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "", ""])",
      R"(["", "", "", "", "", "", "", "", "1024", "1024", "0.", "False", "", ""])"));
  b.Raw(LaunchWithExt(601, 6, 105));
  b.Kernel("flash_bwd_kernel", 7, 130, 50, 601);
  auto c = Calibrate({Read(b.Json())}, CalibrationOptions{H100()});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->attention.size(), 2u);
  const double full = 4.0 * 2 * 8 * 1024 * 1024 * 128;
  EXPECT_TRUE(c->attention[0].causal);
  EXPECT_DOUBLE_EQ(c->attention[0].flops, full / 2);
  EXPECT_FALSE(c->attention[1].causal);  // is_causal False in the backward's Concrete Inputs
  EXPECT_TRUE(c->attention[1].backward);
  EXPECT_EQ(c->attention[1].heads, 8);  // [B, S, H, D] at the kernel level
  EXPECT_EQ(c->attention[1].seq_q, 1024);
  EXPECT_DOUBLE_EQ(c->attention[1].flops, full * 2.5);
}

TEST(CalibrateTest, NoShapesIsAClearFailure) {
  TraceBuilder b;
  b.Raw(
      R"J({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 3}})J");
  b.Launch(9, 2);
  b.Kernel("gemm", 7, 10, 5, 9);
  auto c = Calibrate({Read(b.Json())}, CalibrationOptions{H100()});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("no shapes recorded: profile with record_shapes=True"),
            std::string::npos);
  EXPECT_NE(c.status().message().find("1 GEMM/attention/streaming operators without shapes"),
            std::string::npos);
}

// Round trip: a trace synthesised from known curves calibrates back to them within 1%.
TEST(CalibrateTest, RoundTripFromKnownCurves) {
  ShapesSynthOptions so;
  so.gpu = H100();
  so.model = *model::FindPreset("llama3-8b");
  so.tp = 2;
  so.curves.gemm = 0.62;
  so.curves.gemm_half_dim = 128;
  so.curves.attention_fa2 = 0.41;
  // The kernels ran at the built-in half-rate key length, which calibration assumes (the trace's
  // sequence is not 8k, so a mismatch would move the fitted value).
  so.curves.attention_fa2_half_seq =
      plan::EfficiencyTable::Builtin().For(so.gpu, plan::Precision::kBf16).attention_fa2_half_seq;
  ASSERT_GT(so.curves.attention_fa2_half_seq, 0);
  so.curves.hbm = 0.7;
  auto json = ShapesTraceJson(so);
  ASSERT_TRUE(json.ok()) << json.status().message();
  RankTrace t = Read(*json);
  CalibrationOptions o;
  o.gpu = so.gpu;
  auto c = Calibrate({t}, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->ops_without_kernels, 0);
  EXPECT_EQ(c->ops_unusable, 0);
  EXPECT_EQ(static_cast<int>(c->gemm.size()), 4 * 8);
  auto expect = [&](std::string_view name, std::string_view prec, double want) {
    const CurveFit* f = FindFit(*c, name, prec);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->fitted) << name << ": " << f->note;
    EXPECT_NEAR(f->value, want, 0.01 * want) << name;
  };
  expect("gemm", "bf16", 0.62);
  expect("gemm_half_dim", "bf16", 128);
  expect("attention_fa2", "", 0.41);
  expect("hbm", "", 0.7);
  // Every GEMM, the memory-bound ones too, is where the planner's model puts it at the calibrated
  // constants (the trace follows that model), at the split the trace's curves ran it.
  plan::DeviceEfficiency truth =
      plan::EfficiencyTable::Builtin().For(so.gpu, plan::Precision::kBf16);
  truth.gemm = 0.62, truth.gemm_half_dim = 128, truth.hbm = 0.7;
  const plan::GemmKernel ran = plan::GemmKernelFor(so.gpu, truth, false);
  for (const GemmSample& g : c->gemm) {
    const plan::GemmShape shape{static_cast<double>(g.m), static_cast<double>(g.n),
                                static_cast<double>(g.k)};
    EXPECT_NEAR(g.model_efficiency, g.efficiency, 0.01 * g.efficiency) << g.m << "x" << g.n;
    EXPECT_EQ(g.split, plan::GemmSplitK(ran, shape)) << g.m << "x" << g.n << "x" << g.k;
    EXPECT_GT(g.default_efficiency, 0);
  }
  const CurveFit* cudnn = FindFit(*c, "attention", "");
  ASSERT_NE(cudnn, nullptr);
  EXPECT_FALSE(cudnn->fitted);  // no cuDNN attention in the trace
  // The all_reduce over tp 2 ranks of one H100 node: scale-up, at 0.8 of 450 GB/s.
  ASSERT_FALSE(c->bands.empty());
  for (const auto& b : c->bands) {
    EXPECT_EQ(b.kind, "all_reduce");
    EXPECT_EQ(b.link, "scale-up");
    EXPECT_NEAR(b.median_busbw_bytes_per_s, 0.8 * so.gpu.scaleup_bytes_per_s,
                0.01 * 0.8 * so.gpu.scaleup_bytes_per_s);
  }
  // The file reads back as an efficiency file and gives the fitted values to the planner.
  auto table = plan::EfficiencyTable::Parse(CalibrationCsv(*c), "calibrated.csv");
  ASSERT_TRUE(table.ok()) << table.status().message();
  plan::EfficiencyTable merged = plan::EfficiencyTable::Builtin();
  merged.Overlay(*table);
  const plan::DeviceEfficiency e = merged.For(so.gpu, plan::Precision::kBf16);
  EXPECT_NEAR(e.gemm, 0.62, 0.0062);
  EXPECT_NEAR(e.gemm_half_dim, 128, 1.28);
  EXPECT_NEAR(e.attention_fa2, 0.41, 0.0041);
  EXPECT_NEAR(e.hbm, 0.7, 0.007);
  EXPECT_DOUBLE_EQ(e.attention,
                   plan::EfficiencyTable::Builtin().For(so.gpu, plan::Precision::kBf16).attention);
}

// Defaults far from the answer: which kernels are kept clear of the memory floor, and at which
// split, is the fitted model's, refitted until it settles. The sample follows the built-in H100
// model (e 0.75, k_half 96, HBM 0.80; llama3-8b at tp 1, 32 GEMMs) and the defaults say e 0.2:
// at e 0.2 every k-loop is 3.75 times slower, so 25 GEMMs look more than twice their memory
// floor, 9 of them wrongly, e.g. the MLP up projection at 64 tokens (1 x 112 tiles, one wave of
// 2 x 128 x 256 x (4096 + 96) / (989.4e12 / 132 x 0.75) = 48.9 us of k-loop against
// (64 x 4096 + 4096 x 28672 + 64 x 28672) x 2 bytes at 0.80 x 3.35 TB/s = 89.2 us of HBM) or the
// MLP down projection at 256 tokens (2 x 16 tiles, fastest at 3 ways: 56.8 us against 56.7 us;
// at e 0.2, 4 ways). Fitted on those, then on the 16 the fitted model keeps, e and k_half come
// back exactly.
TEST(CalibrateTest, TheKeptKernelsAndSplitsAreTheFittedModels) {
  ShapesSynthOptions so;
  so.gpu = H100();
  so.model = *model::FindPreset("llama3-8b");
  so.curves = plan::EfficiencyTable::Builtin().For(so.gpu, plan::Precision::kBf16);
  so.curves.gemm = 0.75;  // the curve the derivation above uses, whatever the built-in value
  auto json = ShapesTraceJson(so);
  ASSERT_TRUE(json.ok()) << json.status().message();
  auto far = plan::EfficiencyTable::Parse(
      "gpu,quantity,precision,value,source\nH100-SXM,gemm,bf16,0.2,test\n", "far.csv");
  ASSERT_TRUE(far.ok()) << far.status().message();
  plan::EfficiencyTable defaults = plan::EfficiencyTable::Builtin();
  defaults.Overlay(*far);
  CalibrationOptions o;
  o.gpu = so.gpu;
  o.defaults = &defaults;
  auto c = Calibrate({Read(*json)}, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const CurveFit* e = FindFit(*c, "gemm", "bf16");
  const CurveFit* h = FindFit(*c, "gemm_half_dim", "bf16");
  ASSERT_TRUE(e && h);
  EXPECT_EQ(e->default_value, 0.2);
  EXPECT_TRUE(e->fitted && h->fitted) << e->note;
  EXPECT_NEAR(e->value, 0.75, 1e-3);
  EXPECT_NEAR(h->value, 96, 0.1);
  EXPECT_EQ(e->samples, 16);
  EXPECT_LT(e->max_residual, 1e-3);
}

// The shared real traces: PARAM's DLRM traces carry shapes (FP32 GEMMs, joined by time: their
// launches are not linked to the operators, and the GEMMs are FP32, which the planner does not
// model); HTA's DDP trace has none.
TEST(CalibrateTest, SharedRealTraces) {
  const std::string dir = testing::SharedTracesDir();
  if (dir.empty()) GTEST_SKIP() << "shared traces not present";
  auto files = ExpandTracePaths({dir + "/param_dlrm_8rank"});
  ASSERT_TRUE(files.ok());
  LoadedTraces loaded = LoadTraces(*files);
  ASSERT_EQ(loaded.traces.size(), 8u);
  CalibrationOptions o;
  o.gpu = *hw::FindGpu("A100-40GB");
  auto c = Calibrate(loaded.traces, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_GT(c->gemm.size(), 0u);
  EXPECT_GT(c->joined_by_time, 0);
  for (const auto& g : c->gemm) EXPECT_EQ(g.precision, "fp32");
  for (const auto& f : c->fits) EXPECT_FALSE(f.fitted) << f.name;  // nothing in BF16 or FP8
  EXPECT_TRUE(c->bands.empty());  // PyTorch wrote no collective metadata on these NCCL kernels
  LoadedTraces ddp = LoadTraces({dir + "/hta_ddp_allreduce_rank0/nccl_data.json.gz"});
  ASSERT_EQ(ddp.traces.size(), 1u);
  auto none = Calibrate(ddp.traces, o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
}

// The GPU from deviceProperties: one preset for every device, else an error naming what was found.
TEST(GpuFromTracesTest, OneGpuOrAnErrorNamingWhatWasFound) {
  auto dev = [](const std::string& path, std::vector<std::pair<std::string, int64_t>> names) {
    RankTrace t;
    t.path = path;
    for (auto& [n, mem] : names) t.devices.push_back({0, n, mem, -1, -1});
    return t;
  };
  auto one = GpuFromTraces({dev("r0.json", {{"NVIDIA H100 80GB HBM3", 85029158912},
                                            {"NVIDIA H100 80GB HBM3", 85029158912}}),
                            dev("r1.json", {{"NVIDIA H100 80GB HBM3", 85029158912}})});
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->gpu.name, "H100-SXM");
  EXPECT_EQ(one->file, "r0.json");
  // Two names of one preset (the memory rule and the exact name) are one GPU.
  auto same = GpuFromTraces({dev("a", {{"NVIDIA A100-SXM4-80GB", 85198045184}}),
                             dev("b", {{"NVIDIA A100", 85198045184}})});
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->gpu.name, "A100-80GB");
  auto mixed = GpuFromTraces({dev("a.json", {{"NVIDIA A100-SXM4-80GB", 85198045184}}),
                              dev("b.json", {{"NVIDIA H100 80GB HBM3", 85029158912}})});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  for (const char* part : {"'NVIDIA A100-SXM4-80GB' (A100-80GB, in a.json)",
                           "'NVIDIA H100 80GB HBM3' (H100-SXM, in b.json)"}) {
    EXPECT_NE(mixed.status().message().find(part), std::string::npos) << mixed.status().message();
  }
  auto unknown = GpuFromTraces({dev("v.json", {{"Tesla V100-SXM2-32GB", 34089730048}})});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("v.json: deviceProperties: device 'Tesla V100-SXM2"),
            std::string::npos)
      << unknown.status().message();
  auto none = GpuFromTraces({dev("x.json", {}), dev("y.json", {})});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no deviceProperties in 2 trace files"), std::string::npos)
      << none.status().message();
}

// Round trip of the links: traces whose collectives run at known link efficiencies give them back
// (scale_up_link from the TP all-reduces, scale_out_link from the data-parallel collectives one
// node apart), and planning with the written file equals planning on a cluster whose
// efficiencies are set to those values directly.
TEST(CalibrateLinksTest, SynthRoundTripAndThePlanUsesThem) {
  constexpr double kUp = 0.70, kOut = 0.85;  // neither is dgx-h100's (0.822, 0.94)
  ShapesSynthOptions o;
  o.gpu = H100();
  o.curves = plan::EfficiencyTable::Builtin().For(o.gpu, plan::Precision::kBf16);
  o.model = *model::FindPreset("llama3-8b");
  o.tp = 2;
  o.dp = 4;
  o.repeats = 4;  // 2 TP all-reduces of 64 MiB (8192 tokens x 4096 x 2 bytes) per sweep: 8
  o.scale_up_link = kUp;
  o.scale_out_link = kOut;
  o.scale_out_bytes_per_s = 8 * 50e9 / 8;  // dgx-h100: 8 NICs of 400 Gb/s for 8 GPUs
  auto json = ShapesTraceJson(o);
  ASSERT_TRUE(json.ok()) << json.status().message();
  auto t = trace::ReadKinetoTraceBytes(*json, "synth");
  ASSERT_TRUE(t.ok()) << t.status().message();
  cluster::Cluster dgx = *cluster::FindClusterPreset("dgx-h100");
  CalibrationOptions co;
  co.gpu = H100();
  co.cluster = &dgx;
  auto c = Calibrate({*t}, co);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const CurveFit* up = FindFit(*c, "scale_up_link", "");
  const CurveFit* out = FindFit(*c, "scale_out_link", "");
  ASSERT_NE(up, nullptr);
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(up->fitted) << up->note;
  ASSERT_TRUE(out->fitted) << out->note;
  EXPECT_EQ(up->samples, 8);
  EXPECT_EQ(out->samples, 4 * 3 * 3);  // 3 kinds x 64, 128, 256 MiB per sweep (not 16 MiB)
  EXPECT_NEAR(up->value, kUp, 0.01 * kUp);
  EXPECT_NEAR(out->value, kOut, 0.01 * kOut);
  EXPECT_DOUBLE_EQ(up->default_value, dgx.node.scale_up_efficiency);
  EXPECT_DOUBLE_EQ(out->default_value, dgx.node.nic_efficiency);

  // The file's rows, read back as --efficiency reads them.
  const std::string csv = CalibrationCsv(*c);
  EXPECT_NE(csv.find("H100-SXM,scale_up_link,,"), std::string::npos) << csv;
  auto user = plan::EfficiencyTable::Parse(csv, "calibrated.csv");
  ASSERT_TRUE(user.ok()) << user.status().message();
  auto table = std::make_shared<plan::EfficiencyTable>(plan::EfficiencyTable::Builtin());
  table->Overlay(*user);

  // Two plans of tp 2 x dp 8 on two nodes: with the file, and on a cluster set directly.
  plan::PlanRequest req;
  req.model = *model::FindPreset("llama3-8b");
  req.cluster = dgx;
  req.cluster.num_nodes = 2;
  req.gpu = H100();
  req.global_batch = 64;
  req.seq_len = 4096;
  req.overlap_grad_reduce = false;  // the gradient all-reduce on the critical path
  plan::Layout lay;
  lay.parallel.tp = 2;
  lay.parallel.dp = 8;
  lay.parallel.sequence_parallel = false;
  lay.micro_batch = 1;
  plan::PlanRequest with_file = req;
  with_file.efficiency = table;
  plan::PlanRequest direct = req;
  direct.cluster.node.scale_up_efficiency = up->value;
  direct.cluster.node.nic_efficiency = out->value;
  auto a = plan::Evaluate(with_file, lay);
  auto b = plan::Evaluate(direct, lay);
  auto base = plan::Evaluate(req, lay);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok() && base.ok());
  // The CSV keeps 6 significant digits of each value.
  EXPECT_NEAR(a->time.tp_comm_s, b->time.tp_comm_s, 1e-5 * b->time.tp_comm_s);
  EXPECT_NEAR(a->time.dp_comm_s, b->time.dp_comm_s, 1e-5 * b->time.dp_comm_s);
  EXPECT_GT(b->time.tp_comm_s, 0);
  EXPECT_GT(b->time.dp_comm_s, 0);
  // Not vacuous: the cluster's own efficiencies give other times (lower efficiency, slower).
  EXPECT_GT(a->time.tp_comm_s, base->time.tp_comm_s * 1.05);
  EXPECT_GT(a->time.dp_comm_s, base->time.dp_comm_s * 1.02);
}

// Without a cluster no link row is fitted, and the note says why; too few samples keep the
// cluster's value.
TEST(CalibrateLinksTest, NoClusterOrTooFewSamples) {
  ShapesSynthOptions o;
  o.gpu = H100();
  o.curves = plan::EfficiencyTable::Builtin().For(o.gpu, plan::Precision::kBf16);
  o.model = *model::FindPreset("llama3-8b");
  o.tp = 2;  // one sweep: 2 TP all-reduces of 64 MiB, fewer than 8
  auto t = trace::ReadKinetoTraceBytes(*ShapesTraceJson(o), "synth");
  ASSERT_TRUE(t.ok());
  CalibrationOptions co;
  co.gpu = H100();
  auto c = Calibrate({*t}, co);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(FindFit(*c, "scale_up_link", ""), nullptr);
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_NE(CalibrationCsv(*c).find("# " + co.no_cluster_note), std::string::npos);
  cluster::Cluster dgx = *cluster::FindClusterPreset("dgx-h100");
  co.cluster = &dgx;
  auto d = Calibrate({*t}, co);
  ASSERT_TRUE(d.ok());
  const CurveFit* up = FindFit(*d, "scale_up_link", "");
  ASSERT_NE(up, nullptr);
  EXPECT_FALSE(up->fitted);
  EXPECT_EQ(up->samples, 2);
  EXPECT_NE(up->note.find("2 scale-up all_reduce/all_gather/reduce_scatter samples"),
            std::string::npos)
      << up->note;
  const std::string csv = CalibrationCsv(*d);
  EXPECT_EQ(csv.find(",scale_up_link,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("# Kept at cluster dgx-h100's values"), std::string::npos) << csv;
}

}  // namespace
}  // namespace infralens::trace
