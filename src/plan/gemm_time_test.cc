// The GEMM time model (gemm_time.h), against hand-worked cases: wave and tile quantisation, the
// memory floor of skinny shapes, split-K under one wave, FP8 against BF16, the SM count of the
// presets, the backward's shapes, and the layer's GEMMs adding up to the FLOP count.
#include "plan/gemm_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "model/presets.h"

namespace infralens::plan {
namespace {

// Round numbers: 100 SMs of 1 TFLOP/s each at e = 0.5 (0.5e12 FLOP/s per SM), no k-loop fixed
// cost, 128 x 256 tiles, 1 TB/s of HBM, BF16.
GemmKernel RoundKernel() {
  return {.sms = 100,
          .peak_flops_per_s = 100e12,
          .efficiency = 0.5,
          .k_half = 0,
          .tile_m = 128,
          .tile_n = 256,
          .hbm_bytes_per_s = 1e12};
}

// One tile's k-loop at k = 1024: 2 x 128 x 256 x 1024 FLOPs / 0.5e12 = 1.34217728e-4 s.
constexpr double kTileSecondsAtK1024 = 2.0 * 128 * 256 * 1024 / 0.5e12;

TEST(GemmTimeTest, OneTileMoreThanFullWavesCostsAWholeWave) {
  const GemmKernel g = RoundKernel();
  // 10 x 10 = 100 tiles: exactly one wave of 100 SMs.
  const GemmShape full{1280, 2560, 1024};
  EXPECT_EQ(GemmTiles(g, full), 100);
  EXPECT_EQ(GemmWaves(g, full), 1);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, full), kTileSecondsAtK1024);
  // One row more: 11 x 10 = 110 tiles, two waves: as whole tiles, twice the time for 0.08% more
  // FLOPs.
  const GemmShape more{1281, 2560, 1024};
  EXPECT_EQ(GemmTiles(g, more), 110);
  EXPECT_EQ(GemmWaves(g, more), 2);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, more, 1), 2 * kTileSecondsAtK1024);
  // As the libraries run it, the last wave's 10 tiles split their k-loops 10 ways over the 100
  // SMs: 1 + 1/10 tile times (k_half 0); its HBM traffic, 14,425,088 bytes plus 10/110 of
  // 1281 x 2560 x 4 x 2 x 10 of partials, 38 us, stays under the 148 us.
  EXPECT_EQ(GemmSplitK(g, more), 10);
  EXPECT_DOUBLE_EQ(GemmSeconds(g, more), kTileSecondsAtK1024 + kTileSecondsAtK1024 / 10);
  // 20 x 10 = 200 tiles fill the two waves: the same time as 110 tiles.
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, {2560, 2560, 1024}), 2 * kTileSecondsAtK1024);
  // Compute-bound: 2 x 1280 x 2560 x 1024 FLOPs against 2 (1280 x 1024 + 1024 x 2560 +
  // 1280 x 2560) = 14,417,920 bytes = 14.4 us at 1 TB/s, under the 134 us of compute.
  EXPECT_DOUBLE_EQ(GemmSeconds(g, full), kTileSecondsAtK1024);
}

TEST(GemmTimeTest, APaddedEdgeTileRunsTheWholeKLoop) {
  GemmKernel g = RoundKernel();
  g.sms = 1;  // one SM of 1 TFLOP/s: every tile is its own wave
  g.peak_flops_per_s = 1e12;
  // n = 257 needs two tile columns; the second computes one column of 256 and costs a full tile.
  EXPECT_EQ(GemmTiles(g, {128, 257, 1024}), 2);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, {128, 257, 1024}), 2 * kTileSecondsAtK1024);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, {128, 512, 1024}), 2 * kTileSecondsAtK1024);
  // Without an SM count (an unknown GPU) there are no waves: tiles x tile time at the whole peak.
  g.sms = 0;
  g.peak_flops_per_s = 100e12;
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, {128, 257, 1024}), 2 * kTileSecondsAtK1024 / 100);
}

TEST(GemmTimeTest, TheKLoopFixedCostIsKHalf) {
  GemmKernel g = RoundKernel();
  g.k_half = 96;
  // A tile runs at e k / (k + k_half): at k = 96 half of e, so twice the time of k_half = 0.
  GemmKernel no_fixed = g;
  no_fixed.k_half = 0;
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, {1280, 2560, 96}),
                   2 * GemmComputeSeconds(no_fixed, {1280, 2560, 96}));
}

TEST(GemmTimeTest, ASkinnyGemmIsBoundByHbm) {
  const GemmKernel g = RoundKernel();
  // k = 16: one wave of 100 tiles computes in 2 x 128 x 256 x 16 / 0.5e12 = 2.1 us, but the
  // operands and the result are (1280 x 16 + 16 x 2560) x 2 + 1280 x 2560 x 2 = 6,676,480 bytes:
  // 6.68 us at 1 TB/s.
  const GemmShape s{1280, 2560, 16};
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, s), 2.0 * 128 * 256 * 16 / 0.5e12);
  EXPECT_DOUBLE_EQ(GemmMemorySeconds(g, s), 6'676'480 / 1e12);
  EXPECT_DOUBLE_EQ(GemmSeconds(g, s), 6'676'480 / 1e12);
}

// Under one wave the k-loop is split over the idle SMs.
TEST(GemmTimeTest, UnderOneWaveTheKLoopIsSplit) {
  GemmKernel g = RoundKernel();
  // 128 x 2560 over k = 8192: 10 tiles on 100 SMs. Unsplit, one tile's loop: 2 x 128 x 256 x
  // 8192 / 0.5e12 = 1.0737 ms. Split 10 ways, 100 CTAs in one wave, each k = 819.2: 107.4 us;
  // the HBM traffic, (128 x 8192 + 8192 x 2560 + 128 x 2560) x 2 = 44,695,552 bytes plus
  // 10 x 128 x 2560 x 4 x 2 = 26,214,400 of FP32 partials, takes 70.9 us at 1 TB/s: compute wins.
  const GemmShape s{128, 2560, 8192};
  EXPECT_EQ(GemmMaxSplit(g, s), 10);
  EXPECT_EQ(GemmSplitK(g, s), 10);
  EXPECT_DOUBLE_EQ(GemmSeconds(g, s), 2.0 * 128 * 256 * 819.2 / 0.5e12);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, s, 1), 10 * GemmSeconds(g, s));
  // Full waves are never split.
  EXPECT_EQ(GemmSplitK(g, {1280, 2560, 8192}), 1);
}

// On the HBM floor the most ways is not the fastest: each way adds its FP32 partials' traffic.
TEST(GemmTimeTest, TheSplitIsTheFastestNotTheMost) {
  GemmKernel g = RoundKernel();
  g.hbm_bytes_per_s = 1e11;  // 0.1 TB/s
  // The same 128 x 2560 x 8192 (10 tiles on 100 SMs, at most 10 ways). Split s, k_half 0:
  // compute = 2 x 128 x 256 x 8192 / s / 0.5e12 = 1073.74 / s us; memory = 44,695,552 bytes
  // (above) + s x 2,621,440 of partials (128 x 2560 x 4 x 2; none at s = 1), at 0.1 TB/s
  // 446.96 + 26.21 s us:
  //   s = 1: max(1073.74, 446.96) = 1073.74     s = 4:  max(268.44, 551.81) = 551.81
  //   s = 2: max( 536.87, 499.38) =  536.87     s = 5:  max(214.75, 578.03) = 578.03
  //   s = 3: max( 357.91, 525.60) =  525.60     s = 10: max(107.37, 709.10) = 709.10
  // so 3 ways, 525.60 us, where the most (10) would take 709.10 us.
  const GemmShape s{128, 2560, 8192};
  EXPECT_EQ(GemmMaxSplit(g, s), 10);
  EXPECT_EQ(GemmSplitK(g, s), 3);
  EXPECT_DOUBLE_EQ(GemmSeconds(g, s), (44'695'552 + 3 * 2'621'440) / 1e11);
  EXPECT_DOUBLE_EQ(GemmMemorySeconds(g, s, 10), (44'695'552 + 10 * 2'621'440) / 1e11);
  EXPECT_DOUBLE_EQ(GemmComputeSeconds(g, s, 2), 2.0 * 128 * 256 * 4096 / 0.5e12);
  // Without an HBM rate there is nothing to trade: the most ways.
  g.hbm_bytes_per_s = 0;
  EXPECT_EQ(GemmSplitK(g, s), 10);
  // An empty shape runs unsplit in no time.
  EXPECT_EQ(GemmSplitK(g, {0, 2560, 8192}), 1);
  EXPECT_EQ(GemmSeconds(g, {0, 2560, 8192}), 0);
}

// The brief's shape on an H100 with the calibration sample's curves (e 0.62, k_half 128, HBM
// 0.70 x 3.35 TB/s; web/js/calibrate.js): the QKV GEMM of llama3-8b at 64 tokens, m 64, n 6144,
// k 4096, is 1 x 24 tiles on 132 SMs, at most floor(132 / 24) = 5 ways. One way's k-loop:
// 2 x 128 x 256 x (4096 / s + 128) / (989.4e12 / 132 x 0.62); the bytes 51,642,368 +
// s x 3,145,728 (64 x 6144 x 8) at 2.345 TB/s:
//   s = 1: max(59.57, 22.02) = 59.57 us     s = 4: max(16.25, 27.39) = 27.39 us
//   s = 2: max(30.69, 24.71) = 30.69 us     s = 5: max(13.36, 28.73) = 28.73 us
//   s = 3: max(21.06, 26.05) = 26.05 us
TEST(GemmTimeTest, ASkinnyQkvGemmSplitsThreeWaysNotFive) {
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM");
  DeviceEfficiency e = EfficiencyTable::Builtin().For(h100, Precision::kBf16);
  e.gemm = 0.62, e.gemm_half_dim = 128, e.hbm = 0.70;
  const GemmKernel g = GemmKernelFor(h100, e, false);
  const GemmShape qkv{64, 6144, 4096};
  EXPECT_EQ(GemmMaxSplit(g, qkv), 5);
  EXPECT_EQ(GemmSplitK(g, qkv), 3);
  const double want = (51'642'368.0 + 3 * 3'145'728.0) / (0.70 * 3.35e12);
  EXPECT_NEAR(GemmSeconds(g, qkv), want, 1e-12 * want);
  EXPECT_NEAR(want, 26.05e-6, 0.005e-6);
}

// The closed form's pick is the best of every split, over shapes on both sides of the ridge.
TEST(GemmTimeTest, TheSplitIsTheBestOfEverySplit) {
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM");
  const EfficiencyTable& t = EfficiencyTable::Builtin();
  for (bool fp8 : {false, true}) {
    GemmKernel g = GemmKernelFor(h100, t.For(h100, fp8 ? Precision::kFp8 : Precision::kBf16), fp8);
    for (double hbm : {0.3e12, 3e12, 30e12}) {
      g.hbm_bytes_per_s = hbm;
      for (double m : {1.0, 16.0, 64.0, 200.0, 512.0, 1000.0, 4096.0}) {
        for (double n : {256.0, 1024.0, 2560.0, 6144.0, 28672.0}) {
          for (double k : {64.0, 512.0, 4096.0, 14336.0}) {
            const GemmShape s{m, n, k};
            double best = GemmComputeSeconds(g, s, 1);
            int best_split = 1;
            for (int sp = 1; sp <= GemmMaxSplit(g, s); ++sp) {
              const double x = std::max(GemmComputeSeconds(g, s, sp), GemmMemorySeconds(g, s, sp));
              if (sp == 1 || x < best) best = x, best_split = sp;
            }
            EXPECT_EQ(GemmSplitK(g, s), best_split) << m << " x " << n << " x " << k;
            EXPECT_EQ(GemmSeconds(g, s), best) << m << " x " << n << " x " << k;
          }
        }
      }
    }
  }
}

TEST(GemmTimeTest, BackwardShapesArePermutations) {
  // Y[m x n] = X[m x k] W[k x n]: dX = dY W^T is m x k over n; dW = X^T dY is k x n over m.
  const GemmShape f{8192, 6144, 4096, 3};
  const GemmShape d = DgradShape(f), w = WgradShape(f);
  auto mnkb = [](const GemmShape& g) { return std::vector<double>{g.m, g.n, g.k, g.batch}; };
  EXPECT_EQ(mnkb(d), (std::vector<double>{8192, 4096, 6144, 3}));
  EXPECT_EQ(mnkb(w), (std::vector<double>{4096, 6144, 8192, 3}));
  EXPECT_DOUBLE_EQ(GemmFlops(d), GemmFlops(f));
  EXPECT_DOUBLE_EQ(GemmFlops(w), GemmFlops(f));
}

// The presets' SM counts and the table's tiles decide the waves: 132 tiles of 128 x 256 are one
// wave on an H100 SXM (132 SMs), 133 are two; on a B200 (148 SMs) both are one.
TEST(GemmTimeTest, TheSmCountComesFromThePreset) {
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM"), b200 = *hw::FindGpu("B200");
  const EfficiencyTable& t = EfficiencyTable::Builtin();
  const GemmKernel gh = GemmKernelFor(h100, t.For(h100, Precision::kBf16), false);
  const GemmKernel gb = GemmKernelFor(b200, t.For(b200, Precision::kBf16), false);
  EXPECT_EQ(gh.sms, 132);
  EXPECT_EQ(gb.sms, 148);
  EXPECT_EQ(gh.tile_m, 128);
  EXPECT_EQ(gh.tile_n, 256);
  const GemmShape exact{128 * 12, 256 * 11, 8192};         // 132 tiles
  const GemmShape one_more{128 * 12 + 1, 256 * 11, 8192};  // 13 x 11 = 143 tiles
  EXPECT_EQ(GemmWaves(gh, exact), 1);
  EXPECT_EQ(GemmWaves(gh, one_more), 2);
  EXPECT_EQ(GemmWaves(gb, one_more), 1);
  // H100 BF16: e = 0.72 (data/hw/efficiency.csv: its 16384-cubed measurement), k_half = 96; one
  // tile: 2 x 128 x 256 x (8192 + 96) FLOPs at 989.4 TFLOP/s / 132 x 0.72.
  const double tile_s = 2.0 * 128 * 256 * (8192 + 96) / (989.4e12 / 132 * 0.72);
  EXPECT_NEAR(GemmSeconds(gh, exact), tile_s, 1e-12 * tile_s);
  EXPECT_NEAR(GemmComputeSeconds(gh, one_more, 1), 2 * tile_s, 1e-12 * tile_s);
  // The last wave's 11 tiles split 132 / 11 = 12 ways, k = 8192 / 12 each.
  const double tail_s = 2.0 * 128 * 256 * (8192.0 / 12 + 96) / (989.4e12 / 132 * 0.72);
  EXPECT_EQ(GemmSplitK(gh, one_more), 12);
  EXPECT_NEAR(GemmSeconds(gh, one_more), tile_s + tail_s, 1e-12 * tile_s);
  // On a B200 the 143 tiles are one wave, not split (148 / 143 = 1).
  EXPECT_EQ(GemmSplitK(gb, one_more), 1);
  // A100: 108 SMs, 256 x 128 tiles.
  const hw::Gpu a100 = *hw::FindGpu("A100-80GB");
  const GemmKernel ga = GemmKernelFor(a100, t.For(a100, Precision::kBf16), false);
  EXPECT_EQ(ga.sms, 108);
  EXPECT_EQ(ga.tile_m, 256);
  EXPECT_EQ(ga.tile_n, 128);
}

TEST(GemmTimeTest, Fp8RunsAtItsOwnPeakAndEfficiencyWithOneByteOperands) {
  const hw::Gpu h100 = *hw::FindGpu("H100-SXM");
  const EfficiencyTable& t = EfficiencyTable::Builtin();
  const GemmKernel bf16 = GemmKernelFor(h100, t.For(h100, Precision::kBf16), false);
  const GemmKernel fp8 = GemmKernelFor(h100, t.For(h100, Precision::kFp8), true);
  EXPECT_DOUBLE_EQ(fp8.peak_flops_per_s, 1978.9e12);
  EXPECT_EQ(fp8.input_bytes, 1);
  EXPECT_EQ(fp8.output_bytes, 2);  // FP8 GEMMs write BF16
  // Hopper's FP8 tiles are 128 x 128 (data/hw/efficiency.csv), so 8192-cubed has twice the
  // tiles in twice the waves (32 of 128 x 128 against 16 of 128 x 256: the same area per SM),
  // each at 1978.9 x 0.60 instead of 989.4 x 0.72, and the k-loop's fixed cost is 160 in units
  // of k against 96 (the same time at 2 x 0.60 / 0.72 = 5/3 times the rate):
  // (8192 + 160) / (1978.9 x 0.60) over (8192 + 96) / (989.4 x 0.72).
  EXPECT_EQ(fp8.tile_n, 128);
  EXPECT_EQ(fp8.k_half, 160);
  const GemmShape big{8192, 8192, 8192};
  EXPECT_EQ(GemmWaves(fp8, big), 32);
  EXPECT_EQ(GemmWaves(bf16, big), 16);
  EXPECT_NEAR(GemmComputeSeconds(fp8, big) / GemmComputeSeconds(bf16, big),
              (8192.0 + 160) / (1978.9 * 0.60) / ((8192.0 + 96) / (989.4 * 0.72)), 1e-12);
  // HBM bytes: (m k + k n) x 1 + m n x 2 against x 2 throughout.
  EXPECT_NEAR(GemmMemorySeconds(fp8, big) / GemmMemorySeconds(bf16, big), 4.0 / 6.0, 1e-12);
  // A GPU without FP8 (A100) runs an FP8 request at BF16.
  const hw::Gpu a100 = *hw::FindGpu("A100-80GB");
  const GemmKernel a = GemmKernelFor(a100, t.For(a100, Precision::kFp8), true);
  EXPECT_DOUBLE_EQ(a.peak_flops_per_s, 312e12);
  EXPECT_EQ(a.input_bytes, 2);
  // Blackwell keeps BF16's tile at FP8 (no FP8 tile read for it).
  const hw::Gpu b200 = *hw::FindGpu("B200");
  EXPECT_EQ(GemmKernelFor(b200, t.For(b200, Precision::kFp8), true).tile_n, 256);
}

// Only the MoE router is marked as outside Transformer Engine's FP8 modules.
TEST(GemmTimeTest, TheRouterIsTheOnlyBf16Linear) {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v3"}) {
    const model::Model m = *model::FindPreset(name);
    for (bool moe : {false, true}) {
      int routers = 0;
      for (const LinearGemm& l : LayerLinears(m, moe, 1, 1)) {
        if (l.router) {
          ++routers;
          EXPECT_EQ(l.name, "router");
        }
      }
      EXPECT_EQ(routers, moe && m.is_moe() ? 1 : 0) << name;
    }
  }
}

// The layer's GEMMs hold the matmul entries of model::LayerParams: their FLOPs per token are
// 2 matmul_active / tp, dense and MoE, with and without MLA.
TEST(GemmTimeTest, TheLayersGemmsAddUpToTheFlopCount) {
  for (const char* name : {"llama3-8b", "gpt3-175b", "deepseek-v3", "qwen3-30b-a3b", "grok-1"}) {
    const model::Model m = *model::FindPreset(name);
    for (bool moe : {false, true}) {
      if (moe && !m.is_moe()) continue;
      const int tp = 2, ep = 4;
      double flops_per_token = 0;
      for (const LinearGemm& l : LayerLinears(m, moe, tp, ep)) {
        flops_per_token += 2 * l.k * l.n * l.groups * l.rows_per_token;
      }
      const model::LayerParams lp = moe ? model::MoeLayerParams(m) : model::DenseLayerParams(m);
      const double want = 2.0 * static_cast<double>(lp.matmul_active) / tp;
      EXPECT_NEAR(flops_per_token, want, 1e-9 * want) << name << (moe ? " moe" : " dense");
    }
  }
}

// Separate projections (torchtitan's wq, wk, wv and w1, w3) are the fused GEMMs cut along n:
// Llama 3 8B at tp 2 runs q of 4096 / 2 = 2048, k and v of 8 x 128 / 2 = 512 each, and gate and
// up of 14336 / 2 = 7168 each, under the fused names, where Megatron-Core runs one qkv of
// (4096 + 2 x 1024) / 2 = 3072 and one fc1 of 2 x 14336 / 2 = 14336. The FLOPs stay; DeepSeek-V3's
// routed experts split their gate and up too (top_k rows each), MLA's projections do not change.
TEST(GemmTimeTest, SeparateProjectionsCutTheFusedGemmsAlongN) {
  const model::Model m = *model::FindPreset("llama3-8b");
  const auto widths = [](const std::vector<LinearGemm>& ls, std::string_view name) {
    std::vector<double> n;
    for (const LinearGemm& l : ls) {
      if (l.name == name) n.push_back(l.n);
    }
    return n;
  };
  const std::vector<LinearGemm> fused = LayerLinears(m, false, 2, 1);
  const std::vector<LinearGemm> split = LayerLinears(m, false, 2, 1, false);
  EXPECT_EQ(widths(fused, "qkv"), (std::vector<double>{3072}));
  EXPECT_EQ(widths(split, "qkv"), (std::vector<double>{2048, 512, 512}));
  EXPECT_EQ(widths(fused, "fc1"), (std::vector<double>{14336}));
  EXPECT_EQ(widths(split, "fc1"), (std::vector<double>{7168, 7168}));
  EXPECT_EQ(widths(split, "proj"), widths(fused, "proj"));
  EXPECT_EQ(widths(split, "fc2"), widths(fused, "fc2"));
  const model::Model ds = *model::FindPreset("deepseek-v3");
  const std::vector<LinearGemm> moe = LayerLinears(ds, true, 1, 8, false);
  EXPECT_EQ(widths(moe, "expert_fc1"), (std::vector<double>{2048, 2048}));
  EXPECT_EQ(widths(moe, "shared_fc1"), (std::vector<double>{2048, 2048}));
  EXPECT_EQ(widths(moe, "kv_up"), widths(LayerLinears(ds, true, 1, 8), "kv_up"));
  for (const auto& [model, moe_layer] :
       {std::pair{m, false}, std::pair{ds, true}, std::pair{ds, false}}) {
    double a = 0, b = 0;
    for (const LinearGemm& l : LayerLinears(model, moe_layer, 2, 8)) {
      a += l.k * l.n * l.groups * l.rows_per_token;
    }
    for (const LinearGemm& l : LayerLinears(model, moe_layer, 2, 8, false)) {
      b += l.k * l.n * l.groups * l.rows_per_token;
    }
    EXPECT_NEAR(a, b, 1e-12 * a) << model.name;
  }
}

// Which GEMMs TP overlap chunks, and by how much: a column-parallel GEMM's forward by the
// all-gather's steps, a row-parallel GEMM's forward by the reduce-scatter's and its dgrad by the
// all-gather's; a column-parallel dgrad, every wgrad and every GEMM away from a collective whole.
TEST(GemmTimeTest, LayerTimesChunkTheGemmsEachCollectiveFeedsOrDrains) {
  const GemmKernel g = RoundKernel();
  // One shape for every name: k = 1024, n = 2560 over 2560 tokens.
  auto times = [&](std::string_view name, TpOverlapChunks chunks, bool chunked = true) {
    LinearGemm l{name, 1024, 2560};
    l.chunked_under_tp_overlap = chunked;
    return LinearGemmTimes(g, {l}, 2560, chunks);
  };
  const GemmTimes whole = times("fc1", {});
  // Forward (2560 x 2560 over 1024): 20 x 10 tiles, 2 waves; dgrad (2560 x 1024 over 2560):
  // 20 x 4 = 80 tiles, 1 wave of k = 2560; wgrad (1024 x 2560 over 2560): 8 x 10, 1 wave.
  EXPECT_DOUBLE_EQ(whole.fwd_s, 2 * kTileSecondsAtK1024);
  EXPECT_DOUBLE_EQ(whole.dgrad_s, 2.5 * kTileSecondsAtK1024);
  EXPECT_DOUBLE_EQ(whole.wgrad_s, 2.5 * kTileSecondsAtK1024);
  EXPECT_DOUBLE_EQ(whole.fwd_flops, 2.0 * 2560 * 2560 * 1024);
  // Two chunks of 1280 rows: each forward is 10 x 10 tiles (one wave), 2 tile times in all;
  // each dgrad 10 x 4 = 40 tiles, split 2 ways (80 CTAs, one wave) at k = 1280 each: 1.25 tile
  // times (its 35.4 MB of HBM traffic with the partials take 35 us, under the 168 us). Four
  // chunks of 640 rows: each forward 5 x 10 = 50 tiles, split 2 ways (one wave at k = 512): 4 x
  // 0.5 = 2 tile times, no faster.
  constexpr double kChunkDgrad = 2 * 1.25 * kTileSecondsAtK1024;
  for (std::string_view col : {"qkv", "fc1", "q_down", "shared_fc1"}) {
    const GemmTimes c = times(col, {.gather = 2, .scatter = 4});
    EXPECT_DOUBLE_EQ(c.fwd_s, 2 * kTileSecondsAtK1024) << col;
    EXPECT_DOUBLE_EQ(c.dgrad_s, whole.dgrad_s) << col;  // bulk, or after the wgrad: whole
    EXPECT_DOUBLE_EQ(c.wgrad_s, whole.wgrad_s) << col;
    EXPECT_DOUBLE_EQ(c.fwd_flops, whole.fwd_flops) << col;
  }
  for (std::string_view row : {"proj", "fc2", "shared_fc2"}) {
    const GemmTimes r = times(row, {.gather = 2, .scatter = 4});
    EXPECT_DOUBLE_EQ(r.fwd_s, 2 * kTileSecondsAtK1024) << row;
    EXPECT_DOUBLE_EQ(r.dgrad_s, kChunkDgrad) << row;  // fed by the gathered output gradient
    EXPECT_DOUBLE_EQ(r.wgrad_s, whole.wgrad_s) << row;
    // The reduce-scatter's steps chunk only the forward.
    EXPECT_DOUBLE_EQ(times(row, {.gather = 1, .scatter = 2}).dgrad_s, whole.dgrad_s) << row;
  }
  // Eight chunks of 320 rows: 3 x 10 tiles each (the last row of tiles partial), a third of the
  // SMs' wave: more than the whole GEMM's 2 tile times in all.
  EXPECT_GT(times("fc2", {.gather = 1, .scatter = 8}).fwd_s, whole.fwd_s);
  EXPECT_DOUBLE_EQ(times("fc2", {.gather = 1, .scatter = 8}).dgrad_s, whole.dgrad_s);
  // A GEMM away from a collective (routed experts, the router) runs whole whatever the steps.
  const GemmTimes away = times("expert_fc1", {.gather = 2, .scatter = 2}, false);
  EXPECT_DOUBLE_EQ(away.fwd_s, whole.fwd_s);
  EXPECT_DOUBLE_EQ(away.dgrad_s, whole.dgrad_s);
  const GemmTimes away_row = times("proj", {.gather = 2, .scatter = 2}, false);
  EXPECT_DOUBLE_EQ(away_row.fwd_s, whole.fwd_s);
  EXPECT_DOUBLE_EQ(away_row.dgrad_s, whole.dgrad_s);
}

// Transformer Engine's set_sm_margin: the GEMM runs on the SMs a communication kernel leaves,
// each at its own share of the peak.
TEST(GemmTimeTest, KernelOnFewerSmsKeepsTheRatePerSm) {
  const GemmKernel g = RoundKernel();
  const GemmKernel on80 = GemmKernelOnSms(g, 20);
  EXPECT_EQ(on80.sms, 80);
  EXPECT_DOUBLE_EQ(on80.peak_flops_per_s, 80e12);  // 1 TFLOP/s per SM, as before
  EXPECT_DOUBLE_EQ(on80.efficiency, g.efficiency);
  EXPECT_EQ(GemmKernelOnSms(g, 0).sms, 100);
  EXPECT_EQ(GemmKernelOnSms(g, -3).sms, 100);
  EXPECT_EQ(GemmKernelOnSms(g, 150).sms, 1);  // one SM always stays the GEMM's
  EXPECT_DOUBLE_EQ(GemmKernelOnSms(g, 150).peak_flops_per_s, 1e12);
  GemmKernel unknown = g;
  unknown.sms = 0;
  EXPECT_EQ(GemmKernelOnSms(unknown, 20).sms, 0);
  EXPECT_DOUBLE_EQ(GemmKernelOnSms(unknown, 20).peak_flops_per_s, 100e12);
  // 20 x 10 = 200 tiles at k = 1024: two full waves of 100 SMs; on 80 SMs two waves of 80 and a
  // tail of 40 tiles, split floor(80 / 40) = 2 ways (one wave at k / 2): 2.5 tile times.
  const GemmShape s{2560, 2560, 1024};
  EXPECT_DOUBLE_EQ(GemmSeconds(g, s), 2 * kTileSecondsAtK1024);
  EXPECT_DOUBLE_EQ(GemmSeconds(on80, s), 2.5 * kTileSecondsAtK1024);
}

// Which of a layer's GEMMs lose the SMs: the pipeline method's proj and fc2 in the forward, the
// bulk method's qkv and fc1 in the backward (transformer_engine/pytorch/module/base.py
// initialize_ub); the rest keep every SM.
TEST(GemmTimeTest, UserbuffersSmsComeOffTheirOwnGemms) {
  const GemmKernel g = RoundKernel();
  auto times = [&](std::string_view name, TpOverlapSmsTaken taken) {
    return LinearGemmTimes(g, {{name, 1024, 2560}}, 2560, {}, taken);
  };
  constexpr double kTile = kTileSecondsAtK1024;
  // On all 100 SMs (as in the test above): forward 2 tile times, dgrad and wgrad 2.5 each (80
  // tiles, one wave at k = 2560).
  for (std::string_view name : {"qkv", "proj", "fc1", "fc2", "expert_fc1"}) {
    const GemmTimes all = times(name, {});
    EXPECT_DOUBLE_EQ(all.fwd_s, 2 * kTile) << name;
    EXPECT_DOUBLE_EQ(all.dgrad_s, 2.5 * kTile) << name;
    EXPECT_DOUBLE_EQ(all.wgrad_s, 2.5 * kTile) << name;
  }
  // 20 SMs held in the forward: proj and fc2 forward on 80 SMs, 2.5 tile times (above); their
  // backward and the column-parallel GEMMs untouched.
  for (std::string_view name : {"proj", "fc2"}) {
    const GemmTimes rs = times(name, {.rs = 20});
    EXPECT_DOUBLE_EQ(rs.fwd_s, 2.5 * kTile) << name;
    EXPECT_DOUBLE_EQ(rs.dgrad_s, 2.5 * kTile) << name;
    EXPECT_DOUBLE_EQ(rs.wgrad_s, 2.5 * kTile) << name;
    EXPECT_DOUBLE_EQ(times(name, {.bulk = 40}).dgrad_s, 2.5 * kTile) << name;
  }
  // 40 SMs held in the backward: qkv and fc1's dgrad and wgrad (80 tiles each) on 60 SMs, one
  // wave of 60 at k = 2560 and 20 tiles split floor(60 / 20) = 3 ways at k = 2560 / 3:
  // 2.5 + 2.5 / 3 tile times. Their forward keeps 100 SMs.
  for (std::string_view name : {"qkv", "fc1"}) {
    const GemmTimes bulk = times(name, {.bulk = 40});
    EXPECT_DOUBLE_EQ(bulk.fwd_s, 2 * kTile) << name;
    EXPECT_NEAR(bulk.dgrad_s, (2.5 + 2.5 / 3) * kTile, 1e-12 * kTile) << name;
    EXPECT_NEAR(bulk.wgrad_s, (2.5 + 2.5 / 3) * kTile, 1e-12 * kTile) << name;
    EXPECT_DOUBLE_EQ(times(name, {.rs = 20}).fwd_s, 2 * kTile) << name;
  }
  const GemmTimes expert = times("expert_fc1", {.rs = 20, .bulk = 40});
  EXPECT_DOUBLE_EQ(expert.fwd_s, 2 * kTile);
  EXPECT_DOUBLE_EQ(expert.dgrad_s + expert.wgrad_s, 5 * kTile);
}

}  // namespace
}  // namespace infralens::plan
