// Parameter counts and FLOPs against closed forms and hand counts. Every expected number below is
// worked out from the architecture (shown in the comments) or quoted from the model's paper, never
// copied from the program's output.
#include "model/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/presets.h"

namespace infralens::model {
namespace {

Model Preset(const char* name) {
  auto m = FindPreset(name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

// Rounds to `digits` decimals after dividing by `unit`: how papers print parameter counts.
double Rounded(double v, double unit, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v / unit * scale) / scale;
}

TEST(ModelTest, Llama2_7bExact) {
  // h = 4096, 32 layers, f = 11008, V = 32000, untied, RMSNorm:
  // attention 4 h^2 = 67,108,864; SwiGLU 3 h f = 135,266,304; two norms 2h = 8,192
  // -> 202,383,360 per layer; x 32 = 6,476,267,520; embeddings 2 V h = 262,144,000; final norm
  // 4,096.
  const ParamCounts c = CountParameters(Preset("llama2-7b"));
  EXPECT_EQ(c.per_dense_layer, 202'383'360);
  EXPECT_EQ(c.embedding, 131'072'000);
  EXPECT_EQ(c.output_layer, 131'072'000);
  EXPECT_EQ(c.final_norm, 4096);
  EXPECT_EQ(c.total, 6'738'415'616);
  EXPECT_EQ(c.active, c.total);
  EXPECT_EQ(c.num_moe_layers, 0);
}

TEST(ModelTest, Llama3_8bExact) {
  // GQA: q and o are h^2 each, k and v h x (8 x 128) = 4,194,304 each -> 41,943,040;
  // SwiGLU 3 x 4096 x 14336 = 176,160,768; norms 8,192 -> 218,112,000 per layer, x 32 =
  // 6,979,584,000; embeddings 2 x 128256 x 4096 = 1,050,673,152; final norm 4,096.
  EXPECT_EQ(CountParameters(Preset("llama3-8b")).total, 8'030'261'248);
}

TEST(ModelTest, LlamaFamilyExact) {
  // 13B: (4 x 5120^2 + 3 x 5120 x 13824 + 2 x 5120) x 40 + 2 x 32000 x 5120 + 5120.
  EXPECT_EQ(CountParameters(Preset("llama2-13b")).total, 13'015'864'320);
  // 70B: attention 2 x 8192^2 + 2 x 8192 x 1024 = 150,994,944; SwiGLU 3 x 8192 x 28672 =
  // 704,643,072; norms 16,384 -> 855,654,400 x 80 = 68,452,352,000; + 2 x 32000 x 8192 + 8192.
  EXPECT_EQ(CountParameters(Preset("llama2-70b")).total, 68'976'648'192);
  // Llama 3 70B: the same layers, vocabulary 128256: + 2 x 128256 x 8192 + 8192.
  EXPECT_EQ(CountParameters(Preset("llama3-70b")).total, 70'553'706'496);
  // 405B: attention 2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344; SwiGLU 3 x 16384 x 53248 =
  // 2,617,245,696; norms 32,768 -> 3,187,703,808 x 126 = 401,650,679,808; + 2 x 128256 x 16384
  // + 16384.
  EXPECT_EQ(CountParameters(Preset("llama3-405b")).total, 405'853'388'800);
}

TEST(ModelTest, TinyByHand) {
  // h 64, 4 heads of 16, 2 KV heads: q 64x64 + k 64x32 + v 64x32 + o 64x64 = 12,288; SwiGLU
  // 3 x 64 x 256 = 49,152; norms 128 -> 61,568 per layer; x 2 + 2 x 256 x 64 + 64 = 155,968.
  EXPECT_EQ(CountParameters(Preset("tiny")).total, 155'968);
}

// Narayanan et al. SC21, sec. 5.1: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); we also count
// the final LayerNorm (2h), which the formula leaves out.
double Sc21Parameters(int64_t l, int64_t h, int64_t V, int64_t s) {
  const double L = static_cast<double>(l), H = static_cast<double>(h);
  return 12 * L * H * H * (1 + 13 / (12 * H) + static_cast<double>(V + s) / (12 * L * H)) + 2 * H;
}

TEST(ModelTest, Gpt3Is174_6B) {
  const Model m = Preset("gpt3-175b");
  const double expected = Sc21Parameters(96, 12288, 50257, 2048);
  EXPECT_EQ(CountParameters(m).total, static_cast<int64_t>(std::llround(expected)));
  EXPECT_EQ(CountParameters(m).total, 174'604'259'328);
  EXPECT_DOUBLE_EQ(Rounded(static_cast<double>(CountParameters(m).total), 1e9, 1), 174.6);
}

TEST(ModelTest, MegatronSc21TableOneSizes) {
  // Table 1 names each model by its parameter count in billions, one decimal.
  struct Row {
    const char* name;
    int64_t l, h;
    double billions;
  };
  const Row rows[] = {{"GPT 1.7B", 24, 2304, 1.7},       {"GPT 3.6B", 30, 3072, 3.6},
                      {"GPT 7.5B", 36, 4096, 7.5},       {"GPT 18.4B", 40, 6144, 18.4},
                      {"GPT 39.1B", 48, 8192, 39.1},     {"GPT 76.1B", 60, 10240, 76.1},
                      {"GPT 145.6B", 80, 12288, 145.6},  {"GPT 310.1B", 96, 16384, 310.1},
                      {"GPT 529.6B", 105, 20480, 529.6}, {"GPT 1008.0B", 128, 25600, 1008.0}};
  for (const Row& r : rows) {
    const Model m = Preset(r.name);  // calibration.csv's spelling resolves
    EXPECT_EQ(m.num_layers, r.l) << r.name;
    EXPECT_EQ(m.hidden, r.h) << r.name;
    const double p = static_cast<double>(CountParameters(m).total);
    EXPECT_NEAR(p, Sc21Parameters(r.l, r.h, 51200, 2048), 0.5) << r.name;
    EXPECT_DOUBLE_EQ(Rounded(p, 1e9, 1), r.billions) << r.name;
  }
}

TEST(ModelTest, Mixtral46_7BTotal12_9BActive) {
  // Per layer: attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; 8 experts of 3 x 4096 x 14336 =
  // 176,160,768 each; router 8 x 4096 = 32,768; norms 8,192 -> 1,451,270,144; x 32 =
  // 46,440,644,608; embeddings 2 x 32000 x 4096 = 262,144,000; final norm 4,096.
  const ParamCounts c = CountParameters(Preset("mixtral-8x7b"));
  EXPECT_EQ(c.total, 46'702'792'704);
  // Active: 2 experts instead of 8: (41,943,040 + 2 x 176,160,768 + 32,768 + 8,192) x 32 +
  // 262,148,096.
  EXPECT_EQ(c.active, 12'879'925'248);
  EXPECT_DOUBLE_EQ(Rounded(static_cast<double>(c.total), 1e9, 1),
                   46.7);  // Jiang et al. 2024, sec. 1
  EXPECT_DOUBLE_EQ(Rounded(static_cast<double>(c.active), 1e9, 1), 12.9);  // "12.9B active"
}

TEST(ModelTest, DeepSeekV3_671BTotal37BActive) {
  // MLA per layer: q_a 7168 x 1536 + norm 1536 + q_b 1536 x 128 x 192 + kv_a 7168 x 576 + norm 512
  // + kv_b 512 x 128 x 256 + o 128 x 128 x 7168 = 187,107,328.
  // Dense layers (3): + SwiGLU 3 x 7168 x 18432 = 396,361,728 + norms 14,336 = 583,483,392.
  // MoE layers (58): + 256 routed and 1 shared expert of 3 x 7168 x 2048 = 44,040,192 each,
  // router 256 x 7168 + 256 bias + norms 14,336 = 11,507,286,272.
  // Embeddings 2 x 129280 x 7168 = 1,853,358,080; final norm 7,168.
  const Model m = Preset("deepseek-v3");
  const ParamCounts c = CountParameters(m);
  EXPECT_EQ(c.num_dense_layers, 3);
  EXPECT_EQ(c.num_moe_layers, 58);
  EXPECT_EQ(c.per_dense_layer, 583'483'392);
  EXPECT_EQ(c.per_moe_layer, 11'507'286'272);
  EXPECT_EQ(c.total, 671'026'419'200);
  EXPECT_DOUBLE_EQ(Rounded(static_cast<double>(c.total), 1e9, 0), 671);  // DeepSeek-V3 report: 671B
  // The model card: "Activation parameters: 36.6B (including 0.9B for the output Head)", i.e.
  // without the input embedding table.
  EXPECT_DOUBLE_EQ(Rounded(static_cast<double>(c.active - c.embedding), 1e9, 1), 36.6);
  // Per MoE layer active: 187,107,328 + 9 x 44,040,192 + 1,835,264 + 14,336 = 585,318,656.
  EXPECT_EQ(c.active, 3 * int64_t{583'483'392} + 58 * int64_t{585'318'656} + 1'853'358'080 + 7168);
  EXPECT_EQ(std::floor(static_cast<double>(c.active) / 1e9), 37);  // "37B activated"
}

TEST(ModelTest, MoeLayerPlacement) {
  Model m = Preset("deepseek-v3");
  EXPECT_FALSE(IsMoeLayer(m, 2));
  EXPECT_TRUE(IsMoeLayer(m, 3));
  EXPECT_TRUE(IsMoeLayer(m, 60));
  // Qwen-MoE's decoder_sparse_step 2: (i + 1) % 2 == 0, so layers 1, 3, 5, ...
  m.first_dense_layers = 0;
  m.moe_layer_step = 2;
  m.moe_layer_phase = 1;
  EXPECT_FALSE(IsMoeLayer(m, 0));
  EXPECT_TRUE(IsMoeLayer(m, 1));
  EXPECT_EQ(NumMoeLayers(m), 30);
}

TEST(ModelTest, ForwardFlopsByHand) {
  // Llama-2 7B at s = 4096: matrix entries per token 32 x (67,108,864 + 135,266,304) + 32000 x 4096
  // = 6,607,077,376 -> 13,214,154,752 FLOPs; attention 2 s a (d + d) per layer = 2 x 4096 x 32 x
  // 256 x 32 layers = 2,147,483,648 over the whole matrix, 1,073,741,824 under the causal mask:
  // forward 14,287,896,576.
  Model m = Preset("llama2-7b");
  EXPECT_DOUBLE_EQ(AttentionFlopsPerToken(m, 4096), 2'147'483'648.0);
  EXPECT_DOUBLE_EQ(ModelAttentionFlopsPerToken(m, 4096), 1'073'741'824.0);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(m, 4096), 14'287'896'576.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(m, 4096), 3 * 14'287'896'576.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerStep(m, 4096, 8), 3 * 14'287'896'576.0 * 4096 * 8);
  // Selective recompute repeats the attention core; full the whole layers (not the output layer).
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(m, 4096, Recompute::kSelective),
                   3 * 14'287'896'576.0 + 1'073'741'824.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(m, 4096, Recompute::kFull),
                   3 * 14'287'896'576.0 + 14'287'896'576.0 - 2.0 * 32000 * 4096);
  // Bidirectional: the whole matrix, 15,361,638,400 forward.
  m.causal = false;
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(m, 4096), 15'361'638'400.0);
}

// Sliding windows: query i of a causal layer sees min(i, w) keys. Llama-2 7B's attention costs
// 2 a (d + d) = 2 x 32 x 256 = 16,384 FLOPs per token per key and layer. At s = 4096 a full layer
// averages s / 2 = 2048 keys; a window of 1024 averages 1024 - 1024^2 / 8192 = 896 (the discrete
// mean, (sum of i below 1024 + 3072 x 1024) / 4096 = 895.875, within 0.02%). Every second layer
// windowed (full on 1-based layers 2, 4, ...: 16 of each): 16,384 x 16 x (2048 + 896) =
// 771,751,936 FLOPs per token, where 32 full layers count 1,073,741,824.
TEST(ModelTest, SlidingWindowCountsTheKeysTheMaskLeaves) {
  Model m = Preset("llama2-7b");
  m.sliding_window = 1024;
  m.sliding_window_full_every = 2;
  EXPECT_EQ(WindowedLayers(m), 16);
  EXPECT_DOUBLE_EQ(CausalKeysPerQuery(4096, 1024), 896.0);
  EXPECT_DOUBLE_EQ(CausalKeysPerQuery(4096, 0), 2048.0);
  double discrete = 0;
  for (int i = 0; i < 4096; ++i) discrete += std::min(i, 1024);
  EXPECT_NEAR(CausalKeysPerQuery(4096, 1024), discrete / 4096, 2e-4 * 896);
  EXPECT_DOUBLE_EQ(ModelAttentionFlopsPerToken(m, 4096), 771'751'936.0);
  // The whole-matrix count (materialised attention computes every score, then masks) is unchanged.
  EXPECT_DOUBLE_EQ(AttentionFlopsPerToken(m, 4096), 2'147'483'648.0);
  // Every layer windowed: 16,384 x 32 x 896.
  m.sliding_window_full_every = 0;
  EXPECT_EQ(WindowedLayers(m), 32);
  EXPECT_DOUBLE_EQ(ModelAttentionFlopsPerToken(m, 4096), 469'762'048.0);
  // A window as long as the sequence masks nothing more than the causal mask does.
  m.sliding_window = 4096;
  EXPECT_DOUBLE_EQ(ModelAttentionFlopsPerToken(m, 4096), 1'073'741'824.0);
  // An odd layer count: every third of 31 layers full (3, 6, ..., 30), 21 windowed.
  m.num_layers = 31;
  m.sliding_window_full_every = 3;
  EXPECT_EQ(WindowedLayers(m), 21);
  // gpt-oss-120b (config.json layer_types): 18 of its 36 layers windowed at 128 tokens.
  EXPECT_EQ(WindowedLayers(Preset("gpt-oss-120b")), 18);
  EXPECT_EQ(Preset("gpt-oss-120b").sliding_window, 128);
}

TEST(ModelTest, SixNForShortSequences) {
  // Kaplan et al. 2020 (sec. 2.1): training is about 6N FLOPs per token when attention's
  // sequence-dependent term is small, as at s = 1.
  const Model m = Preset("llama3-8b");
  const double n = static_cast<double>(CountParameters(m).matmul_active);
  EXPECT_NEAR(TrainingFlopsPerToken(m, 1) / (6 * n), 1.0, 1e-4);
}

TEST(ModelTest, MegatronEquation3CrossCheck) {
  // With full recompute our count equals eq. 3 exactly for GPT shapes (biases and norms are not
  // matrix FLOPs in either): forward 24 l h^2 + 4 l s h + 2 V h per token, x 3 for training, + one
  // more forward of the layers.
  // Eq. 3 counts the whole score matrix: our count of the model without its causal mask. With
  // the mask, attention appears 4 times (3 for training, 1 recomputed) at half its products.
  for (const char* name : {"gpt-1.7b", "gpt-18.4b", "gpt-145.6b", "gpt-1t", "gpt3-175b"}) {
    Model m = Preset(name);
    const double causal = TrainingFlopsPerStep(m, 2048, 512, Recompute::kFull);
    m.causal = false;
    for (int64_t batch : {1, 512, 3072}) {
      const double ours = TrainingFlopsPerStep(m, 2048, batch, Recompute::kFull);
      const double eq3 = MegatronSc21FlopsPerStep(batch, 2048, m.num_layers, m.hidden, m.vocab);
      EXPECT_NEAR(ours / eq3, 1.0, 1e-12) << name << " batch " << batch;
    }
    const double eq3 = MegatronSc21FlopsPerStep(512, 2048, m.num_layers, m.hidden, m.vocab);
    const double half = 0.5 * AttentionFlopsPerToken(m, 2048) * 2048 * 512;
    EXPECT_NEAR((eq3 - causal) / (4 * half), 1.0, 1e-9) << name;
  }
  // Eq. 3 by hand for the 1.7B model, B = 512: 96 x 512 x 2048 x 24 x 2304^2 x (1 + 2048/13824 +
  // 51200/884736).
  const double expected =
      96.0 * 512 * 2048 * 24 * 2304.0 * 2304 * (1 + 2048.0 / 13824 + 51200.0 / 884736);
  EXPECT_DOUBLE_EQ(MegatronSc21FlopsPerStep(512, 2048, 24, 2304, 51200), expected);
}

TEST(ModelTest, ValidateNamesTheField) {
  Model m = Preset("llama2-7b");
  EXPECT_TRUE(Validate(m).ok());
  m.num_kv_heads = 5;
  Status st = Validate(m);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a multiple of the 5 KV heads"), std::string::npos)
      << st.message();
  m = Preset("llama2-7b");
  m.num_layers = 0;
  EXPECT_NE(Validate(m).message().find("layers 0"), std::string::npos);
  m = Preset("llama2-7b");
  m.hidden = 1 << 22;
  m.ffn_hidden = 1 << 22;
  m.num_layers = 1 << 14;
  st = Validate(m);
  EXPECT_NE(st.message().find("over the limit"), std::string::npos) << st.message();
  m = Preset("mixtral-8x7b");
  m.top_k = 9;
  EXPECT_NE(Validate(m).message().find("top-k"), std::string::npos);
}

TEST(ModelTest, EveryPresetValidatesAndCitesASource) {
  for (const auto& p : ModelPresets()) {
    EXPECT_TRUE(Validate(p.model).ok()) << p.model.name << ": " << Validate(p.model).message();
    EXPECT_FALSE(p.model.source.empty()) << p.model.name;
  }
}

// Llama 3 8B: wk 4096 x 1024, wo 4096 x 4096, w3 4096 x 14336 per layer, 2 FLOPs per weight,
// 32 layers: 2 x (4,194,304 + 16,777,216 + 58,720,256) x 32 = 5,100,273,664 FLOPs per token.
// Megatron-Core's --recompute-modules names (transformer_config.py recompute_modules): spaces or
// commas between them, any order, printed back in Megatron's order; default core_attn alone.
TEST(ModelTest, RecomputeModulesParseAndPrintInMegatronsOrder) {
  EXPECT_EQ(RecomputeModules{}.bits, kRecomputeCoreAttn);
  EXPECT_EQ(RecomputeModulesName({}), "core_attn");
  auto a = ParseRecomputeModules("mlp mla_up_proj");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->bits, kRecomputeMlp | kRecomputeMlaUpProj);
  EXPECT_EQ(RecomputeModulesName(*a), "mla_up_proj mlp");
  auto b = ParseRecomputeModules(" mla_up_proj,mlp ");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*b, *a);
  auto all =
      ParseRecomputeModules("shared_experts,moe,mlp,mla_up_proj,layernorm,moe_act,core_attn");
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(RecomputeModulesName(*all),
            "core_attn moe_act layernorm mla_up_proj mlp moe shared_experts");
  for (const char* bad : {"", " , ", "attn", "mlp mlp", "core_attn;mlp"}) {
    auto r = ParseRecomputeModules(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--recompute-modules"), std::string::npos) << bad;
    EXPECT_NE(r.status().message().find("core_attn, moe_act"), std::string::npos) << bad;
  }
}

TEST(ModelTest, OpLevelSacRecomputesTheEvenMatmuls) {
  const Model m = *FindPreset("llama3-8b");
  EXPECT_DOUBLE_EQ(OpSacRecomputeFlopsPerToken(m), 5'100'273'664.0);
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(m, 8192, Recompute::kOpSac) -
                       TrainingFlopsPerToken(m, 8192, Recompute::kNone),
                   5'100'273'664.0);
  EXPECT_EQ(*ParseRecompute("op-sac"), Recompute::kOpSac);
  EXPECT_STREQ(RecomputeName(Recompute::kOpSac), "op-sac");
}

TEST(ModelTest, RecomputeNames) {
  EXPECT_EQ(*ParseRecompute("Selective"), Recompute::kSelective);
  EXPECT_EQ(*ParseRecompute("full"), Recompute::kFull);
  EXPECT_EQ(*ParseRecompute("none"), Recompute::kNone);
  EXPECT_EQ(ParseRecompute("partial").status().message(),
            "--recompute partial: expected none, selective, full or op-sac");
}

// ExpectedRoutedBins, worked by hand (uniform routing, experts split in order over the bins).
TEST(ModelTest, ExpectedRoutedBinsByHand) {
  Model m;
  m.num_experts = 4;
  m.top_k = 2;
  // Two bins of 2 experts: a bin is missed when both picks are in the other, 1 of C(4, 2) = 6.
  EXPECT_DOUBLE_EQ(ExpectedRoutedBins(m, 2), 2.0 * (1 - 1.0 / 6));
  // One expert per bin: the 2 distinct experts are 2 distinct bins; one bin: always 1.
  EXPECT_DOUBLE_EQ(ExpectedRoutedBins(m, 4), 2.0);
  EXPECT_DOUBLE_EQ(ExpectedRoutedBins(m, 1), 1.0);
  EXPECT_EQ(ExpectedRoutedBins(m, 3), 0.0);  // 4 experts do not split over 3 bins
  // DeepSeek-V3's node-limited routing (config.json: 256 experts, top 8, n_group 8,
  // topk_group 4) over 8 nodes, one group per node: a node is picked with probability 4/8 and then
  // missed by the 8 experts drawn from the 4 x 32 = 128 candidates with probability
  // C(96, 8) / C(128, 8); so 8 (1/2) (1 - C(96, 8) / C(128, 8)) nodes, at most topk_group = 4.
  Model ds;
  ds.num_experts = 256;
  ds.top_k = 8;
  ds.router_groups = 8;
  ds.router_group_topk = 4;
  double miss = 1;
  for (int j = 0; j < 8; ++j) miss *= (96.0 - j) / (128.0 - j);
  EXPECT_NEAR(ExpectedRoutedBins(ds, 8), 4 * (1 - miss), 1e-12);
  EXPECT_LT(ExpectedRoutedBins(ds, 8), 4.0);
  // Over 4 nodes (2 groups each): neither of a node's groups is picked with probability
  // C(6, 4) / C(8, 4) = 15/70; one, 2 C(6, 3) / 70 = 40/70, and the 8 experts then miss its 32 of
  // the 128 candidates, C(96, 8) / C(128, 8) again; both, C(6, 2) / 70 = 15/70, missing 64 of 128.
  double miss_two = 1;
  for (int j = 0; j < 8; ++j) miss_two *= (64.0 - j) / (128.0 - j);
  EXPECT_NEAR(ExpectedRoutedBins(ds, 4),
              4 * (1 - 15.0 / 70 - 40.0 / 70 * miss - 15.0 / 70 * miss_two), 1e-12);
  // Without the group limit: 4 (1 - C(192, 8) / C(256, 8)).
  ds.router_groups = 0;
  double miss_free = 1;
  for (int j = 0; j < 8; ++j) miss_free *= (192.0 - j) / (256.0 - j);
  EXPECT_NEAR(ExpectedRoutedBins(ds, 4), 4 * (1 - miss_free), 1e-12);
}

}  // namespace
}  // namespace infralens::model
