// A training cluster as the communication model sees it: identical nodes (GPUs joined by a
// scale-up fabric, NICs to a scale-out network) wired rail-optimised into leaf/spine scalable
// units.
//
// Units: bandwidths are bytes per second per direction (1 GB/s = 1e9 bytes/s); a link's "line"
// bandwidth is the datasheet rate and its "efficiency" the fraction that NCCL achieves on it
// (nccl-tests bus bandwidth over line rate; docs/collectives.md lists the sources).
//
// Rank r lives on GPU r: node r / gpus_per_node, local index r % gpus_per_node (torchrun's and
// Megatron-LM's assumption that adjacent ranks share a box). GPU local index i reaches the
// network through NIC i * nics_per_node / gpus_per_node, and NIC k of every node is on rail k:
// in a rail-optimised fabric (DGX SuperPOD reference architectures) rail k of all the nodes of one
// scalable unit (SU) meets at one leaf switch, and leaves reach each other through spines.
#ifndef INFRALENS_CLUSTER_CLUSTER_H_
#define INFRALENS_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens::cluster {

// Limits that keep every request bounded (placement is O(GPUs), groups are listed in full).
inline constexpr int64_t kMaxGpus = 65536;
inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr int kMaxNicsPerNode = 1024;
// Bandwidth values above this are taken for a unit mistake (100 TB/s per GPU per direction).
inline constexpr double kMaxBytesPerS = 1e14;
inline constexpr double kGiB = 1024.0 * 1024 * 1024;
// A node's host memory above this is taken for a unit mistake (1 PiB).
inline constexpr double kMaxHostMemoryBytes = 1024.0 * 1024 * kGiB;

// How the GPUs inside one node talk to each other.
enum class ScaleUpFabric {
  kNvSwitch,      // every GPU reaches every other at full per-GPU bandwidth (DGX, NVL72)
  kNvLinkBridge,  // GPUs joined in pairs (0-1, 2-3, ...) by NVLink bridges; otherwise PCIe
  kFullMesh,      // a direct link between every pair (AMD Infinity Fabric on MI300X); the
                  // per-GPU bandwidth is split evenly over the gpus_per_node - 1 links
  kPcieOnly,      // no GPU-to-GPU fabric: peer traffic goes over PCIe
};

// The class of link a communication crosses, from the fastest and most local outwards.
enum class LinkClass {
  kNone,          // a group of one GPU: no communication
  kNvLinkBridge,  // the NVLink bridge between the two GPUs of a pair
  kScaleUp,       // the node's scale-up domain: NVSwitch, or the full mesh
  kPcie,          // PCIe (through the host's switches / CPU) between GPUs of one node
  kRail,          // between nodes on one rail: NIC -> one leaf switch -> NIC (same SU)
  kSpine,         // between nodes through the spine: across rails or across SUs
};
inline constexpr int kNumLinkClasses = 6;

std::string_view FabricName(ScaleUpFabric f);   // "nvswitch", "nvlink-bridge", "full-mesh", "pcie"
std::string_view FabricTitle(ScaleUpFabric f);  // "NVSwitch", "NVLink bridge pairs", ...
std::string_view LinkClassName(
    LinkClass c);  // "none", "nvlink-bridge", "scale-up", "pcie", "rail", "spine"
std::string_view LinkClassTitle(LinkClass c);  // one phrase for humans
StatusOr<ScaleUpFabric> ParseFabric(std::string_view name);
// Whether the class crosses the scale-out network (uses NICs).
inline bool IsNetwork(LinkClass c) { return c == LinkClass::kRail || c == LinkClass::kSpine; }

struct NodeSpec {
  int gpus_per_node = 8;
  std::string gpu_model = "H100-SXM";
  ScaleUpFabric fabric = ScaleUpFabric::kNvSwitch;
  // Scale-up bandwidth per GPU per direction, summed over all its scale-up links (for a bridge:
  // the bridge to its partner; for a full mesh: all gpus_per_node - 1 links together).
  double scale_up_bytes_per_s = 450e9;
  double scale_up_efficiency = 0.82;
  // PCIe bandwidth per GPU per direction (x16 link of the GPU's generation).
  double pcie_bytes_per_s = 64e9;
  double pcie_efficiency = 0.75;
  // East-west (compute fabric) NICs only; storage / management NICs are not modelled.
  int nics_per_node = 8;
  double nic_bytes_per_s = 50e9;  // per NIC per direction (400 Gb/s = 50e9 bytes/s)
  double nic_efficiency = 0.94;
  // NVLink SHARP (NVLS): the NVSwitch reduces and multicasts, so an all-reduce moves S bytes per
  // GPU per direction (multimem loads and stores) instead of a ring's 2 (n - 1) / n S. This is the
  // fraction of scale_up_bytes_per_s those S bytes move at; 0: the fabric has no NVLS (NVSwitch
  // before the third generation, as on A100; bridges, meshes, PCIe). [0, 1].
  double nvls_efficiency = 0;
  // The node's host (CPU) memory, bytes: where activation offloading puts its copies
  // (plan/cpu_offload.h). 0: not known, and nothing is checked against it.
  double host_memory_bytes = 0;
};

struct Cluster {
  std::string name;         // preset name or topology file name
  std::string description;  // one line
  std::string source;       // where the figures come from
  NodeSpec node;
  int nodes_per_su = 32;  // nodes behind one set of rail leaf switches
  int num_nodes = 1;

  int64_t num_gpus() const { return int64_t{num_nodes} * node.gpus_per_node; }
  int NodeOf(int64_t rank) const { return static_cast<int>(rank / node.gpus_per_node); }
  int LocalOf(int64_t rank) const { return static_cast<int>(rank % node.gpus_per_node); }
  int SuOf(int64_t rank) const { return NodeOf(rank) / nodes_per_su; }
  // The NIC (rail) that GPU `local` uses: GPUs are shared evenly among the NICs.
  int RailOf(int local) const {
    return static_cast<int>(int64_t{local} * node.nics_per_node / node.gpus_per_node);
  }
  // Achieved bandwidth of one GPU's share of the node's NICs when every GPU communicates at
  // once (nics * rate * efficiency / gpus), bytes per second per direction.
  double NicShareBytesPerS() const;
};

// Checks every field: counts >= 1 and within the limits above, bandwidths > 0 and finite,
// efficiencies in (0, 1], num_nodes * gpus_per_node <= kMaxGpus. InvalidArgument names the field.
Status Validate(const Cluster& c);

// A named, cited cluster definition (num_nodes = 1; the command line sets the node count).
struct ClusterPreset {
  std::string name;
  Cluster cluster;
};
// Every preset, in the order `infralens presets` lists them.
const std::vector<ClusterPreset>& ClusterPresets();
// The preset by name (case-insensitive); InvalidArgument listing the names otherwise.
StatusOr<Cluster> FindClusterPreset(std::string_view name);
// Comma-separated preset names, for help and error text.
std::string ClusterPresetNames();

// One line: "8 x H100-SXM per node, NVSwitch 450 GB/s per GPU per direction, 8 x 400 Gb/s NICs".
std::string DescribeNode(const NodeSpec& n);

}  // namespace infralens::cluster

#endif  // INFRALENS_CLUSTER_CLUSTER_H_
