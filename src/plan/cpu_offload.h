// Activation offloading to host memory as Megatron-Core runs it (--cpu-offloading,
// --cpu-offloading-num-layers N): each of the first N transformer layers' saved activations are
// copied to pinned host memory after its forward and copied back before its backward, on a stream
// of their own, through Transformer Engine's offload context
// (megatron/core/transformer/transformer_block.py get_cpu_offload_context;
// transformer_engine/pytorch/cpu_offload.py OffloadSynchronizer). It buys memory without
// recomputation: Megatron-Core refuses it with recomputation and with pipeline parallelism, and
// N must be below the layer count (megatron/core/transformer/transformer_config.py
// __post_init__: "CPU offloading does not work when activation recomputation is enabled",
// "Currently there is no support for Pipeline parallelism with CPU offloading", "CPU offloading
// can be done only for layers less than num_layers").
#ifndef INFRALENS_PLAN_CPU_OFFLOAD_H_
#define INFRALENS_PLAN_CPU_OFFLOAD_H_

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "cluster/cluster.h"

namespace infralens::plan {

// Offloaded layers a run may ask for: at most this many (a model's layer count is below it).
inline constexpr int64_t kMaxCpuOffloadLayers = 100000;

// A count of offloaded layers as a flag, a recipe row or a CSV cell gives it: an integer from 0
// to kMaxCpuOffloadLayers. InvalidArgument "'<text>': expected a layer count from 0 to 100000"
// otherwise; the caller puts its own context in front.
StatusOr<int64_t> ParseCpuOffloadLayers(std::string_view text);

// What the copies cost the compute stream per microbatch, in seconds: the time it waits for them.
struct CpuOffloadStall {
  double forward_s = 0, backward_s = 0;
};

// The stall of one microbatch through `layers` layers of which the first `offloaded` are
// offloaded (0 <= offloaded < layers), each layer's forward taking `forward_s`, its backward
// `backward_s` (recomputation is refused, so nothing else), and each layer's copy, either way,
// `copy_s`. Transformer Engine's default synchronisation (OffloadSynchronizer
// _default_offload_sync_init), which keeps the activations of layers - offloaded layers on the
// GPU at the forward's end:
//   forward: layer i's copy to the host starts once layer i's forward ends and the stream is free
//     (one stream, copies in order), and layer (layers - offloaded + i)'s forward waits for it;
//   backward (layers in reverse): the backward of layer (layers - 1 - offloaded + i) starts the
//     copy of layer i back, in order on the same stream, and layer i's backward waits for it.
// InvalidArgument for counts or times out of range (negative, not finite, offloaded >= layers).
StatusOr<CpuOffloadStall> CpuOffloadStallSeconds(int64_t layers, int64_t offloaded,
                                                 double forward_s, double backward_s,
                                                 double copy_s);

// Why Megatron-Core would refuse `offloaded` layers with this layout, or OK: offloaded within
// [0, layers), and with offloaded > 0 no pipeline (pp 1) and no recomputation. The message names
// the value and the rule.
Status CheckCpuOffload(int64_t offloaded, int64_t layers, int pp, bool recompute);

// Whether a node's host memory holds what its GPUs offload: `offloaded_bytes_per_gpu` (one
// microbatch's offloaded activations: with pp 1 a rank's microbatches run one after another, and
// Transformer Engine reuses its host buffers) on each of the node's GPUs against its
// host_memory_bytes. OK when nothing is offloaded or the host memory is not known (0); otherwise
// InvalidArgument naming the layer count, the bytes per GPU and per node, and the node's host
// memory. What else the host keeps (the data loader, pinned staging buffers, the OS) is not
// counted: the check is the most offloading can take.
Status CheckCpuOffloadHostMemory(int64_t offloaded_layers, double offloaded_bytes_per_gpu,
                                 const cluster::NodeSpec& node);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_CPU_OFFLOAD_H_
