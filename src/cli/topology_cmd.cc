// infralens topology: a cluster, a job's rank placement on it, and the link class every group of
// every parallel axis crosses. Draws the nodes (ASCII or SVG) with each GPU labelled by its group
// on one axis, so "which collective crosses which link" can be read off the picture.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/json_writer.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "io/topology_toml.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"

namespace infralens::cli {

using request::ComputeTopology;
using request::kMaxDrawnNodes;
using request::TopologyJson;
using request::TopologyQuery;
using request::TopologyResult;
using request::TopologyText;

Status RunTopology(const std::vector<std::string>& args, CliIO& io) {
  TopologyQuery q;
  std::string format = "ascii", output;
  bool json = false;
  Flags flags(
      "topology", "a cluster, a job's rank placement on it, and the link class each group crosses",
      "infralens topology [--cluster PRESET|FILE.toml] [--nodes N] [--tp T --pp P --dp D --cp C "
      "--ep E] "
      "[--order O] [--format ascii|svg|json|toml]",
      {"infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4",
       "infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --color-axis dp",
       "infralens topology --cluster h100-pcie --nodes 2 --tp 2 --pp 2 --json",
       "infralens topology --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --format svg -o topo.svg",
       "infralens topology --cluster dgx-h100 --format toml > my.toml   # start a topology file",
       "infralens topology --cluster my.toml --tp 8"});
  q.cluster.Register(flags);
  q.Register(flags);
  AddOutputFlags(flags, &format, &json, &output,
                 "ascii, svg, json, or toml (the cluster as a topology file)");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"ascii", "svg", "json", "toml"}));
  if (format == "toml") {
    if (q.max_nodes < 1 || q.max_nodes > kMaxDrawnNodes) {
      return InvalidArgument(
          fmt::format("--max-nodes {}: must be 1..{}", q.max_nodes, kMaxDrawnNodes));
    }
    ASSIGN_OR_RETURN(cluster::Cluster c, q.cluster.Load(GivenOf(flags)));
    return WriteOutput(output, io::WriteTopologyToml(c), io);
  }
  ASSIGN_OR_RETURN(TopologyResult t, ComputeTopology(q, GivenOf(flags)));
  std::string data;
  if (format == "json") {
    data = TopologyJson(t, q);
  } else {
    data = TopologyText(t, q, format, io.color && (output.empty() || output == "-"));
  }
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
