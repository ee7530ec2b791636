#include "model/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::model {

constexpr EnumName<Recompute> kRecomputeNames[] = {{Recompute::kNone, "none"},
                                                   {Recompute::kSelective, "selective"},
                                                   {Recompute::kFull, "full"},
                                                   {Recompute::kOpSac, "op-sac"}};

const char* RecomputeName(Recompute r) { return NameIn(kRecomputeNames, r, "none"); }

StatusOr<Recompute> ParseRecompute(std::string_view name) {
  const std::string n = ToLower(Trim(name));
  if (n == "none" || n == "no" || n == "off") return Recompute::kNone;
  if (n == "selective") return Recompute::kSelective;
  if (n == "full") return Recompute::kFull;
  if (n == "op-sac" || n == "opsac" || n == "op") return Recompute::kOpSac;
  return InvalidArgument(
      fmt::format("‹recompute› {}: expected none, selective, full or op-sac", name));
}

namespace {

constexpr std::pair<RecomputeModule, std::string_view> kRecomputeModuleNames[] = {
    {kRecomputeCoreAttn, "core_attn"},
    {kRecomputeMoeAct, "moe_act"},
    {kRecomputeLayernorm, "layernorm"},
    {kRecomputeMlaUpProj, "mla_up_proj"},
    {kRecomputeMlp, "mlp"},
    {kRecomputeMoe, "moe"},
    {kRecomputeSharedExperts, "shared_experts"}};

}  // namespace

std::string RecomputeModulesName(RecomputeModules modules) {
  std::string out;
  for (const auto& [module, name] : kRecomputeModuleNames) {
    if (!modules.has(module)) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out;
}

StatusOr<RecomputeModules> ParseRecomputeModules(std::string_view value) {
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "‹recompute_modules› {}: {}; expected one or more of core_attn, moe_act, layernorm, "
        "mla_up_proj, mlp, moe, shared_experts (Megatron-Core's --recompute-modules)",
        Excerpt(value), why));
  };
  RecomputeModules out{0};
  std::string word;
  const auto take = [&]() -> Status {
    if (word.empty()) return Status::Ok();
    const auto* it = std::ranges::find_if(kRecomputeModuleNames,
                                          [&](const auto& e) { return e.second == word; });
    if (it == std::end(kRecomputeModuleNames)) {
      return bad(fmt::format("no module {}", Excerpt(word)));
    }
    if (out.has(it->first)) return bad(fmt::format("{} named twice", word));
    out.bits |= it->first;
    word.clear();
    return Status::Ok();
  };
  for (const char ch : value) {
    if (ch == ' ' || ch == ',' || ch == '\t') {
      RETURN_IF_ERROR(take());
    } else {
      word += ch;
    }
  }
  RETURN_IF_ERROR(take());
  if (out.bits == 0) return bad("no module named");
  return out;
}

namespace {

// Field bounds. Each is far above any published model; together with the parameter-count bound
// in Validate they keep every int64 product below 2^63.
constexpr int64_t kMaxLayers = 1 << 14;
constexpr int64_t kMaxWidth = 1 << 22;  // hidden, ffn, expert ffn
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxHeadDim = 1 << 14;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxSeq = 1 << 24;
constexpr int64_t kMaxExperts = 1 << 16;
constexpr double kMaxParameters = 1e15;  // a thousand times GPT-3

Status Range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return InvalidArgument(fmt::format("{} {}: must be between {} and {}", field, v, lo, hi));
  }
  return Status::Ok();
}

int64_t MlpMatrices(const Model& m) { return m.gated_mlp ? 3 : 2; }
int64_t NormParams(const Model& m) { return m.layernorm ? 2 * m.hidden : m.hidden; }

}  // namespace

int64_t QkHeadDim(const Model& m) {
  return m.is_mla() ? m.qk_nope_head_dim + m.qk_rope_head_dim : m.head_dim;
}
int64_t VHeadDim(const Model& m) { return m.is_mla() ? m.v_head_dim : m.head_dim; }

bool IsMoeLayer(const Model& m, int64_t layer) {
  if (!m.is_moe() || layer < m.first_dense_layers) return false;
  const int64_t step = std::max<int64_t>(1, m.moe_layer_step);
  return (layer + m.moe_layer_phase) % step == 0;
}

int64_t NumMoeLayers(const Model& m) {
  int64_t n = 0;
  for (int64_t i = 0; i < m.num_layers; ++i) n += IsMoeLayer(m, i) ? 1 : 0;
  return n;
}

namespace {

// P(none of k draws without replacement from n items hits a set of s of them): C(n - s, k) / C(n,
// k).
double RoutingMissAll(double n, double s, int64_t k) {
  double p = 1;
  for (int64_t j = 0; j < k; ++j) {
    const double left = n - s - static_cast<double>(j);
    if (left <= 0) return 0;
    p *= left / (n - static_cast<double>(j));
  }
  return p;
}

// C(n, r) as a double (small n: router groups).
double RoutingChoose(int64_t n, int64_t r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (int64_t j = 1; j <= r; ++j) c = c * static_cast<double>(n - r + j) / static_cast<double>(j);
  return c;
}

}  // namespace

double ExpectedRoutedBins(const Model& m, int64_t bins) {
  const int64_t experts = m.num_experts, k = m.top_k;
  if (experts <= 0 || k <= 0 || bins < 1 || experts % bins != 0) return 0;
  int64_t groups = m.router_groups, pick = m.router_group_topk;
  if (groups < 1 || pick < 1 || pick >= groups || experts % groups != 0 ||
      (groups % bins != 0 && bins % groups != 0)) {
    groups = 1;  // ungrouped: every expert is a candidate
    pick = 1;
  }
  // The groups one bin overlaps ("home" groups) and the bin's experts in each of them.
  const int64_t home = groups % bins == 0 ? groups / bins : 1;
  const double per_home = static_cast<double>(experts / bins) / static_cast<double>(home);
  const double candidates = static_cast<double>(pick * (experts / groups));
  double none = 0;  // P(the bin receives none of the token's experts)
  for (int64_t i = 0; i <= std::min(home, pick); ++i) {
    const double p_groups = RoutingChoose(home, i) * RoutingChoose(groups - home, pick - i) /
                            RoutingChoose(groups, pick);
    none += p_groups * RoutingMissAll(candidates, static_cast<double>(i) * per_home, k);
  }
  return static_cast<double>(bins) * (1 - none);
}

Status Validate(const Model& m) {
  const std::string who = m.name.empty() ? "model" : m.name;
  auto check = [&](const char* field, int64_t v, int64_t lo, int64_t hi) -> Status {
    Status st = Range(field, v, lo, hi);
    if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", who, st.message()));
    return st;
  };
  RETURN_IF_ERROR(check("layers", m.num_layers, 1, kMaxLayers));
  RETURN_IF_ERROR(check("hidden", m.hidden, 1, kMaxWidth));
  RETURN_IF_ERROR(check("heads", m.num_heads, 1, kMaxHeads));
  RETURN_IF_ERROR(check("vocab", m.vocab, 1, kMaxVocab));
  RETURN_IF_ERROR(check("seq", m.seq_len, 1, kMaxSeq));
  RETURN_IF_ERROR(check("learned positions", m.learned_positions, 0, kMaxSeq));
  // Written as !(in range) so that NaN fails too.
  for (auto [field, p] : {std::pair<const char*, double>{"attention_dropout", m.attention_dropout},
                          {"hidden_dropout", m.hidden_dropout}}) {
    if (!(p >= 0 && p < 1))
      return InvalidArgument(
          fmt::format("{}: {} {} is not a probability in [0, 1)", who, field, p));
  }
  if (!(m.rope_theta >= 0 && m.rope_theta <= 1e12))
    return InvalidArgument(
        fmt::format("{}: rope_theta {} is outside 0 (no rotary) to 1e12", who, m.rope_theta));
  if (!(m.norm_eps > 0 && m.norm_eps < 1))
    return InvalidArgument(fmt::format("{}: norm epsilon {} is outside (0, 1)", who, m.norm_eps));
  if (!m.rope_scaling.empty() && !(m.rope_factor >= 1 && m.rope_factor <= 1e6)) {
    return InvalidArgument(fmt::format("{}: rope_scaling {} factor {} is outside 1 to 1e6", who,
                                       m.rope_scaling, m.rope_factor));
  }
  RETURN_IF_ERROR(check("sliding window", m.sliding_window, 0, kMaxSeq));
  RETURN_IF_ERROR(check("sliding window full-attention frequency", m.sliding_window_full_every, 0,
                        m.num_layers));
  if (m.is_mla()) {
    RETURN_IF_ERROR(check("kv_lora_rank", m.kv_lora_rank, 1, kMaxWidth));
    RETURN_IF_ERROR(check("q_lora_rank", m.q_lora_rank, 0, kMaxWidth));
    RETURN_IF_ERROR(check("qk_nope_head_dim", m.qk_nope_head_dim, 0, kMaxHeadDim));
    RETURN_IF_ERROR(check("qk_rope_head_dim", m.qk_rope_head_dim, 0, kMaxHeadDim));
    RETURN_IF_ERROR(check("qk_nope_head_dim + qk_rope_head_dim", QkHeadDim(m), 1, kMaxHeadDim));
    RETURN_IF_ERROR(check("v_head_dim", m.v_head_dim, 1, kMaxHeadDim));
  } else {
    RETURN_IF_ERROR(check("head_dim", m.head_dim, 1, kMaxHeadDim));
    RETURN_IF_ERROR(check("kv heads", m.num_kv_heads, 1, m.num_heads));
    if (m.num_heads % m.num_kv_heads != 0) {
      return InvalidArgument(
          fmt::format("{}: {} attention heads are not a multiple of the {} KV heads", who,
                      m.num_heads, m.num_kv_heads));
    }
  }
  if (m.is_moe()) {
    RETURN_IF_ERROR(check("experts", m.num_experts, 1, kMaxExperts));
    RETURN_IF_ERROR(check("experts per token (top-k)", m.top_k, 1, m.num_experts));
    RETURN_IF_ERROR(check("expert FFN hidden", m.expert_ffn_hidden, 1, kMaxWidth));
    RETURN_IF_ERROR(check("shared experts", m.num_shared_experts, 0, 1 << 10));
    if (m.num_shared_experts > 0) {
      RETURN_IF_ERROR(check("shared expert FFN hidden", m.shared_expert_ffn_hidden, 1, kMaxWidth));
    }
    RETURN_IF_ERROR(check("first dense layers", m.first_dense_layers, 0, m.num_layers));
    RETURN_IF_ERROR(check("MoE layer step", m.moe_layer_step, 1, m.num_layers));
    RETURN_IF_ERROR(check("MoE layer phase", m.moe_layer_phase, 0, m.moe_layer_step));
    if (!(m.router_scale >= 0 && m.router_scale <= 1e6)) {
      return InvalidArgument(
          fmt::format("{}: routed scaling factor {} is outside 0 to 1e6", who, m.router_scale));
    }
    if (m.router_groups > 0 || m.router_group_topk > 0) {
      // Megatron-LM's TransformerConfig.__post_init__ (commit 000c4ac) asserts both.
      RETURN_IF_ERROR(check("router groups", m.router_groups, 1, m.num_experts));
      if (m.num_experts % m.router_groups != 0) {
        return InvalidArgument(fmt::format("{}: {} experts do not split into {} router groups", who,
                                           m.num_experts, m.router_groups));
      }
      RETURN_IF_ERROR(check("router group top-k", m.router_group_topk, 1, m.router_groups));
    }
  }
  const bool any_dense = NumMoeLayers(m) < m.num_layers;
  RETURN_IF_ERROR(check("FFN hidden", m.ffn_hidden, any_dense ? 1 : 0, kMaxWidth));

  // Every field is now below 2^24, so these doubles are exact enough to bound the int64 counts.
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.num_heads);
  const double widest_head = static_cast<double>(std::max({QkHeadDim(m), VHeadDim(m), m.head_dim}));
  double layer = 4.0 * h * a * widest_head + 4.0 * h;
  layer += static_cast<double>(m.q_lora_rank) * (h + a * widest_head + 1);
  layer += static_cast<double>(m.kv_lora_rank) * (h + 2 * a * widest_head + 1);
  layer += 3.0 * h * (static_cast<double>(m.ffn_hidden) + 1);
  layer += 3.0 * h * static_cast<double>(m.num_experts) * static_cast<double>(m.expert_ffn_hidden);
  layer += 3.0 * h * static_cast<double>(m.num_shared_experts) *
           static_cast<double>(m.shared_expert_ffn_hidden);
  layer += (h + 1) * static_cast<double>(m.num_experts);
  const double total =
      static_cast<double>(m.num_layers) * layer +
      h * (2.0 * static_cast<double>(m.vocab) + static_cast<double>(m.learned_positions) + 2);
  if (total > kMaxParameters) {
    return InvalidArgument(fmt::format("{}: about {:.3g} parameters, over the limit of {:g}", who,
                                       total, kMaxParameters));
  }
  return Status::Ok();
}

namespace {

// Attention projections of one layer (parameters, matrix entries).
void AttentionParams(const Model& m, LayerParams& p) {
  const int64_t h = m.hidden, a = m.num_heads;
  if (m.is_mla()) {
    // DeepSeek-V2 paper (DeepSeek-AI 2024, arXiv:2405.04434) sec. 2.1.2-2.1.3 and HF
    // modeling_deepseek_v3.py: q_a_proj h x q_lora, q_a_layernorm (q_lora), q_b_proj
    // q_lora x a(d_nope + d_rope) (or q_proj h x a(d_nope + d_rope) without q_lora);
    // kv_a_proj_with_mqa h x (kv_lora + d_rope), kv_a_layernorm (kv_lora),
    // kv_b_proj kv_lora x a(d_nope + d_v); o_proj a d_v x h.
    const int64_t dqk = QkHeadDim(m), dv = m.v_head_dim;
    int64_t q = 0, norms = 0;
    if (m.q_lora_rank > 0) {
      q = h * m.q_lora_rank + m.q_lora_rank * a * dqk;
      norms += m.q_lora_rank;
    } else {
      q = h * a * dqk;
    }
    const int64_t kv =
        h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * a * (m.qk_nope_head_dim + dv);
    norms += m.kv_lora_rank;
    const int64_t o = a * dv * h;
    p.attention = q + kv + o + norms;
    p.matmul_active += q + kv + o;
    return;
  }
  const int64_t q_width = a * m.head_dim, kv_width = m.num_kv_heads * m.head_dim;
  const int64_t matrices = h * q_width + 2 * h * kv_width + q_width * h;
  int64_t biases = 0;
  if (m.qkv_bias) biases += q_width + 2 * kv_width;
  if (m.out_bias) biases += h;
  p.attention = matrices + biases;
  p.matmul_active += matrices;
}

// One MLP of inner width f: (parameters, matrix entries).
int64_t MlpMatrixEntries(const Model& m, int64_t f) { return MlpMatrices(m) * m.hidden * f; }

}  // namespace

int64_t MlaDownProjectionParams(const Model& m) {
  if (!m.is_mla()) return 0;
  const int64_t q = m.q_lora_rank > 0 ? m.hidden * m.q_lora_rank + m.q_lora_rank : 0;
  return q + m.hidden * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
}

int64_t SequenceParallelLayerParams(const Model& m) {
  return 2 * NormParams(m) + MlaDownProjectionParams(m);
}

int64_t MlaSequenceParallelGatherWidth(const Model& m) {
  if (!m.is_mla()) return 0;
  return (m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden) + m.kv_lora_rank + m.qk_rope_head_dim;
}

int64_t MlaSequenceParallelRegatherWidth(const Model& m) {
  if (!m.is_mla()) return 0;
  return (m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden) + m.kv_lora_rank;
}

LayerParams DenseLayerParams(const Model& m) {
  LayerParams p;
  AttentionParams(m, p);
  p.norms = 2 * NormParams(m);
  const int64_t f = m.ffn_hidden;
  p.mlp = MlpMatrixEntries(m, f);
  p.matmul_active += p.mlp;
  // Biases: the up (and gate) projections have f each, the down projection h.
  if (m.mlp_bias) p.mlp += (MlpMatrices(m) - 1) * f + m.hidden;
  return p;
}

LayerParams MoeLayerParams(const Model& m) {
  if (!m.is_moe()) return DenseLayerParams(m);
  LayerParams p;
  AttentionParams(m, p);
  p.norms = 2 * NormParams(m);
  const int64_t shared = m.num_shared_experts * MlpMatrixEntries(m, m.shared_expert_ffn_hidden);
  const int64_t router = m.num_experts * m.hidden;  // gate: h -> E logits
  const int64_t gate = m.shared_expert_gate ? m.hidden : 0;
  p.mlp = shared + router + gate + (m.router_bias ? m.num_experts : 0);
  const int64_t expert = MlpMatrixEntries(m, m.expert_ffn_hidden);
  p.routed_experts = m.num_experts * expert;
  p.active_routed = m.top_k * expert;
  p.matmul_active += shared + router + gate + p.active_routed;
  return p;
}

LayerParams LayerParamsAt(const Model& m, int64_t layer) {
  return IsMoeLayer(m, layer) ? MoeLayerParams(m) : DenseLayerParams(m);
}

ParamCounts CountParameters(const Model& m) {
  ParamCounts c;
  const LayerParams dense = DenseLayerParams(m), moe = MoeLayerParams(m);
  c.num_moe_layers = NumMoeLayers(m);
  c.num_dense_layers = m.num_layers - c.num_moe_layers;
  c.per_dense_layer = c.num_dense_layers > 0 ? dense.total() : 0;
  c.per_moe_layer = c.num_moe_layers > 0 ? moe.total() : 0;
  c.transformer = c.num_dense_layers * dense.total() + c.num_moe_layers * moe.total();
  c.routed_experts = c.num_moe_layers * moe.routed_experts;
  c.embedding = m.vocab * m.hidden + m.learned_positions * m.hidden;
  c.output_layer = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  c.final_norm = NormParams(m);
  c.total = c.transformer + c.embedding + c.output_layer + c.final_norm;
  c.active = c.num_dense_layers * dense.active() + c.num_moe_layers * moe.active() + c.embedding +
             c.output_layer + c.final_norm;
  // The output layer multiplies every token by V x h whether or not it is tied to the embedding.
  c.matmul_active = c.num_dense_layers * dense.matmul_active +
                    c.num_moe_layers * moe.matmul_active + m.vocab * m.hidden;
  return c;
}

double AttentionFlopsPerToken(const Model& m, int64_t seq) {
  // Per layer and token: QK^T is s x (a d_qk) multiply-adds, attention over V s x (a d_v).
  const double per_layer = 2.0 * static_cast<double>(seq) * static_cast<double>(m.num_heads) *
                           static_cast<double>(QkHeadDim(m) + VHeadDim(m));
  return per_layer * static_cast<double>(m.num_layers);
}

int64_t WindowedLayers(const Model& m) {
  if (m.sliding_window <= 0) return 0;
  const int64_t full =
      m.sliding_window_full_every > 0 ? m.num_layers / m.sliding_window_full_every : 0;
  return m.num_layers - full;
}

double CausalKeysPerQuery(int64_t seq, int64_t window) {
  const double s = static_cast<double>(seq), w = static_cast<double>(window);
  // Query i (continuous, 0 <= i < s) sees min(i, w) keys; the mean over i.
  if (window <= 0 || w >= s) return s / 2;
  return w - w * w / (2 * s);
}

double ModelAttentionFlopsPerToken(const Model& m, int64_t seq) {
  if (!m.causal) return AttentionFlopsPerToken(m, seq);
  const int64_t windowed = WindowedLayers(m);
  if (windowed == 0) return 0.5 * AttentionFlopsPerToken(m, seq);
  // AttentionFlopsPerToken is linear in the keys each query sees (seq of them, every layer).
  const double per_key =
      AttentionFlopsPerToken(m, seq) / static_cast<double>(seq) / static_cast<double>(m.num_layers);
  return per_key * (static_cast<double>(m.num_layers - windowed) * CausalKeysPerQuery(seq, 0) +
                    static_cast<double>(windowed) * CausalKeysPerQuery(seq, m.sliding_window));
}

double ForwardFlopsPerToken(const Model& m, int64_t seq) {
  return 2.0 * static_cast<double>(CountParameters(m).matmul_active) +
         ModelAttentionFlopsPerToken(m, seq);
}

double OpSacRecomputeFlopsPerToken(const Model& m) {
  // The even-numbered matmuls of a block in execution order: wq wk wv wo, then w1 w3 w2 (gated)
  // or w1 w2: wk, wo and w3 (gated) or w2 are recomputed, 2 FLOPs per weight per token.
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.num_heads);
  const double g = m.is_mla() ? a : static_cast<double>(m.num_kv_heads);
  const double wk = h * g * static_cast<double>(QkHeadDim(m));
  const double wo = a * static_cast<double>(VHeadDim(m)) * h;
  const double mlp = h * static_cast<double>(m.ffn_hidden);
  return 2.0 * (wk + wo + mlp) * static_cast<double>(m.num_layers);
}

double TrainingFlopsPerToken(const Model& m, int64_t seq, Recompute recompute) {
  double flops = 3.0 * ForwardFlopsPerToken(m, seq);
  switch (recompute) {
    case Recompute::kNone:
      break;
    case Recompute::kSelective:
      flops += ModelAttentionFlopsPerToken(m, seq);
      break;
    case Recompute::kOpSac:
      flops += OpSacRecomputeFlopsPerToken(m);
      break;
    case Recompute::kFull: {
      // Every transformer layer's forward again; the output layer is not recomputed.
      const ParamCounts c = CountParameters(m);
      const double layers_matmul = static_cast<double>(c.matmul_active - m.vocab * m.hidden);
      flops += 2.0 * layers_matmul + ModelAttentionFlopsPerToken(m, seq);
      break;
    }
  }
  return flops;
}

double TrainingFlopsPerStep(const Model& m, int64_t seq, int64_t global_batch,
                            Recompute recompute) {
  return TrainingFlopsPerToken(m, seq, recompute) * static_cast<double>(seq) *
         static_cast<double>(global_batch);
}

double MegatronSc21FlopsPerStep(int64_t batch, int64_t seq, int64_t layers, int64_t hidden,
                                int64_t vocab) {
  const double B = static_cast<double>(batch), s = static_cast<double>(seq),
               l = static_cast<double>(layers), h = static_cast<double>(hidden),
               V = static_cast<double>(vocab);
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

std::string ShapeSummary(const Model& m) {
  std::string out = fmt::format("{} layers, hidden {}", m.num_layers, m.hidden);
  const ParamCounts c = CountParameters(m);
  if (c.num_dense_layers > 0) {
    out +=
        fmt::format(", FFN {} ({})", m.ffn_hidden, m.gated_mlp ? "gated, SwiGLU" : "two matrices");
  }
  if (m.is_mla()) {
    out += fmt::format(", {} heads with MLA (q_lora {}, kv_lora {}, qk {}+{}, v {})", m.num_heads,
                       m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim,
                       m.v_head_dim);
  } else {
    out += fmt::format(", {} heads ({} KV, head dim {})", m.num_heads, m.num_kv_heads, m.head_dim);
  }
  out += fmt::format(", vocab {}, seq {}, {} embeddings", m.vocab, m.seq_len,
                     m.tied_embeddings ? "tied" : "untied");
  if (m.learned_positions > 0) out += fmt::format(", learned positions ({})", m.learned_positions);
  if (const int64_t windowed = WindowedLayers(m); windowed > 0) {
    out += fmt::format(", sliding window {} in {} of {} layers", m.sliding_window, windowed,
                       m.num_layers);
  }
  if (m.is_moe()) {
    out += fmt::format("; MoE in {} of {} layers: {} experts (FFN {}{}), top-{}", c.num_moe_layers,
                       m.num_layers, m.num_experts, m.expert_ffn_hidden,
                       m.gated_mlp ? ", gated" : "", m.top_k);
    if (m.num_shared_experts > 0) {
      out += fmt::format(", {} shared (FFN {})", m.num_shared_experts, m.shared_expert_ffn_hidden);
    }
  }
  return out;
}

}  // namespace infralens::model
