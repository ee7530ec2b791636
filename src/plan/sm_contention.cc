#include "plan/sm_contention.h"

#include <algorithm>

namespace infralens::plan {

double CollectiveSmShare(const hw::Gpu& gpu, const DeviceEfficiency& e, cluster::LinkClass link) {
  if (gpu.sms <= 0 || link == cluster::LinkClass::kNone) return 0;
  // A ring that leaves the node runs on the channels NCCL's inter-node search sized to the NICs
  // (data/hw/efficiency.csv collective_channels_scale_out); inside the node, on NVLink or PCIe,
  // on the intra-node count.
  const bool scale_out = link == cluster::LinkClass::kRail || link == cluster::LinkClass::kSpine;
  const double channels = scale_out ? e.collective_channels_scale_out : e.collective_channels;
  return std::clamp(channels / gpu.sms, 0.0, 1.0);
}

double ContendedOverlapSeconds(double comm_s, double compute_s, double share) {
  const double x = std::max(0.0, comm_s), c = std::max(0.0, compute_s);
  const double f = std::clamp(share, 0.0, 1.0);
  return std::max(x, c + f * x) - std::max(x, c);
}

}  // namespace infralens::plan
