// The types every planner caller shares, apart from what computes with them: the matrix-multiply
// precision and a parallel layout's degrees (tp, pp, vpp, dp, cp, ep), ZeRO stage and pipeline
// stage split. The exporters, the requests and the lab read them without the memory model.
#ifndef INFRALENS_PLAN_PARALLEL_CONFIG_H_
#define INFRALENS_PLAN_PARALLEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace infralens::plan {

// Matrix-multiply precision. FP8 (Transformer Engine) still keeps BF16 weights and FP32 master
// weights; it adds an FP8 copy of each transformer-layer weight (1 byte per parameter), cast once
// per step and reused across microbatches. Activations are counted in BF16 either way.
enum class Precision { kBf16, kFp8 };
const char* PrecisionName(Precision p);
StatusOr<Precision> ParsePrecision(std::string_view name);
// Bytes per element of an activation, its gradient or a weight as the frameworks keep them (BF16),
// and of what they cast to FP8.
inline constexpr double kBf16Bytes = 2;
inline constexpr double kFp8Bytes = 1;

inline constexpr double kGiB = 1024.0 * 1024 * 1024;
// What HBM holds besides the model: the CUDA context and cuBLAS/NCCL workspaces (about 1-2 GiB
// together) and the caching allocator's fragmentation. A fixed allowance, overridable.
inline constexpr double kDefaultReserveBytes = 4 * kGiB;

// What torchtitan needs the sequence length to be a multiple of: tp x 2 cp
// (ParallelDims.seq_len_divisor, pytorch/torchtitan v0.2.2: sequence parallelism splits the
// sequence over tp, context parallelism's load balancing into 2 cp chunks), which every model's
// parallelize asserts. Its export refuses other layouts (io/export_torchtitan.h) and a search for
// that export skips them (SearchOptions::seq_over_2_tp_cp).
inline constexpr int64_t TorchtitanSeqDivisor(int tp, int cp) { return int64_t{tp} * 2 * cp; }

struct ParallelConfig {
  int tp = 1;   // tensor parallel
  int pp = 1;   // pipeline ranks
  int vpp = 0;  // chunks (virtual stages) per pipeline rank; 0: the schedule's default
  int dp = 1;   // data parallel
  int cp = 1;   // context parallel (sequence split across GPUs for attention)
  int ep = 1;   // expert parallel (experts split over ranks drawn from dp x cp)
  int zero_stage =
      0;  // 0 none, 1 optimizer states (distributed optimizer), 2 + gradients, 3 + weights (FSDP)
  bool sequence_parallel = false;  // Megatron SP: the non-TP regions split along the sequence
  // Uneven pipeline stages, Megatron-Core's forms (StageLayerCounts): transformer layers on the
  // first / last pipeline rank (0: the even share), or the embedding and the loss counted as one
  // layer each when the layers are split.
  int first_stage_layers = 0, last_stage_layers = 0;
  bool embedding_in_split = false, loss_in_split = false;
  // Or Megatron-Core's general form, --pipeline-model-parallel-layout (plan/layer_layout.h):
  // every stage's layers in one string; empty = not used.
  std::string layout;
  bool uneven() const {
    return first_stage_layers > 0 || last_stage_layers > 0 || embedding_in_split || loss_in_split ||
           !layout.empty();
  }
};

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_PARALLEL_CONFIG_H_
