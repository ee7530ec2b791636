// config.json import: real configs (the fuzz seeds under fuzz/corpus/hf_config are copies of the
// published files' fields) give the parameter counts the papers state; bad files give one-line
// errors naming the field.
#include "io/hf_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "golden_test_util.h"
#include "model/presets.h"

namespace infralens::io {
namespace {

std::string Seed(const std::string& name) {
  return testing::ReadSource("fuzz/corpus/hf_config/" + name);
}

model::Model Parse(const std::string& seed) {
  auto m = ParseHfConfig(Seed(seed), seed);
  EXPECT_TRUE(m.ok()) << seed << ": " << m.status().message();
  return m.ok() ? *m : model::Model{};
}

int64_t Total(const model::Model& m) { return model::CountParameters(m).total; }

TEST(HfConfigTest, LlamaConfigsMatchThePresets) {
  const model::Model l2 = Parse("llama2_7b.json");
  EXPECT_EQ(Total(l2), 6'738'415'616);
  EXPECT_TRUE(l2.gated_mlp);
  EXPECT_FALSE(l2.tied_embeddings);
  EXPECT_EQ(l2.seq_len, 4096);
  EXPECT_EQ(l2.head_dim, 128);
  EXPECT_EQ(Total(Parse("llama3_8b.json")), 8'030'261'248);
}

// The facts an export needs: the rotary base and dropout, as the published config.json files say
// (Llama 3 8B rope_theta 500000.0, Mixtral 1000000.0, DeepSeek-V3 10000; GPT-2 attn_pdrop and
// resid_pdrop 0.1, learned positions so no rotary base).
TEST(HfConfigTest, RotaryBaseAndDropout) {
  const model::Model l3 = Parse("llama3_8b.json");
  EXPECT_EQ(l3.rope_theta, 500000);
  EXPECT_EQ(l3.attention_dropout, 0);
  EXPECT_EQ(l3.hidden_dropout, 0);
  EXPECT_EQ(Parse("mixtral_8x7b.json").rope_theta, 1e6);
  EXPECT_EQ(Parse("deepseek_v3.json").rope_theta, 10000);
  const model::Model gpt2 = Parse("gpt2.json");
  EXPECT_EQ(gpt2.rope_theta, 0);
  EXPECT_EQ(gpt2.attention_dropout, 0.1);
  EXPECT_EQ(gpt2.hidden_dropout, 0.1);
  // Each preset agrees with its own config.json.
  EXPECT_EQ(l3.rope_theta, model::FindPreset("llama3-8b")->rope_theta);
  auto bad = ParseHfConfig(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 256, "max_position_embeddings": 128, "intermediate_size": 256,
      "model_type": "llama", "attention_dropout": 1.5})",
                           "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("attention_dropout"), std::string::npos)
      << bad.status().message();
}

TEST(HfConfigTest, Mixtral) {
  const model::Model m = Parse("mixtral_8x7b.json");
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.expert_ffn_hidden, 14336);
  EXPECT_EQ(Total(m), 46'702'792'704);  // see model_test.cc for the hand count
  EXPECT_EQ(model::CountParameters(m).active, 12'879'925'248);
}

TEST(HfConfigTest, DeepSeekV3MatchesThePreset) {
  const model::Model m = Parse("deepseek_v3.json");
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.num_shared_experts, 1);
  EXPECT_TRUE(m.router_bias);
  EXPECT_EQ(Total(m), 671'026'419'200);
  EXPECT_EQ(Total(m), Total(*model::FindPreset("deepseek-v3")));
}

TEST(HfConfigTest, QwenMoeA2_7B) {
  // Qwen1.5-MoE-A2.7B, by hand: attention 4 x 2048^2 + q, k, v biases 3 x 2048 = 16,783,360;
  // 60 experts of 3 x 2048 x 1408 = 8,650,752; one shared expert 3 x 2048 x 5632 = 34,603,008 and
  // its gate 2048; router 60 x 2048 = 122,880; norms 4,096 -> 570,560,512 per layer, x 24 =
  // 13,693,452,288; embeddings 2 x 151936 x 2048 = 622,329,856; final norm 2,048.
  const model::Model m = Parse("qwen1.5_moe_a2.7b.json");
  const model::ParamCounts c = model::CountParameters(m);
  EXPECT_EQ(c.per_moe_layer, 570'560'512);
  EXPECT_EQ(c.total, 14'315'784'192);  // "14.3B"
  // Active: 4 of 60 experts: 16,783,360 + 4 x 8,650,752 + 34,603,008 + 2,048 + 122,880 + 4,096 =
  // 86,118,400 per layer -> 2,066,841,600 + 622,331,904 = 2,689,173,504 ("A2.7B").
  EXPECT_EQ(c.active, 2'689'173'504);
}

TEST(HfConfigTest, Gpt2Small124M) {
  // 12 layers of 12 h^2 + 13 h (h = 768) = 85,054,464; tied token table and learned positions
  // (50257 + 1024) x 768 = 39,383,808; final LayerNorm 1,536: GPT-2 small's 124,439,808.
  const model::Model m = Parse("gpt2.json");
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.ffn_hidden, 4 * 768);
  EXPECT_EQ(Total(m), 124'439'808);
}

// The default sequence is the context limit capped at kDefaultHfTrainingSeq (hf_config.h), and
// the model's source says when the cap applied; position tables keep the full limit.
TEST(HfConfigTest, DefaultSequenceIsTheContextLimitCapped) {
  // Qwen2-7B's config.json: max_position_embeddings 131072, a context limit.
  const std::string qwen2 = R"({"model_type": "qwen2", "num_hidden_layers": 28,
      "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
      "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
      "sliding_window": 131072, "use_sliding_window": false, "tie_word_embeddings": false})";
  auto q = ParseHfConfig(qwen2, "qwen2.json");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->seq_len, 4096);
  EXPECT_NE(q->source.find("sequence 4096 by default (its context limit 131072 capped at 4096"),
            std::string::npos)
      << q->source;
  // Qwen3-8B: 40960 capped alike; Llama 2's 4096 is the limit itself, and GPT-2's 1024 is below
  // the cap: taken as they are, and the source states no cap.
  EXPECT_EQ(Parse("qwen3_8b.json").seq_len, 4096);
  const model::Model l2 = Parse("llama2_7b.json");
  EXPECT_EQ(l2.seq_len, 4096);
  EXPECT_EQ(l2.source.find("capped"), std::string::npos);
  const model::Model gpt2 = Parse("gpt2.json");
  EXPECT_EQ(gpt2.seq_len, 1024);
  EXPECT_EQ(gpt2.source.find("capped"), std::string::npos);
  // A learned position table has a row per position of the context, whatever the sequence.
  const std::string gpt2_long = R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64,
      "n_head": 4, "vocab_size": 256, "n_positions": 8192})";
  auto g = ParseHfConfig(gpt2_long, "gpt2_long.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->seq_len, 4096);
  EXPECT_EQ(g->learned_positions, 8192);
  // A sliding window is read against the context (Mistral 7B v0.1: 4096 of 32768), not the cap.
  EXPECT_EQ(Parse("mistral_7b_v0.1.json").sliding_window, 4096);
}

TEST(HfConfigTest, TextConfigOfVisionLanguageModels) {
  const model::Model m = Parse("text_config.json");
  EXPECT_EQ(m.num_layers, 2);
  EXPECT_TRUE(m.tied_embeddings);  // PretrainedConfig's default when the field is absent
}

TEST(HfConfigTest, GatingEvidenceOrder) {
  const std::string base = R"("num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256,
      "num_attention_heads": 4, "vocab_size": 256, "max_position_embeddings": 128)";
  auto gated = [&](const std::string& extra) {
    auto m = ParseHfConfig("{" + base + extra + "}", "c.json");
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() && m->gated_mlp;
  };
  EXPECT_FALSE(gated(""));                             // nothing says gated
  EXPECT_TRUE(gated(R"(, "model_type": "mistral")"));  // by family
  EXPECT_TRUE(
      gated(R"(, "model_type": "gemma", "hidden_act": "gelu_pytorch_tanh")"));  // GeGLU family
  EXPECT_FALSE(gated(R"(, "model_type": "gpt_neox", "hidden_act": "gelu")"));
  EXPECT_TRUE(gated(R"(, "model_type": "gpt_neox", "hidden_act": "swiglu")"));  // a GLU act wins
  EXPECT_TRUE(gated(R"(, "hidden_act": "silu")"));                        // unknown family + SiLU
  EXPECT_FALSE(gated(R"(, "model_type": "llama", "gated_mlp": false)"));  // the explicit field wins
}

TEST(HfConfigTest, ErrorsNameTheFieldOnOneLine) {
  auto err = [](const std::string& text) {
    auto m = ParseHfConfig(text, "cfg.json");
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(m.status().message().find('\n'), std::string::npos) << m.status().message();
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_EQ(err(R"({"num_hidden_layers": 2})"), "cfg.json: missing required field 'hidden_size'");
  EXPECT_EQ(err(Seed("bad_type.json")), "cfg.json: hidden_size is \"64\": expected an integer");
  EXPECT_EQ(err(R"({"num_hidden_layers": -2})"),
            "cfg.json: num_hidden_layers -2: must be at least 1");
  EXPECT_EQ(err(R"({"num_hidden_layers": 2.5})"),
            "cfg.json: num_hidden_layers is 2.5: expected an integer");
  EXPECT_NE(err(Seed("truncated.json")).find("cfg.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(err("[1, 2]"), "cfg.json: expected a JSON object at the top level");
  EXPECT_EQ(err(std::string(100, '[') + std::string(100, ']')),
            "cfg.json: JSON nested deeper than 64 levels");
  std::string mixtral = Seed("mixtral_8x7b.json");
  mixtral.replace(mixtral.find("\"num_experts_per_tok\""), 4, "\"xxx");
  EXPECT_EQ(err(mixtral), "cfg.json: missing required field 'num_experts_per_tok'");
  std::string qwen = Seed("qwen1.5_moe_a2.7b.json");
  qwen.replace(qwen.find("\"decoder_sparse_step\": 1"), 24, "\"mlp_only_layers\": [0]");
  EXPECT_EQ(err(qwen), "cfg.json: mlp_only_layers: only an empty list is supported");
  std::string deepseek = Seed("deepseek_v3.json");
  deepseek.replace(deepseek.find("\"v_head_dim\""), 12, "\"v_head_xxx\"");
  EXPECT_EQ(err(deepseek), "cfg.json: missing required field 'v_head_dim'");
  // Heads that do not split into KV groups are caught by the model's own validation.
  EXPECT_NE(
      err(R"({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
      "num_key_value_heads": 3, "vocab_size": 256, "max_position_embeddings": 128})")
          .find("not a multiple of the 3 KV heads"),
      std::string::npos);
}

TEST(HfConfigTest, SizeLimit) {
  const std::string big(kMaxHfConfigBytes + 1, ' ');
  auto m = ParseHfConfig(big, "big.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("larger than the limit"), std::string::npos);
}

TEST(HfConfigTest, MissingFile) {
  auto m = ReadHfConfigFile("/nonexistent/dir/config.json");
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

// The fields that change the model's export (issue 22), as the published config.json files give
// them (seeds under fuzz/corpus/hf_config): norm epsilon, RoPE scaling, qk-norm, routing, window.
TEST(HfConfigTest, FieldsThatChangeTheExport) {
  const model::Model ds = Parse("deepseek_v3.json");
  EXPECT_EQ(ds.norm_eps, 1e-6);
  EXPECT_TRUE(ds.router_sigmoid);
  EXPECT_EQ(ds.router_scale, 2.5);
  EXPECT_EQ(ds.router_groups, 8);
  EXPECT_EQ(ds.router_group_topk, 4);
  EXPECT_EQ(ds.rope_scaling, "yarn");
  EXPECT_EQ(ds.rope_factor, 40);
  EXPECT_EQ(ds.rope_original_context, 4096);
  // The preset's routing is the config's.
  const model::Model preset = *model::FindPreset("deepseek-v3");
  EXPECT_EQ(preset.router_sigmoid, ds.router_sigmoid);
  EXPECT_EQ(preset.router_scale, ds.router_scale);
  EXPECT_EQ(preset.router_groups, ds.router_groups);
  EXPECT_EQ(preset.norm_eps, ds.norm_eps);

  const model::Model l31 = Parse("llama3.1_405b.json");
  EXPECT_EQ(l31.rope_scaling, "llama3");
  EXPECT_EQ(l31.rope_factor, 8);
  EXPECT_EQ(l31.rope_low_freq_factor, 1);
  EXPECT_EQ(l31.rope_high_freq_factor, 4);
  EXPECT_EQ(l31.rope_original_context, 8192);
  EXPECT_EQ(l31.norm_eps, 1e-5);
  EXPECT_EQ(model::FindPreset("llama3-405b")->rope_scaling, "llama3");
  EXPECT_EQ(Parse("llama3_8b.json").rope_scaling, "");  // "rope_scaling": null

  const model::Model q3 = Parse("qwen3_8b.json");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.norm_eps, 1e-6);
  EXPECT_EQ(q3.sliding_window, 0);  // use_sliding_window false
  EXPECT_FALSE(Parse("llama3_8b.json").qk_norm);

  EXPECT_EQ(Parse("mistral_7b_v0.1.json").sliding_window, 4096);
  EXPECT_EQ(Parse("mixtral_8x7b.json").sliding_window, 0);
}

// layer_types places the window (openai/gpt-oss-120b config.json: sliding_attention on layer_idx
// 0, 2, ..., full_attention on 1, 3, ...; Megatron-Core puts full attention where the 1-based
// layer number is a multiple of window_attn_skip_freq, so 2). Only "every layer windowed" and
// "every N-th layer full" are patterns the planner has: another is refused, naming the layers.
TEST(HfConfigTest, LayerTypesPlaceTheWindow) {
  const model::Model oss = Parse("gpt_oss_120b.json");
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(oss.sliding_window_full_every, 2);
  EXPECT_EQ(oss.num_experts, 128);
  EXPECT_EQ(oss.top_k, 4);
  EXPECT_EQ(oss.head_dim, 64);
  const auto parse = [](const std::vector<const char*>& types) {
    std::string list;
    for (const char* t : types) list += std::string(list.empty() ? "" : ", ") + '"' + t + '"';
    return ParseHfConfig(
        R"({"num_hidden_layers": )" + std::to_string(types.size()) +
            R"(, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
            "vocab_size": 256, "max_position_embeddings": 4096, "sliding_window": 512,
            "layer_types": [)" +
            list + "]}",
        "c.json");
  };
  constexpr const char* kS = "sliding_attention";
  constexpr const char* kF = "full_attention";
  auto gemma3 = parse({kS, kS, kS, kS, kS, kF, kS, kS, kS, kS, kS, kF});  // 5 local : 1 global
  ASSERT_TRUE(gemma3.ok()) << gemma3.status().message();
  EXPECT_EQ(gemma3->sliding_window_full_every, 6);
  auto all_windowed = parse({kS, kS, kS});
  ASSERT_TRUE(all_windowed.ok());
  EXPECT_EQ(all_windowed->sliding_window, 512);
  EXPECT_EQ(all_windowed->sliding_window_full_every, 0);
  auto all_full = parse({kF, kF});
  ASSERT_TRUE(all_full.ok());
  EXPECT_EQ(all_full->sliding_window, 0);
  // The last full layer missing (layers 2 and 4 of 6, not 6): not every second layer.
  auto irregular = parse({kS, kF, kS, kF, kS, kS});
  ASSERT_FALSE(irregular.ok());
  EXPECT_EQ(irregular.status().message(),
            "c.json: layer_types has full attention on layers 2,4 (1-based): the planner models "
            "every layer windowed or every N-th layer full");
  auto odd = parse({kS, "chunked_attention"});
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(),
            "c.json: layer_types[1] is 'chunked_attention': expected 'sliding_attention' or "
            "'full_attention'");
  auto short_list = ParseHfConfig(R"({"num_hidden_layers": 3, "hidden_size": 64,
      "intermediate_size": 256, "num_attention_heads": 4, "vocab_size": 256,
      "max_position_embeddings": 4096, "sliding_window": 512, "layer_types": ["full_attention"]})",
                                  "c.json");
  ASSERT_FALSE(short_list.ok());
  EXPECT_EQ(short_list.status().message(),
            "c.json: layer_types lists 1 layers: expected one per layer (3)");
}

TEST(HfConfigTest, NamesTheKeysItDoesNotUse) {
  std::vector<std::string> unused;
  auto m = ParseHfConfig(Seed("qwen3_8b.json"), "q", &unused);
  ASSERT_TRUE(m.ok());
  // max_window_layers (layers using the window) is not modelled; bookkeeping (token ids, dtype,
  // transformers_version, use_cache, initializer_range) is not named.
  EXPECT_EQ(unused, std::vector<std::string>{"max_window_layers"});
  m = ParseHfConfig(Seed("llama3.1_405b.json"), "l", &unused);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(unused.empty()) << unused.front();
  m = ParseHfConfig(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
      "vocab_size": 256, "max_position_embeddings": 128, "intermediate_size": 256,
      "partial_rotary_factor": 0.5, "logit_softcapping": 30})",
                    "x", &unused);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(unused, (std::vector<std::string>{"logit_softcapping", "partial_rotary_factor"}));
  // Bad values of the new fields are one-line errors naming them.
  for (const char* bad :
       {R"("rms_norm_eps": 2)", R"("rope_scaling": {"rope_type": "llama3"})",
        R"("rope_scaling": {"rope_type": "longrope", "factor": 2})", R"("rope_scaling": 4)"}) {
    const std::string text = std::string(R"({"num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "vocab_size": 256, "max_position_embeddings": 128,
        "intermediate_size": 256, )") +
                             bad + "}";
    auto r = ParseHfConfig(text, "b.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace infralens::io
