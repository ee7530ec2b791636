// infralens model: parameter counts and FLOPs of one model (a preset or a config.json).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <initializer_list>
#include <string_view>
#include <utility>

#include "base/json_writer.h"
#include "base/table.h"
#include "io/model_source.h"
#include "model/model.h"
#include "model/presets.h"
#include "request/count_format.h"
#include "request/engine_requests.h"
#include "request/json_or_text.h"
#include "request/training_flags.h"

namespace infralens::request {

namespace {

// --model, --global-batch and --seq, as every command declares them, or the model as the
// argument.
struct ModelQuery {
  TrainingFlags training;
  std::vector<std::string> positional;
};

struct ModelResult {
  model::Model m;
  model::ParamCounts counts;
  int global_batch = 1;
};

// 6738415616 -> "6,738,415,616".
std::string Grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// `key`: an object of the integer `fields` when the model has the part (`present`), else null.
void IntObjectOrNull(JsonWriter& w, std::string_view key, bool present,
                     std::initializer_list<std::pair<std::string_view, int64_t>> fields) {
  w.Key(key);
  if (!present) {
    w.Null();
    return;
  }
  w.BeginObject();
  for (const auto& [name, value] : fields) w.Field(name, value);
  w.EndObject();
}

std::string Flops(double v) { return fmt::format("{:.4e}", v); }

StatusOr<ModelResult> ComputeModel(const ModelQuery& q, const RunContext& ctx) {
  std::string name = q.training.model_name;
  const int seq = q.training.seq;
  ModelResult r;
  // No degrees here: 0 is one sequence.
  r.global_batch = q.training.global_batch == 0 ? 1 : q.training.global_batch;
  if (!q.positional.empty()) {
    if (!name.empty() || q.positional.size() > 1) {
      return InvalidArgument(
          "model: give one model, with --model or as the argument (see infralens model --help)");
    }
    name = q.positional[0];
  }
  if (name.empty()) {
    return InvalidArgument(
        "--model: required (a preset name or a config.json path; see infralens presets)");
  }
  if (seq < 0)
    return InvalidArgument(fmt::format("--seq {}: must be at least 1 (or 0 for the model's)", seq));
  if (r.global_batch < 1) {
    return InvalidArgument(fmt::format(
        "--global-batch {}: must be at least 1 (or 0 for one sequence)", r.global_batch));
  }
  std::vector<std::string> unused;
  ASSIGN_OR_RETURN(r.m, io::ResolveModel(name, &unused));
  if (!unused.empty() && ctx.note) {
    ctx.note(fmt::format("note: {}: keys not used (they change nothing InfraLens models): {}\n",
                         name, fmt::join(unused, ", ")));
  }
  if (seq > 0) {
    r.m.seq_len = seq;
    RETURN_IF_ERROR(model::Validate(r.m));
  }
  r.counts = model::CountParameters(r.m);
  return r;
}

std::string ModelJson(const ModelResult& r, int indent) {
  const model::Model& m = r.m;
  const model::ParamCounts& c = r.counts;
  const int64_t s = m.seq_len;
  JsonWriter w(indent);
  w.BeginObject();
  w.Field("name", m.name);
  w.Field("source", m.source);
  w.Key("architecture").BeginObject();
  w.Field("layers", m.num_layers);
  w.Field("hidden", m.hidden);
  w.Field("ffn_hidden", m.ffn_hidden);
  w.Field("heads", m.num_heads);
  w.Field("kv_heads", m.num_kv_heads);
  w.Field("head_dim", m.head_dim);
  w.Field("vocab", m.vocab);
  w.Field("gated_mlp", m.gated_mlp);
  w.Field("tied_embeddings", m.tied_embeddings);
  w.Field("learned_positions", m.learned_positions);
  IntObjectOrNull(w, "moe", m.is_moe(),
                  {{"experts", m.num_experts},
                   {"top_k", m.top_k},
                   {"expert_ffn_hidden", m.expert_ffn_hidden},
                   {"shared_experts", m.num_shared_experts},
                   {"shared_expert_ffn_hidden", m.shared_expert_ffn_hidden},
                   {"first_dense_layers", m.first_dense_layers}});
  IntObjectOrNull(w, "sliding_window", model::WindowedLayers(m) > 0,
                  {{"tokens", m.sliding_window},
                   {"full_attention_every", m.sliding_window_full_every},
                   {"windowed_layers", model::WindowedLayers(m)}});
  IntObjectOrNull(w, "mla", m.is_mla(),
                  {{"q_lora_rank", m.q_lora_rank},
                   {"kv_lora_rank", m.kv_lora_rank},
                   {"qk_nope_head_dim", m.qk_nope_head_dim},
                   {"qk_rope_head_dim", m.qk_rope_head_dim},
                   {"v_head_dim", m.v_head_dim}});
  w.EndObject();
  w.Field("parameters", c.total);
  w.Field("parameters_per_layer", c.num_moe_layers > 0 ? c.per_moe_layer : c.per_dense_layer);
  w.Field("parameters_per_dense_layer", c.per_dense_layer);
  w.Field("parameters_per_moe_layer", c.per_moe_layer);
  w.Field("dense_layers", c.num_dense_layers);
  w.Field("moe_layers", c.num_moe_layers);
  w.Field("embedding_parameters", c.embedding);
  w.Field("output_parameters", c.output_layer);
  w.Field("final_norm_parameters", c.final_norm);
  w.Field("routed_expert_parameters", c.routed_experts);
  w.Field("active_parameters", c.active);
  w.Field("seq", s);
  w.Field("forward_flops_per_token", model::ForwardFlopsPerToken(m, s));
  w.Field("attention_flops_per_token", model::ModelAttentionFlopsPerToken(m, s));
  w.Field("flops_per_token", model::TrainingFlopsPerToken(m, s));
  w.Field("flops_per_token_full_recompute",
          model::TrainingFlopsPerToken(m, s, model::Recompute::kFull));
  w.Field("global_batch", static_cast<int64_t>(r.global_batch));
  w.Field("flops_per_step", model::TrainingFlopsPerStep(m, s, r.global_batch));
  w.EndObject();
  return w.str();
}

std::string ModelText(const ModelResult& r) {
  const model::Model& m = r.m;
  const model::ParamCounts& c = r.counts;
  const int64_t s = m.seq_len;
  const double fwd = model::ForwardFlopsPerToken(m, s);
  const double attn = model::ModelAttentionFlopsPerToken(m, s);  // the part of `fwd`
  const double train = model::TrainingFlopsPerToken(m, s);
  const double train_full = model::TrainingFlopsPerToken(m, s, model::Recompute::kFull);
  const double step = model::TrainingFlopsPerStep(m, s, r.global_batch);
  std::string out = fmt::format("{}: {}\n{}\n\n", m.name, m.source, model::ShapeSummary(m));
  TextTable t({"parameters", "count", "approx"});
  auto row = [&](const std::string& label, int64_t v) {
    t.AddRow({label, Grouped(v), SiCount(static_cast<double>(v), 4, " ")});
  };
  row("total", c.total);
  if (c.num_dense_layers > 0) {
    row(fmt::format("per dense layer (x{})", c.num_dense_layers), c.per_dense_layer);
  }
  if (c.num_moe_layers > 0) {
    row(fmt::format("per MoE layer (x{})", c.num_moe_layers), c.per_moe_layer);
    row("routed experts, all layers", c.routed_experts);
  }
  row("embedding", c.embedding);
  row(m.tied_embeddings ? "output layer (tied)" : "output layer", c.output_layer);
  row("final norm", c.final_norm);
  row("active per token", c.active);
  out += t.Render();

  TextTable f({fmt::format("FLOPs (seq {})", s), "per token", "per step"});
  const double tokens = static_cast<double>(s) * r.global_batch;
  f.AddRow({"forward", Flops(fwd), Flops(fwd * tokens)});
  f.AddRow({m.causal ? "  of which attention (s-dependent, causal half)"
                     : "  of which attention (s-dependent)",
            Flops(attn), Flops(attn * tokens)});
  f.AddRow({"training (3x forward)", Flops(train), Flops(step)});
  f.AddRow({"training, full recompute", Flops(train_full), Flops(train_full * tokens)});
  out += fmt::format("\nper step = global batch {} x {} tokens\n", r.global_batch, s);
  out += f.Render();
  return out;
}

}  // namespace

const Command& ModelCommand() {
  static const Command kCommand = MakeCommand<ModelQuery, ModelResult>(
      {.name = "model",
       .summary = "parameters and FLOPs of a model (a preset or a Hugging Face config.json)",
       .usage = "infralens model --model NAME|config.json [--seq S] [--global-batch B] [--json]",
       .examples = {"infralens model --model llama2-7b",
                    "infralens model --model deepseek-v3 --json",
                    "infralens model --model path/to/config.json --seq 4096 --global-batch 1024",
                    "infralens presets --kind models    # the preset names"},
       .formats = {"table", "json"}},
      [](ModelQuery& q, FlagSink& flags) {
        q.training.RegisterModel(flags);
        q.training.RegisterBatch(flags);
        flags.Positionals("model", &q.positional, "same as --model");
      },
      ComputeModel, JsonOrText<ModelQuery>(ModelJson, ModelText));
  return kCommand;
}

}  // namespace infralens::request
