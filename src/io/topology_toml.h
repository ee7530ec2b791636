// A user's cluster description in TOML: the same fields as a preset (cluster/cluster.h).
//
//   name = "my-cluster"          # optional (default: the file's name)
//   base = "dgx-h100"            # optional: start from a preset and override what follows
//   gpu_model = "H100-SXM"
//   gpus_per_node = 8
//   nodes = 16                   # optional default node count (--nodes overrides it)
//   nodes_per_su = 32            # nodes per scalable unit (one leaf switch per rail)
//   [scale_up]
//   fabric = "nvswitch"          # nvswitch | nvlink-bridge | full-mesh | pcie
//   bandwidth_GBps = 450         # per GPU per direction, 1 GB/s = 1e9 bytes/s
//   efficiency = 0.82            # achieved fraction of that (0, 1]
//   [pcie]
//   bandwidth_GBps = 64
//   efficiency = 0.75
//   [network]
//   nics_per_node = 8
//   nic_Gbps = 400               # per NIC line rate in gigabits per second
//   efficiency = 0.94
//
// Without `base`, gpus_per_node, scale_up.fabric, scale_up.bandwidth_GBps, network.nics_per_node
// and network.nic_Gbps are required, and efficiencies default to 1 (line rate).
// Files are ASCII (a leading UTF-8 byte-order mark is skipped). Only this file's .cc includes
// toml++.
#ifndef INFRALENS_IO_TOPOLOGY_TOML_H_
#define INFRALENS_IO_TOPOLOGY_TOML_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cluster/cluster.h"

namespace infralens::io {

// Topology files are small; anything larger is refused before parsing.
inline constexpr size_t kMaxTopologyBytes = 64 * 1024;

// Parses and validates a topology. Errors are one-line InvalidArgument naming the key and value
// and what is allowed (unknown key, wrong type, negative bandwidth, TOML syntax with line:column).
StatusOr<cluster::Cluster> ParseTopologyToml(std::string_view text, std::string_view default_name);

// The cluster as a topology file that ParseTopologyToml reads back to the same fields.
std::string WriteTopologyToml(const cluster::Cluster& c);

}  // namespace infralens::io

#endif  // INFRALENS_IO_TOPOLOGY_TOML_H_
