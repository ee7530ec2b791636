// nlohmann-json is used here and nowhere else: the rest of the engine never sees a JSON DOM.
#include "io/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "base/read_file.h"
#include "base/strings.h"

namespace infralens::io {

namespace {

using nlohmann::json;

constexpr int64_t kMaxFieldValue = int64_t{1} << 40;

// Brackets outside strings, deepest nesting first: refused before nlohmann builds a DOM whose
// construction and destruction would recurse that deep.
int MaxDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// One printable line of at most 160 characters, whatever nlohmann put in its message.
std::string OneLine(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (out.size() >= 160) {
      out += "...";
      break;
    }
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  }
  return out;
}

class ConfigReader {
 public:
  ConfigReader(const json& obj, std::string name) : obj_(obj), name_(std::move(name)) {}

  // The first of `keys` present and not null.
  const json* Find(std::initializer_list<const char*> keys, const char** found = nullptr) const {
    for (const char* k : keys) {
      asked_.insert(k);
    }
    for (const char* k : keys) {
      auto it = obj_.find(k);
      if (it != obj_.end() && !it->is_null()) {
        if (found != nullptr) *found = k;
        return &*it;
      }
    }
    return nullptr;
  }

  // An integer field: nullopt when absent or null, an error when present but not an integer >= min.
  StatusOr<std::optional<int64_t>> Int(std::initializer_list<const char*> keys,
                                       int64_t min = 1) const {
    const char* key = nullptr;
    const json* v = Find(keys, &key);
    if (v == nullptr) return std::optional<int64_t>();
    int64_t value = 0;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Bad(key, *v, "an integer");
      value = static_cast<int64_t>(u);
    } else if (v->is_number_integer()) {
      value = v->get<int64_t>();
    } else {
      return Bad(key, *v, "an integer");
    }
    if (value < min) {
      return InvalidArgument(fmt::format("{}: {} {}: must be at least {}", name_, key, value, min));
    }
    // model::Validate applies each field's real range later; this bound only keeps the
    // arithmetic below (4h, seq + 2) far from overflow.
    if (value > kMaxFieldValue) {
      return InvalidArgument(
          fmt::format("{}: {} {}: must be at most {}", name_, key, value, kMaxFieldValue));
    }
    return std::optional<int64_t>(value);
  }

  StatusOr<int64_t> RequiredInt(std::initializer_list<const char*> keys) const {
    ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(keys));
    if (!v) return Missing(*keys.begin());
    return *v;
  }

  // A finite number field (integer or not): nullopt when absent or null.
  StatusOr<std::optional<double>> Number(std::initializer_list<const char*> keys) const {
    const char* key = nullptr;
    const json* v = Find(keys, &key);
    if (v == nullptr) return std::optional<double>();
    if (!v->is_number()) return Bad(key, *v, "a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) return Bad(key, *v, "a finite number");
    return std::optional<double>(d);
  }

  StatusOr<std::optional<bool>> Bool(const char* key) const {
    const json* v = Find({key});
    if (v == nullptr) return std::optional<bool>();
    if (!v->is_boolean()) return Bad(key, *v, "true or false");
    return std::optional<bool>(v->get<bool>());
  }

  StatusOr<std::string> String(const char* key) const {
    const json* v = Find({key});
    if (v == nullptr) return std::string();
    if (!v->is_string()) return Bad(key, *v, "a string");
    return v->get<std::string>();
  }

  // An array of strings: nullopt when absent or null, an error when anything else.
  StatusOr<std::optional<std::vector<std::string>>> Strings(const char* key) const {
    const json* v = Find({key});
    if (v == nullptr) return std::optional<std::vector<std::string>>();
    if (!v->is_array()) return Bad(key, *v, "an array of strings");
    std::vector<std::string> out;
    out.reserve(v->size());
    for (const json& e : *v) {
      if (!e.is_string()) return Bad(key, e, "a string in the array");
      out.push_back(e.get<std::string>());
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

  Status Missing(const char* key) const {
    return InvalidArgument(fmt::format("{}: missing required field '{}'", name_, key));
  }

  Status Bad(const char* key, const json& v, const char* expected) const {
    return InvalidArgument(fmt::format("{}: {} is {}: expected {}", name_, key,
                                       OneLine(v.dump()).substr(0, 40), expected));
  }

  const std::string& name() const { return name_; }

  // The object's keys that no Find asked about, in the file's (sorted) order.
  std::vector<std::string> Unused() const {
    std::vector<std::string> out;
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (!asked_.count(it.key())) out.push_back(it.key());
    }
    return out;
  }

 private:
  const json& obj_;
  std::string name_;
  mutable std::set<std::string> asked_;
};

bool In(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Decides whether the MLP is gated (three matrices); see the header for the order of evidence.
StatusOr<bool> GatedMlp(const ConfigReader& r, const std::string& model_type) {
  ASSIGN_OR_RETURN(std::optional<bool> explicit_gated, r.Bool("gated_mlp"));
  if (explicit_gated) return *explicit_gated;
  ASSIGN_OR_RETURN(std::string act, r.String("hidden_act"));
  if (act.empty()) {
    ASSIGN_OR_RETURN(act, r.String("hidden_activation"));  // Gemma's spelling
  }
  if (act.empty()) {
    ASSIGN_OR_RETURN(act, r.String("activation_function"));  // GPT-2's spelling
  }
  act = ToLower(act);
  if (act.size() >= 3 && act.substr(act.size() - 3) == "glu") return true;  // swiglu, geglu, reglu
  if (In(model_type, {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                      "deepseek_v2", "deepseek_v3", "gemma", "gemma2", "phi3", "olmo", "olmo2"})) {
    return true;
  }
  if (In(model_type, {"gpt2", "gpt_neox", "opt", "bloom", "falcon", "gptj", "starcoder2", "phi"}))
    return false;
  return act == "silu" || act == "swish";
}

// HF rope_scaling (transformers' rope_config_validation): {"rope_type" (or "type"): "llama3",
// "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}; "yarn",
// "linear", "dynamic" carry a factor (and yarn an original context). "default" is no scaling.
Status ReadRopeScaling(const ConfigReader& r, model::Model& m) {
  const json* rs = r.Find({"rope_scaling"});
  if (rs == nullptr) return Status::Ok();
  if (!rs->is_object()) return r.Bad("rope_scaling", *rs, "an object");
  ConfigReader sub(*rs, r.name() + ": rope_scaling");
  ASSIGN_OR_RETURN(std::string type, sub.String("rope_type"));
  if (type.empty()) {
    ASSIGN_OR_RETURN(type, sub.String("type"));
  }
  if (type.empty() || type == "default") return Status::Ok();
  if (!In(type, {"llama3", "yarn", "linear", "dynamic"})) {
    return InvalidArgument(fmt::format(
        "{}: rope_scaling type '{}': this reader knows llama3, yarn, linear and dynamic", r.name(),
        OneLine(type).substr(0, 40)));
  }
  m.rope_scaling = type;
  ASSIGN_OR_RETURN(std::optional<double> factor, sub.Number({"factor"}));
  if (!factor) return sub.Missing("factor");
  m.rope_factor = *factor;
  ASSIGN_OR_RETURN(std::optional<int64_t> original, sub.Int({"original_max_position_embeddings"}));
  m.rope_original_context = original.value_or(0);
  if (type == "llama3") {
    ASSIGN_OR_RETURN(std::optional<double> low, sub.Number({"low_freq_factor"}));
    ASSIGN_OR_RETURN(std::optional<double> high, sub.Number({"high_freq_factor"}));
    if (!low) return sub.Missing("low_freq_factor");
    if (!high) return sub.Missing("high_freq_factor");
    if (!original) return sub.Missing("original_max_position_embeddings");
    m.rope_low_freq_factor = *low;
    m.rope_high_freq_factor = *high;
  }
  return Status::Ok();
}

// Builds the model from a config.json's fields, family by family. The parts share what later
// ones depend on: the model type, the context limit and whether head_dim and the MLP width were
// given. Each part reads its keys in the order the errors are reported.
class HfModelBuilder {
 public:
  explicit HfModelBuilder(const ConfigReader& r) : r_(r) {}

  StatusOr<model::Model> Build() {
    m_.name = r_.name();
    ASSIGN_OR_RETURN(model_type_, r_.String("model_type"));
    m_.source = model_type_.empty() ? "Hugging Face config.json"
                                    : "Hugging Face config.json (" + model_type_ + ")";
    RETURN_IF_ERROR(ReadShape());
    RETURN_IF_ERROR(ReadContext());
    RETURN_IF_ERROR(ReadNormsAndBiases());
    RETURN_IF_ERROR(ReadRopeDropoutAndEps());
    RETURN_IF_ERROR(ReadAttentionVariants());
    RETURN_IF_ERROR(ReadExperts());
    RETURN_IF_ERROR(ReadLatentAttention());
    RETURN_IF_ERROR(model::Validate(m_));
    return m_;
  }

 private:
  // Layers, widths, heads, vocabulary and the MLP width.
  Status ReadShape() {
    ASSIGN_OR_RETURN(m_.num_layers, r_.RequiredInt({"num_hidden_layers", "n_layer", "num_layers"}));
    ASSIGN_OR_RETURN(m_.hidden, r_.RequiredInt({"hidden_size", "n_embd", "d_model"}));
    ASSIGN_OR_RETURN(m_.num_heads, r_.RequiredInt({"num_attention_heads", "n_head"}));
    ASSIGN_OR_RETURN(m_.vocab, r_.RequiredInt({"vocab_size"}));
    ASSIGN_OR_RETURN(std::optional<int64_t> kv, r_.Int({"num_key_value_heads", "num_kv_heads"}));
    m_.num_kv_heads = kv.value_or(m_.num_heads);
    ASSIGN_OR_RETURN(given_head_dim_, r_.Int({"head_dim"}));
    if (given_head_dim_) {
      m_.head_dim = *given_head_dim_;
    } else {
      m_.head_dim = m_.hidden / m_.num_heads;
    }

    // GPT-2 and BLOOM leave the MLP width out (n_inner null): 4h.
    four_h_default_ = In(model_type_, {"gpt2", "bloom"});
    ASSIGN_OR_RETURN(given_ffn_,
                     r_.Int({"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"}));
    if (given_ffn_) {
      m_.ffn_hidden = *given_ffn_;
    } else if (four_h_default_) {
      m_.ffn_hidden = 4 * m_.hidden;
    }
    return Status::Ok();
  }

  // The context limit and the default training sequence.
  Status ReadContext() {
    ASSIGN_OR_RETURN(std::optional<int64_t> seq,
                     r_.Int({"max_position_embeddings", "n_positions", "seq_length"}));
    if (!seq) return r_.Missing("max_position_embeddings");
    // The context limit, not a training length (hf_config.h, kDefaultHfTrainingSeq): the default
    // sequence is the limit capped, and the source says so when the cap applies.
    context_ = *seq;
    m_.seq_len = std::min(context_, kDefaultHfTrainingSeq);
    if (m_.seq_len < context_) {
      m_.source += fmt::format(
          "; sequence {} by default (its context limit {} capped at {}; a sequence length given "
          "replaces it)",
          m_.seq_len, context_, kDefaultHfTrainingSeq);
    }
    return Status::Ok();
  }

  // Tied embeddings, the gated MLP, norms, biases and position tables.
  Status ReadNormsAndBiases() {
    ASSIGN_OR_RETURN(std::optional<bool> tied, r_.Bool("tie_word_embeddings"));
    m_.tied_embeddings = tied.value_or(true);  // PretrainedConfig's default
    ASSIGN_OR_RETURN(m_.gated_mlp, GatedMlp(r_, model_type_));

    // Norms, biases and position tables by family; explicit fields override.
    if (In(model_type_, {"gpt2", "opt", "bloom", "gpt_neox"})) {
      m_.layernorm = true;
      m_.qkv_bias = m_.out_bias = m_.mlp_bias = true;
    }
    if (model_type_ == "gpt2") m_.learned_positions = context_;
    if (model_type_ == "opt")
      m_.learned_positions = context_ + 2;  // OPTLearnedPositionalEmbedding's offset 2
    if (In(model_type_, {"qwen2", "qwen2_moe"}))
      m_.qkv_bias = true;  // Qwen2Attention: q, k, v biases
    ASSIGN_OR_RETURN(std::optional<bool> attention_bias, r_.Bool("attention_bias"));
    if (attention_bias) m_.qkv_bias = m_.out_bias = *attention_bias;  // Llama: q, k, v and o
    ASSIGN_OR_RETURN(std::optional<bool> qkv_bias, r_.Bool("qkv_bias"));
    if (qkv_bias) m_.qkv_bias = *qkv_bias;
    ASSIGN_OR_RETURN(std::optional<bool> mlp_bias, r_.Bool("mlp_bias"));
    if (mlp_bias) m_.mlp_bias = *mlp_bias;
    return Status::Ok();
  }

  // The rotary base, the dropouts and the norm epsilon.
  Status ReadRopeDropoutAndEps() {
    // Rotary base and dropout, which an export needs to train the same model (model::Validate
    // bounds them). transformers' LlamaConfig: rope_theta (default 10000), attention_dropout 0;
    // GPT-2: attn_pdrop, resid_pdrop (default 0.1); Falcon/GPT-NeoX: hidden_dropout.
    if (m_.learned_positions == 0) {
      ASSIGN_OR_RETURN(std::optional<double> theta, r_.Number({"rope_theta", "rotary_emb_base"}));
      m_.rope_theta = theta.value_or(10000);
    }
    ASSIGN_OR_RETURN(std::optional<double> attn_drop,
                     r_.Number({"attention_dropout", "attn_pdrop"}));
    m_.attention_dropout = attn_drop.value_or(model_type_ == "gpt2" ? 0.1 : 0.0);
    ASSIGN_OR_RETURN(std::optional<double> hidden_drop,
                     r_.Number({"hidden_dropout", "resid_pdrop", "hidden_dropout_prob"}));
    m_.hidden_dropout = hidden_drop.value_or(model_type_ == "gpt2" ? 0.1 : 0.0);

    // Norm epsilon: Llama-style rms_norm_eps, GPT-2 layer_norm_epsilon, OPT/BLOOM/NeoX
    // layer_norm_eps (transformers' defaults 1e-6 for LlamaConfig, 1e-5 for the others; a config
    // without it gets the framework default 1e-5, as Megatron-LM and torchtitan use).
    ASSIGN_OR_RETURN(std::optional<double> eps, r_.Number({"rms_norm_eps", "layer_norm_eps",
                                                           "layer_norm_epsilon", "norm_epsilon"}));
    if (eps) {
      if (!(*eps > 0 && *eps < 1)) {
        return InvalidArgument(
            fmt::format("{}: norm epsilon {}: expected a number in (0, 1)", r_.name(), *eps));
      }
      m_.norm_eps = *eps;
    }
    return Status::Ok();
  }

  // RoPE scaling, query/key norms and the sliding window.
  Status ReadAttentionVariants() {
    RETURN_IF_ERROR(ReadRopeScaling(r_, m_));
    // Query/key norms: Qwen3's attention always has per-head q_norm and k_norm (HF
    // modeling_qwen3.py); other configs say so with a boolean.
    ASSIGN_OR_RETURN(std::optional<bool> qk_norm, r_.Bool("use_qk_norm"));
    m_.qk_norm = qk_norm.value_or(In(model_type_, {"qwen3", "qwen3_moe"}));
    // Sliding-window attention (Mistral: sliding_window; Qwen2/3: only when use_sliding_window).
    ASSIGN_OR_RETURN(std::optional<bool> use_window, r_.Bool("use_sliding_window"));
    ASSIGN_OR_RETURN(std::optional<int64_t> window, r_.Int({"sliding_window"}, 0));
    if (use_window.value_or(true) && window.value_or(0) > 0 && *window < context_) {
      m_.sliding_window = *window;
    }
    // Which layers the window applies to (gpt-oss, Gemma 2/3: layer_types, "sliding_attention"
    // or "full_attention" per layer); without the list every layer is windowed.
    ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> types, r_.Strings("layer_types"));
    if (types && m_.sliding_window > 0) RETURN_IF_ERROR(ReadLayerTypes(*types));
    return Status::Ok();
  }

  // The full-attention layers as Model::sliding_window_full_every: none, all (no window), or
  // every N-th (1-based), the pattern Megatron-Core's window_attn_skip_freq expresses.
  Status ReadLayerTypes(const std::vector<std::string>& types) {
    if (static_cast<int64_t>(types.size()) != m_.num_layers) {
      return InvalidArgument(
          fmt::format("{}: layer_types lists {} layers: expected one per layer ({})", r_.name(),
                      types.size(), m_.num_layers));
    }
    std::vector<int64_t> full;  // 1-based layer numbers
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] == "full_attention") {
        full.push_back(static_cast<int64_t>(i) + 1);
      } else if (types[i] != "sliding_attention") {
        return InvalidArgument(fmt::format(
            "{}: layer_types[{}] is '{}': expected 'sliding_attention' or 'full_attention'",
            r_.name(), i, OneLine(types[i]).substr(0, 40)));
      }
    }
    if (full.empty()) return Status::Ok();
    if (static_cast<int64_t>(full.size()) == m_.num_layers) {
      m_.sliding_window = 0;
      return Status::Ok();
    }
    const int64_t every = full.front();
    bool regular = static_cast<int64_t>(full.size()) == m_.num_layers / every;
    for (size_t k = 0; regular && k < full.size(); ++k) {
      regular = full[k] == every * static_cast<int64_t>(k + 1);
    }
    if (!regular) {
      return InvalidArgument(fmt::format(
          "{}: layer_types has full attention on layers {} (1-based): the planner models every "
          "layer windowed or every N-th layer full",
          r_.name(), OneLine(fmt::format("{}", fmt::join(full, ","))).substr(0, 60)));
    }
    m_.sliding_window_full_every = every;
    return Status::Ok();
  }

  StatusOr<int64_t> TopK() const { return r_.RequiredInt({"num_experts_per_tok"}); }

  // DeepSeek (HF modeling_deepseek_v3.py): layer i is MoE when i >= first_k_dense_replace and
  // i % moe_layer_freq == 0; the shared experts are n_shared_experts x moe_intermediate_size.
  Status ReadDeepSeekExperts(int64_t routed) {
    m_.num_experts = routed;
    ASSIGN_OR_RETURN(m_.top_k, TopK());
    ASSIGN_OR_RETURN(m_.expert_ffn_hidden, r_.RequiredInt({"moe_intermediate_size"}));
    ASSIGN_OR_RETURN(std::optional<int64_t> shared, r_.Int({"n_shared_experts"}, 0));
    m_.num_shared_experts = shared.value_or(0);
    m_.shared_expert_ffn_hidden = m_.num_shared_experts > 0 ? m_.expert_ffn_hidden : 0;
    ASSIGN_OR_RETURN(std::optional<int64_t> first_dense, r_.Int({"first_k_dense_replace"}, 0));
    m_.first_dense_layers = first_dense.value_or(0);
    ASSIGN_OR_RETURN(std::optional<int64_t> freq, r_.Int({"moe_layer_freq"}));
    m_.moe_layer_step = freq.value_or(1);
    m_.moe_layer_phase = 0;
    ASSIGN_OR_RETURN(std::string topk_method, r_.String("topk_method"));
    m_.router_bias =
        model_type_ == "deepseek_v3" || topk_method == "noaux_tc";  // e_score_correction_bias
    // Routing (HF DeepseekV3Config): scoring_func "softmax" or "sigmoid", routed_scaling_factor,
    // n_group groups of which topk_group are searched (group_limited_greedy / noaux_tc).
    ASSIGN_OR_RETURN(std::string scoring, r_.String("scoring_func"));
    if (scoring.empty()) scoring = model_type_ == "deepseek_v3" ? "sigmoid" : "softmax";
    if (scoring != "softmax" && scoring != "sigmoid") {
      return InvalidArgument(fmt::format("{}: scoring_func '{}': expected softmax or sigmoid",
                                         r_.name(), OneLine(scoring).substr(0, 40)));
    }
    m_.router_sigmoid = scoring == "sigmoid";
    ASSIGN_OR_RETURN(std::optional<double> scale, r_.Number({"routed_scaling_factor"}));
    m_.router_scale = scale.value_or(0) == 1 ? 0 : scale.value_or(0);
    ASSIGN_OR_RETURN(std::optional<int64_t> groups, r_.Int({"n_group"}, 0));
    ASSIGN_OR_RETURN(std::optional<int64_t> group_topk, r_.Int({"topk_group"}, 0));
    // One group is no group limit.
    if (groups.value_or(0) > 1) {
      m_.router_groups = *groups;
      m_.router_group_topk = group_topk.value_or(*groups);
    }
    // Megatron-LM and torchtitan renormalise the sigmoid top-k weights; DeepSeek-V3 sets
    // norm_topk_prob true. Read so that it is not named as unused.
    ASSIGN_OR_RETURN(std::optional<bool> norm_topk, r_.Bool("norm_topk_prob"));
    (void)norm_topk;
    return Status::Ok();
  }

  // Mixtral (HF modeling_mixtral.py): every layer, experts of intermediate_size.
  Status ReadMixtralExperts(int64_t local) {
    m_.num_experts = local;
    ASSIGN_OR_RETURN(m_.top_k, TopK());
    if (!given_ffn_) return r_.Missing("intermediate_size");
    m_.expert_ffn_hidden = m_.ffn_hidden;
    return Status::Ok();
  }

  // Qwen-MoE (HF modeling_qwen2_moe.py): layer i is MoE when (i + 1) % decoder_sparse_step == 0
  // and i is not in mlp_only_layers; one shared expert of shared_expert_intermediate_size with
  // a sigmoid gate (h -> 1).
  Status ReadQwenExperts(int64_t experts) {
    m_.num_experts = experts;
    ASSIGN_OR_RETURN(m_.top_k, TopK());
    ASSIGN_OR_RETURN(m_.expert_ffn_hidden, r_.RequiredInt({"moe_intermediate_size"}));
    ASSIGN_OR_RETURN(std::optional<int64_t> shared, r_.Int({"shared_expert_intermediate_size"}, 0));
    if (shared.value_or(0) > 0) {
      m_.num_shared_experts = 1;
      m_.shared_expert_ffn_hidden = *shared;
      m_.shared_expert_gate = true;
    }
    ASSIGN_OR_RETURN(std::optional<int64_t> step, r_.Int({"decoder_sparse_step"}));
    m_.moe_layer_step = step.value_or(1);
    m_.moe_layer_phase = 1;
    if (const json* only = r_.Find({"mlp_only_layers"});
        only != nullptr && !(only->is_array() && only->empty())) {
      return InvalidArgument(
          fmt::format("{}: mlp_only_layers: only an empty list is supported", r_.name()));
    }
    return Status::Ok();
  }

  // Mixtures of experts, by family.
  Status ReadExperts() {
    ASSIGN_OR_RETURN(std::optional<int64_t> routed, r_.Int({"n_routed_experts"}, 0));
    ASSIGN_OR_RETURN(std::optional<int64_t> local, r_.Int({"num_local_experts"}, 0));
    ASSIGN_OR_RETURN(std::optional<int64_t> qwen_experts, r_.Int({"num_experts"}, 0));
    if (routed.value_or(0) > 0) {
      RETURN_IF_ERROR(ReadDeepSeekExperts(*routed));
    } else if (local.value_or(0) > 0) {
      RETURN_IF_ERROR(ReadMixtralExperts(*local));
    } else if (qwen_experts.value_or(0) > 0) {
      RETURN_IF_ERROR(ReadQwenExperts(*qwen_experts));
    }
    if (!given_ffn_ && !four_h_default_) {
      // A dense layer needs intermediate_size; a model whose every layer is MoE does not.
      // (Only walk a plausible number of layers; Validate rejects more below.)
      if (m_.num_layers <= (int64_t{1} << 14) && model::NumMoeLayers(m_) < m_.num_layers) {
        return r_.Missing("intermediate_size");
      }
    }
    return Status::Ok();
  }

  // DeepSeek's multi-head latent attention.
  Status ReadLatentAttention() {
    ASSIGN_OR_RETURN(std::optional<int64_t> kv_lora, r_.Int({"kv_lora_rank"}, 0));
    if (kv_lora.value_or(0) > 0) {
      m_.kv_lora_rank = *kv_lora;
      ASSIGN_OR_RETURN(std::optional<int64_t> q_lora, r_.Int({"q_lora_rank"}, 0));
      m_.q_lora_rank = q_lora.value_or(0);
      ASSIGN_OR_RETURN(m_.qk_rope_head_dim, r_.RequiredInt({"qk_rope_head_dim"}));
      ASSIGN_OR_RETURN(m_.qk_nope_head_dim, r_.RequiredInt({"qk_nope_head_dim"}));
      ASSIGN_OR_RETURN(m_.v_head_dim, r_.RequiredInt({"v_head_dim"}));
      m_.num_kv_heads = m_.num_heads;
      if (!given_head_dim_) m_.head_dim = m_.v_head_dim;
    } else if (!given_head_dim_ && m_.hidden % m_.num_heads != 0) {
      return InvalidArgument(
          fmt::format("{}: hidden_size {} is not a multiple of num_attention_heads {} and "
                      "head_dim is not given",
                      r_.name(), m_.hidden, m_.num_heads));
    }
    return Status::Ok();
  }

  const ConfigReader& r_;
  model::Model m_;
  std::string model_type_;
  int64_t context_ = 0;
  std::optional<int64_t> given_head_dim_, given_ffn_;
  bool four_h_default_ = false;  // GPT-2 and BLOOM: an absent MLP width is 4h
};

// Keys that change nothing an estimate or an export depends on: token ids, dtypes, library
// bookkeeping and inference-only settings. Not named as unused.
bool Bookkeeping(const std::string& key) {
  static const std::set<std::string> kKeys = {"architectures",
                                              "auto_map",
                                              "bos_token_id",
                                              "eos_token_id",
                                              "pad_token_id",
                                              "torch_dtype",
                                              "dtype",
                                              "transformers_version",
                                              "use_cache",
                                              "initializer_range",
                                              "_name_or_path",
                                              "pretraining_tp",
                                              "quantization_config",
                                              "output_router_logits",
                                              "router_aux_loss_coef",
                                              "aux_loss_alpha",
                                              "seq_aux",
                                              "tokenizer_class",
                                              "ep_size",
                                              "num_nextn_predict_layers"};
  return kKeys.count(key) > 0;
}

}  // namespace

StatusOr<model::Model> ParseHfConfig(std::string_view text, std::string_view name,
                                     std::vector<std::string>* unused) {
  const std::string label(name);
  if (text.size() > kMaxHfConfigBytes) {
    return InvalidArgument(fmt::format("{}: {} bytes, larger than the limit of {} bytes", label,
                                       text.size(), kMaxHfConfigBytes));
  }
  if (MaxDepth(text) > kMaxHfConfigDepth) {
    return InvalidArgument(
        fmt::format("{}: JSON nested deeper than {} levels", label, kMaxHfConfigDepth));
  }
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("{}: not valid JSON: {}", label, OneLine(e.what())));
  }
  if (!doc.is_object())
    return InvalidArgument(fmt::format("{}: expected a JSON object at the top level", label));
  const json* obj = &doc;
  // Vision-language configs (Llava, Mllama, Gemma 3, ...) keep the language model in text_config.
  if (!doc.contains("num_hidden_layers") && !doc.contains("n_layer")) {
    auto it = doc.find("text_config");
    if (it != doc.end() && it->is_object()) obj = &*it;
  }
  try {
    const ConfigReader reader(*obj, label);
    ASSIGN_OR_RETURN(model::Model m, HfModelBuilder(reader).Build());
    if (unused != nullptr) {
      unused->clear();
      for (const std::string& k : reader.Unused()) {
        if (!Bookkeeping(k) && k != "text_config") unused->push_back(k);
      }
    }
    return m;
  } catch (const json::exception& e) {  // not expected: every access above checks types first
    return InvalidArgument(fmt::format("{}: {}", label, OneLine(e.what())));
  }
}

StatusOr<model::Model> ReadHfConfigFile(const std::string& path, std::vector<std::string>* unused) {
  // The bounded read every input file goes through (a FIFO refused, "-" for standard input).
  ASSIGN_OR_RETURN(std::string data, ReadFileLimited(path, kMaxHfConfigBytes));
  return ParseHfConfig(data, path == "-" ? "- (stdin)" : path, unused);
}

}  // namespace infralens::io
