#include "plan/cpu_offload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "base/strings.h"

namespace infralens::plan {

StatusOr<int64_t> ParseCpuOffloadLayers(std::string_view text) {
  const std::optional<int64_t> n = ParseInt(text);
  if (!n || *n < 0 || *n > kMaxCpuOffloadLayers) {
    return InvalidArgument(fmt::format("'{}': expected a layer count from 0 to {}", Excerpt(text),
                                       kMaxCpuOffloadLayers));
  }
  return *n;
}

StatusOr<CpuOffloadStall> CpuOffloadStallSeconds(int64_t layers, int64_t offloaded,
                                                 double forward_s, double backward_s,
                                                 double copy_s) {
  RETURN_IF_ERROR(CheckCpuOffload(offloaded, layers, 1, false));
  for (double t : {forward_s, backward_s, copy_s}) {
    if (!std::isfinite(t) || t < 0) {
      return InvalidArgument(fmt::format("offload timing {}: expected a finite time >= 0 s", t));
    }
  }
  CpuOffloadStall stall;
  if (offloaded == 0) return stall;
  // The forward. Layer i's copy has until layer `window + i` starts (window = layers - offloaded):
  // Transformer Engine's finish_offload_map[True, layers - offloaded + i].
  const int64_t window = layers - offloaded;
  double t = 0, stream_free = 0;
  std::vector<double> copied(static_cast<size_t>(offloaded), 0.0);
  // Waits are summed where they happen, so a copy that hides costs exactly nothing.
  const auto wait_for = [&t](double ready, double* waited) {
    if (ready > t) {
      *waited += ready - t;
      t = ready;
    }
  };
  for (int64_t j = 0; j < layers; ++j) {
    if (const int64_t i = j - window; i >= 0 && i < offloaded) {
      wait_for(copied[static_cast<size_t>(i)], &stall.forward_s);
    }
    t += forward_s;
    if (j < offloaded) {  // fwd_step of the next layer starts this one's copy
      stream_free = std::max(t, stream_free) + copy_s;
      copied[static_cast<size_t>(j)] = stream_free;
    }
  }
  // The backward, layers in reverse: bwd_step(k) starts the copy back of layer
  // i = k - (layers - 1 - offloaded) (start_reload_map[False, layers - 1 - offloaded + i]), then
  // layer k waits for its own copy if it was offloaded.
  // Every copy out ended before the last layer's forward began (its deadline), so the stream is
  // free when the backward starts.
  t = 0;
  stream_free = 0;
  std::vector<double> back(static_cast<size_t>(offloaded), 0.0);
  for (int64_t k = layers - 1; k >= 0; --k) {
    if (const int64_t i = k - (layers - 1 - offloaded); i >= 0 && i < offloaded) {
      stream_free = std::max(t, stream_free) + copy_s;
      back[static_cast<size_t>(i)] = stream_free;
    }
    if (k < offloaded) wait_for(back[static_cast<size_t>(k)], &stall.backward_s);
    t += backward_s;
  }
  return stall;
}

Status CheckCpuOffload(int64_t offloaded, int64_t layers, int pp, bool recompute) {
  if (offloaded < 0 || offloaded >= std::max<int64_t>(1, layers)) {
    return InvalidArgument(fmt::format(
        "‹cpu_offload_layers› {}: expected 0 to {} (fewer than the model's {} layers, as "
        "Megatron-Core requires)",
        offloaded, std::max<int64_t>(0, layers - 1), layers));
  }
  if (offloaded == 0) return Status::Ok();
  if (pp > 1) {
    return InvalidArgument(fmt::format(
        "‹cpu_offload_layers› {}: Megatron-Core offloads activations only without pipeline "
        "parallelism (pp {} given; pp 1 required)",
        offloaded, pp));
  }
  if (recompute) {
    return InvalidArgument(fmt::format(
        "‹cpu_offload_layers› {}: Megatron-Core refuses activation offloading with recomputation "
        "(recompute none required)",
        offloaded));
  }
  return Status::Ok();
}

Status CheckCpuOffloadHostMemory(int64_t offloaded_layers, double offloaded_bytes_per_gpu,
                                 const cluster::NodeSpec& node) {
  const double host_bytes_per_node = node.host_memory_bytes;
  const int gpus_per_node = node.gpus_per_node;
  if (offloaded_layers <= 0 || !(host_bytes_per_node > 0)) return Status::Ok();
  const double node_bytes = offloaded_bytes_per_gpu * std::max(1, gpus_per_node);
  if (node_bytes <= host_bytes_per_node) return Status::Ok();
  using cluster::kGiB;
  return InvalidArgument(fmt::format(
      "‹cpu_offload_layers› {}: the offloaded activations take {:.1f} GiB per GPU, {:.1f} GiB on a "
      "node of {} GPUs, more than the node's {:.1f} GiB of host memory",
      offloaded_layers, offloaded_bytes_per_gpu / kGiB, node_bytes / kGiB, gpus_per_node,
      host_bytes_per_node / kGiB));
}

}  // namespace infralens::plan
