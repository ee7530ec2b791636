// The cross-entropy loss over the output layer's logits as each framework runs it: the passes
// its kernels make over the [tokens, vocab / tp] logits, in HBM bytes per logit element on the
// rank, a term of the last pipeline stage's forward and backward (plan/planner.cc,
// OutputLayerCost). The logits arrive in BF16 from the output GEMM (2 bytes); every framework
// named here upcasts them to FP32 (4 bytes) for the softmax. Which implementation a framework runs
// is data (data/frameworks/*.csv, cross_entropy).
#ifndef INFRALENS_PLAN_LOSS_H_
#define INFRALENS_PLAN_LOSS_H_

#include <string_view>

#include "base/status.h"

namespace infralens::plan {

enum class CrossEntropyKernels {
  // Megatron-Core's --cross-entropy-loss-fusion (NVIDIA/Megatron-LM core_r0.12.0
  // megatron/core/fusions/fused_cross_entropy.py): the same steps as kUnfused in four jit_fuser
  // (torch.compile) functions, each one pass. Forward: the FP32 copy with its row maximum (read 2,
  // write 4), the shift, exponent and row sum in place (read 4, write 4), the division in place
  // (read 4, write 4): 22. Backward: the target update, the scaling by the output gradient and the
  // BF16 cast in one kernel (read 4, write 2) that also writes back its in-place update of the
  // saved softmax (write 4): 10.
  kFused,
  // Megatron-Core's vocab_parallel_cross_entropy (core_r0.8.0 and core_r0.12.0
  // megatron/core/tensor_parallel/cross_entropy.py), one eager kernel per step. Forward: .float()
  // (read 2, write 4), max (read 4), the in-place shift (read 4, write 4), exp (read 4, write 4),
  // sum (read 4), the in-place division (read 4, write 4): 38. Backward: the in-place scaling by
  // the output gradient (read 4, write 4) and autograd's cast of the FP32 gradient to the BF16
  // input's dtype (read 4, write 2): 14.
  kUnfused,
  // torch.nn.functional.cross_entropy on logits.float() in eager mode (pytorch/torchtitan 9dec370
  // train.py loss_fn: "compiling loss function causes CUDA errors, turning off for now"; Hugging
  // Face models under DeepSpeed). Forward: .float() (read 2, write 4) and log_softmax, whose
  // kernel for rows too long for shared memory reads the row for its maximum, again for the sum of
  // exponents and again to write the result (read 12, write 4): 22. Backward: nll_loss's
  // zero-filled gradient (write 4), log_softmax's backward reading the gradient for its row sum
  // and then gradient and output to write the input gradient (read 12, write 4), the cast back to
  // BF16 (read 4, write 2): 26.
  kEager,
};

// "fused", "unfused", "eager": InvalidArgument naming the value and the three otherwise.
StatusOr<CrossEntropyKernels> ParseCrossEntropyKernels(std::string_view name);
const char* CrossEntropyKernelsName(CrossEntropyKernels k);

// HBM bytes per logit element the loss moves in the forward and in the backward pass (the output
// GEMMs' own operands excluded).
struct LogitBytes {
  double forward = 0;
  double backward = 0;
};
LogitBytes CrossEntropyBytesPerLogit(CrossEntropyKernels k);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_LOSS_H_
