// `trace synth --record-shapes`: a one-rank Kineto trace whose operators carry shapes as PyTorch's
// profiler writes them with record_shapes=True, and whose kernel durations follow given
// efficiency curves, so that `trace calibrate` can be checked against a known answer (round trip)
// and benchmarked on traces of any size.
//
// The operators are one transformer layer of a model preset split over `tp` ranks (Megatron's
// column/row-parallel GEMMs: QKV, attention output, MLP up (gated: 2 ffn), MLP down), swept over
// token counts, each an aten::mm / aten::addmm with "Input Dims" and "Input type"; per token
// count >= 512 a causal flash attention forward and backward
// (aten::_scaled_dot_product_flash_attention[_backward]) and the two residual aten::add; with tp >
// 1 an all_reduce of the layer output with PyTorch's collective metadata. Each operator launches
// one kernel through cudaLaunchKernel; launch and kernel carry the operator's "External id" and a
// shared "correlation" (libkineto/src/output_json.cpp). Kernel durations:
//   GEMM       the planner's model (plan::GemmSeconds, plan/gemm_time.h) at e = gemm and
//              k_half = gemm_half_dim, with its HBM floor at hbm and its fastest split-K
//   attention  executed FLOPs / (BF16 peak x attention_fa2)
//   add        bytes / (HBM bandwidth x hbm)
//   all_reduce bytes x 2 (tp - 1) / tp / (scale_up_link x scale_up_bytes_per_s)
// and with dp > 1, per repeat, the gradients' data-parallel collectives over dp ranks one node
// apart (ranks 0, gpus_per_node, 2 gpus_per_node, ...: the scale-out network): an all_reduce, an
// all_gather and a reduce_scatter of each of 16, 64, 128 and 256 MiB, each taking
//   bytes x nccl-tests' bus factor / (scale_out_link x scale_out_bytes_per_s)
// so that their bus bandwidth is exactly the link efficiency times the rate.
#ifndef INFRALENS_TRACE_CALIBRATE_SYNTH_H_
#define INFRALENS_TRACE_CALIBRATE_SYNTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "hw/gpu.h"
#include "model/model.h"
#include "plan/efficiency.h"

namespace infralens::trace {

struct ShapesSynthOptions {
  hw::Gpu gpu;
  plan::DeviceEfficiency curves;  // gemm, gemm_half_dim, attention_fa2, hbm (BF16)
  model::Model model;
  int tp = 1;
  std::vector<int64_t> tokens = {64, 128, 256, 512, 1024, 2048, 4096, 8192};
  int repeats = 1;  // the sweep written this many times (file size, for benchmarks)
  // The links (plan/efficiency.h's scale_up_link and scale_out_link: fractions of the rate per
  // GPU per direction that the bus bandwidth reaches). 0.8 and 0.9 are made-up defaults, used
  // when `curves` has no link values.
  double scale_up_link = 0.8, scale_out_link = 0.9;
  double scale_up_bytes_per_s = 0;      // 0: the GPU's scaleup_bytes_per_s
  double scale_out_bytes_per_s = 50e9;  // per GPU: DGX H100's 8 x 400 Gb/s NICs over 8 GPUs
  int gpus_per_node = 8;
  int dp = 1;  // > 1: also the data-parallel collectives (see above)
};

// Bounds checked before any work: tp in [1, 64] dividing the heads, the ffn and the KV heads;
// repeats in [1, 100000]; token counts in [1, 1 << 20]; dp in [1, 64]; gpus_per_node in
// [1, 1024]; link efficiencies in (0, 1]; rates >= 0 and finite (scale-out > 0).
Status CheckShapesSynthOptions(const ShapesSynthOptions& o);

// One rank's trace (rank 0 of tp) as Kineto JSON.
StatusOr<std::string> ShapesTraceJson(const ShapesSynthOptions& o);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_CALIBRATE_SYNTH_H_
