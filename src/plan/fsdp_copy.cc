#include "plan/fsdp_copy.h"

namespace infralens::plan {

FsdpCopyBytes FsdpCopyBytesPerLayer(double weights, bool copy_out, bool copy_in,
                                    double reduce_bytes) {
  // Norm weights (2h) are not among them: under a millionth of a layer's weights.
  constexpr double kParamBytes =
      2;  // gathered in BF16 (FSDP2's param_dtype, DeepSpeed's fp16/bf16)
  FsdpCopyBytes b;
  if (copy_out) {
    b.forward = 2 * kParamBytes * weights;   // read from the buffer, written to the parameter
    b.backward = 2 * kParamBytes * weights;  // the backward's gather, copied out again
  }
  if (copy_in) b.backward += (kParamBytes + reduce_bytes) * weights;  // read BF16, write reduce
  return b;
}

FsdpCopyBytes FsdpCopyBytesPerLayerOncePerStep(double weights, bool copy_out, bool copy_in,
                                               double reduce_bytes, double microbatches) {
  constexpr double kParamBytes = 2;
  const double m = microbatches > 1 ? microbatches : 1;
  FsdpCopyBytes b;
  if (copy_out) b.forward = 2 * kParamBytes * weights / m;  // once per step
  if (copy_in) {
    b.backward = (kParamBytes + 2 * reduce_bytes) * weights +  // accumulate, every microbatch
                 2 * reduce_bytes * weights / m;               // into the reduce-scatter input
  }
  return b;
}

}  // namespace infralens::plan
