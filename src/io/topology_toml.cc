#include "io/topology_toml.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

// Error values instead of exceptions (toml::parse returns a parse_result), and no formatters:
// this file only reads.
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/impl/preprocessor.h>
// toml++ 3.3 states its parser's invariants with TOML_ASSERT_ASSUME: assert() in debug builds and
// __builtin_assume (undefined behaviour when false) in clang release builds. A malformed header
// such as "[[[" breaks one (impl/parser.inl, parse_key: "is_bare_key_character(*cp) ||
// is_string_delimiter(*cp)"), found by the ASan debug tests. As a no-op the parser reaches its
// own "expected bare key" error, as GCC release builds (no __builtin_assume) already do.
// preprocessor.h is `#pragma once`, so this definition is the one toml.h's parser sees.
#undef TOML_ASSERT_ASSUME
#define TOML_ASSERT_ASSUME(expr) static_assert(true)
#include <toml++/toml.h>

namespace infralens::io {

using cluster::Cluster;

namespace {

std::string TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

// Reads the fields of one table, refusing keys it does not know.
class TomlReader {
 public:
  TomlReader(const toml::table& t, std::string prefix, std::vector<std::string> allowed)
      : table_(t), prefix_(std::move(prefix)), allowed_(std::move(allowed)) {}

  Status CheckKeys() const {
    for (auto&& [key, node] : table_) {
      bool known = false;
      for (const auto& a : allowed_) known |= key.str() == a;
      if (!known) {
        std::string list;
        for (const auto& a : allowed_) list += (list.empty() ? "" : ", ") + a;
        return InvalidArgument(
            fmt::format("unknown key '{}{}'; allowed {}: {}", prefix_, Printable(key.str()),
                        prefix_.empty() ? "at the top level"
                                        : "in [" + prefix_.substr(0, prefix_.size() - 1) + "]",
                        list));
      }
    }
    return Status::Ok();
  }

  const toml::node* Get(std::string_view key) const { return table_.get(key); }
  std::string Name(std::string_view key) const { return prefix_ + std::string(key); }

  StatusOr<std::optional<std::string>> String(std::string_view key) const {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::optional<std::string>();
    if (!n->is_string())
      return InvalidArgument(fmt::format("{}: expected a string, got {}", Name(key), TypeName(*n)));
    return std::optional<std::string>(n->as_string()->get());
  }

  // An integer in [lo, hi].
  StatusOr<std::optional<int>> Int(std::string_view key, int64_t lo, int64_t hi) const {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::optional<int>();
    if (!n->is_integer()) {
      return InvalidArgument(
          fmt::format("{}: expected an integer, got {}", Name(key), TypeName(*n)));
    }
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      return InvalidArgument(fmt::format("{} = {}: must be {}..{}", Name(key), v, lo, hi));
    return std::optional<int>(static_cast<int>(v));
  }

  // A finite number (integer or float); range checks are Validate's.
  StatusOr<std::optional<double>> Number(std::string_view key) const {
    const toml::node* n = Get(key);
    if (n == nullptr) return std::optional<double>();
    double v = 0;
    if (n->is_integer()) {
      v = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      v = n->as_floating_point()->get();
    } else {
      return InvalidArgument(fmt::format("{}: expected a number, got {}", Name(key), TypeName(*n)));
    }
    if (!std::isfinite(v))
      return InvalidArgument(fmt::format("{} = {}: must be a finite number", Name(key), v));
    return std::optional<double>(v);
  }

  // Keys are user text: keep error lines printable and short.
  static std::string Printable(std::string_view s, size_t max = 64) {
    std::string out;
    for (char ch : s.substr(0, max)) {
      out += (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ? '?' : ch;
    }
    return s.size() > max ? out + "..." : out;
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  std::vector<std::string> allowed_;
};

// Bandwidth fields must be positive; reported in the unit the file uses.
Status CheckPositive(const std::string& name, double v, std::string_view unit) {
  if (v <= 0)
    return InvalidArgument(fmt::format("{} = {:g}: must be a bandwidth > 0 {}", name, v, unit));
  return Status::Ok();
}

// The bandwidth `key` of `r`, written in `unit` of `bytes_per_unit` bytes/s each, into
// `bytes_per_s`; when the key is absent and `required`, its name joins `missing`.
Status ReadBandwidth(const TomlReader& r, std::string_view key, std::string_view unit,
                     double bytes_per_unit, bool required, double& bytes_per_s,
                     std::vector<std::string>& missing) {
  ASSIGN_OR_RETURN(auto v, r.Number(key));
  if (v) {
    RETURN_IF_ERROR(CheckPositive(r.Name(key), *v, unit));
    bytes_per_s = *v * bytes_per_unit;
  } else if (required) {
    missing.push_back(r.Name(key));
  }
  return Status::Ok();
}

const toml::table* SubTable(const toml::table& root, std::string_view key, Status* error) {
  const toml::node* n = root.get(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) {
    *error =
        InvalidArgument(fmt::format("{}: expected a table ([{}]), got {}", key, key, TypeName(*n)));
    return nullptr;
  }
  return n->as_table();
}

// ASCII only: toml++ 3.3's whitespace classifier reaches __builtin_unreachable on some code
// points (e.g. U+FEFB, U+3041: unicode_autogenerated.h, is_non_ascii_horizontal_whitespace),
// found by fuzz/topology_toml_fuzz.cc. Every key and value here is ASCII anyway.
Status CheckTopologyAscii(std::string_view text) {
  for (size_t i = 0, line = 1, column = 1; i < text.size(); ++i, ++column) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch >= 0x80) {
      return InvalidArgument(fmt::format(
          "line {}, column {}: byte 0x{:02X} is not ASCII; topology files are ASCII text", line,
          column, ch));
    }
    if (ch == '\n') {
      ++line;
      column = 0;
    }
  }
  return Status::Ok();
}

// The cluster the file starts from: its base preset (named as the source), or an empty one with
// efficiencies 1; named default_name and "user topology" until the file names it.
StatusOr<Cluster> TopologyBase(const std::optional<std::string>& base,
                               std::string_view default_name) {
  Cluster c;
  if (base) {
    auto preset = cluster::FindClusterPreset(*base);
    if (!preset.ok()) {
      return InvalidArgument(fmt::format("base = \"{}\": unknown preset; expected one of {}",
                                         TomlReader::Printable(*base),
                                         cluster::ClusterPresetNames()));
    }
    c = *preset;
    c.source = "topology file based on " + c.name + " (" + c.source + ")";
  } else {
    c.node.scale_up_efficiency = c.node.pcie_efficiency = c.node.nic_efficiency = 1.0;
    c.source = "topology file";
  }
  c.name = std::string(default_name);
  c.description = "user topology";
  return c;
}

// The top level's names and counts: name, description, GPU model, GPUs per node, nodes, nodes per
// scalable unit, the node's host memory.
Status ReadTopologyNode(const TomlReader& top, Cluster* c, bool* has_gpus_per_node) {
  ASSIGN_OR_RETURN(auto name, top.String("name"));
  if (name) {
    if (name->empty() || name->size() > 64)
      return InvalidArgument("name: must be 1..64 characters");
    c->name = TomlReader::Printable(*name);
  }
  ASSIGN_OR_RETURN(auto description, top.String("description"));
  if (description) c->description = TomlReader::Printable(description->substr(0, 200));
  ASSIGN_OR_RETURN(auto model, top.String("gpu_model"));
  if (model) c->node.gpu_model = TomlReader::Printable(*model);
  ASSIGN_OR_RETURN(auto gpn, top.Int("gpus_per_node", 1, cluster::kMaxGpusPerNode));
  *has_gpus_per_node = gpn.has_value();
  if (gpn) c->node.gpus_per_node = *gpn;
  ASSIGN_OR_RETURN(auto nodes, top.Int("nodes", 1, cluster::kMaxGpus));
  if (nodes) c->num_nodes = *nodes;
  ASSIGN_OR_RETURN(auto su, top.Int("nodes_per_su", 1, cluster::kMaxGpus));
  if (su) c->nodes_per_su = *su;
  // The node's host memory (cluster::Validate checks the range; 0 = unknown).
  ASSIGN_OR_RETURN(auto host, top.Number("host_memory_GiB"));
  if (host) c->node.host_memory_bytes = *host * cluster::kGiB;
  return Status::Ok();
}

// [scale_up]: the fabric, its bandwidth (GB/s) and efficiency.
Status ReadTopologyScaleUp(const toml::table& t, bool has_base, Cluster* c,
                           std::vector<std::string>* missing) {
  TomlReader r(t, "scale_up.", {"fabric", "bandwidth_GBps", "efficiency", "nvls_efficiency"});
  RETURN_IF_ERROR(r.CheckKeys());
  ASSIGN_OR_RETURN(auto fabric, r.String("fabric"));
  if (fabric) {
    auto f = cluster::ParseFabric(*fabric);
    if (!f.ok()) {
      return InvalidArgument(fmt::format(
          "scale_up.fabric = \"{}\": expected nvswitch, nvlink-bridge, full-mesh or pcie",
          TomlReader::Printable(*fabric)));
    }
    c->node.fabric = *f;
  } else if (!has_base) {
    missing->push_back("scale_up.fabric");
  }
  RETURN_IF_ERROR(ReadBandwidth(r, "bandwidth_GBps", "GB/s", 1e9, !has_base,
                                c->node.scale_up_bytes_per_s, *missing));
  ASSIGN_OR_RETURN(auto eff, r.Number("efficiency"));
  if (eff) c->node.scale_up_efficiency = *eff;
  // NVLink SHARP: a base preset's value stands unless given (0 turns it off); cluster::Validate
  // checks it is a fraction and that the fabric is an NVSwitch. A fabric given without it has none.
  ASSIGN_OR_RETURN(auto nvls, r.Number("nvls_efficiency"));
  if (nvls) {
    c->node.nvls_efficiency = *nvls;
  } else if (fabric && c->node.fabric != cluster::ScaleUpFabric::kNvSwitch) {
    c->node.nvls_efficiency = 0;
  }
  return Status::Ok();
}

// [pcie]: the host link's bandwidth (GB/s) and efficiency, both optional.
Status ReadTopologyPcie(const toml::table& t, Cluster* c, std::vector<std::string>* missing) {
  TomlReader r(t, "pcie.", {"bandwidth_GBps", "efficiency"});
  RETURN_IF_ERROR(r.CheckKeys());
  RETURN_IF_ERROR(ReadBandwidth(r, "bandwidth_GBps", "GB/s", 1e9, /*required=*/false,
                                c->node.pcie_bytes_per_s, *missing));
  ASSIGN_OR_RETURN(auto eff, r.Number("efficiency"));
  if (eff) c->node.pcie_efficiency = *eff;
  return Status::Ok();
}

// [network]: NICs per node, their line rate (Gb/s) and efficiency.
Status ReadTopologyNetwork(const toml::table& t, bool has_base, Cluster* c,
                           std::vector<std::string>* missing) {
  TomlReader r(t, "network.", {"nics_per_node", "nic_Gbps", "efficiency"});
  RETURN_IF_ERROR(r.CheckKeys());
  ASSIGN_OR_RETURN(auto nics, r.Int("nics_per_node", 1, cluster::kMaxNicsPerNode));
  if (nics) {
    c->node.nics_per_node = *nics;
  } else if (!has_base) {
    missing->push_back("network.nics_per_node");
  }
  // A NIC's line rate is in bits: 1 Gb/s = 1e9 / 8 bytes/s.
  RETURN_IF_ERROR(
      ReadBandwidth(r, "nic_Gbps", "Gb/s", 1e9 / 8, !has_base, c->node.nic_bytes_per_s, *missing));
  ASSIGN_OR_RETURN(auto eff, r.Number("efficiency"));
  if (eff) c->node.nic_efficiency = *eff;
  return Status::Ok();
}

}  // namespace

StatusOr<Cluster> ParseTopologyToml(std::string_view text, std::string_view default_name) {
  if (text.size() > kMaxTopologyBytes) {
    return InvalidArgument(
        fmt::format("topology is {} bytes, over the limit of {}", text.size(), kMaxTopologyBytes));
  }
  // A leading UTF-8 byte order mark is harmless; strip it.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  RETURN_IF_ERROR(CheckTopologyAscii(text));
  toml::parse_result parsed = toml::parse(text);
  if (!parsed) {
    const auto& err = parsed.error();
    std::string what(err.description());
    for (char& ch : what) {
      if (ch == '\n' || ch == '\r') ch = ' ';
    }
    return InvalidArgument(fmt::format("line {}, column {}: {}", err.source().begin.line,
                                       err.source().begin.column,
                                       TomlReader::Printable(what, 160)));
  }
  const toml::table& root = parsed.table();
  TomlReader top(root, "",
                 {"name", "base", "description", "gpu_model", "gpus_per_node", "nodes",
                  "nodes_per_su", "host_memory_GiB", "scale_up", "pcie", "network"});
  RETURN_IF_ERROR(top.CheckKeys());

  ASSIGN_OR_RETURN(auto base, top.String("base"));
  ASSIGN_OR_RETURN(Cluster c, TopologyBase(base, default_name));
  bool gpn = false;
  RETURN_IF_ERROR(ReadTopologyNode(top, &c, &gpn));

  Status sub_error;
  const toml::table* up = SubTable(root, "scale_up", &sub_error);
  RETURN_IF_ERROR(sub_error);
  const toml::table* pcie = SubTable(root, "pcie", &sub_error);
  RETURN_IF_ERROR(sub_error);
  const toml::table* net = SubTable(root, "network", &sub_error);
  RETURN_IF_ERROR(sub_error);

  std::vector<std::string> missing;
  if (!base && !gpn) missing.push_back("gpus_per_node");
  static const toml::table kEmpty;
  RETURN_IF_ERROR(ReadTopologyScaleUp(up ? *up : kEmpty, base.has_value(), &c, &missing));
  RETURN_IF_ERROR(ReadTopologyPcie(pcie ? *pcie : kEmpty, &c, &missing));
  RETURN_IF_ERROR(ReadTopologyNetwork(net ? *net : kEmpty, base.has_value(), &c, &missing));
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return InvalidArgument(
        fmt::format("missing {} (required unless base = \"<preset>\" is given)", list));
  }
  RETURN_IF_ERROR(cluster::Validate(c));
  return c;
}

namespace {
// A TOML basic string: quotes and backslashes escaped (names are already printable).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}
}  // namespace

std::string WriteTopologyToml(const Cluster& c) {
  const auto& n = c.node;
  std::string out = fmt::format("# infralens topology: {}\n# {}\n# source: {}\n", c.name,
                                c.description, c.source);
  out +=
      fmt::format("name = {}\ngpu_model = {}\ngpus_per_node = {}\nnodes = {}\nnodes_per_su = {}\n",
                  Quote(c.name), Quote(n.gpu_model), n.gpus_per_node, c.num_nodes, c.nodes_per_su);
  if (n.host_memory_bytes > 0) {
    out += fmt::format("host_memory_GiB = {}  # per node\n", n.host_memory_bytes / cluster::kGiB);
  }
  out += fmt::format(
      "\n[scale_up]\nfabric = \"{}\"\nbandwidth_GBps = {}  # per GPU per direction\nefficiency = "
      "{}\n",
      cluster::FabricName(n.fabric), n.scale_up_bytes_per_s / 1e9, n.scale_up_efficiency);
  if (n.nvls_efficiency > 0) {
    out += fmt::format("nvls_efficiency = {}  # NVLink SHARP all-reduce, of bandwidth_GBps\n",
                       n.nvls_efficiency);
  }
  out += fmt::format("\n[pcie]\nbandwidth_GBps = {}\nefficiency = {}\n", n.pcie_bytes_per_s / 1e9,
                     n.pcie_efficiency);
  out += fmt::format("\n[network]\nnics_per_node = {}\nnic_Gbps = {}  # per NIC\nefficiency = {}\n",
                     n.nics_per_node, n.nic_bytes_per_s * 8 / 1e9, n.nic_efficiency);
  return out;
}

}  // namespace infralens::io
