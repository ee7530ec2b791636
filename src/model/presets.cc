#include "model/presets.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace infralens::model {

namespace {

// What every family sets: `layers` blocks of width `hidden` with an MLP of `ffn`, `heads` query
// heads of hidden / heads and `kv_heads` key/value heads, a vocabulary of `vocab`, sequences of
// `seq` tokens.
Model Decoder(std::string name, std::string source, int64_t layers, int64_t hidden, int64_t ffn,
              int64_t heads, int64_t kv_heads, int64_t vocab, int64_t seq) {
  Model m;
  m.name = std::move(name);
  m.source = std::move(source);
  m.num_layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = ffn;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.vocab = vocab;
  m.seq_len = seq;
  return m;
}

// GPT-2/GPT-3 and Megatron-LM's GPT: LayerNorm, biases on every projection, a two-matrix GeLU
// MLP of 4h, learned position embeddings, output layer tied to the input embedding.
Model Gpt(std::string name, std::string source, int64_t layers, int64_t hidden, int64_t heads,
          int64_t vocab, int64_t seq) {
  Model m = Decoder(std::move(name), std::move(source), layers, hidden, 4 * hidden, heads, heads,
                    vocab, seq);
  m.tied_embeddings = true;
  m.gated_mlp = false;
  m.learned_positions = seq;
  m.layernorm = true;
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  // GPT-2/3 train with dropout 0.1 (Radford et al. 2019 follows GPT-1's 0.1 residual, embedding
  // and attention dropout); Megatron-LM's defaults are the same (--attention-dropout 0.1,
  // --hidden-dropout 0.1, megatron/training/arguments.py).
  m.attention_dropout = 0.1;
  m.hidden_dropout = 0.1;
  return m;
}

// Llama family: RMSNorm, no biases, SwiGLU MLP, rotary positions, untied output layer.
Model Llama(std::string name, std::string source, int64_t layers, int64_t hidden, int64_t ffn,
            int64_t heads, int64_t kv_heads, int64_t vocab, int64_t seq) {
  Model m =
      Decoder(std::move(name), std::move(source), layers, hidden, ffn, heads, kv_heads, vocab, seq);
  m.tied_embeddings = false;
  m.gated_mlp = true;
  // Llama 2's rotary base (meta-llama/Llama-2-*-hf config.json rope_theta 10000); presets with
  // another base set it below. Llama, Mixtral and DeepSeek configs set attention_dropout 0 and
  // have no hidden dropout.
  m.rope_theta = 10000;
  return m;
}

Model WithRopeTheta(Model m, double theta) {
  m.rope_theta = theta;
  return m;
}

// Llama 3 (Dubey et al. 2024, Table 3, and the `repo` config.json): 8 KV heads, vocab_size
// 128256, pre-training sequence 8192, rope_theta 500000.
Model Llama3(std::string name, std::string_view repo, int64_t layers, int64_t hidden, int64_t ffn,
             int64_t heads) {
  return WithRopeTheta(
      Llama(std::move(name),
            fmt::format("Dubey et al. 2024 (Llama 3) Table 3; {} config.json", repo), layers,
            hidden, ffn, heads, 8, 128256, 8192),
      500000);
}

// A mixture of experts in every MoE layer: `experts` routed experts with an FFN of `expert_ffn`,
// `top_k` of them per token.
Model WithExperts(Model m, int64_t experts, int64_t top_k, int64_t expert_ffn) {
  m.num_experts = experts;
  m.top_k = top_k;
  m.expert_ffn_hidden = expert_ffn;
  return m;
}

// Qwen3's MoE models (Qwen/Qwen3-*-A*B config.json): head_dim 128 whatever the hidden size,
// 4 KV heads, vocab_size 151936, untied, rope_theta 1000000, every layer MoE (decoder_sparse_step
// 1, mlp_only_layers []) with 128 experts of `expert_ffn`, 8 per token, no shared expert.
// `ffn` is config.json's intermediate_size, which belongs to no layer.
Model Qwen3Moe(std::string name, std::string source, int64_t layers, int64_t hidden, int64_t ffn,
               int64_t heads, int64_t expert_ffn) {
  Model m = WithExperts(
      Llama(std::move(name), std::move(source), layers, hidden, ffn, heads, 4, 151936, 4096), 128,
      8, expert_ffn);
  m.head_dim = 128;
  m.rope_theta = 1e6;
  return m;
}

// Narayanan et al. SC21 ("Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM"), Table 1: GPT models with vocabulary 51,200 and sequence length 2,048 (sec. 5.1);
// the same rows are in /work/shared/data/published/calibration.csv. Named by the table's
// parameter counts; the 1008.0B row is the "1 trillion" model.
constexpr const char* kSc21 = "Narayanan et al. SC21, Table 1 (vocab 51200, seq 2048)";

std::vector<ModelPreset> BuildPresets() {
  std::vector<ModelPreset> p;
  // Two layers small enough to count by hand: the unit tests' and the CLI examples' model.
  {
    Model m = Llama("tiny", "InfraLens test model, hand-countable", 2, 64, 256, 4, 2, 256, 128);
    p.push_back({m, {"tiny-test", "test"}});
  }
  // Brown et al. 2020 ("Language Models are Few-Shot Learners") Table 2.1: GPT-3 175B has
  // 96 layers, d_model 12288, 96 heads of 128, n_ctx 2048; the GPT-2 architecture and BPE
  // vocabulary of 50,257 (Radford et al. 2019, sec. 2.2-2.3).
  p.push_back({Gpt("gpt3-175b", "Brown et al. 2020, Table 2.1 (GPT-3 175B); GPT-2 vocab 50257", 96,
                   12288, 96, 50257, 2048),
               {"gpt-3", "gpt-175b"}});
  p.push_back({Gpt("gpt-1.7b", kSc21, 24, 2304, 24, 51200, 2048), {"megatron-gpt-1.7b"}});
  p.push_back({Gpt("gpt-3.6b", kSc21, 30, 3072, 32, 51200, 2048), {"megatron-gpt-3.6b"}});
  p.push_back({Gpt("gpt-7.5b", kSc21, 36, 4096, 32, 51200, 2048), {"megatron-gpt-7.5b"}});
  p.push_back({Gpt("gpt-18.4b", kSc21, 40, 6144, 48, 51200, 2048), {"megatron-gpt-18.4b"}});
  p.push_back({Gpt("gpt-39.1b", kSc21, 48, 8192, 64, 51200, 2048), {"megatron-gpt-39.1b"}});
  p.push_back({Gpt("gpt-76.1b", kSc21, 60, 10240, 80, 51200, 2048), {"megatron-gpt-76.1b"}});
  p.push_back({Gpt("gpt-145.6b", kSc21, 80, 12288, 96, 51200, 2048), {"megatron-gpt-145.6b"}});
  p.push_back({Gpt("gpt-310.1b", kSc21, 96, 16384, 128, 51200, 2048), {"megatron-gpt-310.1b"}});
  p.push_back({Gpt("gpt-529.6b", kSc21, 105, 20480, 128, 51200, 2048), {"megatron-gpt-529.6b"}});
  p.push_back({Gpt("gpt-1t", kSc21, 128, 25600, 160, 51200, 2048),
               {"gpt-1008.0b", "gpt-1008b", "megatron-gpt-1t"}});
  // Touvron et al. 2023 ("Llama 2") Table 1: context 4096, GQA in 70B; shapes from the
  // meta-llama/Llama-2-{7b,13b,70b}-hf config.json files (vocab 32000, untied).
  p.push_back(
      {Llama("llama2-7b", "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-7b-hf config.json", 32,
             4096, 11008, 32, 32, 32000, 4096),
       {"llama-2-7b-hf"}});
  p.push_back(
      {Llama("llama2-13b", "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-13b-hf config.json",
             40, 5120, 13824, 40, 40, 32000, 4096),
       {"llama-2-13b-hf"}});
  p.push_back(
      {Llama("llama2-70b", "Touvron et al. 2023 (Llama 2); meta-llama/Llama-2-70b-hf config.json",
             80, 8192, 28672, 64, 8, 32000, 4096),
       {"llama-2-70b-hf"}});
  // Dubey et al. 2024 ("The Llama 3 Herd of Models") Table 3: layers, model and FFN dimensions,
  // 8 KV heads, pre-training sequence 8192; vocab_size 128256 from the meta-llama/Meta-Llama-3-8B,
  // Meta-Llama-3-70B and Llama-3.1-405B config.json files (untied).
  // rope_theta 500000 in all three config.json files.
  p.push_back({Llama3("llama3-8b", "meta-llama/Meta-Llama-3-8B", 32, 4096, 14336, 32),
               {"meta-llama-3-8b", "llama3.1-8b"}});
  p.push_back({Llama3("llama3-70b", "meta-llama/Meta-Llama-3-70B", 80, 8192, 28672, 64),
               {"meta-llama-3-70b", "llama3.1-70b"}});
  p.push_back({Llama3("llama3-405b", "meta-llama/Llama-3.1-405B", 126, 16384, 53248, 128),
               {"llama3.1-405b", "meta-llama-3.1-405b"}});
  // Llama 3.1's RoPE scaling (meta-llama/Llama-3.1-405B config.json rope_scaling: rope_type
  // "llama3", factor 8.0, low_freq_factor 1.0, high_freq_factor 4.0,
  // original_max_position_embeddings 8192).
  {
    Model& m = p.back().model;
    m.rope_scaling = "llama3";
    m.rope_factor = 8;
    m.rope_low_freq_factor = 1;
    m.rope_high_freq_factor = 4;
    m.rope_original_context = 8192;
  }
  // Jiang et al. 2024 ("Mixtral of Experts") Table 1: dim 4096, 32 layers, head_dim 128,
  // hidden_dim 14336, 32 heads, 8 KV heads, context 32768, vocab 32000, 8 experts, top-2;
  // mistralai/Mixtral-8x7B-v0.1 config.json (num_local_experts 8, num_experts_per_tok 2, untied,
  // rope_theta 1000000).
  p.push_back(
      {WithRopeTheta(
           WithExperts(Llama("mixtral-8x7b",
                             "Jiang et al. 2024 (Mixtral) Table 1; mistralai/Mixtral-8x7B-v0.1 "
                             "config.json",
                             32, 4096, 14336, 32, 8, 32000, 32768),
                       8, 2, 14336),
           1e6),
       {"mixtral-8x7b-v0.1", "mixtral"}});
  // DeepSeek-AI 2024 ("DeepSeek-V3 Technical Report") sec. 4.2: 61 layers, hidden 7168, 128 heads,
  // MLA with KV compression 512, query compression 1536, per-head 128 + decoupled RoPE 64; every
  // FFN but the first three is MoE with 1 shared and 256 routed experts of 2048, 8 routed per
  // token; pre-training sequence 4K. deepseek-ai/DeepSeek-V3 config.json: vocab_size 129280,
  // intermediate_size 18432 (the 3 dense layers), v_head_dim 128, untied, noaux_tc routing with
  // e_score_correction_bias. The multi-token-prediction module (num_nextn_predict_layers) is not
  // counted, as the paper's 671B does not count it.
  {
    Model m = Llama("deepseek-v3",
                    "DeepSeek-AI 2024 (DeepSeek-V3) sec. 4.2; deepseek-ai/DeepSeek-V3 config.json",
                    61, 7168, 18432, 128, 128, 129280, 4096);
    m.head_dim = 128;
    m.rope_theta = 10000;  // DeepSeek-V3 config.json rope_theta 10000 (YaRN is applied later)
    m.q_lora_rank = 1536;
    m.kv_lora_rank = 512;
    m.qk_nope_head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    m.num_experts = 256;
    m.top_k = 8;
    m.expert_ffn_hidden = 2048;
    m.num_shared_experts = 1;
    m.shared_expert_ffn_hidden = 2048;
    m.first_dense_layers = 3;
    m.router_bias = true;
    // config.json: rms_norm_eps 1e-6; scoring_func "sigmoid", routed_scaling_factor 2.5,
    // n_group 8, topk_group 4 (node-limited routing, sec. 2.1.2 of the report).
    m.norm_eps = 1e-6;
    m.router_sigmoid = true;
    m.router_scale = 2.5;
    m.router_groups = 8;
    m.router_group_topk = 4;
    p.push_back({m, {"deepseek-v3-base", "deepseek-ai/deepseek-v3"}});
  }
  // Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden_size 2048, 32 query heads (the query width
  // 32 x 128 = 4096 exceeds the hidden size), intermediate_size 6144, moe_intermediate_size 768.
  p.push_back({Qwen3Moe("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B config.json", 48, 2048, 6144, 32, 768),
               {"qwen/qwen3-30b-a3b"}});
  // Qwen/Qwen3-235B-A22B config.json: 94 layers, hidden_size 4096, 64 query heads,
  // intermediate_size 12288, moe_intermediate_size 1536.
  p.push_back(
      {Qwen3Moe("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B config.json", 94, 4096, 12288, 64, 1536),
       {"qwen/qwen3-235b-a22b"}});
  // openai/gpt-oss-120b config.json: 36 layers, hidden_size 2880, 64 query heads and 8 KV heads
  // of head_dim 64, attention_bias true, 128 local experts of intermediate_size 2880, 4 per token
  // (SwiGLU with biases), vocab_size 201088, untied, rope_theta 150000. Its layer_types alternate
  // sliding_attention (sliding_window 128) and full_attention, the first layer windowed: as
  // NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py runs it,
  // window_size (128, 0) and window_attn_skip_freq 2.
  {
    Model m = WithExperts(Llama("gpt-oss-120b", "openai/gpt-oss-120b config.json", 36, 2880, 2880,
                                64, 8, 201088, 4096),
                          128, 4, 2880);
    m.head_dim = 64;
    m.sliding_window = 128;
    m.sliding_window_full_every = 2;
    m.rope_theta = 150000;
    m.qkv_bias = true;  // attention_bias (the output projection's bias, h per layer, is left out:
                        // Megatron's --add-bias-linear would put biases on the experts too)
    p.push_back({m, {"openai/gpt-oss-120b", "gpt-oss"}});
  }
  // xai-org/grok-1 run.py (LanguageModelConfig and TransformerConfig): 64 layers, emb_size
  // 48 x 128 = 6144, 48 query heads and 8 KV heads of key_size 128, 8 experts, 2 per token,
  // widening_factor 8 (ffn_size: int(8 x 6144) x 2 / 3 = 32768), a gated GeLU MLP (three
  // matrices, counted as SwiGLU's), vocab_size 128 x 1024 = 131072, sequence_len 8192, RoPE.
  p.push_back(
      {WithExperts(Llama("grok-1", "xai-org/grok-1 run.py", 64, 6144, 32768, 48, 8, 131072, 8192),
                   8, 2, 32768),
       {"xai-org/grok-1", "grok-1-314b"}});
  return p;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const auto* const kPresets = new std::vector<ModelPreset>(BuildPresets());
  return *kPresets;
}

StatusOr<Model> FindPreset(std::string_view name) {
  const std::string key = AlnumKey(name);
  std::vector<std::string> names;
  for (const auto& p : ModelPresets()) {
    if (KeyNames(key, p.model.name, p.aliases)) return p.model;
    names.push_back(p.model.name);
  }
  return InvalidArgument(
      fmt::format("unknown model '{}': not a preset or a config.json path{} (presets: {})", name,
                  DidYouMean(key, names), Join(names, ", ")));
}

}  // namespace infralens::model
