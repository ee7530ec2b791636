// Reads a Hugging Face transformers config.json into a model::Model.
//
// Read fields (transformers' spellings; GPT-2's n_layer/n_embd/n_head/n_inner/n_positions too):
//   num_hidden_layers, hidden_size, intermediate_size, num_attention_heads, num_key_value_heads,
//   head_dim, vocab_size, tie_word_embeddings (default true, as PretrainedConfig),
//   max_position_embeddings (the context limit; the default sequence is it capped, see
//   kDefaultHfTrainingSeq), model_type, hidden_act, attention_bias, qkv_bias, mlp_bias;
//   Mixtral: num_local_experts, num_experts_per_tok; Qwen-MoE: num_experts, num_experts_per_tok,
//     moe_intermediate_size, shared_expert_intermediate_size, decoder_sparse_step,
//     mlp_only_layers (only empty);
//   DeepSeek-V2/V3: n_routed_experts, n_shared_experts, moe_intermediate_size,
//   first_k_dense_replace,
//     moe_layer_freq, topk_method, q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
//     v_head_dim, scoring_func, routed_scaling_factor, n_group, topk_group, norm_topk_prob;
//   every family: rms_norm_eps (layer_norm_eps, layer_norm_epsilon), rope_scaling (llama3 with
//     its frequency factors, yarn, linear, dynamic), use_qk_norm (Qwen3: always),
//     sliding_window with use_sliding_window.
// A vision-language config whose text model sits under "text_config" is read from there.
// Fields not read are listed to the caller (see `unused` below), never an error. Gated MLP: an
// explicit "gated_mlp" boolean wins, then a hidden_act naming a GLU (swiglu, geglu, ...), then
// model_type (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2,
// deepseek_v3, gemma, gemma2, phi3, olmo, olmo2 are gated; gpt2, gpt_neox, opt, bloom, falcon,
// gptj, starcoder2, phi are not), then hidden_act "silu" (gated). Errors are one line,
// InvalidArgument, naming the file and the field.
#ifndef INFRALENS_IO_HF_CONFIG_H_
#define INFRALENS_IO_HF_CONFIG_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace infralens::io {

// Config files are a few kilobytes; anything over this is refused before parsing.
inline constexpr size_t kMaxHfConfigBytes = size_t{16} << 20;
// JSON nested deeper than this is refused before parsing (configs nest two or three levels).
inline constexpr int kMaxHfConfigDepth = 64;

// A config.json states its context limit (max_position_embeddings, n_positions or seq_length:
// 131,072 for Qwen2 and Llama 3.1), the longest input the model takes, not the sequence it is
// trained at. The default sequence of an imported model is that limit capped at this length: the
// pre-training sequence of Llama 2 (Touvron et al. 2023, sec. 2.2), of DeepSeek-V3 (DeepSeek-AI
// 2024, sec. 4.2: 4K) and of Qwen2 before its last, long-context phase (Yang et al. 2024, "Qwen2
// Technical Report", sec. 3.2: 4,096, then 32,768), and what the presets without a published
// training length use (model/presets.cc). When the cap applies the model's `source` says so;
// --seq overrides it in every command.
inline constexpr int64_t kDefaultHfTrainingSeq = 4096;

// Parses config.json text. `name` becomes the model's name and prefixes every error message.
// `unused` (optional) receives the keys of the model's object that the reader did not use,
// leaving out bookkeeping that changes no estimate or export (token ids, dtype, architectures,
// transformers_version, use_cache, initializer_range, ...): a caller shows them as a note.
StatusOr<model::Model> ParseHfConfig(std::string_view text, std::string_view name,
                                     std::vector<std::string>* unused = nullptr);

// Reads and parses a file (NotFound when it cannot be opened; the size limit above applies).
StatusOr<model::Model> ReadHfConfigFile(const std::string& path,
                                        std::vector<std::string>* unused = nullptr);

}  // namespace infralens::io

#endif  // INFRALENS_IO_HF_CONFIG_H_
