// Reads a Megatron-LM launch command (what `infralens export --format megatron` writes, or a
// user's own script) back into the model and layout it trains: the reverse of export_megatron.h.
// Flags are read as megatron/training/arguments.py (NVIDIA/Megatron-LM, commit 000c4ac, 2025)
// defines them, with its defaults where a flag is absent (learned absolute positions, LayerNorm,
// GeLU, biases on, dropout 0.1, rotary base 10000, tied embeddings, no GQA).
#ifndef INFRALENS_IO_MEGATRON_ARGS_H_
#define INFRALENS_IO_MEGATRON_ARGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "plan/memory.h"

namespace infralens::io {

struct MegatronJob {
  // The architecture. `vocab` is --vocab-size when given, else 0 (Megatron takes it from the
  // tokenizer); seq_len is --max-position-embeddings (else --seq-length).
  model::Model model;
  plan::ParallelConfig parallel;  // dp = GPUs / (tp pp cp) when the launcher names the GPUs, else 0
  model::Recompute recompute = model::Recompute::kNone;
  plan::Precision precision = plan::Precision::kBf16;
  bool fp32_gradients = true;  // Megatron reduces gradients in FP32 unless --grad-reduce-in-bf16
  bool overlap_grad_reduce = false;  // --overlap-grad-reduce (store_true)
  bool fp8_param_gather = false;     // --fp8-param-gather (store_true): FP8 weights as parameters
  // --use-precision-aware-optimizer with FP32 main params (--main-params-dtype, default fp32):
  // master weights as BF16 remainders (plan::PlanRequest::master_weight_remainders).
  bool master_weight_remainders = false;
  int64_t cpu_offload_layers = 0;  // --cpu-offloading-num-layers: activations offloaded
  // --recompute-modules (nargs='*', default core_attn): what selective recompute recomputes.
  model::RecomputeModules recompute_modules;
  int64_t micro_batch = 1;
  int64_t global_batch = 0;          // 0: not given
  int64_t seq_len = 0;               // --seq-length
  int nodes = 0, gpus_per_node = 0;  // torchrun --nnodes / --nproc_per_node; 0 when absent
  std::vector<std::string> ignored;  // flags read but not modelled (data, optimizer, logging...)
};

// `text`: a shell snippet (comments, `export` lines, backslash continuations, quotes) holding one
// launch command, or just the arguments. Arguments after the training script (a token ending in
// .py) are Megatron's; before it, torchrun's --nnodes and --nproc_per_node (or --nproc-per-node)
// give the GPU count. `origin` names the input in messages. InvalidArgument naming the flag and
// what it takes for a missing or malformed value, a model without its shape flags, or a model
// model::Validate refuses.
StatusOr<MegatronJob> ReadMegatronArgs(std::string_view text, std::string_view origin);

}  // namespace infralens::io

#endif  // INFRALENS_IO_MEGATRON_ARGS_H_
