// infralens topology: a cluster, a job's rank placement on it, and the link class every group of
// every parallel axis crosses. Draws the nodes (ASCII or SVG) with each GPU labelled by its group
// on one axis, so "which collective crosses which link" can be read off the picture.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/json_writer.h"
#include "base/strings.h"
#include "base/table.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "io/topology_toml.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"

namespace infralens::request {

namespace {

using cluster::Axis;
using cluster::AxisLinks;
using cluster::Cluster;
using cluster::LinkClass;
using cluster::Placement;

// JSON lists every group's ranks up to this many GPUs (beyond: one example group per axis).
constexpr int64_t kMaxListedGpus = 4096;

// "0-7", "0 8 16 24", "0 8 16 ... 1016 (128 ranks, step 8)".
std::string RankList(const std::vector<int64_t>& r) {
  if (r.empty()) return "";
  if (r.size() == 1) return std::to_string(r[0]);
  const int64_t step = r[1] - r[0];
  bool even = true;
  for (size_t i = 2; i < r.size(); ++i) even &= r[i] - r[i - 1] == step;
  if (even && step == 1) return fmt::format("{}-{}", r.front(), r.back());
  if (r.size() <= 6) return fmt::format("{}", fmt::join(r, " "));
  if (even) {
    return fmt::format("{} {} {} ... {} ({} ranks, step {})", r[0], r[1], r[2], r.back(), r.size(),
                       step);
  }
  return fmt::format("{} {} {} {} ... ({} ranks)", r[0], r[1], r[2], r[3], r.size());
}

// "scale-up" when every group of the axis crosses one class, else "rail x12, spine x4".
std::string LinkSummary(const AxisLinks& a) {
  std::vector<std::string> parts;
  for (int k = 0; k < cluster::kNumLinkClasses; ++k) {
    if (a.groups_per_class[k] == 0) continue;
    parts.push_back(
        a.groups_per_class[k] == a.groups
            ? std::string(cluster::LinkClassName(LinkClass(k)))
            : fmt::format("{} x{}", cluster::LinkClassName(LinkClass(k)), a.groups_per_class[k]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string Header(const Cluster& c, const Placement& p, Axis color_axis) {
  const int sus = (c.num_nodes + c.nodes_per_su - 1) / c.nodes_per_su;
  std::string out =
      fmt::format("{}: {} node{} = {} GPUs; {}\n", c.name, c.num_nodes, c.num_nodes == 1 ? "" : "s",
                  c.num_gpus(), cluster::DescribeNode(c.node));
  out += fmt::format(
      "network: rail-optimised, {} nodes per scalable unit (one leaf switch per rail per SU), {} "
      "SU{}; "
      "GB/s = 1e9 bytes/s\n",
      c.nodes_per_su, sus, sus == 1 ? "" : "s");
  out += fmt::format(
      "placement: {}, order {} (leftmost varies fastest); GPUs labelled with their {} group\n",
      cluster::MegatronDegreesString(p), p.OrderString(), cluster::MegatronAxisName(p, color_axis));
  return out;
}

std::string AxisTable(const Cluster& c, const Placement& p, const std::vector<AxisLinks>& axes) {
  if (axes.empty()) return "every degree is 1: no group communicates\n";
  TextTable t({"axis", "degree", "groups", "link class", "nodes/group", "SUs/group",
               "example group (ranks)"});
  t.SetAlign(3, TextTable::Align::kLeft);
  t.SetAlign(6, TextTable::Align::kLeft);
  std::vector<int64_t> ranks;
  for (const auto& a : axes) {
    p.SetGroupRanks(a.axes, a.worst_group, &ranks);
    t.AddRow({a.name, std::to_string(a.degree), std::to_string(a.groups), LinkSummary(a),
              std::to_string(a.worst.nodes), std::to_string(a.worst.sus), RankList(ranks)});
  }
  std::string out = t.Render();
  out += "\nlink classes, innermost first:\n";
  for (LinkClass k : {LinkClass::kNvLinkBridge, LinkClass::kScaleUp, LinkClass::kPcie,
                      LinkClass::kRail, LinkClass::kSpine}) {
    bool used = false;
    for (const auto& a : axes) used |= a.groups_per_class[static_cast<int>(k)] > 0;
    if (used)
      out += fmt::format("  {:<13} {}\n", cluster::LinkClassName(k), cluster::LinkClassTitle(k));
  }
  (void)c;
  return out;
}

// One box per node: ranks, the colour axis's group index and the rail of every GPU.
std::string Ascii(const Cluster& c, const Placement& p, Axis axis, int first, int max_nodes,
                  bool color) {
  const int gpn = c.node.gpus_per_node;
  const int end_node = first + std::min(c.num_nodes - first, max_nodes);
  const int64_t max_label = std::max<int64_t>(c.num_gpus() - 1, p.NumGroups(axis) - 1);
  const int w = std::max<int>(4, static_cast<int>(std::to_string(max_label).size()) + 1);
  const int per_row = std::min(gpn, 16);
  const std::string group_title = fmt::format("{} group", cluster::MegatronAxisName(p, axis));
  const int title_w = 9;
  const int inner = title_w + per_row * w + 1;
  std::string out;
  if (first > 0) {
    out += fmt::format("... nodes 0 to {} not drawn; --first-node N starts elsewhere\n", first - 1);
  }
  for (int node = first; node < end_node; ++node) {
    const int64_t first_rank = int64_t{node} * gpn;
    std::string title = fmt::format("- node {} . SU {} . ranks {}-{} ", node, node / c.nodes_per_su,
                                    first_rank, first_rank + gpn - 1);
    std::string top = "+" + title;
    if (static_cast<int>(top.size()) < inner + 1) top += std::string(inner + 1 - top.size(), '-');
    out += top + "+\n";
    for (int start = 0; start < gpn; start += per_row) {
      const int end = std::min(gpn, start + per_row);
      std::string rank_row = fmt::format("| {:<{}}", "rank", title_w - 1);
      std::string group_row = fmt::format("| {:<{}}", group_title, title_w - 1);
      std::string rail_row = fmt::format("| {:<{}}", "rail", title_w - 1);
      for (int local = start; local < end; ++local) {
        const int64_t rank = first_rank + local;
        const int64_t g = p.GroupIndex(rank, axis);
        rank_row += fmt::format("{:>{}}", rank, w);
        std::string cell = fmt::format("{:>{}}", g, w);
        // Six ANSI colours cycling by group: neighbouring groups differ.
        group_row += color ? fmt::format("\x1b[{}m{}\x1b[0m", 31 + g % 6, cell) : cell;
        rail_row += fmt::format("{:>{}}", c.RailOf(local), w);
      }
      const int pad = (per_row - (end - start)) * w + 1;
      for (std::string* row : {&rank_row, &group_row, &rail_row})
        *row += std::string(pad, ' ') + "|\n";
      out += rank_row + group_row + rail_row;
    }
    out += '+';
    out.append(inner, '-');
    out += "+\n";
  }
  if (end_node < c.num_nodes) {
    out += fmt::format("... {} more node{} ({} to {}) not drawn; --max-nodes N draws more\n",
                       c.num_nodes - end_node, c.num_nodes - end_node == 1 ? "" : "s", end_node,
                       c.num_nodes - 1);
  }
  return out;
}

// Nodes in a grid (up to 4 per row), GPUs as squares coloured by their group on `axis`
// (hue by golden-angle steps so neighbouring groups differ), ranks written inside.
std::string Svg(const Cluster& c, const Placement& p, const std::vector<AxisLinks>& axes, Axis axis,
                int first, int max_nodes) {
  const int gpn = c.node.gpus_per_node;
  const int drawn = std::min(c.num_nodes - first, max_nodes);
  const int cols = std::min(gpn, 8), rows = (gpn + cols - 1) / cols;
  const int cell = 34, pad = 12;
  const int node_w = cols * cell + 2 * pad, node_h = rows * cell + 2 * pad + 18;
  const int per_line = std::min(drawn, 4);
  const int lines = (drawn + per_line - 1) / per_line;
  const int width = std::max(640, per_line * (node_w + 20) + 20);
  const int top = 70;
  const int legend_y = top + lines * (node_h + 20) + 10;
  const int height = legend_y + 30 + 20 * static_cast<int>(axes.size() + 1);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"#ffffff\"/>\n",
      width, height, width, height);
  out += fmt::format(
      "<text x=\"20\" y=\"28\" font-size=\"18\" font-weight=\"bold\">{}: {} x {} = {} "
      "GPUs</text>\n",
      XmlEscape(c.name), c.num_nodes, XmlEscape(c.node.gpu_model), c.num_gpus());
  out += fmt::format(
      "<text x=\"20\" y=\"50\" font-size=\"13\" fill=\"#444\">{}, order {}; colour = {} group; "
      "{} nodes per SU</text>\n",
      XmlEscape(cluster::MegatronDegreesString(p)), p.OrderString(),
      cluster::MegatronAxisName(p, axis), c.nodes_per_su);
  for (int node = first; node < first + drawn; ++node) {
    const int x0 = 20 + ((node - first) % per_line) * (node_w + 20);
    const int y0 = top + ((node - first) / per_line) * (node_h + 20);
    out += fmt::format(
        "<g><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"#f4f4f6\" "
        "stroke=\"#888\"/>\n"
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#222\">node {} (SU {})</text>\n",
        x0, y0, node_w, node_h, x0 + pad, y0 + 16, node, node / c.nodes_per_su);
    for (int local = 0; local < gpn; ++local) {
      const int64_t rank = int64_t{node} * gpn + local;
      const int64_t g = p.GroupIndex(rank, axis);
      const double hue = std::fmod(static_cast<double>(g) * 137.508, 360.0);
      const int x = x0 + pad + (local % cols) * cell, y = y0 + pad + 18 + (local / cols) * cell;
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" "
          "fill=\"hsl({:.0f},65%,72%)\" "
          "stroke=\"#555\"><title>rank {} local {} rail {} {} group {}</title></rect>\n"
          "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
          x, y, cell - 4, cell - 4, hue, rank, local, c.RailOf(local),
          cluster::MegatronAxisName(p, axis), g, x + (cell - 4) / 2, y + (cell - 4) / 2 + 4, rank);
    }
    out += "</g>\n";
  }
  int y = legend_y;
  if (first > 0) {
    out += fmt::format(
        "<text x=\"20\" y=\"{}\" font-size=\"12\" fill=\"#444\">... nodes 0 to {} not "
        "drawn</text>\n",
        y, first - 1);
    y += 16;
  }
  if (first + drawn < c.num_nodes) {
    out += fmt::format(
        "<text x=\"20\" y=\"{}\" font-size=\"12\" fill=\"#444\">... {} more nodes not "
        "drawn</text>\n",
        y, c.num_nodes - first - drawn);
  }
  y += 24;
  for (const auto& a : axes) {
    out += fmt::format(
        "<text x=\"20\" y=\"{}\" font-size=\"13\">{} = {}: {} groups, link: {}</text>\n", y, a.name,
        a.degree, a.groups, XmlEscape(LinkSummary(a)));
    y += 20;
  }
  return out + "</svg>\n";
}

// Index of the group over `axes` that holds `rank`, numbered as Placement::SetGroupRanks numbers
// them: by the coordinates on the other axes, leftmost fastest.
int64_t SetGroupIndex(const Placement& p, const std::vector<Axis>& axes, int64_t rank) {
  int64_t g = 0, scale = 1;
  for (Axis a : p.order()) {
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) continue;
    g += scale * p.Coord(rank, a);
    scale *= p.degree(a);
  }
  return g;
}

// Every drawn GPU (nodes [first, first + max_nodes)): where it sits, its coordinate on each
// placement axis, its group of every kind with the link class that group crosses, and its group
// on the colour axis, so that a page can draw the picture the SVG draws and the links of any
// group. Then the overview: the colour group of every GPU of the cluster, one number each (at most
// cluster::kMaxGpus of them, about 6 bytes each), so that a page can draw all of a cluster of
// thousands of nodes small while it draws a window of them in full.
void DrawingJson(JsonWriter& w, const TopologyResult& t, int first, int max_nodes) {
  const Cluster& c = t.cluster;
  const Placement& p = t.placement;
  const int drawn = std::min(c.num_nodes - first, max_nodes);
  w.Key("drawing").BeginObject();
  w.Field("color_axis", cluster::MegatronAxisName(p, t.color_axis));
  w.Field("color_groups", p.NumGroups(t.color_axis));
  w.Field("first_node", first).Field("nodes_drawn", drawn).Field("nodes", c.num_nodes);
  // The link class of each drawn GPU's group of every kind, each group classified once.
  std::vector<std::map<int64_t, LinkClass>> links(t.axes.size());
  std::vector<int64_t> members;
  auto link_of = [&](size_t kind, int64_t g) {
    auto [it, inserted] = links[kind].try_emplace(g, LinkClass::kNone);
    if (inserted) {
      p.SetGroupRanks(t.axes[kind].axes, g, &members);
      it->second = cluster::ClassifyGroup(c, members).link;
    }
    return it->second;
  };
  w.Key("gpus").BeginArray();
  const int64_t gpn = c.node.gpus_per_node;
  for (int64_t rank = first * gpn; rank < (first + drawn) * gpn; ++rank) {
    w.BeginObject();
    w.Field("rank", rank).Field("node", c.NodeOf(rank)).Field("local", c.LocalOf(rank));
    w.Field("su", c.SuOf(rank)).Field("rail", c.RailOf(c.LocalOf(rank)));
    w.Key("coords").BeginObject();
    for (Axis a : cluster::kAllAxes) w.Field(cluster::MegatronAxisName(p, a), p.Coord(rank, a));
    w.EndObject();
    w.Key("groups").BeginObject();
    for (const auto& a : t.axes) w.Field(a.name, SetGroupIndex(p, a.axes, rank));
    w.EndObject();
    w.Key("links").BeginObject();
    for (size_t k = 0; k < t.axes.size(); ++k) {
      w.Field(t.axes[k].name,
              cluster::LinkClassName(link_of(k, SetGroupIndex(p, t.axes[k].axes, rank))));
    }
    w.EndObject();
    w.Field("color_group", p.GroupIndex(rank, t.color_axis));
    w.EndObject();
  }
  w.EndArray();
  w.Key("overview").BeginObject();
  w.Field("nodes", c.num_nodes).Field("gpus_per_node", c.node.gpus_per_node);
  w.Field("nodes_per_su", c.nodes_per_su);
  w.Key("color_group").BeginArray();
  for (int64_t rank = 0; rank < c.num_gpus(); ++rank) w.Int(p.GroupIndex(rank, t.color_axis));
  w.EndArray();
  w.EndObject();
  w.EndObject();
}

Status CheckMaxNodes(const TopologyQuery& q) {
  if (q.max_nodes < 1 || q.max_nodes > kMaxDrawnNodes) {
    return InvalidArgument(
        fmt::format("--max-nodes {}: must be 1..{}", q.max_nodes, kMaxDrawnNodes));
  }
  return Status::Ok();
}

}  // namespace

void TopologyQuery::Register(FlagSink& flags) {
  flags.String("--color-axis", &color_axis,
               "label GPUs by their group on this axis; default the fastest axis > 1");
  flags.Int("--max-nodes", &max_nodes, "nodes to draw (1..256)");
  flags.Int("--first-node", &first_node, "the first node drawn (0..nodes-1)");
  flags.Bool("--coordinates", &coordinates,
             "JSON: add \"drawing\", each drawn GPU's node, rail, coordinates and groups");
}

StatusOr<TopologyResult> ComputeTopology(const TopologyQuery& q, const GivenFn& given) {
  RETURN_IF_ERROR(CheckMaxNodes(q));
  TopologyResult t;
  ASSIGN_OR_RETURN(t.cluster, q.cluster.Load(given));
  if (q.first_node < 0 || q.first_node >= t.cluster.num_nodes) {
    return InvalidArgument(fmt::format("--first-node {}: must be 0..{} (the cluster's nodes)",
                                       q.first_node, t.cluster.num_nodes - 1));
  }
  ASSIGN_OR_RETURN(t.placement, q.cluster.Place(t.cluster));
  const Placement& p = t.placement;
  if (!q.color_axis.empty()) {
    auto a = cluster::ParseAxis(q.color_axis);
    if (!a.ok())
      return InvalidArgument(
          fmt::format("--color-axis {}: expected tp, cp, ep, dp or pp", q.color_axis));
    t.color_axis = *a;
  } else {
    for (Axis a : p.order()) {
      if (p.degree(a) > 1) {
        t.color_axis = a;
        break;
      }
    }
  }
  t.axes = cluster::ClassifyAxes(t.cluster, p);
  return t;
}

std::string TopologyJson(const TopologyResult& t, const TopologyQuery& q, int indent) {
  const Cluster& c = t.cluster;
  const Placement& p = t.placement;
  const auto& n = c.node;
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("cluster").BeginObject();
  w.Field("name", c.name).Field("description", c.description).Field("source", c.source);
  w.Field("gpu_model", n.gpu_model)
      .Field("gpus_per_node", n.gpus_per_node)
      .Field("nodes", c.num_nodes);
  w.Field("gpus", c.num_gpus()).Field("nodes_per_su", c.nodes_per_su);
  w.Field("sus", (c.num_nodes + c.nodes_per_su - 1) / c.nodes_per_su);
  w.Field("scale_up_fabric", cluster::FabricName(n.fabric));
  w.Field("scale_up_GBps", n.scale_up_bytes_per_s / 1e9)
      .Field("scale_up_efficiency", n.scale_up_efficiency);
  w.Field("pcie_GBps", n.pcie_bytes_per_s / 1e9).Field("pcie_efficiency", n.pcie_efficiency);
  w.Field("nics_per_node", n.nics_per_node).Field("nic_Gbps", n.nic_bytes_per_s * 8 / 1e9);
  w.Field("nic_efficiency", n.nic_efficiency);
  w.EndObject();
  w.Field("units",
          "GBps = 1e9 bytes/s per GPU per direction; Gbps = 1e9 bits/s per NIC per direction");
  w.Key("placement").BeginObject();
  w.Field("order", p.OrderString()).Field("world_size", p.world_size());
  w.Key("degrees").BeginObject();
  // Megatron's degrees: dp counts every data-parallel rank, ep included.
  for (Axis a : cluster::kAllAxes) {
    w.Field(cluster::AxisName(a), a == Axis::kDp ? cluster::DataParallelDegree(p) : p.degree(a));
  }
  w.EndObject();
  w.Key("strides").BeginObject();
  // Strides of the placement's independent axes (edp: the data-parallel factor left after ep).
  for (Axis a : cluster::kAllAxes) w.Field(cluster::MegatronAxisName(p, a), p.stride(a));
  w.EndObject();
  w.EndObject();
  std::vector<int64_t> ranks;
  w.Key("axes").BeginArray();
  for (const auto& a : t.axes) {
    w.BeginObject();
    w.Field("axis", a.name).Field("degree", a.degree).Field("groups", a.groups);
    w.Field("link", cluster::LinkClassName(a.worst.link));
    w.Key("groups_per_link").BeginObject();
    for (int k = 0; k < cluster::kNumLinkClasses; ++k) {
      if (a.groups_per_class[k] > 0)
        w.Field(cluster::LinkClassName(LinkClass(k)), a.groups_per_class[k]);
    }
    w.EndObject();
    w.Field("nodes_per_group", a.worst.nodes).Field("sus_per_group", a.worst.sus);
    w.Field("rail_aligned", a.worst.rail_aligned);
    p.SetGroupRanks(a.axes, a.worst_group, &ranks);
    w.Field("example_group", a.worst_group);
    w.Key("example_ranks").BeginArray();
    for (int64_t r : ranks) w.Int(r);
    w.EndArray();
    if (p.world_size() <= kMaxListedGpus) {
      w.Key("group_ranks").BeginArray();
      for (int64_t g = 0; g < a.groups; ++g) {
        p.SetGroupRanks(a.axes, g, &ranks);
        w.BeginArray();
        for (int64_t r : ranks) w.Int(r);
        w.EndArray();
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  if (q.coordinates) DrawingJson(w, t, q.first_node, q.max_nodes);
  w.EndObject();
  return w.str();
}

std::string TopologyText(const TopologyResult& t, const TopologyQuery& q, std::string_view format,
                         bool color) {
  if (format == "svg") {
    return Svg(t.cluster, t.placement, t.axes, t.color_axis, q.first_node, q.max_nodes);
  }
  return Header(t.cluster, t.placement, t.color_axis) + "\n" +
         Ascii(t.cluster, t.placement, t.color_axis, q.first_node, q.max_nodes, color) + "\n" +
         AxisTable(t.cluster, t.placement, t.axes);
}

const Command& TopologyCommand() {
  static const Command kCommand = MakeCommand<TopologyQuery, TopologyResult>(
      {.name = "topology",
       .summary = "a cluster, a job's rank placement on it, and the link class each group crosses",
       .usage = "infralens topology [--cluster PRESET|FILE.toml] [--nodes N] [--tp T --pp P --dp D "
                "--cp C --ep E] [--order O] [--format ascii|svg|json|toml]",
       .examples = {"infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4",
                    "infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --color-axis dp",
                    "infralens topology --cluster h100-pcie --nodes 2 --tp 2 --pp 2 --json",
                    "infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --format svg "
                    "-o topo.svg",
                    "infralens topology --cluster dgx-h100 --format toml > my.toml   # start a "
                    "topology file",
                    "infralens topology --cluster my.toml --tp 8"},
       .formats = {"ascii", "svg", "json", "toml"},
       .format_help = "ascii, svg, json, or toml (the cluster as a topology file)"},
      [](TopologyQuery& q, FlagSink& flags) {
        q.cluster.Register(flags);
        q.Register(flags);
      },
      [](const TopologyQuery& q, const RunContext& ctx) -> StatusOr<TopologyResult> {
        TopologyQuery run = q;
        run.cluster.files_allowed = ctx.files_allowed;
        if (ctx.format != "toml") return ComputeTopology(run, ctx.given);
        // The cluster alone, as a topology file: no placement.
        RETURN_IF_ERROR(CheckMaxNodes(q));
        TopologyResult t;
        ASSIGN_OR_RETURN(t.cluster, run.cluster.Load(ctx.given));
        return t;
      },
      [](const TopologyResult& t, const TopologyQuery& q,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "toml") return io::WriteTopologyToml(t.cluster);
        if (ctx.format == "json") return TopologyJson(t, q, ctx.json_indent);
        return TopologyText(t, q, ctx.format, ctx.color);
      });
  return kCommand;
}

}  // namespace infralens::request
