// libFuzzer target: any bytes given to the topology reader must give a cluster that passes
// Validate or a one-line InvalidArgument; never a crash, hang or unbounded allocation.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "io/topology_toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = io::ParseTopologyToml(text, "fuzz.toml");
  if (!c.ok()) {
    if (c.status().code() != StatusCode::kInvalidArgument) std::abort();
    if (c.status().message().find('\n') != std::string::npos) std::abort();
    return 0;
  }
  if (!cluster::Validate(*c).ok()) std::abort();
  // Round trip through the writer.
  auto again = io::ParseTopologyToml(io::WriteTopologyToml(*c), "again.toml");
  if (!again.ok() || again->node.gpus_per_node != c->node.gpus_per_node) std::abort();
  // Classify a small placement on it: tp = one node, dp = the remaining nodes (bounded GPUs).
  cluster::Cluster small = *c;
  small.num_nodes = std::min(c->num_nodes, 4);
  cluster::Degrees d;
  d[cluster::Axis::kTp] = small.node.gpus_per_node;
  d[cluster::Axis::kDp] = small.num_nodes;
  auto p = cluster::Placement::Make(d, cluster::kDefaultOrder, small.num_gpus());
  if (!p.ok()) std::abort();
  (void)cluster::ClassifyAxes(small, *p);
  (void)cluster::DescribeNode(c->node);
  return 0;
}
