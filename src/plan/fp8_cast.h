// FP8 training's cast traffic, a term of the planner's step time (plan/planner.cc).
#ifndef INFRALENS_PLAN_FP8_CAST_H_
#define INFRALENS_PLAN_FP8_CAST_H_

#include <vector>

#include "model/model.h"
#include "plan/gemm_time.h"

namespace infralens::plan {

// FP8 training's cast traffic per token per layer on one TP rank, {forward, backward} bytes.
// Hopper's FP8 tensor-core GEMMs take both operands K-major, so the weight-gradient GEMM needs
// each operand's transpose in FP8 as well: every FP8 GEMM input and output gradient is written
// in FP8 twice, as is and transposed.
//
// Transformer Engine (`transformer_engine`, the delayed-scaling recipe of Megatron-LM and NeMo;
// NVIDIA/TransformerEngine 2.20.0.dev0, module/layernorm_linear.py, module/linear.py,
// module/base.py):
//   - QKV's and (dense) FC1's input come out of the norm kernel in FP8 (1 byte per element of
//     the rank's own tokens less than BF16) and a transpose kernel writes the FP8 transpose of
//     the (gathered, under SP) input: per element of h, 2 - 1/ts bytes (ts = tp under SP, else 1);
//   - the projection's and FC2's inputs (attention output, activation) are cast and transposed
//     in one cast_transpose kernel: 4 bytes (read 2, write 1 + 1) per element of q / tp, f / tp;
//   - the backward's output gradients likewise, 4 bytes per element: QKV's (q + 2 kv) / tp and
//     FC1's (1 or 2) f / tp; the projection's and FC2's (h wide) under SP as each rank's own
//     tokens cast (3 bytes per element of h / tp), gathered in FP8 and transposed (2 per
//     element of h), without SP 4 per element of h;
//   - MoE layers: the routed copies (top-k) reach the grouped expert GEMMs in BF16: 4 bytes per
//     element of their inputs (h, f) and output gradients (FC1's, h), split by tp.
// torchao's Float8Linear (torchtitan's tensorwise recipe, `transformer_engine` false): every
// input and output gradient cast and transposed, 4 bytes per element, all split by tp.
struct Fp8CastBytes {
  double forward = 0, backward = 0;
};
Fp8CastBytes Fp8CastBytesPerToken(const model::Model& m, bool moe_layer, int tp, bool sp,
                                  bool transformer_engine);

// The bytes that cast a layer's FP8 weights (its `linears` on one rank, the router excepted:
// BF16) and write their transposes: read 2 + write 1 + 1 per parameter. Transformer Engine does
// it on a step's first microbatch and reuses the cached copies for the rest (Megatron-Core's
// schedules set is_first_microbatch once per step, pipeline_parallel/schedules.py; TE's Linear
// updates its weight workspace only then, module/linear.py update_workspace).
double Fp8WeightCastBytes(const std::vector<LinearGemm>& linears);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FP8_CAST_H_
