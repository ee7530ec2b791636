#include "plan/fsdp_copy.h"

namespace infralens::plan {

FsdpCopyBytes FsdpCopyBytesPerLayer(const std::vector<LinearGemm>& linears, bool copy_out,
                                    bool copy_in, double reduce_bytes) {
  // The layer's weights on this rank: every GEMM's k x n per group, the router's included (it is
  // a parameter of the unit like any other). Norm weights (2h) are left out: under a millionth of
  // a layer's weights.
  double params = 0;
  for (const LinearGemm& l : linears) params += l.k * l.n * l.groups;
  constexpr double kParamBytes =
      2;  // gathered in BF16 (FSDP2's param_dtype, DeepSpeed's fp16/bf16)
  FsdpCopyBytes b;
  if (copy_out) {
    b.forward = 2 * kParamBytes * params;   // read from the buffer, written to the parameter
    b.backward = 2 * kParamBytes * params;  // the backward's gather, copied out again
  }
  if (copy_in) b.backward += (kParamBytes + reduce_bytes) * params;  // read BF16, write reduce
  return b;
}

}  // namespace infralens::plan
