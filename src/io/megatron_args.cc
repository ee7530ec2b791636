// Each flag below is read as megatron/training/arguments.py (NVIDIA/Megatron-LM, commit 000c4ac)
// defines it; the defaults are that file's. tests/data/megatron_arguments_flags.txt holds every
// flag of that file (tools/megatron_flags.py extracts them).
#include "io/megatron_args.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

#include "base/strings.h"
#include "plan/layer_layout.h"

namespace infralens::io {

namespace {

constexpr size_t kMaxArgTokens = 1 << 16;  // a launch command has a few hundred

// Shell words: backslash-newline joins lines, '#' starts a comment at a word's start, single
// quotes take everything literally, double quotes and backslashes as a POSIX shell reads them
// (enough for the commands people write; no expansion is done). An unterminated quote is an
// error, not a silently different command.
StatusOr<std::vector<std::string>> ShellWords(std::string_view text, std::string_view origin) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\\' && i + 1 < n && text[i + 1] == '\n') {  // line continuation
      i += 2;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';') {
      if (in_word) {
        words.push_back(std::move(cur));
        cur.clear();
        in_word = false;
      }
      // A newline or ';' ends a command: keep it as a separator word.
      if ((c == '\n' || c == ';') && (words.empty() || words.back() != "\n")) words.push_back("\n");
      ++i;
      continue;
    }
    if (c == '#' && !in_word) {  // comment to the end of the line
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) {
        return InvalidArgument(fmt::format("{}: unterminated single quote", origin));
      }
      cur.append(text.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"') {
        if (text[j] == '\\' && j + 1 < n) ++j;
        cur += text[j++];
      }
      if (j >= n) return InvalidArgument(fmt::format("{}: unterminated double quote", origin));
      i = j + 1;
    } else if (c == '\\' && i + 1 < n) {
      cur += text[i + 1];
      i += 2;
    } else {
      cur += c;
      ++i;
    }
    if (words.size() > kMaxArgTokens) {
      return InvalidArgument(fmt::format("{}: more than {} words", origin, kMaxArgTokens));
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Megatron's --moe-layer-freq: an integer N (layer i is MoE when i % N == 0) or a Python list
// expression of 0 and 1 built from [..], *, + and commas (moe_freq_type and _eval_pattern in
// arguments.py). Evaluated here without Python: a small recursive parser of exactly that
// grammar, bounded to `layers` entries.
class PatternParser {
 public:
  PatternParser(std::string_view s, size_t limit) : s_(s), limit_(limit) {}
  std::optional<std::vector<int>> Parse() {
    auto v = Sum();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  // sum := product ('+' product)*
  std::optional<std::vector<int>> Sum() {
    auto v = Product();
    if (!v) return std::nullopt;
    while (Peek('+')) {
      ++pos_;
      auto w = Product();
      if (!w || v->size() + w->size() > limit_) return std::nullopt;
      v->insert(v->end(), w->begin(), w->end());
    }
    return v;
  }
  // product := atom ('*' integer)*
  std::optional<std::vector<int>> Product() {
    auto v = Atom();
    if (!v) return std::nullopt;
    while (Peek('*')) {
      ++pos_;
      const auto k = Integer();
      if (!k || (*k > 0 && v->size() > limit_ / static_cast<size_t>(*k))) return std::nullopt;
      if (v->empty()) continue;  // [] * k is still empty (and k may be large)
      std::vector<int> r;
      for (int64_t i = 0; i < *k; ++i) r.insert(r.end(), v->begin(), v->end());
      v = std::move(r);
    }
    return v;
  }
  // atom := '(' sum ')' | '[' digit (',' digit)* ']'
  std::optional<std::vector<int>> Atom() {
    if (++depth_ > 64) return std::nullopt;
    std::optional<std::vector<int>> r;
    if (Peek('(')) {
      ++pos_;
      r = Sum();
      if (!r || !Peek(')')) return std::nullopt;
      ++pos_;
    } else if (Peek('[')) {
      ++pos_;
      std::vector<int> v;
      while (true) {
        const auto d = Integer();
        if (!d || (*d != 0 && *d != 1) || v.size() >= limit_) return std::nullopt;
        v.push_back(static_cast<int>(*d));
        if (Peek(',')) {
          ++pos_;
          continue;
        }
        if (!Peek(']')) return std::nullopt;
        ++pos_;
        break;
      }
      r = std::move(v);
    }
    --depth_;
    return r;
  }
  std::optional<int64_t> Integer() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && pos_ - start < 9) ++pos_;
    if (pos_ == start) return std::nullopt;
    return ParseInt(s_.substr(start, pos_ - start));
  }
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  std::string_view s_;
  size_t limit_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// The model's first_dense_layers / moe_layer_step / moe_layer_phase that reproduce `pattern`
// (model::IsMoeLayer), if any do.
bool FitMoePattern(const std::vector<int>& pattern, model::Model& m) {
  const int64_t n = static_cast<int64_t>(pattern.size());
  int64_t first = 0;
  while (first < n && pattern[first] == 0) ++first;
  if (first == n) return false;  // no MoE layer
  for (int64_t step = 1; step <= n; ++step) {
    for (int64_t phase = 0; phase < step; ++phase) {
      bool ok = true;
      for (int64_t i = 0; i < n && ok; ++i) {
        ok = (pattern[i] == 1) == (i >= first && (i + phase) % step == 0);
      }
      if (ok) {
        m.first_dense_layers = first;
        m.moe_layer_step = step;
        m.moe_layer_phase = phase;
        return true;
      }
    }
  }
  return false;
}

// Megatron's store_true switches that this reader models (the rest take a value or are ignored).
bool IsModelledSwitch(std::string_view f) {
  static const char* kSwitches[] = {
      "--sequence-parallel",
      "--use-distributed-optimizer",
      "--use-megatron-fsdp",
      "--overlap-grad-reduce",
      "--overlap-param-gather",
      "--use-tp-pp-dp-mapping",
      "--account-for-embedding-in-pipeline-split",
      "--account-for-loss-in-pipeline-split",
      "--group-query-attention",
      "--swiglu",
      "--untie-embeddings-and-output-weights",
      "--disable-bias-linear",
      "--add-qkv-bias",
      "--multi-latent-attention",
      "--moe-grouped-gemm",
      "--moe-router-enable-expert-bias",
      "--bf16",
      "--fp16",
      "--grad-reduce-in-bf16",
      "--recompute-activations",
      "--use-rotary-position-embeddings",
      "--qk-layernorm",
      "--use-rope-scaling",
      "--moe-router-pre-softmax",
  };
  for (const char* s : kSwitches) {
    if (f == s) return true;
  }
  return false;
}

}  // namespace

StatusOr<MegatronJob> ReadMegatronArgs(std::string_view text, std::string_view origin) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, ShellWords(text, origin));
  // The command holding the training script; its words after the script are Megatron's.
  size_t script = words.size();
  for (size_t i = 0; i < words.size(); ++i) {
    if (EndsWith(words[i], ".py")) {
      script = i;
      break;
    }
  }
  size_t cmd_start = 0;  // the launcher's words: from the start of the script's command
  if (script < words.size()) {
    for (size_t i = script; i > 0; --i) {
      if (words[i - 1] == "\n") {
        cmd_start = i;
        break;
      }
    }
  }
  MegatronJob job;
  // Launcher flags: torchrun --nnodes N --nproc_per_node G (either spelling, either form).
  for (size_t i = cmd_start; i < script && script < words.size(); ++i) {
    std::string flag = words[i], value;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < script) {
      value = words[i + 1];
    }
    if (flag == "--nnodes" || flag == "--nproc_per_node" || flag == "--nproc-per-node") {
      const auto v = ParseInt(value);
      if (!v || *v < 1 || *v > 1'000'000) {
        return InvalidArgument(fmt::format("{}: {} '{}': expected a positive whole number", origin,
                                           flag, Excerpt(value)));
      }
      (flag == "--nnodes" ? job.nodes : job.gpus_per_node) = static_cast<int>(*v);
    }
  }
  // Megatron's arguments: flag -> value ("" for a switch), the last occurrence winning as
  // argparse does.
  std::map<std::string, std::string> args;
  // After a script, its command ends at the line's end; a file of bare arguments is one list.
  const bool bare = script == words.size();
  const size_t first = bare ? 0 : script + 1;
  for (size_t i = first; i < words.size() && (bare || words[i] != "\n"); ++i) {
    const std::string& w = words[i];
    if (w == "\n") continue;
    if (w.rfind("--", 0) != 0) {
      return InvalidArgument(
          fmt::format("{}: '{}' is not a flag (expected --name [value])", origin, Excerpt(w)));
    }
    std::string flag = w, value;
    const size_t eq = w.find('=');
    if (eq != std::string::npos) {
      flag = w.substr(0, eq);
      value = w.substr(eq + 1);
    } else if (!IsModelledSwitch(flag) && i + 1 < words.size() && words[i + 1] != "\n" &&
               words[i + 1].rfind("--", 0) != 0) {
      value = words[++i];
      // nargs='+' flags (--cp-comm-type p2p a2a, --data-path ...): later values belong to it.
      while (i + 1 < words.size() && words[i + 1] != "\n" && words[i + 1].rfind("--", 0) != 0 &&
             value.size() < 4096) {
        value += " " + words[++i];
      }
    }
    args[flag] = value;
  }

  std::vector<std::string> used;
  auto has = [&](const char* f) {
    used.emplace_back(f);
    return args.count(f) > 0;
  };
  auto str = [&](const char* f, std::string def) -> std::string {
    used.emplace_back(f);
    auto it = args.find(f);
    return it == args.end() ? def : it->second;
  };
  auto integer = [&](const char* f, int64_t def, int64_t lo, int64_t hi) -> StatusOr<int64_t> {
    used.emplace_back(f);
    auto it = args.find(f);
    if (it == args.end()) return def;
    const auto v = ParseInt(it->second);
    if (!v || *v < lo || *v > hi) {
      return InvalidArgument(fmt::format("{}: {} '{}': expected a whole number in [{}, {}]", origin,
                                         f, Excerpt(it->second), lo, hi));
    }
    return *v;
  };
  auto real = [&](const char* f, double def, double lo, double hi) -> StatusOr<double> {
    used.emplace_back(f);
    auto it = args.find(f);
    if (it == args.end()) return def;
    const auto v = ParseDouble(it->second);
    if (!v || !(*v >= lo && *v <= hi)) {
      return InvalidArgument(fmt::format("{}: {} '{}': expected a number in [{}, {}]", origin, f,
                                         Excerpt(it->second), lo, hi));
    }
    return *v;
  };
  constexpr int64_t kBig = int64_t{1} << 40;

  // _add_network_size_args: the shape. --num-layers, --hidden-size and --num-attention-heads
  // have no default; --ffn-hidden-size defaults to 4 h.
  model::Model& m = job.model;
  m.name = "megatron-args";
  m.source = std::string(origin);
  // validate_args requires the shape and the sequence length.
  for (const char* required :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length"}) {
    if (!args.count(required)) {
      return InvalidArgument(
          fmt::format("{}: no {}: a Megatron-LM command names the model's shape and sequence "
                      "with --num-layers, --hidden-size, --num-attention-heads and --seq-length",
                      origin, required));
    }
  }
  ASSIGN_OR_RETURN(m.num_layers, integer("--num-layers", 0, 1, 100'000));
  ASSIGN_OR_RETURN(m.hidden, integer("--hidden-size", 0, 1, 1'000'000));
  ASSIGN_OR_RETURN(m.num_heads, integer("--num-attention-heads", 0, 1, 100'000));
  ASSIGN_OR_RETURN(m.ffn_hidden, integer("--ffn-hidden-size", 4 * m.hidden, 1, 10'000'000));
  m.num_kv_heads = m.num_heads;
  if (has("--group-query-attention")) {
    // --num-query-groups defaults to 1 (multi-query attention).
    ASSIGN_OR_RETURN(m.num_kv_heads, integer("--num-query-groups", 1, 1, m.num_heads));
  }
  // validate_args: without --kv-channels the heads must split the hidden size.
  if (!args.count("--kv-channels") && m.hidden % m.num_heads != 0) {
    return InvalidArgument(fmt::format(
        "{}: --hidden-size {} is not a multiple of --num-attention-heads {} (give --kv-channels)",
        origin, m.hidden, m.num_heads));
  }
  ASSIGN_OR_RETURN(m.head_dim, integer("--kv-channels", m.hidden / m.num_heads, 1, 100'000));
  ASSIGN_OR_RETURN(m.vocab, integer("--vocab-size", 0, 0, kBig));
  ASSIGN_OR_RETURN(job.seq_len, integer("--seq-length", 0, 1, kBig));
  ASSIGN_OR_RETURN(m.seq_len, integer("--max-position-embeddings", job.seq_len, 0, kBig));
  m.gated_mlp = has("--swiglu");
  const std::string norm = str("--normalization", "LayerNorm");
  if (norm != "LayerNorm" && norm != "RMSNorm") {
    return InvalidArgument(fmt::format("{}: --normalization '{}': expected LayerNorm or RMSNorm",
                                       origin, Excerpt(norm)));
  }
  m.layernorm = norm == "LayerNorm";
  ASSIGN_OR_RETURN(m.norm_eps, real("--norm-epsilon", 1e-5, 1e-30, 0.5));
  m.qk_norm = has("--qk-layernorm");
  std::string pos = str("--position-embedding-type", "learned_absolute");
  if (has("--use-rotary-position-embeddings")) pos = "rope";
  if (pos == "rope") {
    ASSIGN_OR_RETURN(m.rope_theta, real("--rotary-base", 10000, 1, 1e12));
    // --use-rope-scaling: Llama 3.1's, with the frequency factors Megatron fixes (1, 4, 8192).
    ASSIGN_OR_RETURN(const double factor, real("--rope-scaling-factor", 8, 1, 1e6));
    if (has("--use-rope-scaling")) {
      m.rope_scaling = "llama3";
      m.rope_factor = factor;
      m.rope_low_freq_factor = 1;
      m.rope_high_freq_factor = 4;
      m.rope_original_context = 8192;
    }
  } else if (pos == "learned_absolute") {
    m.learned_positions = m.seq_len;
  } else if (pos != "none") {
    return InvalidArgument(fmt::format(
        "{}: --position-embedding-type '{}': this reader models rope, learned_absolute and none",
        origin, Excerpt(pos)));
  }
  ASSIGN_OR_RETURN(m.attention_dropout, real("--attention-dropout", 0.1, 0, 1));
  ASSIGN_OR_RETURN(m.hidden_dropout, real("--hidden-dropout", 0.1, 0, 1));
  m.tied_embeddings = !has("--untie-embeddings-and-output-weights");
  // --disable-bias-linear (dest add_bias_linear, default on); --add-qkv-bias puts them back on Q,
  // K, V only.
  const bool bias = !has("--disable-bias-linear");
  m.qkv_bias = bias || has("--add-qkv-bias");
  m.out_bias = bias;
  m.mlp_bias = bias;

  // _add_moe_args.
  ASSIGN_OR_RETURN(m.num_experts, integer("--num-experts", 0, 0, 1'000'000));
  if (m.is_moe()) {
    ASSIGN_OR_RETURN(m.top_k, integer("--moe-router-topk", 2, 1, m.num_experts));
    ASSIGN_OR_RETURN(m.expert_ffn_hidden,
                     integer("--moe-ffn-hidden-size", m.ffn_hidden, 1, 10'000'000));
    ASSIGN_OR_RETURN(const int64_t shared,
                     integer("--moe-shared-expert-intermediate-size", 0, 0, 10'000'000));
    if (shared > 0) {
      // Megatron takes the shared experts' total width: one expert of that width.
      m.num_shared_experts = 1;
      m.shared_expert_ffn_hidden = shared;
    }
    m.router_bias = has("--moe-router-enable-expert-bias");
    const std::string score = str("--moe-router-score-function", "softmax");
    if (score != "softmax" && score != "sigmoid") {
      return InvalidArgument(
          fmt::format("{}: --moe-router-score-function '{}': expected softmax or sigmoid", origin,
                      Excerpt(score)));
    }
    m.router_sigmoid = score == "sigmoid";
    has("--moe-router-pre-softmax");
    ASSIGN_OR_RETURN(m.router_scale, real("--moe-router-topk-scaling-factor", 0, 0, 1e6));
    ASSIGN_OR_RETURN(m.router_groups, integer("--moe-router-num-groups", 0, 0, m.num_experts));
    ASSIGN_OR_RETURN(m.router_group_topk, integer("--moe-router-group-topk", 0, 0, m.num_experts));
    const std::string freq = str("--moe-layer-freq", "1");
    std::vector<int> pattern;
    if (const auto n = ParseInt(freq)) {
      if (*n < 1 || *n > m.num_layers) {
        return InvalidArgument(fmt::format(
            "{}: --moe-layer-freq {}: expected 1 to --num-layers ({})", origin, *n, m.num_layers));
      }
      for (int64_t i = 0; i < m.num_layers; ++i) pattern.push_back(i % *n == 0 ? 1 : 0);
    } else {
      auto p = PatternParser(freq, static_cast<size_t>(m.num_layers)).Parse();
      if (!p) {
        return InvalidArgument(
            fmt::format("{}: --moe-layer-freq '{}': expected N or a list expression such as "
                        "'([0]*3+[1]*58)' of at most --num-layers entries",
                        origin, Excerpt(freq)));
      }
      pattern = std::move(*p);
    }
    if (static_cast<int64_t>(pattern.size()) != m.num_layers) {
      return InvalidArgument(fmt::format("{}: --moe-layer-freq has {} entries for {} layers",
                                         origin, pattern.size(), m.num_layers));
    }
    if (!FitMoePattern(pattern, m)) {
      return InvalidArgument(fmt::format(
          "{}: --moe-layer-freq '{}': the planner models MoE layers as every k-th layer after "
          "the first dense ones, and this pattern is not of that form",
          origin, Excerpt(freq)));
    }
  }
  // _add_mla_args (defaults: kv-lora-rank 32, qk-head-dim 128, qk-pos-emb-head-dim 64,
  // v-head-dim 128, no q-lora-rank).
  if (has("--multi-latent-attention")) {
    ASSIGN_OR_RETURN(m.q_lora_rank, integer("--q-lora-rank", 0, 0, 1'000'000));
    ASSIGN_OR_RETURN(m.kv_lora_rank, integer("--kv-lora-rank", 32, 1, 1'000'000));
    ASSIGN_OR_RETURN(m.qk_nope_head_dim, integer("--qk-head-dim", 128, 1, 100'000));
    ASSIGN_OR_RETURN(m.qk_rope_head_dim, integer("--qk-pos-emb-head-dim", 64, 0, 100'000));
    ASSIGN_OR_RETURN(m.v_head_dim, integer("--v-head-dim", 128, 1, 100'000));
    // With MLA, --qk-layernorm builds the q_a / kv_a latent norms every MLA model has (counted
    // in its attention), not per-head q/k norms.
    m.qk_norm = false;
    // MLA's RoPE is YaRN (MLATransformerConfig): a --rotary-scaling-factor above 1 scales it.
    ASSIGN_OR_RETURN(const double yarn, real("--rotary-scaling-factor", 1, 1, 1e6));
    if (yarn > 1) {
      m.rope_scaling = "yarn";
      m.rope_factor = yarn;
      m.rope_original_context = 4096;  // MLATransformerConfig.original_max_position_embeddings
    }
  }
  // --window-size "(left,right)" (tuple_type): a sliding window of `left` tokens.
  if (const std::string w = str("--window-size", ""); !w.empty()) {
    std::string_view v = w;
    while (!v.empty() && (v.front() == '(' || v.front() == '\'')) v.remove_prefix(1);
    const auto left = ParseInt(v.substr(0, v.find(',')));
    if (!left || *left < -1 || *left > kBig) {
      return InvalidArgument(fmt::format(
          "{}: --window-size '{}': expected (left,right) token counts", origin, Excerpt(w)));
    }
    m.sliding_window = *left > 0 ? *left : 0;
  }
  {
    // The vocabulary is the tokenizer's (0 when --vocab-size is absent): check the rest.
    model::Model check = m;
    if (check.vocab == 0) check.vocab = 1;
    const Status valid = model::Validate(check);
    if (!valid.ok()) return InvalidArgument(fmt::format("{}: {}", origin, valid.message()));
  }

  // _add_distributed_args and _add_moe_args: the layout.
  plan::ParallelConfig& p = job.parallel;
  ASSIGN_OR_RETURN(const int64_t tp, integer("--tensor-model-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t pp, integer("--pipeline-model-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t cp, integer("--context-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t ep, integer("--expert-model-parallel-size", 1, 1, 1 << 20));
  p.tp = static_cast<int>(tp);
  p.pp = static_cast<int>(pp);
  p.cp = static_cast<int>(cp);
  p.ep = static_cast<int>(ep);
  ASSIGN_OR_RETURN(const int64_t first_layers,
                   integer("--decoder-first-pipeline-num-layers", 0, 0, m.num_layers));
  ASSIGN_OR_RETURN(const int64_t last_layers,
                   integer("--decoder-last-pipeline-num-layers", 0, 0, m.num_layers));
  p.first_stage_layers = static_cast<int>(first_layers);
  p.last_stage_layers = static_cast<int>(last_layers);
  p.embedding_in_split = has("--account-for-embedding-in-pipeline-split");
  p.loss_in_split = has("--account-for-loss-in-pipeline-split");
  p.layout = str("--pipeline-model-parallel-layout", "");
  // Virtual stages: --num-virtual-stages-per-pipeline-rank, or layers per virtual stage (the
  // even split: L / pp / that).
  ASSIGN_OR_RETURN(const int64_t vstages,
                   integer("--num-virtual-stages-per-pipeline-rank", 0, 0, m.num_layers));
  ASSIGN_OR_RETURN(const int64_t per_vstage,
                   integer("--num-layers-per-virtual-pipeline-stage", 0, 0, m.num_layers));
  p.vpp = 1;
  if (!p.layout.empty()) {
    // The layout names every stage: pp x vpp of them.
    auto stages = plan::LayerLayoutStages(p.layout);
    if (!stages.ok()) {
      return InvalidArgument(fmt::format("{}: --pipeline-model-parallel-layout: {}", origin,
                                         stages.status().message()));
    }
    if (*stages % pp != 0) {
      return InvalidArgument(fmt::format(
          "{}: --pipeline-model-parallel-layout has {} stages, not a multiple of pp = {}", origin,
          *stages, pp));
    }
    p.vpp = static_cast<int>(*stages / pp);
    auto counts = plan::ParseLayerLayout(p.layout, m.num_layers, *stages);
    if (!counts.ok()) {
      return InvalidArgument(fmt::format("{}: --pipeline-model-parallel-layout: {}", origin,
                                         counts.status().message()));
    }
  } else if (vstages > 0) {
    p.vpp = static_cast<int>(vstages);
  } else if (per_vstage > 0) {
    if (m.num_layers % (pp * per_vstage) != 0) {
      return InvalidArgument(fmt::format(
          "{}: --num-layers-per-virtual-pipeline-stage {}: {} layers over pp={} do not split "
          "into stages of {}",
          origin, per_vstage, m.num_layers, pp, per_vstage));
    }
    p.vpp = static_cast<int>(m.num_layers / (pp * per_vstage));
  }
  p.sequence_parallel = has("--sequence-parallel");
  if (has("--use-distributed-optimizer")) p.zero_stage = 1;
  if (has("--use-megatron-fsdp")) {
    // --data-parallel-sharding-strategy: no_shard, optim, optim_grads, optim_grads_params.
    const std::string s = str("--data-parallel-sharding-strategy", "no_shard");
    const std::map<std::string, int> stages = {
        {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
    auto it = stages.find(s);
    if (it == stages.end()) {
      return InvalidArgument(fmt::format(
          "{}: --data-parallel-sharding-strategy '{}': expected no_shard, optim, optim_grads or "
          "optim_grads_params",
          origin, Excerpt(s)));
    }
    p.zero_stage = it->second;
  }
  job.overlap_grad_reduce = has("--overlap-grad-reduce");
  has("--overlap-param-gather");
  has("--use-tp-pp-dp-mapping");
  has("--moe-grouped-gemm");
  str("--moe-token-dispatcher-type", "");
  str("--ckpt-format", "");
  if (job.nodes > 0 && job.gpus_per_node > 0) {
    const int64_t gpus = int64_t{job.nodes} * job.gpus_per_node;
    if (gpus % (tp * pp * cp) != 0) {
      return InvalidArgument(fmt::format(
          "{}: {} GPUs (--nnodes {} x --nproc_per_node {}) are not a multiple of tp x pp x cp = {}",
          origin, gpus, job.nodes, job.gpus_per_node, tp * pp * cp));
    }
    p.dp = static_cast<int>(gpus / (tp * pp * cp));
  } else {
    p.dp = 0;
  }

  // _add_training_args: recomputation and batch.
  const std::string gran =
      str("--recompute-granularity", has("--recompute-activations") ? "selective" : "");
  if (gran == "full") {
    job.recompute = model::Recompute::kFull;
    str("--recompute-method", "");
    str("--recompute-num-layers", "");
  } else if (gran == "selective") {
    job.recompute = model::Recompute::kSelective;
  } else if (!gran.empty()) {
    return InvalidArgument(fmt::format(
        "{}: --recompute-granularity '{}': expected full or selective", origin, Excerpt(gran)));
  }
  ASSIGN_OR_RETURN(job.micro_batch, integer("--micro-batch-size", 1, 1, kBig));
  ASSIGN_OR_RETURN(job.global_batch, integer("--global-batch-size", 0, 0, kBig));
  // _add_mixed_precision_args and _add_transformer_engine_args.
  if (has("--fp8-format")) job.precision = plan::Precision::kFp8;
  job.fp32_gradients = !has("--grad-reduce-in-bf16");
  has("--bf16");
  has("--fp16");

  for (const auto& [flag, value] : args) {
    bool known = false;
    for (const auto& u : used) known = known || u == flag;
    if (!known) job.ignored.push_back(flag);
  }
  return job;
}

}  // namespace infralens::io
