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

// Where the training script stands among the words, and where its command starts (the
// launcher's words lie between): `script` is words.size() when there is none (a file of bare
// arguments).
struct ScriptSpan {
  size_t script = 0, cmd_start = 0;
};

ScriptSpan FindScript(const std::vector<std::string>& words) {
  ScriptSpan s;
  s.script = words.size();
  for (size_t i = 0; i < words.size(); ++i) {
    if (EndsWith(words[i], ".py")) {
      s.script = i;
      break;
    }
  }
  if (s.script < words.size()) {
    for (size_t i = s.script; i > 0; --i) {
      if (words[i - 1] == "\n") {
        s.cmd_start = i;
        break;
      }
    }
  }
  return s;
}

// Launcher flags: torchrun --nnodes N --nproc_per_node G (either spelling, either form).
Status ReadLauncher(const std::vector<std::string>& words, const ScriptSpan& span,
                    std::string_view origin, MegatronJob& job) {
  for (size_t i = span.cmd_start; i < span.script && span.script < words.size(); ++i) {
    std::string flag = words[i], value;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < span.script) {
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
  return Status::Ok();
}

// Megatron's arguments: flag -> value ("" for a switch), the last occurrence winning as argparse
// does. After a script, its command ends at the line's end; a file of bare arguments is one list.
StatusOr<std::map<std::string, std::string>> CollectArgs(const std::vector<std::string>& words,
                                                         size_t script, std::string_view origin) {
  std::map<std::string, std::string> args;
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
  return args;
}

constexpr int64_t kBig = int64_t{1} << 40;

// The arguments, read by name with Megatron's defaults and ranges; every flag read is marked, and
// the others are the job's `ignored`.
class ArgReader {
 public:
  ArgReader(std::map<std::string, std::string> args, std::string_view origin)
      : args_(std::move(args)), origin_(origin) {}

  std::string_view origin() const { return origin_; }
  // Whether the flag is there, without marking it read.
  bool Present(const char* f) const { return args_.count(f) > 0; }
  bool Has(const char* f) {
    used_.emplace_back(f);
    return args_.count(f) > 0;
  }
  std::string Str(const char* f, std::string def) {
    used_.emplace_back(f);
    auto it = args_.find(f);
    return it == args_.end() ? def : it->second;
  }
  StatusOr<int64_t> Int(const char* f, int64_t def, int64_t lo, int64_t hi) {
    used_.emplace_back(f);
    auto it = args_.find(f);
    if (it == args_.end()) return def;
    const auto v = ParseInt(it->second);
    if (!v || *v < lo || *v > hi) {
      return InvalidArgument(fmt::format("{}: {} '{}': expected a whole number in [{}, {}]",
                                         origin_, f, Excerpt(it->second), lo, hi));
    }
    return *v;
  }
  StatusOr<double> Real(const char* f, double def, double lo, double hi) {
    used_.emplace_back(f);
    auto it = args_.find(f);
    if (it == args_.end()) return def;
    const auto v = ParseDouble(it->second);
    if (!v || !(*v >= lo && *v <= hi)) {
      return InvalidArgument(fmt::format("{}: {} '{}': expected a number in [{}, {}]", origin_, f,
                                         Excerpt(it->second), lo, hi));
    }
    return *v;
  }
  // The flags given that nothing read, in the order the map keeps them.
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    for (const auto& [flag, value] : args_) {
      bool known = false;
      for (const auto& u : used_) known = known || u == flag;
      if (!known) out.push_back(flag);
    }
    return out;
  }

 private:
  std::map<std::string, std::string> args_;
  std::string_view origin_;
  std::vector<std::string> used_;
};

// Positions: rope (with Llama 3.1's scaling), learned absolute, or none.
Status ReadPositions(ArgReader& a, model::Model& m) {
  std::string pos = a.Str("--position-embedding-type", "learned_absolute");
  if (a.Has("--use-rotary-position-embeddings")) pos = "rope";
  if (pos == "rope") {
    ASSIGN_OR_RETURN(m.rope_theta, a.Real("--rotary-base", 10000, 1, 1e12));
    // --use-rope-scaling: Llama 3.1's, with the frequency factors Megatron fixes (1, 4, 8192).
    ASSIGN_OR_RETURN(const double factor, a.Real("--rope-scaling-factor", 8, 1, 1e6));
    if (a.Has("--use-rope-scaling")) {
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
        a.origin(), Excerpt(pos)));
  }
  return Status::Ok();
}

// _add_network_size_args: the shape. --num-layers, --hidden-size and --num-attention-heads have
// no default; --ffn-hidden-size defaults to 4 h.
Status ReadShape(ArgReader& a, MegatronJob& job) {
  model::Model& m = job.model;
  const std::string_view origin = a.origin();
  m.name = "megatron-args";
  m.source = std::string(origin);
  // validate_args requires the shape and the sequence length.
  for (const char* required :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length"}) {
    if (!a.Present(required)) {
      return InvalidArgument(
          fmt::format("{}: no {}: a Megatron-LM command names the model's shape and sequence "
                      "with --num-layers, --hidden-size, --num-attention-heads and --seq-length",
                      origin, required));
    }
  }
  ASSIGN_OR_RETURN(m.num_layers, a.Int("--num-layers", 0, 1, 100'000));
  ASSIGN_OR_RETURN(m.hidden, a.Int("--hidden-size", 0, 1, 1'000'000));
  ASSIGN_OR_RETURN(m.num_heads, a.Int("--num-attention-heads", 0, 1, 100'000));
  ASSIGN_OR_RETURN(m.ffn_hidden, a.Int("--ffn-hidden-size", 4 * m.hidden, 1, 10'000'000));
  m.num_kv_heads = m.num_heads;
  if (a.Has("--group-query-attention")) {
    // --num-query-groups defaults to 1 (multi-query attention).
    ASSIGN_OR_RETURN(m.num_kv_heads, a.Int("--num-query-groups", 1, 1, m.num_heads));
  }
  // validate_args: without --kv-channels the heads must split the hidden size.
  if (!a.Present("--kv-channels") && m.hidden % m.num_heads != 0) {
    return InvalidArgument(fmt::format(
        "{}: --hidden-size {} is not a multiple of --num-attention-heads {} (give --kv-channels)",
        origin, m.hidden, m.num_heads));
  }
  ASSIGN_OR_RETURN(m.head_dim, a.Int("--kv-channels", m.hidden / m.num_heads, 1, 100'000));
  ASSIGN_OR_RETURN(m.vocab, a.Int("--vocab-size", 0, 0, kBig));
  ASSIGN_OR_RETURN(job.seq_len, a.Int("--seq-length", 0, 1, kBig));
  ASSIGN_OR_RETURN(m.seq_len, a.Int("--max-position-embeddings", job.seq_len, 0, kBig));
  m.gated_mlp = a.Has("--swiglu");
  const std::string norm = a.Str("--normalization", "LayerNorm");
  if (norm != "LayerNorm" && norm != "RMSNorm") {
    return InvalidArgument(fmt::format("{}: --normalization '{}': expected LayerNorm or RMSNorm",
                                       origin, Excerpt(norm)));
  }
  m.layernorm = norm == "LayerNorm";
  ASSIGN_OR_RETURN(m.norm_eps, a.Real("--norm-epsilon", 1e-5, 1e-30, 0.5));
  m.qk_norm = a.Has("--qk-layernorm");
  RETURN_IF_ERROR(ReadPositions(a, m));
  ASSIGN_OR_RETURN(m.attention_dropout, a.Real("--attention-dropout", 0.1, 0, 1));
  ASSIGN_OR_RETURN(m.hidden_dropout, a.Real("--hidden-dropout", 0.1, 0, 1));
  m.tied_embeddings = !a.Has("--untie-embeddings-and-output-weights");
  // --disable-bias-linear (dest add_bias_linear, default on); --add-qkv-bias puts them back on Q,
  // K, V only.
  const bool bias = !a.Has("--disable-bias-linear");
  m.qkv_bias = bias || a.Has("--add-qkv-bias");
  m.out_bias = bias;
  m.mlp_bias = bias;
  return Status::Ok();
}

// --moe-layer-freq: N (every N-th layer) or a list expression, as the planner's "every k-th layer
// after the first dense ones".
Status ReadMoeLayers(ArgReader& a, model::Model& m) {
  const std::string_view origin = a.origin();
  const std::string freq = a.Str("--moe-layer-freq", "1");
  std::vector<int> pattern;
  if (const auto n = ParseInt(freq)) {
    if (*n < 1 || *n > m.num_layers) {
      return InvalidArgument(fmt::format("{}: --moe-layer-freq {}: expected 1 to --num-layers ({})",
                                         origin, *n, m.num_layers));
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
    return InvalidArgument(fmt::format("{}: --moe-layer-freq has {} entries for {} layers", origin,
                                       pattern.size(), m.num_layers));
  }
  if (!FitMoePattern(pattern, m)) {
    return InvalidArgument(fmt::format(
        "{}: --moe-layer-freq '{}': the planner models MoE layers as every k-th layer after "
        "the first dense ones, and this pattern is not of that form",
        origin, Excerpt(freq)));
  }
  return Status::Ok();
}

// _add_moe_args.
Status ReadMoe(ArgReader& a, model::Model& m) {
  ASSIGN_OR_RETURN(m.num_experts, a.Int("--num-experts", 0, 0, 1'000'000));
  if (!m.is_moe()) return Status::Ok();
  ASSIGN_OR_RETURN(m.top_k, a.Int("--moe-router-topk", 2, 1, m.num_experts));
  ASSIGN_OR_RETURN(m.expert_ffn_hidden,
                   a.Int("--moe-ffn-hidden-size", m.ffn_hidden, 1, 10'000'000));
  ASSIGN_OR_RETURN(const int64_t shared,
                   a.Int("--moe-shared-expert-intermediate-size", 0, 0, 10'000'000));
  if (shared > 0) {
    // Megatron takes the shared experts' total width: one expert of that width.
    m.num_shared_experts = 1;
    m.shared_expert_ffn_hidden = shared;
  }
  m.router_bias = a.Has("--moe-router-enable-expert-bias");
  const std::string score = a.Str("--moe-router-score-function", "softmax");
  if (score != "softmax" && score != "sigmoid") {
    return InvalidArgument(
        fmt::format("{}: --moe-router-score-function '{}': expected softmax or sigmoid", a.origin(),
                    Excerpt(score)));
  }
  m.router_sigmoid = score == "sigmoid";
  a.Has("--moe-router-pre-softmax");
  ASSIGN_OR_RETURN(m.router_scale, a.Real("--moe-router-topk-scaling-factor", 0, 0, 1e6));
  ASSIGN_OR_RETURN(m.router_groups, a.Int("--moe-router-num-groups", 0, 0, m.num_experts));
  ASSIGN_OR_RETURN(m.router_group_topk, a.Int("--moe-router-group-topk", 0, 0, m.num_experts));
  return ReadMoeLayers(a, m);
}

// _add_mla_args (defaults: kv-lora-rank 32, qk-head-dim 128, qk-pos-emb-head-dim 64, v-head-dim
// 128, no q-lora-rank), and --window-size "(left,right)" (tuple_type): a sliding window of `left`
// tokens.
Status ReadAttentionVariants(ArgReader& a, model::Model& m) {
  if (a.Has("--multi-latent-attention")) {
    ASSIGN_OR_RETURN(m.q_lora_rank, a.Int("--q-lora-rank", 0, 0, 1'000'000));
    ASSIGN_OR_RETURN(m.kv_lora_rank, a.Int("--kv-lora-rank", 32, 1, 1'000'000));
    ASSIGN_OR_RETURN(m.qk_nope_head_dim, a.Int("--qk-head-dim", 128, 1, 100'000));
    ASSIGN_OR_RETURN(m.qk_rope_head_dim, a.Int("--qk-pos-emb-head-dim", 64, 0, 100'000));
    ASSIGN_OR_RETURN(m.v_head_dim, a.Int("--v-head-dim", 128, 1, 100'000));
    // With MLA, --qk-layernorm builds the q_a / kv_a latent norms every MLA model has (counted
    // in its attention), not per-head q/k norms.
    m.qk_norm = false;
    // MLA's RoPE is YaRN (MLATransformerConfig): a --rotary-scaling-factor above 1 scales it.
    ASSIGN_OR_RETURN(const double yarn, a.Real("--rotary-scaling-factor", 1, 1, 1e6));
    if (yarn > 1) {
      m.rope_scaling = "yarn";
      m.rope_factor = yarn;
      m.rope_original_context = 4096;  // MLATransformerConfig.original_max_position_embeddings
    }
  }
  if (const std::string w = a.Str("--window-size", ""); !w.empty()) {
    std::string_view v = w;
    while (!v.empty() && (v.front() == '(' || v.front() == '\'')) v.remove_prefix(1);
    const auto left = ParseInt(v.substr(0, v.find(',')));
    if (!left || *left < -1 || *left > kBig) {
      return InvalidArgument(fmt::format(
          "{}: --window-size '{}': expected (left,right) token counts", a.origin(), Excerpt(w)));
    }
    m.sliding_window = *left > 0 ? *left : 0;
  }
  // --window-attn-skip-freq (moe_freq_type): an integer N puts full attention on every N-th
  // layer; its other form, a Python list expression of a per-layer pattern, is not read.
  if (const std::string f = a.Str("--window-attn-skip-freq", ""); !f.empty()) {
    const auto every = ParseInt(f);
    if (!every || *every < 1 || *every > m.num_layers) {
      return InvalidArgument(fmt::format(
          "{}: --window-attn-skip-freq '{}': expected an integer from 1 to the {} layers (a "
          "per-layer list is not read)",
          a.origin(), Excerpt(f), m.num_layers));
    }
    m.sliding_window_full_every = m.sliding_window > 0 ? *every : 0;
  }
  return Status::Ok();
}

// Virtual stages: the layout's pp x vpp stages, --num-virtual-stages-per-pipeline-rank, or
// layers per virtual stage (the even split: L / pp / that).
Status ReadVirtualStages(ArgReader& a, int64_t num_layers, int64_t pp, plan::ParallelConfig& p) {
  const std::string_view origin = a.origin();
  ASSIGN_OR_RETURN(const int64_t vstages,
                   a.Int("--num-virtual-stages-per-pipeline-rank", 0, 0, num_layers));
  ASSIGN_OR_RETURN(const int64_t per_vstage,
                   a.Int("--num-layers-per-virtual-pipeline-stage", 0, 0, num_layers));
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
    auto counts = plan::ParseLayerLayout(p.layout, num_layers, *stages);
    if (!counts.ok()) {
      return InvalidArgument(fmt::format("{}: --pipeline-model-parallel-layout: {}", origin,
                                         counts.status().message()));
    }
  } else if (vstages > 0) {
    p.vpp = static_cast<int>(vstages);
  } else if (per_vstage > 0) {
    if (num_layers % (pp * per_vstage) != 0) {
      return InvalidArgument(fmt::format(
          "{}: --num-layers-per-virtual-pipeline-stage {}: {} layers over pp={} do not split "
          "into stages of {}",
          origin, per_vstage, num_layers, pp, per_vstage));
    }
    p.vpp = static_cast<int>(num_layers / (pp * per_vstage));
  }
  return Status::Ok();
}

// The ZeRO stage: --use-distributed-optimizer, or Megatron FSDP's
// --data-parallel-sharding-strategy (no_shard, optim, optim_grads, optim_grads_params).
Status ReadSharding(ArgReader& a, plan::ParallelConfig& p) {
  if (a.Has("--use-distributed-optimizer")) p.zero_stage = 1;
  if (!a.Has("--use-megatron-fsdp")) return Status::Ok();
  const std::string s = a.Str("--data-parallel-sharding-strategy", "no_shard");
  const std::map<std::string, int> stages = {
      {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
  auto it = stages.find(s);
  if (it == stages.end()) {
    return InvalidArgument(fmt::format(
        "{}: --data-parallel-sharding-strategy '{}': expected no_shard, optim, optim_grads or "
        "optim_grads_params",
        a.origin(), Excerpt(s)));
  }
  p.zero_stage = it->second;
  return Status::Ok();
}

// _add_distributed_args and _add_moe_args: the layout; dp from the launcher's GPUs when it names
// them (0 otherwise).
Status ReadLayout(ArgReader& a, MegatronJob& job) {
  const model::Model& m = job.model;
  plan::ParallelConfig& p = job.parallel;
  ASSIGN_OR_RETURN(const int64_t tp, a.Int("--tensor-model-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t pp, a.Int("--pipeline-model-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t cp, a.Int("--context-parallel-size", 1, 1, 1 << 20));
  ASSIGN_OR_RETURN(const int64_t ep, a.Int("--expert-model-parallel-size", 1, 1, 1 << 20));
  p.tp = static_cast<int>(tp);
  p.pp = static_cast<int>(pp);
  p.cp = static_cast<int>(cp);
  p.ep = static_cast<int>(ep);
  ASSIGN_OR_RETURN(const int64_t first_layers,
                   a.Int("--decoder-first-pipeline-num-layers", 0, 0, m.num_layers));
  ASSIGN_OR_RETURN(const int64_t last_layers,
                   a.Int("--decoder-last-pipeline-num-layers", 0, 0, m.num_layers));
  p.first_stage_layers = static_cast<int>(first_layers);
  p.last_stage_layers = static_cast<int>(last_layers);
  p.embedding_in_split = a.Has("--account-for-embedding-in-pipeline-split");
  p.loss_in_split = a.Has("--account-for-loss-in-pipeline-split");
  p.layout = a.Str("--pipeline-model-parallel-layout", "");
  RETURN_IF_ERROR(ReadVirtualStages(a, m.num_layers, pp, p));
  p.sequence_parallel = a.Has("--sequence-parallel");
  RETURN_IF_ERROR(ReadSharding(a, p));
  job.overlap_grad_reduce = a.Has("--overlap-grad-reduce");
  a.Has("--overlap-param-gather");
  a.Has("--use-tp-pp-dp-mapping");
  a.Has("--moe-grouped-gemm");
  a.Str("--moe-token-dispatcher-type", "");
  a.Str("--ckpt-format", "");
  if (job.nodes > 0 && job.gpus_per_node > 0) {
    const int64_t gpus = int64_t{job.nodes} * job.gpus_per_node;
    if (gpus % (tp * pp * cp) != 0) {
      return InvalidArgument(fmt::format(
          "{}: {} GPUs (--nnodes {} x --nproc_per_node {}) are not a multiple of tp x pp x cp = {}",
          a.origin(), gpus, job.nodes, job.gpus_per_node, tp * pp * cp));
    }
    p.dp = static_cast<int>(gpus / (tp * pp * cp));
  } else {
    p.dp = 0;
  }
  return Status::Ok();
}

// _add_training_args (recomputation and batch), _add_mixed_precision_args and
// _add_transformer_engine_args.
Status ReadTraining(ArgReader& a, MegatronJob& job) {
  const std::string gran =
      a.Str("--recompute-granularity", a.Has("--recompute-activations") ? "selective" : "");
  if (gran == "full") {
    job.recompute = model::Recompute::kFull;
    a.Str("--recompute-method", "");
    a.Str("--recompute-num-layers", "");
  } else if (gran == "selective") {
    job.recompute = model::Recompute::kSelective;
    const bool modules_given = a.Present("--recompute-modules");
    if (const std::string mods = a.Str("--recompute-modules", ""); modules_given && mods.empty()) {
      // nargs='*' with no value: an empty list, so selective recompute recomputes nothing
      // (TransformerConfig fills in core_attn only for None).
      job.recompute = model::Recompute::kNone;
    } else if (!mods.empty()) {
      auto parsed = model::ParseRecomputeModules(mods);
      if (!parsed.ok()) {
        return InvalidArgument(fmt::format("{}: {}", a.origin(), parsed.status().message()));
      }
      job.recompute_modules = *parsed;
    }
  } else if (!gran.empty()) {
    return InvalidArgument(fmt::format(
        "{}: --recompute-granularity '{}': expected full or selective", a.origin(), Excerpt(gran)));
  }
  ASSIGN_OR_RETURN(job.micro_batch, a.Int("--micro-batch-size", 1, 1, kBig));
  ASSIGN_OR_RETURN(job.global_batch, a.Int("--global-batch-size", 0, 0, kBig));
  if (a.Has("--fp8-format")) job.precision = plan::Precision::kFp8;
  job.fp8_param_gather = a.Has("--fp8-param-gather");
  // The precision-aware optimizer hands Transformer Engine's FusedAdam FP32 master weights, which
  // it keeps as the BF16 weights' 16-bit remainders (OptimizerConfig.store_param_remainders,
  // default True; megatron/core/optimizer/__init__.py). Other main-param dtypes are not remainders.
  if (a.Has("--use-precision-aware-optimizer")) {
    job.master_weight_remainders = a.Str("--main-params-dtype", "fp32") == "fp32";
  }
  ASSIGN_OR_RETURN(job.cpu_offload_layers, a.Int("--cpu-offloading-num-layers", 0, 0, kBig));
  job.fp32_gradients = !a.Has("--grad-reduce-in-bf16");
  a.Has("--bf16");
  a.Has("--fp16");
  return Status::Ok();
}

}  // namespace

StatusOr<MegatronJob> ReadMegatronArgs(std::string_view text, std::string_view origin) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, ShellWords(text, origin));
  const ScriptSpan span = FindScript(words);
  MegatronJob job;
  RETURN_IF_ERROR(ReadLauncher(words, span, origin, job));
  ASSIGN_OR_RETURN(auto args, CollectArgs(words, span.script, origin));
  ArgReader a(std::move(args), origin);
  RETURN_IF_ERROR(ReadShape(a, job));
  RETURN_IF_ERROR(ReadMoe(a, job.model));
  RETURN_IF_ERROR(ReadAttentionVariants(a, job.model));
  {
    // The vocabulary is the tokenizer's (0 when --vocab-size is absent): check the rest.
    model::Model check = job.model;
    if (check.vocab == 0) check.vocab = 1;
    const Status valid = model::Validate(check);
    if (!valid.ok()) return InvalidArgument(fmt::format("{}: {}", origin, valid.message()));
  }
  RETURN_IF_ERROR(ReadLayout(a, job));
  RETURN_IF_ERROR(ReadTraining(a, job));
  job.ignored = a.Unread();
  return job;
}

}  // namespace infralens::io
