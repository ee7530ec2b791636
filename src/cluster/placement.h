// Rank placement as Megatron-LM's RankGenerator does it (megatron/core/parallel_state.py,
// generate_masked_orthogonal_rank_groups): the parallel axes are listed in an order string, the
// leftmost varying fastest, so with the default "tp-cp-ep-dp-pp"
//   rank = tp + TP * (cp + CP * (ep + EP * (dp + DP * pp))).
// A group of axis X is the set of ranks that differ only in their X coordinate; groups are
// numbered by the remaining coordinates, again leftmost fastest (Megatron's enumeration order).
//
// Difference from Megatron: Megatron builds EP groups with a second generator over the expert
// layers (etp-ep-edp-pp) and refuses EP and CP both > 1 in one generator; here all five axes are
// independent factors of the world size, so Megatron's dense DP group is our ep x dp when cp = 1.
//
// Then every group is classified by the link class it crosses on a Cluster (cluster.h).
#ifndef INFRALENS_CLUSTER_PLACEMENT_H_
#define INFRALENS_CLUSTER_PLACEMENT_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"

namespace infralens::cluster {

enum class Axis { kTp = 0, kCp, kEp, kDp, kPp };
inline constexpr int kNumAxes = 5;
inline constexpr std::array<Axis, kNumAxes> kAllAxes = {Axis::kTp, Axis::kCp, Axis::kEp, Axis::kDp,
                                                        Axis::kPp};
inline constexpr std::string_view kDefaultOrder = "tp-cp-ep-dp-pp";

std::string_view AxisName(Axis a);  // "tp", "cp", "ep", "dp", "pp"
StatusOr<Axis> ParseAxis(std::string_view name);

// Parallel degrees; each >= 1.
struct Degrees {
  std::array<int, kNumAxes> of = {1, 1, 1, 1, 1};  // indexed by Axis
  int& operator[](Axis a) { return of[static_cast<int>(a)]; }
  int operator[](Axis a) const { return of[static_cast<int>(a)]; }
  // The product of the degrees, saturating at kMaxGpus + 1 (0 if a degree is below 1).
  int64_t Product() const;
  std::string ToString() const;  // "tp=8 dp=4 pp=2" (axes of degree 1 omitted; "1 GPU" if all are)
};

class Placement {
 public:
  // `order` lists axes separated by '-', each at most once (case-insensitive); axes left out
  // must have degree 1 and go at the end, as in Megatron. The degrees must multiply to
  // `world_size` exactly: InvalidArgument with the product otherwise.
  static StatusOr<Placement> Make(const Degrees& degrees, std::string_view order,
                                  int64_t world_size);

  int64_t world_size() const { return world_size_; }
  const Degrees& degrees() const { return degrees_; }
  int degree(Axis a) const { return degrees_[a]; }
  // Axes from fastest to slowest varying.
  const std::array<Axis, kNumAxes>& order() const { return order_; }
  std::string OrderString() const;  // the full order, e.g. "tp-cp-ep-dp-pp"
  // Distance in ranks between neighbours along axis a: product of the degrees before it.
  int64_t stride(Axis a) const { return stride_[static_cast<int>(a)]; }

  int Coord(int64_t rank, Axis a) const { return static_cast<int>((rank / stride(a)) % degree(a)); }
  int64_t NumGroups(Axis a) const { return world_size_ / degree(a); }
  // Index of the axis-a group that holds `rank` (0 .. NumGroups(a) - 1).
  int64_t GroupIndex(int64_t rank, Axis a) const;
  // Member i of group g of axis a (i = the member's coordinate on a).
  int64_t Member(Axis a, int64_t g, int i) const;
  // All members of group g, ascending (replaces *out).
  void GroupRanks(Axis a, int64_t g, std::vector<int64_t>* out) const;
  // The group over several axes that holds `rank`: every rank sharing its coordinates on the
  // axes not listed, ascending (replaces *out). Megatron's data-parallel group of dense weights
  // is {ep, dp} here (see the note at the top).
  void GroupRanksOver(std::span<const Axis> axes, int64_t rank, std::vector<int64_t>* out) const;
  // Groups over a set of axes, numbered by the coordinates on the other axes, leftmost fastest
  // (for one axis, the same numbering as GroupRanks).
  int64_t NumSetGroups(std::span<const Axis> axes) const;
  void SetGroupRanks(std::span<const Axis> axes, int64_t g, std::vector<int64_t>* out) const;

 private:
  int64_t world_size_ = 1;
  Degrees degrees_;
  std::array<Axis, kNumAxes> order_ = kAllAxes;
  std::array<int64_t, kNumAxes> stride_ = {1, 1, 1, 1, 1};
};

// Where a group of ranks sits on a cluster and which links its communication crosses.
struct GroupLinks {
  LinkClass link = LinkClass::kNone;   // the outermost class it crosses (bounds its collectives)
  LinkClass intra = LinkClass::kNone;  // the class between members that share a node
  int size = 0;
  int nodes = 0;               // distinct nodes
  int max_per_node = 0;        // most members on one node
  int min_per_node = 0;        // fewest members on a node that holds any
  int min_rails_per_node = 0;  // fewest distinct rails (NICs) the members of a node use
  int sus = 0;                 // distinct scalable units
  bool rail_aligned = true;    // every node's members sit on the same set of rails
};

// Classifies a group (ranks ascending, each < c.num_gpus()). Rules (docs/topology.md):
// within one node: NVSwitch / full mesh -> scale-up; NVLink-bridge servers -> nvlink-bridge if
// the members are one bridged pair, else pcie; PCIe-only -> pcie. Across nodes: rail when the
// group is rail-aligned and inside one SU (NIC -> leaf -> NIC), else spine.
GroupLinks ClassifyGroup(const Cluster& c, std::span<const int64_t> ranks);

// A kind of group, as users name them: Megatron's tp, cp, ep, dp and pp groups, where the
// data-parallel group of dense weights spans the placement's ep and dp axes, and "edp" (expert
// data parallel: the replicas of one expert) is the placement's dp axis alone.
struct AxisSet {
  std::string name;        // "tp", "cp", "ep", "dp", "edp", "pp"
  std::vector<Axis> axes;  // placement axes it spans
};
// The group kinds of a placement with more than one member, in placement order: tp, cp, ep,
// dp ({ep, dp}), edp (only when ep > 1), pp.
std::vector<AxisSet> MegatronGroups(const Placement& p);
// Megatron's degrees of a placement: "tp=8 ep=2 dp=4 pp=2" (dp counts every data-parallel rank,
// ep included; degrees of 1 omitted).
std::string MegatronDegreesString(const Placement& p);
// Megatron's data-parallel degree: the placement's ep x dp.
inline int DataParallelDegree(const Placement& p) {
  return p.degree(Axis::kEp) * p.degree(Axis::kDp);
}
// Name of a placement axis in Megatron's terms: "edp" for the dp axis when ep > 1.
std::string_view MegatronAxisName(const Placement& p, Axis a);

// The kind named `name` (tp, cp, ep, dp, edp, pp) on this placement; InvalidArgument otherwise.
StatusOr<AxisSet> FindGroupKind(const Placement& p, std::string_view name);

// The links of every group of one kind.
struct AxisLinks {
  std::string name;        // the kind's name
  std::vector<Axis> axes;  // placement axes it spans
  Axis axis = Axis::kTp;   // the first of them
  int degree = 1;
  int64_t groups = 0;
  std::array<int64_t, kNumLinkClasses> groups_per_class = {};  // indexed by LinkClass
  int64_t worst_group = 0;      // first group whose link is the outermost of the axis
  int64_t worst_base_rank = 0;  // that group's lowest rank
  GroupLinks worst;
};

// Classifies every group of one kind; degree = the product of its axes' degrees. The answer
// depends only on the cluster's shape, the degrees, the order and the set's axes, so it is
// computed once per such key (O(world size)) and then looked up (a bounded process-wide cache,
// safe from any thread).
AxisLinks ClassifyAxisSet(const Cluster& c, const Placement& p, const AxisSet& set);
// The same answer computed group by group every time, without the cache (the reference).
AxisLinks ClassifyAxisSetGroupByGroup(const Cluster& c, const Placement& p, const AxisSet& set);

// Classifies every group of every kind in MegatronGroups(p), in that order.
// O(world size) time; c.num_gpus() must equal p.world_size().
std::vector<AxisLinks> ClassifyAxes(const Cluster& c, const Placement& p);

}  // namespace infralens::cluster

#endif  // INFRALENS_CLUSTER_PLACEMENT_H_
