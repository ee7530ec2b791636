#include "cluster/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::cluster {

constexpr EnumName<Axis> kAxisNames[] = {
    {Axis::kTp, "tp"}, {Axis::kCp, "cp"}, {Axis::kEp, "ep"}, {Axis::kDp, "dp"}, {Axis::kPp, "pp"}};

std::string_view AxisName(Axis a) { return NameIn(kAxisNames, a); }

StatusOr<Axis> ParseAxis(std::string_view name) {
  const std::string lower = ToLower(Trim(name));
  for (Axis a : kAllAxes) {
    if (lower == AxisName(a)) return a;
  }
  return InvalidArgument(fmt::format("axis '{}': expected tp, cp, ep, dp or pp", name));
}

int64_t Degrees::Product() const {
  int64_t p = 1;
  for (int d : of) {
    if (d < 1) return 0;
    p *= d;
    if (p > kMaxGpus) return kMaxGpus + 1;  // saturate: five factors could overflow int64
  }
  return p;
}

std::string Degrees::ToString() const {
  std::vector<std::string> parts;
  for (Axis a : kAllAxes) {
    if ((*this)[a] != 1) parts.push_back(fmt::format("{}={}", AxisName(a), (*this)[a]));
  }
  return parts.empty() ? "1 GPU" : Join(parts, " ");
}

StatusOr<Placement> Placement::Make(const Degrees& degrees, std::string_view order,
                                    int64_t world_size) {
  for (Axis a : kAllAxes) {
    // Checked one by one so the product below cannot overflow (each <= kMaxGpus).
    if (degrees[a] < 1 || degrees[a] > kMaxGpus) {
      return InvalidArgument(
          fmt::format("--{} {}: must be 1..{}", AxisName(a), degrees[a], kMaxGpus));
    }
  }
  Placement p;
  p.degrees_ = degrees;
  p.world_size_ = world_size;
  // Parse the order: each axis at most once; missing axes must have degree 1.
  std::array<bool, kNumAxes> seen = {};
  int n = 0;
  for (std::string_view token : Split(order, '-')) {
    auto axis = ParseAxis(token);
    if (!axis.ok()) {
      return InvalidArgument(
          fmt::format("‹order› {}: unknown axis '{}'; expected tp, cp, ep, dp, pp joined by '-'",
                      order, token));
    }
    if (seen[static_cast<int>(*axis)]) {
      return InvalidArgument(fmt::format("‹order› {}: axis '{}' appears twice", order, token));
    }
    seen[static_cast<int>(*axis)] = true;
    p.order_[n++] = *axis;
  }
  for (Axis a : kAllAxes) {
    if (seen[static_cast<int>(a)]) continue;
    if (degrees[a] != 1) {
      return InvalidArgument(fmt::format("‹order› {}: leaves out {} although --{} is {}", order,
                                         AxisName(a), AxisName(a), degrees[a]));
    }
    p.order_[n++] = a;
  }
  // Strides and the product; multiplying stops once past kMaxGpus, so with every factor
  // <= kMaxGpus the product never exceeds kMaxGpus^2 and cannot overflow.
  int64_t product = 1;
  bool over = false;
  for (Axis a : p.order_) {
    p.stride_[static_cast<int>(a)] = over ? 0 : product;
    if (!over) {
      product *= degrees[a];
      if (product > kMaxGpus) over = true;
    }
  }
  if (over || product != world_size) {
    return InvalidArgument(fmt::format(
        "parallel degrees {} multiply to {}, but the cluster has {} GPUs", degrees.ToString(),
        over ? std::string("more than 65536") : std::to_string(product), world_size));
  }
  return p;
}

std::string Placement::OrderString() const {
  std::vector<std::string> parts;
  for (Axis a : order_) parts.emplace_back(AxisName(a));
  return Join(parts, "-");
}

int64_t Placement::GroupIndex(int64_t rank, Axis a) const {
  const int64_t s = stride(a);
  const int64_t low = rank % s;                 // coordinates of the faster axes
  const int64_t high = rank / (s * degree(a));  // coordinates of the slower axes
  return low + high * s;
}

int64_t Placement::Member(Axis a, int64_t g, int i) const {
  const int64_t s = stride(a);
  return (g % s) + (g / s) * s * degree(a) + int64_t{i} * s;
}

void Placement::GroupRanks(Axis a, int64_t g, std::vector<int64_t>* out) const {
  out->resize(degree(a));
  const int64_t s = stride(a);
  const int64_t base = (g % s) + (g / s) * s * degree(a);
  for (int i = 0; i < degree(a); ++i) (*out)[i] = base + int64_t{i} * s;
}

namespace {

// The class between two or more GPUs of one node, the lowest and highest local index given.
LinkClass IntraNodeClass(const Cluster& c, int first_local, int last_local) {
  switch (c.node.fabric) {
    case ScaleUpFabric::kNvSwitch:
    case ScaleUpFabric::kFullMesh:
      return LinkClass::kScaleUp;
    case ScaleUpFabric::kNvLinkBridge:
      // Bridged pairs are (0,1), (2,3), ...: two members share a bridge only if both are in one
      // pair.
      return first_local / 2 == last_local / 2 ? LinkClass::kNvLinkBridge : LinkClass::kPcie;
    case ScaleUpFabric::kPcieOnly:
      return LinkClass::kPcie;
  }
  return LinkClass::kPcie;
}

}  // namespace

GroupLinks ClassifyGroup(const Cluster& c, std::span<const int64_t> ranks) {
  GroupLinks r;
  r.size = static_cast<int>(ranks.size());
  if (ranks.empty()) return r;
  r.min_per_node = r.size;
  r.min_rails_per_node = c.node.nics_per_node;
  // Ranks ascend, so the members of one node are consecutive and their local indices (and so
  // their rails) ascend: a node's rail set is the deduplicated run of rails.
  // The first node's rails are kept inline for the comparison: the first 64 distinct rails and
  // the count of all (nodes with more than 64 NICs are compared on that prefix and the count).
  constexpr int kMaxKept = 64;
  int first_rails[kMaxKept];
  int first_count = 0, first_distinct = 0;
  int cur_rails[kMaxKept];
  int prev_su = -1;
  size_t i = 0;
  while (i < ranks.size()) {
    const int node = c.NodeOf(ranks[i]);
    size_t j = i;
    int distinct = 0, kept = 0, last_rail = -1;
    const int first_local = c.LocalOf(ranks[i]);
    int last_local = first_local;
    while (j < ranks.size() && c.NodeOf(ranks[j]) == node) {
      last_local = c.LocalOf(ranks[j]);
      const int rail = c.RailOf(last_local);
      if (rail != last_rail) {
        if (kept < kMaxKept) cur_rails[kept++] = rail;
        ++distinct;
        last_rail = rail;
      }
      ++j;
    }
    const int count = static_cast<int>(j - i);
    if (count >= 2) r.intra = std::max(r.intra, IntraNodeClass(c, first_local, last_local));
    r.max_per_node = std::max(r.max_per_node, count);
    r.min_per_node = std::min(r.min_per_node, count);
    r.min_rails_per_node = std::min(r.min_rails_per_node, distinct);
    const int su = node / c.nodes_per_su;
    if (su != prev_su) {
      ++r.sus;  // nodes ascend, so SUs ascend too and each new one is counted once
      prev_su = su;
    }
    if (r.nodes == 0) {
      std::copy(cur_rails, cur_rails + kept, first_rails);
      first_count = kept;
      first_distinct = distinct;
    } else if (distinct != first_distinct || kept != first_count ||
               !std::equal(cur_rails, cur_rails + kept, first_rails)) {
      r.rail_aligned = false;
    }
    ++r.nodes;
    i = j;
  }
  if (r.nodes == 1) {
    r.link = r.intra;
  } else {
    r.link = (r.rail_aligned && r.sus == 1) ? LinkClass::kRail : LinkClass::kSpine;
  }
  return r;
}

void Placement::GroupRanksOver(std::span<const Axis> axes, int64_t rank,
                               std::vector<int64_t>* out) const {
  // Start from the member whose listed coordinates are all 0, then add every combination.
  int64_t base = rank;
  for (Axis a : axes) base -= Coord(rank, a) * stride(a);
  out->assign(1, base);
  for (Axis a : axes) {
    const size_t n = out->size();
    for (int i = 1; i < degree(a); ++i) {
      for (size_t k = 0; k < n; ++k) out->push_back((*out)[k] + i * stride(a));
    }
  }
  std::sort(out->begin(), out->end());
}

int64_t Placement::NumSetGroups(std::span<const Axis> axes) const {
  int64_t d = 1;
  for (Axis a : axes) d *= degree(a);
  return world_size_ / d;
}

void Placement::SetGroupRanks(std::span<const Axis> axes, int64_t g,
                              std::vector<int64_t>* out) const {
  // Decompose g over the other axes, leftmost fastest, to find the group's lowest member.
  int64_t base = 0;
  for (Axis a : order_) {
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) continue;
    base += (g % degree(a)) * stride(a);
    g /= degree(a);
  }
  GroupRanksOver(axes, base, out);
}

std::vector<AxisSet> MegatronGroups(const Placement& p) {
  std::vector<AxisSet> out;
  const bool ep = p.degree(Axis::kEp) > 1;
  for (Axis a : p.order()) {
    if (a == Axis::kDp) {
      if (p.degree(Axis::kDp) * p.degree(Axis::kEp) > 1)
        out.push_back({"dp", {Axis::kDp, Axis::kEp}});
      if (ep && p.degree(Axis::kDp) > 1) out.push_back({"edp", {Axis::kDp}});
    } else if (p.degree(a) > 1) {
      out.push_back({std::string(AxisName(a)), {a}});
    }
  }
  // Keep dp (and edp) where the slower of ep and dp sits in the order, which the loop above does
  // when dp comes after ep; when the order puts dp first, ep's own row follows, as listed.
  return out;
}

std::string MegatronDegreesString(const Placement& p) {
  std::vector<std::string> parts;
  for (Axis a : kAllAxes) {
    int d = a == Axis::kDp ? DataParallelDegree(p) : p.degree(a);
    if (d > 1) parts.push_back(fmt::format("{}={}", AxisName(a), d));
  }
  return parts.empty() ? std::string("1 GPU") : fmt::format("{}", fmt::join(parts, " "));
}

std::string_view MegatronAxisName(const Placement& p, Axis a) {
  return a == Axis::kDp && p.degree(Axis::kEp) > 1 ? "edp" : AxisName(a);
}

StatusOr<AxisSet> FindGroupKind(const Placement& p, std::string_view name) {
  std::vector<std::string> names;
  for (const AxisSet& s : MegatronGroups(p)) {
    if (s.name == name) return s;
    names.push_back(s.name);
  }
  for (std::string_view n : {"tp", "cp", "ep", "dp", "edp", "pp"}) {
    if (n == name) {
      return InvalidArgument(
          fmt::format("‹group› {}: this placement ({}) has no {} groups with more than one GPU",
                      name, p.degrees().ToString(), name));
    }
  }
  return InvalidArgument(fmt::format("‹group› {}: expected one of tp, cp, ep, dp, edp, pp", name));
}

AxisLinks ClassifyAxisSetGroupByGroup(const Cluster& c, const Placement& p, const AxisSet& set) {
  AxisLinks al;
  al.name = set.name;
  al.axes = set.axes;
  al.axis = set.axes.empty() ? Axis::kTp : set.axes.front();
  al.degree = 1;
  for (Axis a : set.axes) al.degree *= p.degree(a);
  al.groups = p.NumSetGroups(set.axes);
  std::vector<int64_t> members;
  for (int64_t g = 0; g < al.groups; ++g) {
    p.SetGroupRanks(set.axes, g, &members);
    GroupLinks gl = ClassifyGroup(c, members);
    ++al.groups_per_class[static_cast<int>(gl.link)];
    if (g == 0 || gl.link > al.worst.link) {
      al.worst = gl;
      al.worst_group = g;
      al.worst_base_rank = members.front();
    }
  }
  return al;
}

namespace {

// What ClassifyAxisSetGroupByGroup's answer depends on: the cluster's shape (not its names or
// bandwidths), the degrees, the order and the set of axes (their order in the set changes only
// AxisLinks::axis and axes, which are copied from the set, not cached).
struct AxisSetKey {
  int gpus_per_node, nics_per_node, nodes_per_su, num_nodes, fabric;
  std::array<int, kNumAxes> degrees;
  std::array<Axis, kNumAxes> order;
  unsigned axes_mask;
  auto operator<=>(const AxisSetKey&) const = default;
};

// A search evaluates tens of thousands of layouts that share a few hundred (degrees, order)
// pairs; classifying each group of each of them cost about 70-80 ns per GPU per layout (76% of a
// 16,384-GPU search, issue 21). The answers are kept process-wide, bounded: past kMaxEntries the
// cache starts again empty (a search needs far fewer; the bound only caps memory, about 200
// bytes an entry).
class AxisSetCache {
 public:
  static constexpr size_t kMaxEntries = 1 << 14;

  std::optional<AxisLinks> Find(const AxisSetKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void Put(const AxisSetKey& key, const AxisLinks& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kMaxEntries) map_.clear();
    map_.emplace(key, value);
  }

 private:
  std::mutex mu_;
  std::map<AxisSetKey, AxisLinks> map_;
};

AxisSetCache& TheAxisSetCache() {
  static AxisSetCache* cache = new AxisSetCache();  // never destroyed: used from any thread
  return *cache;
}

}  // namespace

AxisLinks ClassifyAxisSet(const Cluster& c, const Placement& p, const AxisSet& set) {
  AxisSetKey key{c.node.gpus_per_node,
                 c.node.nics_per_node,
                 c.nodes_per_su,
                 c.num_nodes,
                 static_cast<int>(c.node.fabric),
                 p.degrees().of,
                 p.order(),
                 0};
  for (Axis a : set.axes) key.axes_mask |= 1u << static_cast<int>(a);
  std::optional<AxisLinks> hit = TheAxisSetCache().Find(key);
  if (!hit) {
    // The name and the axes' order are the caller's; the rest is the cached answer.
    hit = ClassifyAxisSetGroupByGroup(c, p, set);
    hit->name.clear();
    TheAxisSetCache().Put(key, *hit);
  }
  hit->name = set.name;
  hit->axes = set.axes;
  hit->axis = set.axes.empty() ? Axis::kTp : set.axes.front();
  return *std::move(hit);
}

std::vector<AxisLinks> ClassifyAxes(const Cluster& c, const Placement& p) {
  std::vector<AxisLinks> out;
  for (const AxisSet& set : MegatronGroups(p)) out.push_back(ClassifyAxisSet(c, p, set));
  return out;
}

}  // namespace infralens::cluster
