#include "request/cluster_flags.h"

#include <fmt/format.h>

#include "base/read_file.h"
#include "io/topology_toml.h"
#include "request/pipeline_flags.h"

namespace infralens::request {

using cluster::Axis;

void ClusterFlags::RegisterCluster(FlagSink& flags) {
  flags.String("--cluster", &cluster,
               "a preset (" + cluster::ClusterPresetNames() +
                   ") or a topology .toml file (docs/topology.md)");
}

void ClusterFlags::Register(FlagSink& flags, bool degrees) {
  RegisterCluster(flags);
  flags.OptionalInt("--gpus", &gpus,
                    "GPUs the job uses, whole nodes of the cluster (or give --nodes)");
  flags.OptionalInt("--nodes", &nodes,
                    "nodes the job uses (or give --gpus); neither given: the topology file's "
                    "nodes, else what the degrees need, else 1");
  if (!degrees) return;
  flags.Int("--tp", &tp, "tensor-parallel degree");
  flags.Int("--cp", &cp, "context-parallel degree");
  flags.Int("--ep", &ep,
            "expert-parallel degree, carved out of dp as Megatron does (must divide dp)");
  flags.Int("--dp", &dp, "data-parallel degree (GPUs = tp cp dp pp); 0 = the GPUs over the others");
  flags.Int("--pp", &pp, kPipelineDegreeHelp);
  flags.String("--order", &order,
               "rank order, leftmost varies fastest (Megatron-LM's RankGenerator)");
}

bool ClusterFlags::AnyDegree(const GivenFn& given) {
  for (const char* f : {"--tp", "--cp", "--ep", "--dp", "--pp"}) {
    if (given(f)) return true;
  }
  return false;
}

namespace {

// --dp is Megatron's data-parallel degree (world = tp x cp x dp x pp); expert-parallel groups are
// carved out of it as Megatron's expert RankGenerator does, so the placement's independent axes
// are ep and dp / ep (the expert-data-parallel remainder). The caller checks ep divides dp.
cluster::Degrees DegreesOf(const ClusterFlags& f, int dp) {
  cluster::Degrees d;
  d[Axis::kTp] = f.tp;
  d[Axis::kCp] = f.cp;
  d[Axis::kEp] = f.ep;
  d[Axis::kDp] = f.ep > 0 ? dp / f.ep : dp;
  d[Axis::kPp] = f.pp;
  return d;
}

int64_t WorldOf(const ClusterFlags& f, int dp) { return int64_t{f.tp} * f.cp * f.pp * dp; }

}  // namespace

StatusOr<cluster::Cluster> ClusterFlags::Load(const GivenFn& given) const {
  cluster::Cluster c;
  const bool is_file = cluster == "-" || cluster.find('/') != std::string::npos ||
                       (cluster.size() > 5 && cluster.compare(cluster.size() - 5, 5, ".toml") == 0);
  if (is_file && !files_allowed) {
    return InvalidArgument(fmt::format(
        "--cluster {}: the workbench takes a preset name ({}); a topology file works with the CLI",
        cluster, cluster::ClusterPresetNames()));
  }
  if (is_file) {
    // The file's content is a failure (exit 1), not a usage error (base/read_file.h).
    auto text = ReadFileLimited(cluster, io::kMaxTopologyBytes);
    if (!text.ok()) return AsFileFailure(text.status());
    std::string base = cluster.substr(cluster.find_last_of('/') + 1);
    auto parsed = io::ParseTopologyToml(*text, base);
    if (!parsed.ok())
      return FailedPrecondition(fmt::format("{}: {}", cluster, parsed.status().message()));
    c = *parsed;
  } else {
    ASSIGN_OR_RETURN(c, cluster::FindClusterPreset(cluster));
  }
  for (auto [name, value] : {std::pair{"--tp", tp}, {"--cp", cp}, {"--ep", ep}, {"--pp", pp}}) {
    if (value < 1 || value > cluster::kMaxGpus) {
      return InvalidArgument(fmt::format("{} {}: must be 1..{}", name, value, cluster::kMaxGpus));
    }
  }
  if (dp < 0 || dp > cluster::kMaxGpus) {
    return InvalidArgument(
        fmt::format("--dp {}: must be 1..{} (or 0 to derive it)", dp, cluster::kMaxGpus));
  }
  if (given("--gpus")) {
    // The same flag in every command that places a job (topology, comm, comm-plan, memory with a
    // cluster, plan, explain, worksheet): whole nodes of the cluster.
    const int gpn = c.node.gpus_per_node;
    if (gpus < 1 || gpus % gpn != 0 || gpus > cluster::kMaxGpus) {
      return InvalidArgument(
          fmt::format("--gpus {}: {} nodes hold {} GPUs each; give a multiple of {} up to {}", gpus,
                      c.name, gpn, gpn, cluster::kMaxGpus));
    }
    if (given("--nodes") && int64_t{nodes} * gpn != gpus) {
      return InvalidArgument(fmt::format("--gpus {} and --nodes {}: {} nodes hold {} GPUs", gpus,
                                         nodes, nodes, int64_t{nodes} * gpn));
    }
    c.num_nodes = gpus / gpn;
  } else if (given("--nodes")) {
    if (nodes < 1 || nodes > cluster::kMaxGpus) {
      return InvalidArgument(fmt::format("--nodes {}: must be 1..{}", nodes, cluster::kMaxGpus));
    }
    c.num_nodes = nodes;
  } else if (c.num_nodes <= 1 && dp > 0) {
    // Enough nodes for the given degrees, when they fill whole nodes.
    const int64_t product = WorldOf(*this, dp);
    if (product > c.node.gpus_per_node && product % c.node.gpus_per_node == 0 &&
        product <= cluster::kMaxGpus) {
      c.num_nodes = static_cast<int>(product / c.node.gpus_per_node);
    }
  }
  RETURN_IF_ERROR(cluster::Validate(c));
  return c;
}

StatusOr<cluster::Placement> ClusterFlags::Place(const cluster::Cluster& c) const {
  int dp_value = dp;
  if (dp_value == 0) {
    const int64_t others = WorldOf(*this, 1);
    if (others < 1) return InvalidArgument("parallel degrees: each must be >= 1");
    if (others > c.num_gpus() || c.num_gpus() % others != 0) {
      return InvalidArgument(fmt::format(
          "parallel degrees tp={} cp={} pp={} multiply to {}, which does not divide the cluster's "
          "{} GPUs "
          "({} node(s) of {}); give --gpus, --nodes or --dp",
          tp, cp, pp,
          others > cluster::kMaxGpus ? std::string("more than 65536") : std::to_string(others),
          c.num_gpus(), c.num_nodes, c.node.gpus_per_node));
    }
    dp_value = static_cast<int>(c.num_gpus() / others);
  }
  if (dp_value % ep != 0) {
    return InvalidArgument(
        fmt::format("--ep {}: must divide the data-parallel degree dp = {} (expert-parallel groups "
                    "are carved out of the "
                    "data-parallel ranks, as Megatron does)",
                    ep, dp_value));
  }
  if (WorldOf(*this, dp_value) != c.num_gpus()) {
    return InvalidArgument(
        fmt::format("parallel degrees tp={} cp={} dp={} pp={} multiply to {}, but the cluster has "
                    "{} GPUs ({} node(s) of {})",
                    tp, cp, dp_value, pp, WorldOf(*this, dp_value), c.num_gpus(), c.num_nodes,
                    c.node.gpus_per_node));
  }
  return cluster::Placement::Make(DegreesOf(*this, dp_value), order, c.num_gpus());
}

}  // namespace infralens::request
