// infralens model: parameter counts and FLOPs of one model (a preset or a config.json).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/json_writer.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "io/model_source.h"
#include "model/model.h"
#include "model/presets.h"
#include "request/training_flags.h"

namespace infralens::cli {

namespace {

// 6738415616 -> "6,738,415,616".
std::string Grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string Approx(double v) {
  if (v >= 1e12) return fmt::format("{:.4g} T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.4g} B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.4g} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.4g} K", v / 1e3);
  return fmt::format("{:g}", v);
}

std::string Flops(double v) { return fmt::format("{:.4e}", v); }

}  // namespace

Status RunModel(const std::vector<std::string>& args, CliIO& io) {
  request::TrainingFlags tf;  // --model, --global-batch and --seq, as every command declares them
  std::string format = "table", output;
  bool json = false;
  std::vector<std::string> positional;
  Flags flags("model", "parameters and FLOPs of a model (a preset or a Hugging Face config.json)",
              "infralens model --model NAME|config.json [--seq S] [--global-batch B] [--json]",
              {"infralens model --model llama2-7b", "infralens model --model deepseek-v3 --json",
               "infralens model --model path/to/config.json --seq 4096 --global-batch 1024",
               "infralens presets --kind models    # the preset names"});
  tf.RegisterModel(flags);
  tf.RegisterBatch(flags);
  AddOutputFlags(flags, &format, &json, &output, "table or json");
  flags.Positionals("model", &positional, "same as --model");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  json = format == "json";
  std::string& name = tf.model_name;
  const int seq = tf.seq;
  // No degrees here: 0 is one sequence.
  const int global_batch = tf.global_batch == 0 ? 1 : tf.global_batch;
  if (!positional.empty()) {
    if (!name.empty() || positional.size() > 1) {
      return InvalidArgument(
          "model: give one model, with --model or as the argument (see infralens model --help)");
    }
    name = positional[0];
  }
  if (name.empty()) {
    return InvalidArgument(
        "--model: required (a preset name or a config.json path; see infralens presets)");
  }
  if (seq < 0)
    return InvalidArgument(fmt::format("--seq {}: must be at least 1 (or 0 for the model's)", seq));
  if (global_batch < 1) {
    return InvalidArgument(
        fmt::format("--global-batch {}: must be at least 1 (or 0 for one sequence)", global_batch));
  }
  std::vector<std::string> unused;
  ASSIGN_OR_RETURN(model::Model m, io::ResolveModel(name, &unused));
  if (!unused.empty()) {
    io.err << fmt::format("note: {}: keys not used (they change nothing InfraLens models): {}\n",
                          name, fmt::join(unused, ", "));
  }
  if (seq > 0) {
    m.seq_len = seq;
    RETURN_IF_ERROR(model::Validate(m));
  }
  const int64_t s = m.seq_len;
  const model::ParamCounts c = model::CountParameters(m);
  const int64_t per_layer = c.num_moe_layers > 0 ? c.per_moe_layer : c.per_dense_layer;
  const double fwd = model::ForwardFlopsPerToken(m, s);
  const double attn = model::ModelAttentionFlopsPerToken(m, s);  // the part of `fwd`
  const double train = model::TrainingFlopsPerToken(m, s);
  const double train_full = model::TrainingFlopsPerToken(m, s, model::Recompute::kFull);
  const double step = model::TrainingFlopsPerStep(m, s, global_batch);

  if (json) {
    JsonWriter w;
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
    w.Key("moe");
    if (m.is_moe()) {
      w.BeginObject();
      w.Field("experts", m.num_experts);
      w.Field("top_k", m.top_k);
      w.Field("expert_ffn_hidden", m.expert_ffn_hidden);
      w.Field("shared_experts", m.num_shared_experts);
      w.Field("shared_expert_ffn_hidden", m.shared_expert_ffn_hidden);
      w.Field("first_dense_layers", m.first_dense_layers);
      w.EndObject();
    } else {
      w.Null();
    }
    w.Key("mla");
    if (m.is_mla()) {
      w.BeginObject();
      w.Field("q_lora_rank", m.q_lora_rank);
      w.Field("kv_lora_rank", m.kv_lora_rank);
      w.Field("qk_nope_head_dim", m.qk_nope_head_dim);
      w.Field("qk_rope_head_dim", m.qk_rope_head_dim);
      w.Field("v_head_dim", m.v_head_dim);
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
    w.Field("parameters", c.total);
    w.Field("parameters_per_layer", per_layer);
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
    w.Field("forward_flops_per_token", fwd);
    w.Field("attention_flops_per_token", attn);
    w.Field("flops_per_token", train);
    w.Field("flops_per_token_full_recompute", train_full);
    w.Field("global_batch", static_cast<int64_t>(global_batch));
    w.Field("flops_per_step", step);
    w.EndObject();
    return WriteOutput(output, w.str(), io);
  }

  std::string out = fmt::format("{}: {}\n{}\n\n", m.name, m.source, model::ShapeSummary(m));
  TextTable t({"parameters", "count", "approx"});
  auto row = [&](const std::string& label, int64_t v) {
    t.AddRow({label, Grouped(v), Approx(static_cast<double>(v))});
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
  const double tokens = static_cast<double>(s) * global_batch;
  f.AddRow({"forward", Flops(fwd), Flops(fwd * tokens)});
  f.AddRow({m.causal ? "  of which attention (s-dependent, causal half)"
                     : "  of which attention (s-dependent)",
            Flops(attn), Flops(attn * tokens)});
  f.AddRow({"training (3x forward)", Flops(train), Flops(step)});
  f.AddRow({"training, full recompute", Flops(train_full), Flops(train_full * tokens)});
  out += fmt::format("\nper step = global batch {} x {} tokens\n", global_batch, s);
  out += f.Render();
  return WriteOutput(output, out, io);
}

}  // namespace infralens::cli
