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
//   GEMM       2 M N K / (peak x e d / (d + d_half)), d = min(M, N, K)
//   attention  executed FLOPs / (BF16 peak x attention_fa2)
//   add        bytes / (HBM bandwidth x hbm)
//   all_reduce bytes x 2 (tp - 1) / tp / (0.8 x the GPU's scale-up bandwidth) (a made-up link
//              efficiency: calibrate reports busbw, it does not fit it)
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
};

// Bounds checked before any work: tp in [1, 64] dividing the heads, the ffn and the KV heads;
// repeats in [1, 100000]; token counts in [1, 1 << 20].
Status CheckShapesSynthOptions(const ShapesSynthOptions& o);

// One rank's trace (rank 0 of tp) as Kineto JSON.
StatusOr<std::string> ShapesTraceJson(const ShapesSynthOptions& o);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_CALIBRATE_SYNTH_H_
