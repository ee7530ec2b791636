// The efficiency table: which row applies (hand-written tables), what a malformed file is told,
// the built-in file's coverage, and the planner reading it (every compute term scales as
// 1 / efficiency, so halving every efficiency doubles the compute time exactly).
#include "plan/efficiency.h"

#include <gtest/gtest.h>

#include <memory>

#include "model/presets.h"
#include "plan/planner.h"
#include "plan/testing.h"

namespace infralens::plan {
namespace {

const char kHeader[] = "gpu,quantity,precision,value,source\n";

// tp x dp on one pipeline rank, sequence parallel with tp, micro-batch 1.
Layout OneLayout(int tp, int dp, model::Recompute recompute) {
  Layout lay;
  lay.parallel = {tp, 1, 1, dp, 1, 1, 1, tp > 1};
  lay.recompute = recompute;
  lay.micro_batch = 1;
  return lay;
}

EfficiencyTable Table(const std::string& rows) {
  auto t = EfficiencyTable::Parse(std::string(kHeader) + rows, "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : EfficiencyTable();
}

TEST(EfficiencyTest, TheMostSpecificRowWins) {
  const EfficiencyTable t = Table(
      "*,gemm,,0.5,a\n"
      "*,gemm,fp8,0.4,b\n"
      "H100-SXM,gemm,,0.7,c\n"
      "H100-SXM,gemm,fp8,0.6,d\n"
      "*,gemm_half_dim,,64,e\n"
      "*,attention,,0.45,f\n"
      "*,hbm,,0.9,g\n");
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM"), a100 = *hw::FindGpu("A100-80GB");
  EXPECT_EQ(t.For(h100, Precision::kBf16).gemm, 0.7);  // this GPU, any precision
  EXPECT_EQ(t.For(h100, Precision::kFp8).gemm, 0.6);   // this GPU and precision
  EXPECT_EQ(t.For(a100, Precision::kFp8).gemm, 0.4);   // every GPU, this precision
  EXPECT_EQ(t.For(a100, Precision::kBf16).gemm, 0.5);  // every GPU
  const DeviceEfficiency e = t.For(a100, Precision::kBf16);
  EXPECT_EQ(e.gemm_half_dim, 64);
  EXPECT_EQ(e.attention, 0.45);
  EXPECT_EQ(e.hbm, 0.9);
}

TEST(EfficiencyTest, OverlayReplacesTheSameKeyAndAddsTheRest) {
  EfficiencyTable t = Table("*,gemm,,0.5,a\n*,hbm,,0.8,b\n");
  t.Overlay(Table("*,gemm,,0.6,mine\nMI300X,hbm,,0.7,mine\n"));
  ASSERT_EQ(t.rows().size(), 3u);
  EXPECT_EQ(t.For(*hw::FindGpu("H100-SXM"), Precision::kBf16).gemm, 0.6);
  EXPECT_EQ(t.For(*hw::FindGpu("H100-SXM"), Precision::kBf16).hbm, 0.8);
  EXPECT_EQ(t.For(*hw::FindGpu("MI300X"), Precision::kBf16).hbm, 0.7);
  // Comments and blank lines are skipped; preset names are matched as FindGpu matches them.
  auto c = EfficiencyTable::Parse(std::string("# measured on our cluster\n") + kHeader +
                                      "\nh100 sxm,gemm,bf16,0.71,\"our sweep, 2026\"\n",
                                  "mine.csv");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rows()[0].gpu, "H100-SXM");
  EXPECT_EQ(c->rows()[0].source, "our sweep, 2026");
}

TEST(EfficiencyTest, MalformedRowsNameTheLineAndColumn) {
  struct Case {
    std::string text, fragment;
  };
  const std::vector<Case> cases = {
      {"gpu,quantity,value,source\n", "the header must be gpu,quantity,precision,value,source"},
      {std::string(kHeader) + "H200X,gemm,,0.7,s\n", "mine.csv line 2, column gpu: gpu 'H200X'"},
      {std::string(kHeader) + "*,flops,,0.7,s\n", "line 2, column quantity: 'flops'"},
      {std::string(kHeader) + "*,gemm,fp4,0.7,s\n", "column precision: 'fp4'"},
      {std::string(kHeader) + "*,gemm,,1.2,s\n",
       "column value: gemm '1.2': expected a number in [0.001, 1]"},
      // Below the floor: a subnormal or tiny fraction would make a time infinite (issue 26); the
      // error names the quantity, not a duration the simulator derived from it.
      {std::string(kHeader) + "*,hbm,,1e-300,s\n",
       "column value: hbm '1e-300': expected a number in [0.001, 1]"},
      {std::string(kHeader) + "H100-SXM,scale_out_link,,4.9e-324,s\n",
       "column value: scale_out_link '4.9e-324'"},
      {std::string(kHeader) + "*,gemm_half_dim,,0,s\n",
       "column value: gemm_half_dim '0': expected a number in (0, 1e+06]"},
      {std::string(kHeader) + "*,hbm,,0,s\n", "column value: hbm '0'"},
      {std::string(kHeader) + "*,gemm,,nan,s\n", "column value"},
      {std::string(kHeader) + "*,collective_channels,,2000,s\n",
       "column value: collective_channels '2000': expected a number in [0, 1024]"},
      {std::string(kHeader) + "*,collective_channels_scale_out,,-1,s\n",
       "column value: collective_channels_scale_out '-1'"},
      {std::string(kHeader) + "*,gemm,,0.7,\n", "column source: empty"},
      {std::string(kHeader) + "*,gemm,,0.7\n", "line 2: 4 fields, expected 5"},
      {std::string(kHeader) + "*,gemm,,0.7,s\n\n# note\n*,gemm,,0.6,t\n",
       "line 5, column gpu: * gemm (both) is given twice"},
  };
  for (const auto& c : cases) {
    auto t = EfficiencyTable::Parse(c.text, "mine.csv");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.fragment), std::string::npos)
        << t.status().message() << "\nexpected: " << c.fragment;
    EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
  }
}

// The floor itself is a value (0.1%, as a topology file's link efficiency, cluster::Validate).
TEST(EfficiencyTest, FractionsDownToTheFloorAreRead) {
  auto t = EfficiencyTable::Parse(std::string(kHeader) + "*,hbm,,0.001,s\n", "mine.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows()[0].value, kMinEfficiencyFraction);
}

// Every GPU preset at every precision it has gets every quantity from the built-in file, within
// its range, and every row names its source.
TEST(EfficiencyTest, TheBuiltInFileCoversEveryGpu) {
  const EfficiencyTable& t = EfficiencyTable::Builtin();
  for (const auto& row : t.rows()) EXPECT_FALSE(row.source.empty()) << row.gpu;
  for (const hw::Gpu& gpu : hw::GpuPresets()) {
    for (Precision p : {Precision::kBf16, Precision::kFp8}) {
      if (p == Precision::kFp8 && gpu.fp8_flops_per_s <= 0) continue;
      const DeviceEfficiency e = t.For(gpu, p);
      EXPECT_GT(e.gemm, 0) << gpu.name;
      EXPECT_LE(e.gemm, 1) << gpu.name;
      EXPECT_GT(e.gemm_half_dim, 0) << gpu.name;
      EXPECT_GT(e.attention, 0) << gpu.name;
      EXPECT_LE(e.attention, 1) << gpu.name;
      EXPECT_GT(e.attention_half_seq, 0) << gpu.name;
      EXPECT_GT(e.attention_fa2_half_seq, 0) << gpu.name;
      EXPECT_GT(e.attention_half_head_dim, 0) << gpu.name;
      EXPECT_GT(e.attention_fa2_half_head_dim, 0) << gpu.name;
      EXPECT_GT(e.hbm, 0) << gpu.name;
      EXPECT_LE(e.hbm, 1) << gpu.name;
      // NCCL's channels: at most MAXCHANNELS (64, src/include/device.h), fewer than the SMs.
      EXPECT_GT(e.collective_channels, 0) << gpu.name;
      EXPECT_GT(e.collective_channels_scale_out, 0) << gpu.name;
      EXPECT_LE(e.collective_channels, std::min(64, gpu.sms - 1)) << gpu.name;
      EXPECT_LE(e.collective_channels_scale_out, std::min(64, gpu.sms - 1)) << gpu.name;
      EXPECT_GT(e.host_link, 0) << gpu.name;
      EXPECT_LE(e.host_link, 1) << gpu.name;
      EXPECT_GT(gpu.host_link_bytes_per_s, 0) << gpu.name;
    }
  }
}

// A GEMM takes max(waves x tile FLOPs x (k + k_half) / (SM rate x gemm), bytes / (HBM x hbm))
// (gemm_time.h), fused attention FLOPs / (peak x attention) and streaming kernels
// bytes / (HBM x hbm): halving gemm, attention and hbm (and keeping k_half and the tiles)
// doubles each term, both sides of the GEMM's max included, so the compute time doubles; the
// communication does not move.
TEST(EfficiencyTest, ThePlannerReadsTheTable) {
  PlanRequest req = testing::PresetRequest("llama3-8b", 2, 64, 4096);
  const Layout lay = OneLayout(2, 8, model::Recompute::kSelective);
  auto base = Evaluate(req, lay);
  ASSERT_TRUE(base.ok()) << base.status().message();
  const DeviceEfficiency e = EfficiencyTable::Builtin().For(req.gpu, Precision::kBf16);
  auto halved = std::make_shared<EfficiencyTable>(EfficiencyTable::Builtin());
  halved->Overlay(Table("H100-SXM,gemm,bf16," + std::to_string(e.gemm / 2) + ",half\n" +
                        "H100-SXM,attention,," + std::to_string(e.attention / 2) + ",half\n" +
                        "H100-SXM,hbm,," + std::to_string(e.hbm / 2) + ",half\n"));
  req.efficiency = halved;
  auto slow = Evaluate(req, lay);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_NEAR(slow->time.compute_s, 2 * base->time.compute_s, 1e-9 * base->time.compute_s);
  EXPECT_NEAR(slow->time.tp_comm_s, base->time.tp_comm_s, 1e-12);
}

// A fused kernel's rate over k keys relative to 8k, by hand: k / (k + c) over 8192 / (8192 + c).
// With c = 680 (cuDNN's built-in row), 2,048 keys run at (2048/2728) / (8192/8872) = 0.8131 of the
// stated rate; the measurements behind it (FlashAttention-3's figures, the row's source) give
// 0.397 / 0.480 = 0.827 there. Outside 512-16k keys the ends hold; no half length, no scale.
TEST(EfficiencyTest, AttentionRateOverItsKeys) {
  EXPECT_DOUBLE_EQ(AttentionSeqScale(8192, 680), 1.0);
  EXPECT_NEAR(AttentionSeqScale(2048, 680), (2048.0 / 2728) / (8192.0 / 8872), 1e-12);
  EXPECT_NEAR(AttentionSeqScale(2048, 680), 0.397 / 0.480, 0.02);
  EXPECT_DOUBLE_EQ(AttentionSeqScale(262144, 680), AttentionSeqScale(16384, 680));
  EXPECT_DOUBLE_EQ(AttentionSeqScale(128, 680), AttentionSeqScale(512, 680));
  EXPECT_DOUBLE_EQ(AttentionSeqScale(2048, 0), 1.0);
  EXPECT_LT(AttentionSeqScale(4096, 590), 1.0);
  EXPECT_GT(AttentionSeqScale(16384, 590), 1.0);
}

// In a plan, attention's time is its FLOPs over that rate: at 2,048 tokens a microbatch's
// forward attention takes exactly 1 / AttentionSeqScale(2048) of what the 8k-stated rate gives,
// which is what removing the half length (the stated rate at every length) changes.
TEST(EfficiencyTest, ThePlannerScalesAttentionByItsKeys) {
  PlanRequest req = testing::PresetRequest("llama3-8b", 1, 8, 2048);
  const Layout lay = OneLayout(1, 8, model::Recompute::kNone);
  auto curved = Evaluate(req, lay);
  auto flat_table = std::make_shared<EfficiencyTable>(EfficiencyTable::Builtin());
  flat_table->Overlay(Table("*,attention_half_seq,,1e-9,flat\n"));
  req.efficiency = flat_table;
  auto flat = Evaluate(req, lay);
  ASSERT_TRUE(curved.ok() && flat.ok()) << curved.status().message();
  // Llama 3 8B: 32 layers, 32 heads of 128; causal: half of 4 s^2 H D per sequence and layer;
  // 8 sequences over 8 GPUs: one per GPU. Forward 1x, backward 2.5x (fused kernel).
  const DeviceEfficiency e = EfficiencyTable::Builtin().For(req.gpu, Precision::kBf16);
  const double flops = 32 * 0.5 * 4.0 * 2048 * 2048 * 32 * 128;
  const double at_8k = 3.5 * flops / (req.gpu.bf16_flops_per_s * e.attention);
  const double scale = AttentionSeqScale(2048, e.attention_half_seq);
  EXPECT_NEAR(curved->time.compute_s - flat->time.compute_s, at_8k / scale - at_8k,
              1e-9 * curved->time.compute_s);
}

// Head dimension: FlashAttention-3's figures (head dim 64 and 128, H100 SXM5, 8k keys) weighed
// as the attention row (forward 1, causal backward 2.5: the non-causal backward times the causal
// over the non-causal forward): cuDNN 3.5 / (1/379 + 2.5 x 412 / (432 x 379)) = 392.0 TFLOP/s at
// 64 against 3.5 / (1/529 + 2.5 x 600 / (518 x 529)) = 474.8 at 128, FlashAttention-2
// 3.5 / (1/295 + 2.5 x 322 / (287 x 295)) = 271.3 against 3.5 / (1/333 + 2.5 x 370 / (318 x 333))
// = 298.1. The built-in half widths give those ratios within 0.2%; 128 and wider keep the stated
// rate, narrower than 64 the rate at 64 (outside the measurements), and no half width none.
TEST(EfficiencyTest, HeadDimensionScalesAttention) {
  const DeviceEfficiency e =
      EfficiencyTable::Builtin().For(*hw::FindGpu("H100-SXM"), Precision::kBf16);
  const auto weighed = [](double causal_fwd, double fwd, double bwd) {
    return 3.5 / (1 / causal_fwd + 2.5 * fwd / (bwd * causal_fwd));
  };
  EXPECT_NEAR(AttentionHeadDimScale(64, e.attention_half_head_dim),
              weighed(379, 412, 432) / weighed(529, 600, 518), 2e-3);
  EXPECT_NEAR(AttentionHeadDimScale(64, e.attention_fa2_half_head_dim),
              weighed(295, 322, 287) / weighed(333, 370, 318), 2e-3);
  EXPECT_DOUBLE_EQ(AttentionHeadDimScale(128, e.attention_half_head_dim), 1.0);
  EXPECT_DOUBLE_EQ(AttentionHeadDimScale(256, e.attention_half_head_dim), 1.0);
  EXPECT_DOUBLE_EQ(AttentionHeadDimScale(32, e.attention_half_head_dim),
                   AttentionHeadDimScale(64, e.attention_half_head_dim));
  EXPECT_DOUBLE_EQ(AttentionHeadDimScale(64, 0), 1.0);
  // Between: (96 / (96 + h)) / (128 / (128 + h)).
  const double h = e.attention_half_head_dim;
  EXPECT_DOUBLE_EQ(AttentionHeadDimScale(96, h), (96 / (96 + h)) / (128 / (128 + h)));
}

// In a plan: Llama 3 8B with 64 heads of 64 and 16 KV heads has the same projections (q and o
// 4096 wide, k and v 1024) and the same attention FLOPs as with 32 heads of 128 and 8 KV heads,
// so only attention's rate differs: its time grows by 1 / AttentionHeadDimScale(64).
TEST(EfficiencyTest, ThePlannerScalesAttentionByItsHeadDimension) {
  PlanRequest wide = testing::PresetRequest("llama3-8b", 1, 8, 8192);
  PlanRequest narrow = wide;
  narrow.model.num_heads = 64;
  narrow.model.num_kv_heads = 16;
  narrow.model.head_dim = 64;
  const Layout lay = OneLayout(1, 8, model::Recompute::kNone);
  auto a = Evaluate(wide, lay), b = Evaluate(narrow, lay);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
  const DeviceEfficiency e = EfficiencyTable::Builtin().For(wide.gpu, Precision::kBf16);
  // Per layer and sequence the causal half of 4 s^2 a d, a d = 4096; forward 1x, backward 2.5x.
  const double flops = 32 * 0.5 * 4.0 * 8192 * 8192 * 4096;
  const double at_128 = 3.5 * flops / (wide.gpu.bf16_flops_per_s * e.attention);
  const double scale = AttentionHeadDimScale(64, e.attention_half_head_dim);
  EXPECT_NEAR(b->time.compute_s - a->time.compute_s, at_128 / scale - at_128,
              1e-9 * a->time.compute_s);
}

// The links' rows: no built-in ones (the cluster's values stand); a user row replaces the
// cluster's value for its GPU (or every GPU); a precision is refused.
TEST(EfficiencyTest, LinkRowsOverrideTheCluster) {
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM");
  const cluster::Cluster dgx = *cluster::FindClusterPreset("dgx-h100");
  cluster::Cluster c = dgx;
  ApplyLinkEfficiency(EfficiencyTable::Builtin(), h100, &c);
  EXPECT_EQ(c.node.scale_up_efficiency, dgx.node.scale_up_efficiency);
  EXPECT_EQ(c.node.nic_efficiency, dgx.node.nic_efficiency);
  auto user = EfficiencyTable::Parse(
      "gpu,quantity,precision,value,source\nH100-SXM,scale_up_link,,0.5,a\n*,scale_out_link,,0.25,"
      "b\n",
      "mine.csv");
  ASSERT_TRUE(user.ok()) << user.status().message();
  EfficiencyTable t = EfficiencyTable::Builtin();
  t.Overlay(*user);
  ApplyLinkEfficiency(t, h100, &c);
  EXPECT_EQ(c.node.scale_up_efficiency, 0.5);
  EXPECT_EQ(c.node.nic_efficiency, 0.25);
  // 8 NICs x 50e9 bytes/s x 0.25 / 8 GPUs.
  EXPECT_DOUBLE_EQ(c.NicShareBytesPerS(), 12.5e9);
  EXPECT_EQ(t.For(h100, Precision::kBf16).scale_up_link_origin, "mine.csv");
  cluster::Cluster a = *cluster::FindClusterPreset("dgx-a100");
  ApplyLinkEfficiency(t, *hw::FindGpu("A100-80GB"), &a);  // only the * row applies
  EXPECT_EQ(a.node.scale_up_efficiency,
            cluster::FindClusterPreset("dgx-a100")->node.scale_up_efficiency);
  EXPECT_EQ(a.node.nic_efficiency, 0.25);
  auto bad = EfficiencyTable::Parse(
      "gpu,quantity,precision,value,source\n*,scale_up_link,bf16,0.5,a\n", "bad.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.csv line 2, column precision: 'bf16': expected empty"),
            std::string::npos)
      << bad.status().message();
  auto big = EfficiencyTable::Parse(
      "gpu,quantity,precision,value,source\n*,scale_out_link,,1.5,a\n", "big.csv");
  ASSERT_FALSE(big.ok());
  // The host link carries any data too.
  auto host = EfficiencyTable::Parse("gpu,quantity,precision,value,source\n*,host_link,fp8,0.5,a\n",
                                     "host.csv");
  ASSERT_FALSE(host.ok());
  EXPECT_NE(host.status().message().find("expected empty for host_link"), std::string::npos)
      << host.status().message();
}

}  // namespace
}  // namespace infralens::plan
