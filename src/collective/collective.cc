#include "collective/collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::collective {

using cluster::Cluster;
using cluster::GroupLinks;
using cluster::LinkClass;

constexpr EnumName<Collective> kCollectiveNames[] = {
    {Collective::kAllReduce, "all_reduce"},         {Collective::kAllGather, "all_gather"},
    {Collective::kReduceScatter, "reduce_scatter"}, {Collective::kAllToAll, "all_to_all"},
    {Collective::kBroadcast, "broadcast"},          {Collective::kSendRecv, "send_recv"}};

std::string_view CollectiveName(Collective c) { return NameIn(kCollectiveNames, c); }

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kMultiRailRing:
      return "multi-rail";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kPairwise:
      return "pairwise";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kNvls:
      return "nvls";
  }
  return "?";
}

constexpr EnumName<Protocol> kProtocolNames[] = {
    {Protocol::kLL, "LL"}, {Protocol::kLL128, "LL128"}, {Protocol::kSimple, "Simple"}};

std::string_view ProtocolName(Protocol p) { return NameIn(kProtocolNames, p); }

StatusOr<Collective> ParseCollective(std::string_view name) {
  std::string key = ToLower(Trim(name));
  std::erase(key, '_');
  std::erase(key, '-');
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kAllToAll, Collective::kBroadcast, Collective::kSendRecv}) {
    std::string n(CollectiveName(c));
    std::erase(n, '_');
    if (key == n) return c;
  }
  return InvalidArgument(
      fmt::format("‹collective› {}: expected all_reduce, all_gather, reduce_scatter, all_to_all, "
                  "broadcast or send_recv",
                  name));
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  const std::string key = ToLower(Trim(name));
  for (Algorithm a :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kMultiRailRing, Algorithm::kTree,
        Algorithm::kHierarchical, Algorithm::kPairwise, Algorithm::kDirect, Algorithm::kNvls}) {
    if (key == AlgorithmName(a)) return a;
  }
  if (key == "multi-rail-ring" || key == "multirail") return Algorithm::kMultiRailRing;
  return InvalidArgument(fmt::format(
      "‹algorithm› {}: expected auto, ring, multi-rail, tree, hierarchical, pairwise, direct or "
      "nvls",
      name));
}

double BusBwFactor(Collective c, int n) {
  // nccl-tests doc/PERFORMANCE.md, "Summary".
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

namespace {

constexpr int kK = cluster::kNumLinkClasses;
int Idx(LinkClass c) { return static_cast<int>(c); }

// NCCL's latency model, microseconds (NVIDIA/nccl src/graph/tuning.cc): baseLat per algorithm and
// protocol, and hwLat per step for NVLink, PCI and network hops. Index [tree=0 | ring=1][LL, LL128,
// Simple].
constexpr double kBaseLatUs[2][3] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
// NVLS (tuning.cc): baseLatencies 0 and one hop of hwLatencies[NVLINK][NVLS][Simple], 25 us, for
// the whole call in one node; Simple only.
constexpr double kNvlsLatUs = 25;
constexpr double kHwLatUs[3][2][3] = {
    /* NVLink  */ {{.52, 1.2, 28}, {.47, 1.9, 3.4}},
    /* PCI     */ {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
    /* network */ {{5.0, 8.5, 50}, {2.7, 4.0, 9.6}},
};

int HwRow(LinkClass c) {
  switch (c) {
    case LinkClass::kPcie:
      return 1;
    case LinkClass::kRail:
    case LinkClass::kSpine:
      return 2;
    default:
      return 0;  // NVLink bridge and scale-up fabrics (NVSwitch, Infinity Fabric)
  }
}

// Fraction of the link bandwidth a protocol delivers (tuning.cc "model refinements"): ring LL
// 1/4 (all_reduce or several nodes) else 1/3, LL128 0.92; tree LL 1/3.8, LL128 7/9 in one node
// and 0.915 across nodes; Simple 1.
double ProtocolFactor(Protocol p, bool tree, Collective c, int nodes) {
  switch (p) {
    case Protocol::kLL:
      if (tree) return 1.0 / 3.8;
      return (nodes > 1 || c == Collective::kAllReduce) ? 1.0 / 4.0 : 1.0 / 3.0;
    case Protocol::kLL128:
      if (tree) return nodes == 1 ? 7.0 / 9.0 : 0.915;
      return 0.92;
    case Protocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

// One transfer of a phase: bytes the average GPU sends on a class, bytes the busiest resource of
// that class must carry, and that resource's achieved bandwidth per GPU per direction.
struct Transfer {
  LinkClass link;
  double avg_bytes;
  double critical_bytes;
  double bytes_per_s;
};

// An algorithm's schedule: phases run one after another, the transfers of one phase at once.
struct Plan {
  Algorithm algorithm;
  bool tree = false;  // uses NCCL's tree latency rows and protocol factors
  bool nvls = false;  // NVLS: Simple only, one fixed latency (kNvlsLatUs) for the call
  std::vector<std::vector<Transfer>> phases;
  std::array<int, kK> steps = {};
};

// Achieved bandwidth per GPU per direction of a class for a group with `per_node` members on a
// node.
double ClassBytesPerS(const Cluster& c, LinkClass link, int per_node, const Overrides& o) {
  if (o.bytes_per_s) return *o.bytes_per_s;
  const auto& n = c.node;
  switch (link) {
    case LinkClass::kScaleUp:
      if (n.fabric == cluster::ScaleUpFabric::kFullMesh && n.gpus_per_node > 1) {
        // A full mesh gives each pair one link of 1/(G-1) of the GPU's bandwidth: a group of k
        // GPUs on the node can use only its k-1 links (RCCL rings over distinct links).
        const int k = std::clamp(per_node, 2, n.gpus_per_node);
        return n.scale_up_bytes_per_s / (n.gpus_per_node - 1) * (k - 1) * n.scale_up_efficiency;
      }
      return n.scale_up_bytes_per_s * n.scale_up_efficiency;
    case LinkClass::kNvLinkBridge:
      return n.scale_up_bytes_per_s * n.scale_up_efficiency;
    case LinkClass::kPcie:
      return n.pcie_bytes_per_s * n.pcie_efficiency;
    case LinkClass::kRail:
    case LinkClass::kSpine:
      return c.NicShareBytesPerS();
    case LinkClass::kNone:
      break;
  }
  return 1;  // never used: kNone carries no bytes
}

// Steps of the ring algorithms over k ranks (tuning.cc: nsteps / nInterSteps).
int RingSteps(Collective c, int k) {
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (k - 1);
    default:
      return k - 1;  // all_gather, reduce_scatter, broadcast (a pipelined chain)
  }
}

// Bytes each rank sends in a ring (nccl-tests: busbw factor times S; broadcast forwards S).
double RingBytes(Collective c, int n, double s) {
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n * s;
    case Collective::kBroadcast:
      return s;
    default:
      return static_cast<double>(n - 1) / n * s;
  }
}

std::string Uses(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "auto, ring, multi-rail, tree, hierarchical or nvls";
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return "auto, ring, multi-rail or hierarchical";
    case Collective::kBroadcast:
      return "auto, ring or multi-rail";
    case Collective::kAllToAll:
      return "auto or pairwise";
    case Collective::kSendRecv:
      return "auto or direct";
  }
  return "auto";
}

struct Group {
  GroupLinks gl;
  int n = 0, m = 0, g = 0;
};

Plan RingPlan(const Cluster& c, const Group& grp, Collective coll, double s, bool multi_rail,
              const Overrides& o) {
  Plan p{multi_rail ? Algorithm::kMultiRailRing : Algorithm::kRing};
  const double v = RingBytes(coll, grp.n, s);
  const int total = RingSteps(coll, grp.n);
  std::vector<Transfer> phase;
  if (grp.m == 1) {
    phase.push_back({grp.gl.intra, v, v, ClassBytesPerS(c, grp.gl.intra, grp.g, o)});
    p.steps[Idx(grp.gl.intra)] = total;
  } else {
    const int inter = RingSteps(coll, grp.m);
    const double g = grp.g;
    if (grp.g > 1) {
      // Inside a node every GPU but the ring's exit forwards on the scale-up link.
      phase.push_back({grp.gl.intra, v * (g - 1) / g, multi_rail ? v * (g - 1) / g : v,
                       ClassBytesPerS(c, grp.gl.intra, grp.g, o)});
      p.steps[Idx(grp.gl.intra)] = total - inter;
    }
    // One ring leaves each node on one NIC and carries all v; g rings (one per rail) carry v/g
    // each.
    phase.push_back(
        {grp.gl.link, v / g, multi_rail ? v / g : v, ClassBytesPerS(c, grp.gl.link, grp.g, o)});
    p.steps[Idx(grp.gl.link)] += inter;
  }
  p.phases.push_back(std::move(phase));
  return p;
}

Plan TreePlan(const Cluster& c, const Group& grp, double s, const Overrides& o) {
  // Each rank sends S up (reduce) and S down (broadcast) through its tree or chain position; with
  // a double binary tree every rank is inner node in one tree and leaf in the other, 2S in all.
  // tuning.cc models the same as algbw = busbw / 2.
  Plan p{Algorithm::kTree};
  p.tree = true;
  const double g = grp.g;
  std::vector<Transfer> phase;
  if (grp.g > 1) {
    phase.push_back({grp.gl.intra, grp.m == 1 ? 2 * s * (g - 1) / g : 2 * s * (g - 1) / g, 2 * s,
                     ClassBytesPerS(c, grp.gl.intra, grp.g, o)});
    p.steps[Idx(grp.gl.intra)] = 2 * (grp.g - 1);
  }
  if (grp.m > 1) {
    phase.push_back({grp.gl.link, 2 * s / g, 2 * s / g, ClassBytesPerS(c, grp.gl.link, grp.g, o)});
    // tuning.cc: 2 * (intra steps + log2i(nNodes) inter steps), log2i rounding down.
    p.steps[Idx(grp.gl.link)] = 2 * static_cast<int>(std::floor(std::log2(grp.m)));
  }
  p.phases.push_back(std::move(phase));
  return p;
}

// NVLS all-reduce in one NVSwitch domain: each GPU reduces its S / n shard from every GPU with
// multimem loads through the switch and multicasts the result with multimem stores, so it sends
// and receives S (the ring: 2 (n - 1) / n S), at the fabric's NVLS efficiency.
Plan NvlsPlan(const Cluster& c, const Group& grp, double s, const Overrides& o) {
  Plan p{Algorithm::kNvls};
  p.nvls = true;
  const double bw =
      o.bytes_per_s ? *o.bytes_per_s : c.node.scale_up_bytes_per_s * c.node.nvls_efficiency;
  p.phases.push_back({{grp.gl.intra, s, s, bw}});
  p.steps[Idx(grp.gl.intra)] = 1;
  return p;
}

// NVLS applies to an all-reduce whose group is in one node of an NVSwitch fabric with NVLS.
bool NvlsApplies(const Cluster& c, const Group& grp) {
  return grp.m == 1 && grp.gl.intra == LinkClass::kScaleUp &&
         c.node.fabric == cluster::ScaleUpFabric::kNvSwitch && c.node.nvls_efficiency > 0;
}

Plan HierarchicalPlan(const Cluster& c, const Group& grp, Collective coll, double s,
                      const Overrides& o) {
  Plan p{Algorithm::kHierarchical};
  const double g = grp.g, m = grp.m;
  const double intra_bw = ClassBytesPerS(c, grp.gl.intra, grp.g, o);
  const double net_bw = ClassBytesPerS(c, grp.gl.link, grp.g, o);
  const double intra_bytes = (g - 1) / g * s;  // reduce-scatter or all-gather of S over g GPUs
  const Transfer intra{grp.gl.intra, intra_bytes, intra_bytes, intra_bw};
  if (coll == Collective::kAllReduce) {
    // Each GPU then all-reduces its S/g shard with the same local index on the other nodes (its
    // rail).
    const double net_bytes = 2 * (m - 1) / m * (s / g);
    p.phases = {{intra}, {{grp.gl.link, net_bytes, net_bytes, net_bw}}, {intra}};
    p.steps[Idx(grp.gl.intra)] = 2 * (grp.g - 1);
    p.steps[Idx(grp.gl.link)] = 2 * (grp.m - 1);
  } else {
    // all_gather: gather the S/g that one rail holds across nodes, then all-gather S in the node.
    // reduce_scatter: the same two phases in reverse order, same bytes.
    const double net_bytes = (m - 1) / m * (s / g);
    std::vector<Transfer> net = {{grp.gl.link, net_bytes, net_bytes, net_bw}};
    if (coll == Collective::kAllGather) {
      p.phases = {net, {intra}};
    } else {
      p.phases = {{intra}, net};
    }
    p.steps[Idx(grp.gl.intra)] = grp.g - 1;
    p.steps[Idx(grp.gl.link)] = grp.m - 1;
  }
  return p;
}

Plan PairwisePlan(const Cluster& c, const Group& grp, double s, const Overrides& o) {
  // Every rank sends S/n to each other rank, all at once: (g-1) S/n to node peers, the rest
  // through the network. One latency step per class (the sends overlap).
  Plan p{Algorithm::kPairwise};
  std::vector<Transfer> phase;
  const double n = grp.n, g = grp.g;
  if (grp.g > 1) {
    const double b = (g - 1) / n * s;
    phase.push_back({grp.gl.intra, b, b, ClassBytesPerS(c, grp.gl.intra, grp.g, o)});
    p.steps[Idx(grp.gl.intra)] = 1;
  }
  if (grp.m > 1) {
    const double b = (n - g) / n * s;
    phase.push_back({grp.gl.link, b, b, ClassBytesPerS(c, grp.gl.link, grp.g, o)});
    p.steps[Idx(grp.gl.link)] = 1;
  }
  p.phases.push_back(std::move(phase));
  return p;
}

Plan DirectPlan(const Cluster& c, std::span<const int64_t> ranks, double s, const Overrides& o) {
  // Each rank sends S to the next one of the group (a pipeline's point-to-point); the slowest
  // neighbour pair sets the time.
  Plan p{Algorithm::kDirect};
  Transfer worst{LinkClass::kNone, s, s, 0};
  double worst_s = -1;
  for (size_t i = 0; i + 1 < ranks.size(); ++i) {
    const int64_t pair[2] = {ranks[i], ranks[i + 1]};
    const GroupLinks gl = cluster::ClassifyGroup(c, pair);
    const double bw = ClassBytesPerS(c, gl.link, 2, o);
    if (s / bw > worst_s) {
      worst_s = s / bw;
      worst = {gl.link, s, s, bw};
    }
  }
  // Every rank but the last sends S.
  worst.avg_bytes = s * (ranks.size() - 1) / ranks.size();
  p.phases.push_back({worst});
  p.steps[Idx(worst.link)] = 1;
  return p;
}

Estimate Evaluate(const Plan& plan, Protocol proto, Collective coll, const Group& grp,
                  int64_t size_bytes, const Overrides& o) {
  Estimate e;
  e.collective = coll;
  e.algorithm = plan.algorithm;
  e.protocol = proto;
  e.size_bytes = size_bytes;
  e.ranks = grp.n;
  e.nodes = grp.m;
  const int alg = plan.tree ? 0 : 1;
  const int pi = static_cast<int>(proto);
  const double factor =
      o.step_latency_s || plan.nvls ? 1.0 : ProtocolFactor(proto, plan.tree, coll, grp.m);
  e.base_latency_s = o.step_latency_s || plan.nvls ? 0.0 : kBaseLatUs[alg][pi] * 1e-6;
  std::array<LinkUse, kK> use{};
  std::array<bool, kK> used{};
  double bandwidth_s = 0;
  for (const auto& phase : plan.phases) {
    double phase_s = 0;
    for (const Transfer& t : phase) {
      const double sec = t.critical_bytes / (t.bytes_per_s * factor);
      phase_s = std::max(phase_s, sec);
      LinkUse& u = use[Idx(t.link)];
      used[Idx(t.link)] = true;
      u.link = t.link;
      u.bytes_per_gpu += t.avg_bytes;
      u.bytes_per_s = t.bytes_per_s * factor;
      u.bandwidth_s += sec;
    }
    bandwidth_s += phase_s;
  }
  double latency_s = e.base_latency_s;
  for (int k = 0; k < kK; ++k) {
    if (plan.steps[k] == 0) continue;
    const double step_s = o.step_latency_s ? *o.step_latency_s
                          : plan.nvls      ? kNvlsLatUs * 1e-6
                                           : kHwLatUs[HwRow(LinkClass(k))][alg][pi] * 1e-6;
    use[k].link = LinkClass(k);
    use[k].steps = plan.steps[k];
    use[k].latency_s = plan.steps[k] * step_s;
    used[k] = true;
    latency_s += use[k].latency_s;
  }
  e.latency_s = latency_s;
  e.bandwidth_s = bandwidth_s;
  e.time_s = latency_s + bandwidth_s;
  e.algbw_bytes_per_s = size_bytes / e.time_s;
  e.busbw_factor = BusBwFactor(coll, grp.n);
  e.busbw_bytes_per_s = e.algbw_bytes_per_s * e.busbw_factor;
  double worst = -1;
  for (int k = 0; k < kK; ++k) {
    if (!used[k] || LinkClass(k) == LinkClass::kNone) continue;
    e.links.push_back(use[k]);
    const double share = use[k].latency_s + use[k].bandwidth_s;
    if (share > worst) {
      worst = share;
      e.bottleneck = LinkClass(k);
    }
  }
  return e;
}

StatusOr<std::vector<Plan>> Plans(const Cluster& c, std::span<const int64_t> ranks,
                                  const Group& grp, const Request& r) {
  const double s = static_cast<double>(r.size_bytes);
  const bool uniform = grp.gl.min_per_node == grp.gl.max_per_node;
  const bool hier_ok = grp.m > 1 && grp.g > 1 && uniform;
  std::vector<Plan> plans;
  auto want = [&](Algorithm a) { return r.algorithm == Algorithm::kAuto || r.algorithm == a; };
  auto refuse = [&]() {
    return InvalidArgument(fmt::format("‹algorithm› {}: does not apply to {}; use {}",
                                       AlgorithmName(r.algorithm), CollectiveName(r.collective),
                                       Uses(r.collective)));
  };
  switch (r.collective) {
    case Collective::kAllToAll:
      if (!want(Algorithm::kPairwise)) return refuse();
      plans.push_back(PairwisePlan(c, grp, s, r.overrides));
      return plans;
    case Collective::kSendRecv:
      if (!want(Algorithm::kDirect)) return refuse();
      plans.push_back(DirectPlan(c, ranks, s, r.overrides));
      return plans;
    default:
      break;
  }
  if (r.algorithm == Algorithm::kPairwise || r.algorithm == Algorithm::kDirect ||
      (r.algorithm == Algorithm::kTree && r.collective != Collective::kAllReduce) ||
      (r.algorithm == Algorithm::kNvls && r.collective != Collective::kAllReduce) ||
      (r.algorithm == Algorithm::kHierarchical && r.collective == Collective::kBroadcast)) {
    return refuse();
  }
  if (r.algorithm == Algorithm::kHierarchical && !hier_ok) {
    return InvalidArgument(
        fmt::format("‹algorithm› hierarchical: needs a group on 2 or more nodes with the same "
                    "number (2 or more) of GPUs on "
                    "each; this group has {} rank(s) on {} node(s), {}..{} per node",
                    grp.n, grp.m, grp.gl.min_per_node, grp.gl.max_per_node));
  }
  if (r.algorithm == Algorithm::kNvls && !NvlsApplies(c, grp)) {
    return InvalidArgument(fmt::format(
        "‹algorithm› nvls: needs a group inside one node of an NVSwitch fabric with NVLink SHARP "
        "(Hopper or later: dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, or a topology's "
        "scale_up.nvls_efficiency); this group has {} rank(s) on {} node(s) of {} ({} NVLS)",
        grp.n, grp.m, c.name, c.node.nvls_efficiency > 0 ? "with" : "without"));
  }
  if (want(Algorithm::kRing))
    plans.push_back(RingPlan(c, grp, r.collective, s, false, r.overrides));
  // With one node, or one GPU per node, the multi-rail ring is the ring; auto lists it only
  // when it differs.
  if (r.algorithm == Algorithm::kMultiRailRing ||
      (r.algorithm == Algorithm::kAuto && grp.m > 1 && grp.g > 1)) {
    plans.push_back(RingPlan(c, grp, r.collective, s, true, r.overrides));
  }
  if (r.collective == Collective::kAllReduce && want(Algorithm::kTree))
    plans.push_back(TreePlan(c, grp, s, r.overrides));
  // The textbook model (--latency) is the alpha-beta one of rings and trees: auto leaves NVLS
  // out there, as it leaves out the protocols; asked for by name, it is timed.
  if (r.collective == Collective::kAllReduce && NvlsApplies(c, grp) &&
      (r.algorithm == Algorithm::kNvls ||
       (r.algorithm == Algorithm::kAuto && !r.overrides.step_latency_s))) {
    plans.push_back(NvlsPlan(c, grp, s, r.overrides));
  }
  if (r.collective != Collective::kBroadcast && hier_ok && want(Algorithm::kHierarchical)) {
    plans.push_back(HierarchicalPlan(c, grp, r.collective, s, r.overrides));
  }
  return plans;
}

}  // namespace

StatusOr<std::vector<Estimate>> EstimateAlgorithms(const Cluster& cluster,
                                                   std::span<const int64_t> ranks,
                                                   const Request& request) {
  if (request.size_bytes <= 0) {
    return InvalidArgument(fmt::format("‹size› {}: must be more than 0 bytes", request.size_bytes));
  }
  if (ranks.size() < 2) {
    return InvalidArgument(
        fmt::format("the group has {} rank(s): a collective needs at least 2", ranks.size()));
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= cluster.num_gpus() || (i > 0 && ranks[i] <= ranks[i - 1])) {
      return InvalidArgument(fmt::format("group rank {}: ranks must ascend and lie in 0..{}",
                                         ranks[i], cluster.num_gpus() - 1));
    }
  }
  const auto& o = request.overrides;
  if (o.bytes_per_s && !(std::isfinite(*o.bytes_per_s) && *o.bytes_per_s > 0 &&
                         *o.bytes_per_s <= cluster::kMaxBytesPerS)) {
    return InvalidArgument(fmt::format("‹bandwidth› {:g}: must be > 0 and at most {:g} GB/s",
                                       *o.bytes_per_s / 1e9, cluster::kMaxBytesPerS / 1e9));
  }
  if (o.step_latency_s &&
      !(std::isfinite(*o.step_latency_s) && *o.step_latency_s >= 0 && *o.step_latency_s <= 1)) {
    return InvalidArgument(
        fmt::format("‹latency› {:g}: must be 0..1e6 microseconds", *o.step_latency_s * 1e6));
  }
  Group grp;
  grp.gl = cluster::ClassifyGroup(cluster, ranks);
  grp.n = grp.gl.size;
  grp.m = grp.gl.nodes;
  grp.g = grp.gl.max_per_node;
  ASSIGN_OR_RETURN(std::vector<Plan> plans, Plans(cluster, ranks, grp, request));
  std::vector<Estimate> out;
  for (const Plan& plan : plans) {
    std::optional<Estimate> best;
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      // With --latency the model is the textbook one: Simple only, no protocol efficiency. NVLS
      // runs Simple only (tuning.cc).
      if ((o.step_latency_s || plan.nvls) && p != Protocol::kSimple) continue;
      Estimate e = Evaluate(plan, p, request.collective, grp, request.size_bytes, o);
      if (!best || e.time_s < best->time_s) best = std::move(e);
    }
    out.push_back(std::move(*best));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Estimate& a, const Estimate& b) { return a.time_s < b.time_s; });
  return out;
}

StatusOr<Estimate> EstimateCollective(const Cluster& cluster, std::span<const int64_t> ranks,
                                      const Request& request) {
  ASSIGN_OR_RETURN(std::vector<Estimate> all, EstimateAlgorithms(cluster, ranks, request));
  return all.front();
}

}  // namespace infralens::collective
