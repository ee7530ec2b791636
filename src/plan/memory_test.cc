// Memory per GPU against the papers' closed forms and hand-worked cases: ZeRO's 7.5B example,
// Korthikanti et al.'s Table 2, Megatron-LM's theoretical_memory_usage.py for the first pipeline
// stage, and schedule-specific in-flight counts.
#include "plan/memory.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/presets.h"

namespace infralens::plan {
namespace {

using model::Model;
using model::Recompute;

Model Preset(const char* name) { return *model::FindPreset(name); }

MemoryReport Estimate(const Model& m, const MemoryConfig& c) {
  auto r = EstimateMemory(m, c);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : MemoryReport{};
}

double States(const RankMemory& r) {
  return r.weights_bytes + r.gradients_bytes + r.optimizer_bytes;
}

TEST(MemoryTest, ZeroPaperExample) {
  // Rajbhandari et al. 2020, sec. 1 / Figure 1: Psi = 7.5B, N_d = 64, K = 12 gives 120 GB,
  // 31.4 GB, 16.6 GB and 1.9 GB for the baseline and stages 1, 2, 3.
  EXPECT_DOUBLE_EQ(ZeroModelStateBytes(7.5e9, 0, 64), 120e9);                    // 16 x 7.5
  EXPECT_DOUBLE_EQ(ZeroModelStateBytes(7.5e9, 1, 64), 15e9 + 15e9 + 90e9 / 64);  // 31.40625
  EXPECT_DOUBLE_EQ(ZeroModelStateBytes(7.5e9, 2, 64), 15e9 + 105e9 / 64);        // 16.640625
  EXPECT_DOUBLE_EQ(ZeroModelStateBytes(7.5e9, 3, 64), 120e9 / 64);               // 1.875
  const double printed[] = {120, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    const double gb = ZeroModelStateBytes(7.5e9, stage, 64) / 1e9;
    EXPECT_DOUBLE_EQ(std::round(gb * (stage == 0 ? 1 : 10)) / (stage == 0 ? 1 : 10), printed[stage])
        << stage;
  }
}

TEST(MemoryTest, ModelStatesFollowZeroForAWholeModel) {
  // The SC21 7.5B GPT on 64 data-parallel GPUs, no TP/PP: every GPU holds the whole model.
  const Model m = Preset("gpt-7.5b");
  const double params = static_cast<double>(model::CountParameters(m).total);
  for (int stage = 0; stage <= 3; ++stage) {
    MemoryConfig c;
    c.parallel.dp = 64;
    c.parallel.zero_stage = stage;
    const MemoryReport r = Estimate(m, c);
    ASSERT_EQ(r.ranks.size(), 1u);
    EXPECT_DOUBLE_EQ(r.ranks[0].parameters, params);
    EXPECT_NEAR(States(r.ranks[0]) / ZeroModelStateBytes(params, stage, 64), 1.0, 1e-12) << stage;
  }
}

// torchtitan's FSDP under a pipeline keeps each rank's stage gathered, 2 bytes per parameter, and
// its gradients accumulated unsharded in the reduce dtype (4 bytes under FP32 gradients) beside
// the shards; without a pipeline or without sharding nothing changes.
TEST(MemoryTest, FsdpOncePerStepHoldsTheStageGathered) {
  const Model m = Preset("gpt-7.5b");
  MemoryConfig c;
  c.parallel.pp = 2;
  c.parallel.dp = 8;
  c.parallel.zero_stage = 3;
  c.fp32_gradients = true;
  c.global_batch = 64;
  const MemoryReport sharded = Estimate(m, c);
  c.fsdp_once_per_step_with_pp = true;
  const MemoryReport once = Estimate(m, c);
  ASSERT_EQ(once.ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const double params = once.ranks[r].parameters;  // the rank's stage, whole
    EXPECT_DOUBLE_EQ(once.ranks[r].weights_bytes - sharded.ranks[r].weights_bytes, 2 * params);
    EXPECT_DOUBLE_EQ(once.ranks[r].gradients_bytes - sharded.ranks[r].gradients_bytes, 4 * params);
    EXPECT_DOUBLE_EQ(once.ranks[r].optimizer_bytes, sharded.ranks[r].optimizer_bytes);
  }
  c.parallel.pp = 1;
  c.parallel.dp = 16;
  const MemoryReport flat_once = Estimate(m, c);
  c.fsdp_once_per_step_with_pp = false;
  EXPECT_DOUBLE_EQ(flat_once.ranks[0].total_bytes, Estimate(m, c).ranks[0].total_bytes);
}

TEST(MemoryTest, KorthikantiTable2ByHand) {
  // GPT-3 175B layer: s = 2048, b = 1, h = 12288, a = 96, t = 8; sbh = 25,165,824 and
  // 5as/(ht) = 5 x 96 x 2048 / (12288 x 8) = 10.
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 8, false, Recompute::kNone),
                   23 * sbh);
  EXPECT_DOUBLE_EQ(KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 8, true, Recompute::kNone),
                   14.25 * sbh);
  EXPECT_DOUBLE_EQ(
      KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 8, false, Recompute::kSelective),
      13 * sbh);
  EXPECT_DOUBLE_EQ(
      KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 8, true, Recompute::kSelective),
      4.25 * sbh);
  EXPECT_DOUBLE_EQ(KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 8, false, Recompute::kFull),
                   2 * sbh);
  // No parallelism: sbh(34 + 5as/h) = sbh (34 + 80).
  EXPECT_DOUBLE_EQ(KorthikantiLayerActivationBytes(2048, 1, 12288, 96, 1, false, Recompute::kNone),
                   114 * sbh);
  EXPECT_DOUBLE_EQ(114 * sbh, 2'868'903'936.0);
}

TEST(MemoryTest, GeneralLayerReducesToTable2ForGpt) {
  const Model m = Preset("gpt3-175b");
  for (int t : {1, 2, 8}) {
    for (bool sp : {false, true}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective}) {
        for (int64_t b : {1, 4}) {
          EXPECT_DOUBLE_EQ(
              LayerActivationBytes(m, false, 2048, b, t, 1, sp, r),
              KorthikantiLayerActivationBytes(2048, b, m.hidden, m.num_heads, t, sp, r))
              << "t=" << t << " sp=" << sp << " r=" << model::RecomputeName(r);
        }
      }
    }
    EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 2048, 1, t, 1, false, Recompute::kFull),
                     KorthikantiLayerActivationBytes(2048, 1, m.hidden, m.num_heads, t, false,
                                                     Recompute::kFull));
  }
}

TEST(MemoryTest, GqaGatedLayerByHand) {
  // tiny (a Llama: no dropout): h 64, 4 heads of 16, 2 KV heads, SwiGLU f 256, s 128, b 1. Per
  // token: replicated 8h = 512 (no dropout masks); split: Q 2 x 64 + K 2 x 32 + V 2 x 32 + context
  // 2 x 64 = 384, gated MLP 6f = 1536. No TP: 128 x (512 + 1920) = 311,296; materialized scores
  // without attention dropout keep the softmax output only, 2 a s^2 b = 2 x 4 x 128^2 = 131,072.
  const Model m = Preset("tiny");
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 1, 1, false, Recompute::kNone), 442'368);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 1, 1, false, Recompute::kSelective),
                   311'296);
  // t = 2 without SP: 128 x (512 + 1920/2) + 131,072 / 2 = 188,416 + 65,536.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 2, 1, false, Recompute::kNone), 253'952);
  // With SP everything splits: 128 x 2432 / 2 + 65,536.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kNone), 221'184);
  // DTensor keeps the qkv and fc1 inputs gathered: 2 x 2h = 256 bytes per token whole, not 128:
  // 128 more per token, 16,384 more. Selective recompute the same; full recompute and no SP
  // unchanged.
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kNone, false, true),
      221'184 + 16'384);
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kSelective, false, true),
      LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kSelective) + 16'384);
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kFull, false, true), 8'192);
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, false, 128, 1, 2, 1, false, Recompute::kNone, false, true), 253'952);
  // Fused attention stores an FP32 log-sum-exp per query row and head instead: 4 a s b = 2,048.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 1, 1, false, Recompute::kNone, true),
                   311'296 + 2'048);
  // Full recompute keeps the layer input: 2sbh = 16,384; split by t under SP.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 2, 1, false, Recompute::kFull), 16'384);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 128, 1, 2, 1, true, Recompute::kFull), 8'192);
  // With GPT's dropout 0.1 the masks come back: 10h replicated and 5 bytes per score.
  Model dropout = m;
  dropout.hidden_dropout = dropout.attention_dropout = 0.1;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(dropout, false, 128, 1, 1, 1, false, Recompute::kNone),
                   655'360);
}

// Issue 9: full recompute rebuilds one layer at a time, so it can never hold more than selective
// recompute, whatever the model, sequence and split (with fused attention no layer stores scores).
TEST(MemoryTest, FullRecomputeNeverExceedsSelective) {
  for (const char* name : {"llama3-8b", "llama3-70b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3"}) {
    const Model m = Preset(name);
    for (int64_t seq : {2048, 8192, 131072}) {
      for (int tp : {1, 8}) {
        for (int cp : {1, 4}) {
          MemoryConfig c;
          c.parallel.tp = tp;
          c.parallel.cp = cp;
          c.parallel.dp = 2;
          c.parallel.sequence_parallel = tp > 1;
          c.seq_len = seq;
          c.global_batch = 2;
          c.recompute = Recompute::kSelective;
          auto sel = EstimateMemory(m, c);
          c.recompute = Recompute::kFull;
          auto full = EstimateMemory(m, c);
          if (!sel.ok() || !full.ok()) continue;  // a split the heads do not allow
          EXPECT_LE(full->worst().activations_bytes, sel->worst().activations_bytes)
              << name << " seq " << seq << " tp " << tp << " cp " << cp;
        }
      }
    }
  }
}

TEST(MemoryTest, ContextParallelSplitsTheSequence) {
  const Model m = Preset("llama2-7b");
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, 8192, 1, 1, 2, false, Recompute::kSelective),
                   LayerActivationBytes(m, false, 4096, 1, 1, 1, false, Recompute::kSelective));
  // Materialized scores: local queries (s/cp) against all s keys, the softmax output only (Llama 2
  // has no attention dropout): 2 a (s/cp) s b.
  const double none = LayerActivationBytes(m, false, 8192, 1, 1, 2, false, Recompute::kNone);
  const double selective =
      LayerActivationBytes(m, false, 8192, 1, 1, 2, false, Recompute::kSelective);
  EXPECT_DOUBLE_EQ(none - selective, 2.0 * 32 * 4096 * 8192);
}

TEST(MemoryTest, FirstStageMatchesMegatronTheoreticalMemory) {
  // Megatron-LM theoretical_memory_usage.py, compute_activation_memory (SP + selective), first
  // stage of 1F1B with m >= p: sbh(18 + 4f/h) per layer x L layers (p microbatches x L/p layers),
  // + 8 s b p + s b h p, all divided by t. SC21 7.5B GPT (f = 4h: 34), s 2048, b 2, t 2, p 4.
  const Model m = Preset("gpt-7.5b");
  MemoryConfig c;
  c.parallel.tp = 2;
  c.parallel.pp = 4;
  c.parallel.sequence_parallel = true;
  c.recompute = Recompute::kSelective;
  c.micro_batch = 2;
  c.global_batch = 16;  // m = 8 >= p
  const MemoryReport r = Estimate(m, c);
  const double s = 2048, b = 2, h = 4096, t = 2, p = 4, L = 36;
  const double expected = (s * b * h * 34 * L + 8 * s * b * p + s * b * h * p) / t;
  EXPECT_EQ(r.ranks[0].peak_chunks, 4);
  EXPECT_NEAR(r.ranks[0].activations_bytes / expected, 1.0, 1e-12);
  // The last stage of 1F1B holds one microbatch: its 9 layers, the final norm's and the output
  // layer's inputs and the FP32 logits, 4 s b h (1 + V/h) / t (Korthikanti sec. 4.3).
  const double last = (s * b * h * 34 * 9 + 4 * s * b * h * (1 + 51200 / h)) / t;
  EXPECT_EQ(r.ranks[3].peak_chunks, 1);
  EXPECT_NEAR(r.ranks[3].activations_bytes / last, 1.0, 1e-12);
}

TEST(MemoryTest, SingleStageMatchesMegatronWithOutputLayer) {
  // pp = 1: Megatron adds the output layer term 4 s b h (1 + V/h) / t to L layers and the
  // embedding's 8sb + sbh (one microbatch in flight).
  const Model m = Preset("gpt-1.7b");
  MemoryConfig c;
  c.parallel.tp = 4;
  c.parallel.sequence_parallel = true;
  c.recompute = Recompute::kSelective;
  const MemoryReport r = Estimate(m, c);
  const double s = 2048, b = 1, h = 2304, t = 4, L = 24, V = 51200;
  const double expected =
      (s * b * h * 34 * L + 8 * s * b + s * b * h + 4 * s * b * h * (1 + V / h)) / t;
  EXPECT_NEAR(r.ranks[0].activations_bytes / expected, 1.0, 1e-12);
}

TEST(MemoryTest, GPipeHoldsEveryMicrobatch) {
  const Model m = Preset("tiny");
  MemoryConfig c;
  c.parallel.pp = 2;
  c.schedule = schedule::ScheduleKind::kGPipe;
  c.global_batch = 6;
  c.recompute = Recompute::kSelective;
  const MemoryReport r = Estimate(m, c);
  // One layer per stage of 311,296 bytes (GqaGatedLayerByHand), six microbatches; stage 0 adds
  // the embedding's 8sb = 1,024 (no dropout mask: tiny has no dropout); the last stage
  // 4sbh + 4sbV = 32,768 + 131,072.
  EXPECT_EQ(r.ranks[0].peak_chunks, 6);
  EXPECT_DOUBLE_EQ(r.ranks[0].activations_bytes, 6 * (311'296.0 + 1'024));
  EXPECT_DOUBLE_EQ(r.ranks[1].activations_bytes, 6 * (311'296.0 + 163'840));
}

TEST(MemoryTest, InterleavedInFlightChunks) {
  // PyTorch's Interleaved1F1B (_get_warmup_ops): rank r runs (v-1) p + 2 (p-1-r) warm-up forwards,
  // then one more forward before its first backward: p = 4, v = 2 gives 11, 9, 7, 5 chunks.
  // Megatron's penalty 1 + (p-1)/(pv) for rank 0: p v + p - 1 = 11.
  const Model m = Preset("llama2-7b");  // 32 layers: 4 per chunk
  MemoryConfig c;
  c.parallel.pp = 4;
  c.parallel.vpp = 2;
  c.schedule = schedule::ScheduleKind::kInterleaved1F1B;
  c.global_batch = 8;
  c.recompute = Recompute::kSelective;
  const MemoryReport r = Estimate(m, c);
  const int expected[] = {11, 9, 7, 5};
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(r.ranks[rank].peak_chunks, expected[rank]) << rank;
  // Ranks 1 and 2 hold neither the embedding nor the output layer.
  const double chunk =
      4 * LayerActivationBytes(m, false, 4096, 1, 1, 1, false, Recompute::kSelective);
  EXPECT_NEAR(r.ranks[1].activations_bytes / (9 * chunk), 1.0, 1e-12);
  EXPECT_NEAR(r.ranks[2].activations_bytes / (7 * chunk), 1.0, 1e-12);
}

TEST(MemoryTest, EmbeddingAndOutputPlacement) {
  // Untied Llama, pp 2, tp 2: each rank has 16 layers / 2; rank 0 the token table V h / 2, rank 1
  // the output layer V h / 2 and the final RMSNorm h.
  const Model llama = Preset("llama2-7b");
  MemoryConfig c;
  c.parallel.pp = 2;
  c.parallel.tp = 2;
  MemoryReport r = Estimate(llama, c);
  const double layer = 202'383'360, vh = 32000.0 * 4096;
  EXPECT_DOUBLE_EQ(r.ranks[0].parameters, 16 * layer / 2 + vh / 2);
  EXPECT_DOUBLE_EQ(r.ranks[1].parameters, 16 * layer / 2 + vh / 2 + 4096);
  EXPECT_TRUE(r.ranks[0].embedding);
  EXPECT_TRUE(r.ranks[1].output_layer);
  // Tied GPT: the last stage keeps a copy of the table (Megatron), the first also the learned
  // positions (not split by TP).
  const Model gpt = Preset("gpt-1.7b");
  const double gpt_layer = 12.0 * 2304 * 2304 + 13 * 2304, gvh = 51200.0 * 2304,
               pos = 2048.0 * 2304;
  r = Estimate(gpt, c);
  EXPECT_DOUBLE_EQ(r.ranks[0].parameters, 12 * gpt_layer / 2 + gvh / 2 + pos);
  EXPECT_DOUBLE_EQ(r.ranks[1].parameters, 12 * gpt_layer / 2 + gvh / 2 + 2 * 2304);
  // ZBV's V placement puts stages 0 and 3 on rank 0: one table serves both.
  c.schedule = schedule::ScheduleKind::kZBV;
  r = Estimate(gpt, c);  // 24 layers, 4 chunks of 6
  EXPECT_EQ(r.ranks[0].stages, (std::vector<int>{0, 3}));
  EXPECT_TRUE(r.ranks[0].embedding && r.ranks[0].output_layer);
  EXPECT_DOUBLE_EQ(r.ranks[0].parameters, 12 * gpt_layer / 2 + gvh / 2 + pos + 2 * 2304);
  EXPECT_DOUBLE_EQ(r.ranks[1].parameters, 12 * gpt_layer / 2);
}

TEST(MemoryTest, ExpertParallelAndZeroShards) {
  // Mixtral on 8 GPUs, ep 8, ZeRO 1: dense parameters are replicated 8 times and their optimizer
  // states sharded 8 ways; each GPU holds one expert per layer, whose states are not replicated
  // (expert data-parallel size dp / ep = 1) and so not sharded.
  const Model m = Preset("mixtral-8x7b");
  const model::ParamCounts pc = model::CountParameters(m);
  const double experts = static_cast<double>(pc.routed_experts);
  const double dense = static_cast<double>(pc.total) - experts;
  MemoryConfig c;
  c.parallel.dp = 8;
  c.parallel.ep = 8;
  c.parallel.zero_stage = 1;
  c.seq_len = 4096;
  const MemoryReport r = Estimate(m, c);
  EXPECT_DOUBLE_EQ(r.ranks[0].parameters, dense + experts / 8);
  EXPECT_DOUBLE_EQ(r.ranks[0].weights_bytes, 2 * (dense + experts / 8));
  EXPECT_DOUBLE_EQ(r.ranks[0].optimizer_bytes, 12 * dense / 8 + 12 * experts / 8);
}

TEST(MemoryTest, ContextParallelRanksShareTheShards) {
  const Model m = Preset("llama2-7b");
  MemoryConfig c;
  c.parallel.dp = 2;
  c.parallel.cp = 4;
  c.parallel.zero_stage = 2;
  const MemoryReport r = Estimate(m, c);
  const double p = 6'738'415'616.0;
  EXPECT_EQ(r.gpus, 8);
  EXPECT_DOUBLE_EQ(r.ranks[0].weights_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(r.ranks[0].gradients_bytes, 2 * p / 8);
  EXPECT_DOUBLE_EQ(r.ranks[0].optimizer_bytes, 12 * p / 8);
}

TEST(MemoryTest, Fp8CopyAndFp32Gradients) {
  const Model m = Preset("llama2-7b");
  MemoryConfig c;
  c.precision = Precision::kFp8;
  c.fp32_gradients = true;
  const MemoryReport r = Estimate(m, c);
  const double layers = 32 * 202'383'360.0, total = 6'738'415'616.0;
  // Transformer Engine keeps an FP8 copy and an FP8 transpose of every layer weight: 2 bytes per
  // layer parameter (the embedding and output layer stay BF16).
  EXPECT_DOUBLE_EQ(r.ranks[0].weights_bytes, 2 * total + 2 * layers);
  EXPECT_DOUBLE_EQ(r.ranks[0].gradients_bytes, 4 * total);
  EXPECT_DOUBLE_EQ(r.ranks[0].optimizer_bytes, 12 * total);
  // torchao's Float8Linear casts in every forward and keeps no copy.
  c.fp8_transformer_engine = false;
  EXPECT_DOUBLE_EQ(Estimate(m, c).ranks[0].weights_bytes, 2 * total);
}

// FP8 weights as the parameters (Megatron's --fp8-param-gather, NeMo's FP8 presets): the layers
// hold their FP8 weight and transpose, 2 bytes per layer parameter, and no BF16 copy; the
// embedding and output layer stay BF16. Llama 2 7B by hand: 2 x 262,148,096 + 2 x 6,476,267,520.
// Only Transformer Engine's recipe has FP8 parameters; gradients and optimizer states are as
// before (the FP32 main weights are among the optimizer's 12 bytes).
TEST(MemoryTest, Fp8ParametersDropTheLayersBf16Copy) {
  const Model m = Preset("llama2-7b");
  MemoryConfig c;
  c.precision = Precision::kFp8;
  c.fp8_param_gather = true;
  const double layers = 32 * 202'383'360.0, total = 6'738'415'616.0;
  const MemoryReport r = Estimate(m, c);
  EXPECT_DOUBLE_EQ(r.ranks[0].weights_bytes, 2 * (total - layers) + 2 * layers);
  EXPECT_DOUBLE_EQ(r.ranks[0].layer_parameters, layers);
  EXPECT_DOUBLE_EQ(r.ranks[0].optimizer_bytes, 12 * total);
  c.fp8_transformer_engine = false;  // torchao: BF16 weights whatever the flag says
  EXPECT_DOUBLE_EQ(Estimate(m, c).ranks[0].weights_bytes, 2 * total);
  c.fp8_transformer_engine = true;
  c.precision = Precision::kBf16;  // BF16 training: no FP8 anything
  EXPECT_DOUBLE_EQ(Estimate(m, c).ranks[0].weights_bytes, 2 * total);
}

// NeMo 1.x's distributed_fused_adam under BF16 keeps each weight's low 16 bits instead of an FP32
// master copy (apex DistributedFusedAdam store_param_remainders): 2 + 4 + 4 = 10 bytes of optimizer
// state per parameter, sharded as Adam's 12 are. Llama 2 7B on dp 8 with ZeRO-1: 10 x
// 6,738,415,616 / 8 against 12 x that. With FP8 parameters NeMo stores FP32 params (12 again);
// weights and gradients do not change.
TEST(MemoryTest, MasterWeightRemaindersKeepTwoBytesOfTheFourByteMaster) {
  const Model m = Preset("llama2-7b");
  const double p = 6'738'415'616.0;
  MemoryConfig c;
  c.parallel.dp = 8;
  c.parallel.zero_stage = 1;
  c.fp32_gradients = true;
  const MemoryReport fp32 = Estimate(m, c);
  c.master_weight_remainders = true;
  const MemoryReport rem = Estimate(m, c);
  EXPECT_DOUBLE_EQ(fp32.ranks[0].optimizer_bytes, 12 * p / 8);
  EXPECT_DOUBLE_EQ(rem.ranks[0].optimizer_bytes, 10 * p / 8);
  EXPECT_DOUBLE_EQ(rem.ranks[0].weights_bytes, fp32.ranks[0].weights_bytes);
  EXPECT_DOUBLE_EQ(rem.ranks[0].gradients_bytes, fp32.ranks[0].gradients_bytes);
  c.precision = Precision::kFp8;
  c.fp8_param_gather = true;
  EXPECT_DOUBLE_EQ(Estimate(m, c).ranks[0].optimizer_bytes, 12 * p / 8);
}

// Megatron-Core builds MLA's down projections whole on every TP rank (TELinear, parallel_mode
// 'duplicated'). DeepSeek-V3 by hand (h 7168, q_lora 1536, kv_lora 512, RoPE key 64): 7168 x 1536
// + 1536 + 7168 x (512 + 64) + 512 = 15,140,864 per layer. At tp 4 everything else a rank holds
// is a quarter of tp 1's except those and the final norm (h, kept whole): 61 layers x 15,140,864
// x 3/4 + 7168 x 3/4 more than a quarter.
TEST(MemoryTest, MlaDownProjectionsAreWholeOnEveryTpRank) {
  const Model m = Preset("deepseek-v3");
  EXPECT_EQ(model::MlaDownProjectionParams(m), 15'140'864);
  EXPECT_EQ(model::MlaDownProjectionParams(Preset("llama3-8b")), 0);
  MemoryConfig c;
  c.seq_len = 1024;
  const MemoryReport one = Estimate(m, c);
  c.parallel.tp = 4;
  const MemoryReport four = Estimate(m, c);
  EXPECT_DOUBLE_EQ(four.ranks[0].parameters - one.ranks[0].parameters / 4,
                   61 * 15'140'864.0 * 3 / 4 + 7168.0 * 3 / 4);
}

// Transformer Engine at FP8 keeps each linear's input as its FP8 cast (1 byte, not 2). Llama 3
// 8B (h 4096, 32 heads of 128, 8 KV heads, gated f 14336, no dropout), per token of one layer
// at t = 1, by hand. BF16 under selective recompute: replicated 8h = 32,768 (norm inputs 4h,
// attention and MLP inputs 2h each); split Q 8,192 + K 2,048 + V 2,048 + context 8,192 + 6f
// 86,016 = 106,496; 139,264 in all. FP8: the attention and MLP inputs h each (24,576), the
// context 4,096, the down projection's input f (4f + f = 71,680): 112,640, that is h + h + a d
// + f = 26,624 less.
TEST(MemoryTest, TransformerEngineFp8KeepsLinearInputsInFp8) {
  const Model m = Preset("llama3-8b");
  const int64_t s = 8192;
  auto bytes = [&](int t, bool sp, Recompute r, bool fused, bool fp8) {
    return LayerActivationBytes(m, false, s, 1, t, 1, sp, r, fused, false, fp8);
  };
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kSelective, true, false), 8192.0 * 139'264);
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kSelective, true, true), 8192.0 * 112'640);
  // TP 8 with SP splits everything: 112,640 / 8 = 14,080 per token.
  EXPECT_DOUBLE_EQ(bytes(8, true, Recompute::kSelective, true, true), 8192.0 * 14'080);
  // No recompute with a fused attention: the attention keeps the BF16 context for its backward
  // beside the projection's FP8 cast (3 a d = 12,288, not 8,192), and its FP32 log-sum-exp
  // (4 a = 128): 24,576 + 8,192 + 2,048 + 2,048 + 12,288 + 71,680 + 128 = 120,960.
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kNone, true, true), 8192.0 * 120'960);
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kNone, true, false), 8192.0 * (139'264 + 128));
  // Full recompute keeps the BF16 layer input whatever the precision.
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kFull, true, true), 8192.0 * 2 * 4096);
  // An MoE layer of Mixtral 8x7B (h 4096, 32 heads of 128, top-2 of experts with f 14336):
  // the attention input h and context a d as above, and for each of the 2 routed copies the
  // dispatched tokens h and the down projection's input f; the router still reads the BF16 norm
  // output. 4,096 + 4,096 + 2 (4,096 + 14,336) = 45,056 bytes less per token.
  const Model mixtral = Preset("mixtral-8x7b");
  EXPECT_DOUBLE_EQ(LayerActivationBytes(mixtral, true, s, 1, 1, 1, false, Recompute::kSelective,
                                        true, false, false) -
                       LayerActivationBytes(mixtral, true, s, 1, 1, 1, false, Recompute::kSelective,
                                            true, false, true),
                   8192.0 * 45'056);
  // Through the estimator: FP8 under Transformer Engine stores less than under torchao, which
  // saves the BF16 inputs (the same bytes as BF16).
  MemoryConfig c;
  c.recompute = Recompute::kSelective;
  c.precision = Precision::kFp8;
  const double te = Estimate(m, c).ranks[0].activations_bytes;
  c.fp8_transformer_engine = false;
  const double torchao = Estimate(m, c).ranks[0].activations_bytes;
  c.precision = Precision::kBf16;
  EXPECT_DOUBLE_EQ(torchao, Estimate(m, c).ranks[0].activations_bytes);
  EXPECT_LT(te, torchao);
}

TEST(MemoryTest, FullRecomputeKeepsLayerInputs) {
  // tiny, pp 1, one microbatch in flight: 2 layers x 2sbh (16,384 each) + one layer rebuilt during
  // its backward with fused attention (311,296 + its log-sum-exp 4 a s b = 2,048) + the
  // embedding's 8sb = 1,024 + output extras 163,840.
  const Model m = Preset("tiny");
  MemoryConfig c;
  c.recompute = Recompute::kFull;
  const MemoryReport r = Estimate(m, c);
  EXPECT_DOUBLE_EQ(r.ranks[0].activations_bytes, 2 * 16'384.0 + 313'344 + 1'024 + 163'840);
}

// torchtitan's op-level SAC (model.h), Llama 3 8B (h 4096, 32 heads of 128, 8 KV heads, f
// 14336, gated), per token of one layer, by hand: the block input 2h = 8192; wq 2 x 4096, wv
// 2 x 1024, the attention output 2 x 4096, w1 2 x 14336 (47,104 in all); the FP32 log-sum-exp
// 4 x 32 = 128; w2's output 2h = 8192: 63,616 bytes. With tp = 8 everything but w2's partial
// sum splits 8 ways, and the two reduce-scatter outputs add 2 x 2h / 8: 1,024 + 5,888 + 16 +
// 8,192 + 2,048 = 17,168 bytes.
TEST(MemoryTest, OpLevelSacKeepsWhatTorchtitansPolicySaves) {
  const Model m = Preset("llama3-8b");
  const int64_t seq = 8192;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, seq, 1, 1, 1, false, Recompute::kOpSac, true),
                   8192.0 * 63616);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, false, seq, 1, 8, 1, true, Recompute::kOpSac, true),
                   8192.0 * 17168);
  // Between full recompute (the input only) and Megatron's selective (everything but the core).
  for (const auto& p : model::ModelPresets()) {
    if (p.model.is_moe()) continue;
    const double full =
        LayerActivationBytes(p.model, false, 4096, 1, 1, 1, false, Recompute::kFull, true);
    const double op =
        LayerActivationBytes(p.model, false, 4096, 1, 1, 1, false, Recompute::kOpSac, true);
    const double sel =
        LayerActivationBytes(p.model, false, 4096, 1, 1, 1, false, Recompute::kSelective, true);
    EXPECT_LT(full, op) << p.model.name;
    EXPECT_LT(op, sel) << p.model.name;
  }
  // Dense models only: a MoE model is refused with the reason.
  MemoryConfig c;
  c.recompute = Recompute::kOpSac;
  auto moe = EstimateMemory(Preset("mixtral-8x7b"), c);
  ASSERT_FALSE(moe.ok());
  EXPECT_NE(moe.status().message().find("--recompute op-sac: modelled for dense models"),
            std::string::npos);
}

// Megatron-Core's uneven forms (get_num_layers_to_build), by hand for Llama 3.1 405B's 126
// layers: with the embedding and the loss counted, (126 + 2) / 16 = 8 per rank, 2 per chunk at
// vpp 4, one fewer on the first and last chunk; first 7 and last 7 leave 112 for 14 ranks: 8.
TEST(MemoryTest, UnevenStagesSplitAsMegatronCoreDoes) {
  ParallelConfig p;
  p.pp = 16;
  p.embedding_in_split = p.loss_in_split = true;
  auto acct = StageLayerCounts(126, p, 4);
  ASSERT_TRUE(acct.ok()) << acct.status().message();
  ASSERT_EQ(acct->size(), 64u);
  EXPECT_EQ(acct->front(), 1);
  EXPECT_EQ(acct->back(), 1);
  for (size_t s = 1; s + 1 < acct->size(); ++s) EXPECT_EQ((*acct)[s], 2) << s;
  ParallelConfig fl;
  fl.pp = 16;
  fl.first_stage_layers = 7;
  fl.last_stage_layers = 7;
  auto firstlast = StageLayerCounts(126, fl, 1);
  ASSERT_TRUE(firstlast.ok()) << firstlast.status().message();
  EXPECT_EQ(firstlast->front(), 7);
  EXPECT_EQ(firstlast->back(), 7);
  EXPECT_EQ((*firstlast)[1], 8);
  EXPECT_EQ(StageSplitText(*firstlast), "7, 14 x 8, 7 layers per stage");
  // Interleaved: each rank's layers split over its chunks, stage s on rank s % pp.
  ParallelConfig il = fl;
  il.pp = 2;
  il.first_stage_layers = 4;
  il.last_stage_layers = 8;
  auto inter = StageLayerCounts(12, il, 2);
  ASSERT_TRUE(inter.ok()) << inter.status().message();
  EXPECT_EQ(*inter, (std::vector<int64_t>{2, 4, 2, 4}));
  const std::vector<std::pair<ParallelConfig, std::string>> bad = {
      {[] {
         ParallelConfig q;
         q.pp = 16;
         q.first_stage_layers = 6;
         q.last_stage_layers = 6;
         return q;
       }(),
       "the other 114 layers do not split evenly over the other 14 pipeline ranks"},
      {[] {
         ParallelConfig q;
         q.pp = 16;
         q.first_stage_layers = 7;
         q.embedding_in_split = true;
         return q;
       }(),
       "give one form"},
      {[] {
         ParallelConfig q;
         q.pp = 4;
         q.embedding_in_split = true;
         return q;
       }(),
       "126 layers and 1 counted as layers do not split evenly over pp = 4"},
      {[] {
         ParallelConfig q;
         q.pp = 1;
         q.loss_in_split = true;
         return q;
       }(),
       "need --pp 2"},
  };
  for (const auto& [q, fragment] : bad) {
    auto r = StageLayerCounts(126, q, 1);
    ASSERT_FALSE(r.ok()) << fragment;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  }
  auto odd = StageLayerCounts(126, fl, 2);  // 7 layers on rank 0 over 2 chunks
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("pipeline rank 0 holds 7 layers"), std::string::npos);
  // The memory report holds each rank's share: 7 + 14 x 8 + 7 = 126 layers.
  MemoryConfig c;
  c.parallel = fl;
  c.parallel.tp = 8;
  c.parallel.dp = 1;
  c.recompute = Recompute::kFull;
  auto rep = EstimateMemory(Preset("llama3-405b"), c);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  int64_t total = 0;
  for (const auto& r : rep->ranks) total += r.layers;
  EXPECT_EQ(total, 126);
  EXPECT_EQ(rep->ranks.front().layers, 7);
  EXPECT_EQ(rep->ranks[1].layers, 8);
  // The V-shaped schedules split evenly.
  c.schedule = schedule::ScheduleKind::kZBV;
  auto v = EstimateMemory(Preset("llama3-405b"), c);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("V-shaped ones split evenly"), std::string::npos);
}

// Selective recompute's modules (LayerActivationBytes `modules`), by hand, bytes per token of one
// layer at tp 1 without SP (seq 4,096, one sequence). Llama 3 8B (h 4,096, 32 heads and 8 KV heads
// of 128, SwiGLU f 14,336, no dropout) in BF16 with fused attention: the norms' inputs 4h, the
// attention's and the MLP's inputs 2h + 2h, Q 8,192, K and V 2,048 each, the context 8,192, the
// MLP 6f = 86,016: 139,264 with core_attn. mlp also leaves the MLP's input and inner activations
// (2h + 6f = 94,208): 45,056. mlp alone keeps the attention's FP32 log-sum-exp, 4 x 32 = 128.
// DeepSeek-V3 (MLA: 128 heads, q/k 192, v 128; top-8 of 256 experts of 2,048, one shared) on a
// MoE layer, against core_attn alone: mla_up_proj leaves Q, K, V, 2 x 128 x (192 + 192 + 128) =
// 131,072; layernorm the MoE layer's pre-MLP norm output and MLA's input norm output, 2h + 2h =
// 28,672 (under FP8, whose down projections keep their own casts, the first only: 14,336);
// moe_act each routed copy's BF16 activation output, 8 x 2 x 2,048 = 32,768 (under FP8 nothing);
// shared_experts the shared expert's 6 x 2,048 = 12,288; moe the routed tokens, their inner
// activations and outputs, 8 x (2h + 6 x 2,048 + 2h) = 327,680, the shared expert and the FP32
// router logits 4 x 256: 340,992.
TEST(MemoryTest, RecomputeModulesLeaveTheirActivationsByHand) {
  using model::RecomputeModules;
  const model::Model llama = *model::FindPreset("llama3-8b");
  const auto dense = [&](RecomputeModules mods) {
    return LayerActivationBytes(llama, false, 4096, 1, 1, 1, false, Recompute::kSelective, true,
                                false, false, mods) /
           4096;
  };
  EXPECT_EQ(dense({}), 139264);
  EXPECT_EQ(dense({model::kRecomputeCoreAttn | model::kRecomputeMlp}), 45056);
  EXPECT_EQ(dense({model::kRecomputeMlp}), 45056 + 128);
  // Modules MLA and MoE layers have change nothing on a dense layer without MLA.
  EXPECT_EQ(dense({model::kRecomputeCoreAttn | model::kRecomputeMoe | model::kRecomputeMoeAct |
                   model::kRecomputeLayernorm | model::kRecomputeMlaUpProj |
                   model::kRecomputeSharedExperts}),
            139264);
  // Outside selective recompute the modules are not read.
  EXPECT_EQ(LayerActivationBytes(llama, false, 4096, 1, 1, 1, false, Recompute::kNone, true, false,
                                 false, {model::kRecomputeMlp}),
            LayerActivationBytes(llama, false, 4096, 1, 1, 1, false, Recompute::kNone, true));

  const model::Model ds = *model::FindPreset("deepseek-v3");
  const auto saved = [&](RecomputeModules mods, bool fp8) {
    const RecomputeModules both{mods.bits | model::kRecomputeCoreAttn};
    return (LayerActivationBytes(ds, true, 4096, 1, 1, 1, false, Recompute::kSelective, true, false,
                                 fp8, {}) -
            LayerActivationBytes(ds, true, 4096, 1, 1, 1, false, Recompute::kSelective, true, false,
                                 fp8, both)) /
           4096;
  };
  EXPECT_EQ(saved({model::kRecomputeMlaUpProj}, false), 131072);
  EXPECT_EQ(saved({model::kRecomputeLayernorm}, false), 28672);
  EXPECT_EQ(saved({model::kRecomputeLayernorm}, true), 14336);
  EXPECT_EQ(saved({model::kRecomputeMoeAct}, false), 32768);
  EXPECT_EQ(saved({model::kRecomputeMoeAct}, true), 0);
  EXPECT_EQ(saved({model::kRecomputeSharedExperts}, false), 12288);
  EXPECT_EQ(saved({model::kRecomputeMoe}, false), 340992);
  // TP splits what it splits: at tp 2 without SP the MLA and MoE terms halve.
  EXPECT_EQ(
      (LayerActivationBytes(ds, true, 4096, 1, 2, 1, false, Recompute::kSelective, true, false,
                            false, {}) -
       LayerActivationBytes(ds, true, 4096, 1, 2, 1, false, Recompute::kSelective, true, false,
                            false, {model::kRecomputeCoreAttn | model::kRecomputeMlaUpProj})) /
          4096,
      131072 / 2);
}

// A rank under selective recompute keeps every layer's stored bytes for each microbatch in
// flight, and rebuilds one layer's recomputed modules at a time in its backward. Llama 3 8B at
// tp 1, pp 1, one sequence of 4,096 tokens per microbatch (one in flight): with mlp besides
// core_attn each of the 32 layers keeps 94,208 bytes a token fewer (above), and one layer's
// 94,208 come back while it is rebuilt: 31 x 94,208 x 4,096 bytes fewer at the peak.
TEST(MemoryTest, RecomputedModulesAreRebuiltOneLayerAtATime) {
  const Model m = Preset("llama3-8b");
  MemoryConfig c;
  c.parallel.dp = 8;
  c.seq_len = 4096;
  c.global_batch = 8;
  c.fused_attention = true;
  c.recompute = Recompute::kSelective;
  auto attn = EstimateMemory(m, c);
  c.recompute_modules = {model::kRecomputeCoreAttn | model::kRecomputeMlp};
  auto mlp = EstimateMemory(m, c);
  ASSERT_TRUE(attn.ok() && mlp.ok());
  ASSERT_EQ(attn->worst().peak_chunks, 1);
  EXPECT_EQ(attn->worst().activations_bytes - mlp->worst().activations_bytes, 31.0 * 94208 * 4096);
}

TEST(MemoryTest, FitsAgainstUsableMemory) {
  const Model m = Preset("tiny");
  MemoryConfig c;
  MemoryReport r = Estimate(m, c);
  const double total = r.worst().total_bytes;
  c.reserve_bytes = 1000;
  c.hbm_bytes = total + 1000;  // exactly the usable amount
  r = Estimate(m, c);
  EXPECT_TRUE(r.fits);
  EXPECT_DOUBLE_EQ(r.usable_bytes, total);
  c.hbm_bytes = total + 999;
  EXPECT_FALSE(Estimate(m, c).fits);
}

TEST(MemoryTest, WorstRankIsTheLargest) {
  const Model m = Preset("gpt3-175b");
  MemoryConfig c;
  c.parallel.tp = 8;
  c.parallel.pp = 8;
  c.parallel.dp = 8;
  c.parallel.sequence_parallel = true;
  c.recompute = Recompute::kSelective;
  c.global_batch = 512;
  const MemoryReport r = Estimate(m, c);
  for (const auto& rank : r.ranks) EXPECT_LE(rank.total_bytes, r.worst().total_bytes);
  EXPECT_EQ(r.worst_rank, 0);  // 1F1B: the first stage holds p microbatches and the embedding
  EXPECT_EQ(r.microbatches, 64);
}

TEST(MemoryTest, LayoutErrorsNameValueAndRule) {
  auto err = [](const char* model, MemoryConfig c) {
    auto r = EstimateMemory(Preset(model), c);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.ok() ? std::string() : r.status().message();
  };
  MemoryConfig c;
  c.parallel.tp = 64;
  EXPECT_EQ(err("llama2-7b", c), "--tp 64: larger than the 32 attention heads of llama2-7b");
  c.parallel.tp = 3;
  EXPECT_EQ(err("llama2-7b", c), "--tp 3: does not divide the 32 attention heads of llama2-7b");
  c.parallel.tp = 16;
  EXPECT_EQ(
      err("llama3-8b", c),
      "--tp 16: larger than the 8 KV heads of llama3-8b (each TP rank needs whole KV groups)");
  c = {};
  c.parallel.pp = 3;
  EXPECT_EQ(err("llama2-7b", c),
            "--pp 3 --vpp 1: the 32 layers of llama2-7b do not split evenly into pp*vpp = 3 chunks "
            "(uneven stages: --first-stage-layers and --last-stage-layers, or --embedding-in-split "
            "and --loss-in-split)");
  c = {};
  c.parallel.ep = 2;
  c.parallel.dp = 2;
  EXPECT_EQ(err("llama2-7b", c), "--ep 2: llama2-7b has no experts; use --ep 1");
  c.parallel.ep = 4;
  EXPECT_EQ(err("mixtral-8x7b", c),
            "--ep 4: must divide dp*cp = 2 (expert-parallel ranks are drawn from the data- "
            "and context-parallel ranks)");
  c = {};
  c.parallel.zero_stage = 4;
  EXPECT_EQ(err("tiny", c), "--zero 4: must be between 0 and 3");
  c = {};
  c.parallel.dp = 4;
  c.global_batch = 6;
  EXPECT_EQ(err("tiny", c),
            "--global-batch 6: must be a positive multiple of micro-batch x dp = 4");
  c = {};
  c.parallel.cp = 3;
  EXPECT_EQ(err("tiny", c),
            "--cp 3: the sequence length 128 does not split into 2 x cp = 6 load-balanced chunks "
            "(Megatron-LM and torchtitan need a multiple of 2 x cp)");
  // cp 128 divides 128 tokens but leaves no pair of chunks per rank.
  c.parallel.cp = 128;
  EXPECT_NE(err("tiny", c).find("2 x cp = 256 load-balanced chunks"), std::string::npos);
  c = {};
  c.parallel.pp = 2;
  c.global_batch = 1;
  const std::string msg = err("tiny", c);
  EXPECT_NE(msg.find("--schedule 1f1b with 1 microbatches"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs at least as many microbatches as pipeline ranks"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace infralens::plan
