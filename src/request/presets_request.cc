// infralens presets: the models and GPUs compiled into the binary, one section per kind.
#include <fmt/format.h>

#include "base/strings.h"
#include "base/table.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "request/count_format.h"
#include "request/engine_requests.h"
#include "request/preset_sections.h"

namespace infralens::request {

const std::vector<PresetSection>& PresetSections() {
  static const auto* const kSections = new std::vector<PresetSection>{
      {"models", "models", ModelPresetsText, ModelPresetsJson},
      {"gpus", "GPUs", GpuPresetsText, GpuPresetsJson},
      {"clusters", "clusters", ClusterPresetsText, ClusterPresetsJson},
  };
  return *kSections;
}

std::string ModelPresetsText() {
  TextTable t({"name", "params", "active", "layers", "hidden", "heads/kv", "ffn", "vocab", "seq",
               "source"});
  t.SetAlign(9, TextTable::Align::kLeft);
  for (const auto& p : model::ModelPresets()) {
    const model::Model& m = p.model;
    const model::ParamCounts c = model::CountParameters(m);
    std::string ffn =
        m.is_moe()
            ? fmt::format("{}x{}{}", m.num_experts, m.expert_ffn_hidden,
                          m.num_shared_experts > 0 ? fmt::format("+{}", m.num_shared_experts) : "")
            : std::to_string(m.ffn_hidden);
    if (m.gated_mlp) ffn += " glu";
    const std::string heads = m.is_mla() ? fmt::format("{} mla", m.num_heads)
                                         : fmt::format("{}/{}", m.num_heads, m.num_kv_heads);
    t.AddRow({m.name, SiCount(static_cast<double>(c.total), 3),
              SiCount(static_cast<double>(c.active), 3), std::to_string(m.num_layers),
              std::to_string(m.hidden), heads, ffn, std::to_string(m.vocab),
              std::to_string(m.seq_len), m.source});
  }
  return t.Render();
}

void ModelPresetsJson(JsonWriter& w) {
  w.BeginArray();
  for (const auto& p : model::ModelPresets()) {
    const model::Model& m = p.model;
    const model::ParamCounts c = model::CountParameters(m);
    w.BeginObject();
    w.Field("name", m.name);
    w.Key("aliases").BeginArray();
    for (const auto& a : p.aliases) w.String(a);
    w.EndArray();
    w.Field("source", m.source);
    w.Field("layers", m.num_layers);
    w.Field("hidden", m.hidden);
    w.Field("heads", m.num_heads);
    w.Field("kv_heads", m.num_kv_heads);
    w.Field("vocab", m.vocab);
    w.Field("seq", m.seq_len);
    w.Field("experts", m.num_experts);
    w.Field("parameters", c.total);
    w.Field("active_parameters", c.active);
    w.EndObject();
  }
  w.EndArray();
}

std::string GpuPresetsText() {
  TextTable t({"name", "BF16 TFLOP/s", "FP8 TFLOP/s", "HBM GiB", "HBM TB/s", "scale-up GB/s/dir",
               "domain", "source"});
  t.SetAlign(7, TextTable::Align::kLeft);
  for (const hw::Gpu& g : hw::GpuPresets()) {
    t.AddRow({g.name, fmt::format("{:g}", g.bf16_flops_per_s / 1e12),
              g.fp8_flops_per_s > 0 ? fmt::format("{:g}", g.fp8_flops_per_s / 1e12) : "-",
              fmt::format("{:g}", g.hbm_bytes / (1024.0 * 1024 * 1024)),
              fmt::format("{:g}", g.hbm_bytes_per_s / 1e12),
              fmt::format("{:g}", g.scaleup_bytes_per_s / 1e9),
              std::to_string(g.scaleup_domain_gpus), g.source});
  }
  return t.Render();
}

void GpuPresetsJson(JsonWriter& w) {
  w.BeginArray();
  for (const hw::Gpu& g : hw::GpuPresets()) {
    w.BeginObject();
    w.Field("name", g.name);
    w.Field("vendor", g.vendor);
    w.Field("source", g.source);
    w.Field("bf16_flops_per_s", g.bf16_flops_per_s);
    w.Field("fp8_flops_per_s", g.fp8_flops_per_s);
    w.Field("hbm_bytes", g.hbm_bytes);
    w.Field("hbm_bytes_per_s", g.hbm_bytes_per_s);
    w.Field("scaleup_bytes_per_s", g.scaleup_bytes_per_s);
    w.Field("scaleup_domain_gpus", g.scaleup_domain_gpus);
    w.EndObject();
  }
  w.EndArray();
}

std::string ClusterPresetsText() {
  TextTable t({"name", "node", "nodes per SU", "source"});
  t.SetAlign(1, TextTable::Align::kLeft);
  t.SetAlign(3, TextTable::Align::kLeft);
  for (const auto& p : cluster::ClusterPresets()) {
    t.AddRow({p.name, cluster::DescribeNode(p.cluster.node), std::to_string(p.cluster.nodes_per_su),
              p.cluster.source});
  }
  return t.Render();
}

void ClusterPresetsJson(JsonWriter& w) {
  w.BeginArray();
  for (const auto& p : cluster::ClusterPresets()) {
    const cluster::NodeSpec& n = p.cluster.node;
    w.BeginObject();
    w.Field("name", p.name);
    w.Field("description", p.cluster.description);
    w.Field("source", p.cluster.source);
    w.Field("gpus_per_node", n.gpus_per_node);
    w.Field("gpu", n.gpu_model);
    w.Field("scale_up_bytes_per_s", n.scale_up_bytes_per_s);
    w.Field("nics_per_node", n.nics_per_node);
    w.Field("nic_bytes_per_s", n.nic_bytes_per_s);
    w.Field("nodes_per_su", p.cluster.nodes_per_su);
    w.Field("host_memory_bytes", n.host_memory_bytes);  // per node; 0: not stated
    w.EndObject();
  }
  w.EndArray();
}

std::vector<std::string> PresetKindNames() {
  std::vector<std::string> kinds;
  for (const auto& s : PresetSections()) kinds.emplace_back(s.kind);
  return kinds;
}

namespace {

// "all" or a section's kind, lower-case; InvalidArgument naming the kinds otherwise.
StatusOr<std::string> CheckKind(std::string_view kind) {
  const std::string k = ToLower(kind);
  bool known = k == "all";
  for (const auto& s : PresetSections()) known = known || k == s.kind;
  if (!known) {
    const std::vector<std::string> kinds = PresetKindNames();
    const std::string hint = ClosestMatch(k, kinds);
    return InvalidArgument(fmt::format("--kind {}: expected all, {}{}", kind, Join(kinds, ", "),
                                       hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  return k;
}

}  // namespace

StatusOr<std::string> PresetsJson(std::string_view kind, int indent) {
  ASSIGN_OR_RETURN(std::string k, CheckKind(kind));
  JsonWriter w(indent);
  w.BeginObject();
  for (const auto& s : PresetSections()) {
    if (k != "all" && k != s.kind) continue;
    w.Key(s.kind);
    s.json(w);
  }
  w.EndObject();
  return w.str();
}

void RegisterPresetKind(FlagSink& flags, std::string* kind) {
  flags.String("--kind", kind, "which section: all, " + Join(PresetKindNames(), ", "));
}

StatusOr<std::string> PresetsText(std::string_view kind) {
  ASSIGN_OR_RETURN(std::string k, CheckKind(kind));
  std::string out;
  bool first = true;
  for (const auto& s : PresetSections()) {
    if (k != "all" && k != s.kind) continue;
    out += fmt::format("{}{}:\n", first ? "" : "\n", s.title);
    out += s.text();
    first = false;
  }
  return out;
}

namespace {

struct PresetsQuery {
  std::string kind = "all";
};

}  // namespace

const Command& PresetsCommand() {
  static const Command kCommand = MakeCommand<PresetsQuery, std::string>(
      {.name = "presets",
       .summary = "list the model and hardware presets built into infralens",
       .usage = "infralens presets [--kind " + Join(PresetKindNames(), "|") + "] [--json]",
       .examples = {"infralens presets", "infralens presets --kind models",
                    "infralens presets --kind gpus --json"},
       .formats = {"table", "json"},
       .format_help = "table or json (one array per section)"},
      [](PresetsQuery& q, FlagSink& flags) { RegisterPresetKind(flags, &q.kind); },
      // The kind, checked; the sections are the document's.
      [](const PresetsQuery& q, const RunContext&) { return CheckKind(q.kind); },
      [](const std::string& kind, const PresetsQuery&, const RunContext& ctx) {
        return ctx.format == "json" ? PresetsJson(kind, ctx.json_indent) : PresetsText(kind);
      });
  return kCommand;
}

}  // namespace infralens::request
