// FP8 training's cast traffic, a term of the planner's step time (plan/planner.cc).
#ifndef INFRALENS_PLAN_FP8_CAST_H_
#define INFRALENS_PLAN_FP8_CAST_H_

#include "model/model.h"

namespace infralens::plan {

// FP8 training's cast traffic (Transformer Engine's cast_transpose kernels, torchao's Float8Linear
// casts): every linear layer's BF16 input is read (2 bytes per element) and written in FP8 twice,
// as is and transposed for the weight-gradient GEMM (1 + 1): 4 bytes per element of each GEMM
// input in the forward (QKV and FC1 inputs h, the attention output heads x head_dim, FC2's input
// f), and of each GEMM's output gradient in the backward (QKV's q + 2 kv widths, the projection's
// h, FC1's f or 2f when gated, FC2's h), on one TP rank. MoE layers count the expert GEMMs' top-k
// copies. Returns {forward, backward} bytes per token per layer; weights are cast once per step
// (TE's FP8 weight cache), not counted.
struct Fp8CastBytes {
  double forward = 0, backward = 0;
};
Fp8CastBytes Fp8CastBytesPerToken(const model::Model& m, bool moe_layer, int tp);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FP8_CAST_H_
