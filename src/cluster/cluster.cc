#include "cluster/cluster.h"

#include <fmt/format.h>

#include <cmath>

#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::cluster {

constexpr EnumName<ScaleUpFabric> kFabricNames[] = {
    {ScaleUpFabric::kNvSwitch, "nvswitch", "NVSwitch"},
    {ScaleUpFabric::kNvLinkBridge, "nvlink-bridge", "NVLink bridge pairs"},
    {ScaleUpFabric::kFullMesh, "full-mesh", "full mesh"},
    {ScaleUpFabric::kPcieOnly, "pcie", "PCIe only"}};

std::string_view FabricName(ScaleUpFabric f) { return NameIn(kFabricNames, f); }
std::string_view FabricTitle(ScaleUpFabric f) { return TitleIn(kFabricNames, f); }

constexpr EnumName<LinkClass> kLinkClassNames[] = {
    {LinkClass::kNone, "none", "no communication (one GPU)"},
    {LinkClass::kNvLinkBridge, "nvlink-bridge", "NVLink bridge of a GPU pair"},
    {LinkClass::kScaleUp, "scale-up", "scale-up domain (one node)"},
    {LinkClass::kPcie, "pcie", "PCIe inside one node"},
    {LinkClass::kRail, "rail", "same rail, one leaf switch hop"},
    {LinkClass::kSpine, "spine", "through the spine (cross-rail or cross-SU)"}};

std::string_view LinkClassName(LinkClass c) { return NameIn(kLinkClassNames, c); }
std::string_view LinkClassTitle(LinkClass c) { return TitleIn(kLinkClassNames, c); }

StatusOr<ScaleUpFabric> ParseFabric(std::string_view name) {
  if (auto f = ValueIn(kFabricNames, ToLower(name))) return *f;
  return InvalidArgument(
      fmt::format("fabric '{}': expected nvswitch, nvlink-bridge, full-mesh or pcie", name));
}

double Cluster::NicShareBytesPerS() const {
  return node.nics_per_node * node.nic_bytes_per_s * node.nic_efficiency / node.gpus_per_node;
}

namespace {

// `per_unit` converts bytes/s to the unit the field is written in (1e9 for GB/s, 1e9/8 for Gb/s).
Status CheckRate(std::string_view field, double bytes_per_s, double per_unit = 1e9,
                 std::string_view unit = "GB/s") {
  // At least 1 MB/s and an efficiency of at least 0.1%: no link is slower, and below them a
  // subnormal value such as 4.9e-324 passed "> 0" and made step times infinite (issue 26).
  constexpr double kMinBytesPerS = 1e6;
  if (!std::isfinite(bytes_per_s) || bytes_per_s < kMinBytesPerS || bytes_per_s > kMaxBytesPerS) {
    return InvalidArgument(fmt::format("{} = {:g}: must be {:g} to {:g} {}", field,
                                       bytes_per_s / per_unit, kMinBytesPerS / per_unit,
                                       kMaxBytesPerS / per_unit, unit));
  }
  return Status::Ok();
}

Status CheckEfficiency(std::string_view field, double e) {
  constexpr double kMinEfficiency = 1e-3;
  if (!std::isfinite(e) || e < kMinEfficiency || e > 1) {
    return InvalidArgument(
        fmt::format("{} = {:g}: must be a fraction in [{:g}, 1]", field, e, kMinEfficiency));
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const Cluster& c) {
  const NodeSpec& n = c.node;
  if (n.gpus_per_node < 1 || n.gpus_per_node > kMaxGpusPerNode) {
    return InvalidArgument(
        fmt::format("gpus_per_node = {}: must be 1..{}", n.gpus_per_node, kMaxGpusPerNode));
  }
  if (n.nics_per_node < 1 || n.nics_per_node > kMaxNicsPerNode) {
    return InvalidArgument(
        fmt::format("nics_per_node = {}: must be 1..{}", n.nics_per_node, kMaxNicsPerNode));
  }
  if (n.fabric == ScaleUpFabric::kNvLinkBridge && n.gpus_per_node % 2 != 0) {
    return InvalidArgument(
        fmt::format("gpus_per_node = {}: NVLink bridges join GPUs in pairs, so it must be even",
                    n.gpus_per_node));
  }
  if (n.gpu_model.empty() || n.gpu_model.size() > 64) {
    return InvalidArgument("gpu_model: must be 1..64 characters");
  }
  RETURN_IF_ERROR(CheckRate("scale_up.bandwidth_GBps", n.scale_up_bytes_per_s));
  RETURN_IF_ERROR(CheckEfficiency("scale_up.efficiency", n.scale_up_efficiency));
  if (n.nvls_efficiency != 0) {
    RETURN_IF_ERROR(CheckEfficiency("scale_up.nvls_efficiency", n.nvls_efficiency));
    if (n.fabric != ScaleUpFabric::kNvSwitch) {
      return InvalidArgument(
          fmt::format("scale_up.nvls_efficiency = {:g}: NVLink SHARP needs fabric nvswitch, not {}",
                      n.nvls_efficiency, FabricName(n.fabric)));
    }
  }
  // A node's host memory: 0 (unknown) or up to a petabyte; NaN and negative values refused.
  if (!(n.host_memory_bytes >= 0) || n.host_memory_bytes > kMaxHostMemoryBytes) {
    return InvalidArgument(fmt::format("host_memory_GiB = {:g}: must be 0 (unknown) to {:.0f}",
                                       n.host_memory_bytes / kGiB, kMaxHostMemoryBytes / kGiB));
  }
  RETURN_IF_ERROR(CheckRate("pcie.bandwidth_GBps", n.pcie_bytes_per_s));
  RETURN_IF_ERROR(CheckEfficiency("pcie.efficiency", n.pcie_efficiency));
  RETURN_IF_ERROR(CheckRate("network.nic_Gbps", n.nic_bytes_per_s, 1e9 / 8, "Gb/s"));
  RETURN_IF_ERROR(CheckEfficiency("network.efficiency", n.nic_efficiency));
  if (c.nodes_per_su < 1 || c.nodes_per_su > kMaxGpus) {
    return InvalidArgument(
        fmt::format("nodes_per_su = {}: must be 1..{}", c.nodes_per_su, kMaxGpus));
  }
  if (c.num_nodes < 1 || c.num_gpus() > kMaxGpus) {
    return InvalidArgument(
        fmt::format("‹nodes› {}: must be >= 1 with at most {} GPUs in all ({} per node)",
                    c.num_nodes, kMaxGpus, n.gpus_per_node));
  }
  return Status::Ok();
}

std::string DescribeNode(const NodeSpec& n) {
  std::string net = fmt::format("{} x {:g} Gb/s NIC{}", n.nics_per_node,
                                n.nic_bytes_per_s * 8 / 1e9, n.nics_per_node == 1 ? "" : "s");
  std::string up;
  switch (n.fabric) {
    case ScaleUpFabric::kNvSwitch:
      up = fmt::format("NVSwitch {:g} GB/s per GPU per direction", n.scale_up_bytes_per_s / 1e9);
      break;
    case ScaleUpFabric::kNvLinkBridge:
      up = fmt::format("NVLink bridge pairs {:g} GB/s per direction, PCIe {:g} GB/s",
                       n.scale_up_bytes_per_s / 1e9, n.pcie_bytes_per_s / 1e9);
      break;
    case ScaleUpFabric::kFullMesh:
      up = fmt::format(
          "full mesh {:g} GB/s per GPU per direction ({:g} per link)", n.scale_up_bytes_per_s / 1e9,
          n.gpus_per_node > 1 ? n.scale_up_bytes_per_s / 1e9 / (n.gpus_per_node - 1) : 0.0);
      break;
    case ScaleUpFabric::kPcieOnly:
      up = fmt::format("PCIe only {:g} GB/s per GPU per direction", n.pcie_bytes_per_s / 1e9);
      break;
  }
  return fmt::format("{} x {} per node, {}, {}", n.gpus_per_node, n.gpu_model, up, net);
}

}  // namespace infralens::cluster
