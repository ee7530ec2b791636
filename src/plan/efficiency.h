// The planner's efficiency constants: achieved fractions of a GPU's datasheet peaks for GEMMs,
// fused attention and streaming (HBM-bound) kernels. They live in one data file with the source
// of each value beside it, data/hw/efficiency.csv, built into the binary; a user's file of the
// same form (`--efficiency FILE`) overlays it, so a team can drop in its own measurements.
//
//   gpu,quantity,precision,value,source
//   *,gemm,bf16,0.75,"..."          (every GPU, BF16)
//   A100-80GB,gemm,bf16,0.80,"..."  (one GPU preset)
//   *,gemm_half_dim,,96,"..."       (precision empty: both)
//
// Lines starting with '#' are comments. The most specific row wins: this GPU and precision, this
// GPU, every GPU and this precision, every GPU.
//
// Two quantities are the links': scale_up_link and scale_out_link, the fraction of the link's
// datasheet rate per GPU per direction that NCCL's bus bandwidth reaches on large messages, i.e.
// the cluster's scale_up_efficiency (of scale_up_bytes_per_s) and nic_efficiency (of the GPU's
// share of the NICs, nics_per_node x nic_bytes_per_s / gpus_per_node); cluster/cluster.h. The
// built-in file has no rows for them (the cluster presets' values, with their sources, stand); a
// user's row replaces the cluster's value when planning (ApplyLinkEfficiency). Their precision
// is empty.
//
// host_link is the fraction of the GPU's host link (PCIe, or NVLink-C2C to a Grace CPU) that
// copies to and from pinned host memory reach: activation offloading's rate. Its precision is
// empty.
//
// Two are NCCL's: collective_channels and collective_channels_scale_out, the channels (one CTA,
// so one SM, each) a large collective runs on within a node and across nodes, [0, 1024]; the
// planner charges the compute that overlaps a collective for the SMs they hold
// (plan/sm_contention.h).
#ifndef INFRALENS_PLAN_EFFICIENCY_H_
#define INFRALENS_PLAN_EFFICIENCY_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "plan/memory.h"

namespace infralens::plan {

// The smallest fraction of a peak a row may state (gemm, attention, attention_fa2, hbm and the
// links): 0.1%, the floor cluster::Validate puts on a topology file's link efficiencies. Below it
// a value is no measurement, and a subnormal one such as 4.9e-324 made step times infinite
// (issue 26). gemm_half_dim is a dimension, above 0; gemm_tile_m and gemm_tile_n a kernel's
// output tile in elements, [1, 1024].
inline constexpr double kMinEfficiencyFraction = 1e-3;

// Efficiency files are small; anything larger is refused before parsing.
inline constexpr size_t kMaxEfficiencyBytes = 1 << 20;

// The quantities a row may set.
enum class EfficiencyQuantity {
  kGemm,
  kGemmHalfDim,
  kGemmTileM,
  kGemmTileN,
  kAttention,
  kAttentionFa2,
  kAttentionHalfSeq,
  kAttentionFa2HalfSeq,
  kAttentionHalfHeadDim,
  kAttentionFa2HalfHeadDim,
  kHbm,
  kScaleUpLink,
  kScaleOutLink,
  kCollectiveChannels,
  kCollectiveChannelsScaleOut,
  kHostLink
};

struct EfficiencyRow {
  std::string gpu;  // a GPU preset's canonical name, or "*"
  EfficiencyQuantity quantity = EfficiencyQuantity::kGemm;
  std::string precision;  // "bf16", "fp8" or "" (both)
  double value = 0;
  std::string source;
  std::string origin;  // "built-in" or the file it came from
};

// The constants for one GPU at one precision.
struct DeviceEfficiency {
  double gemm = 0;  // fraction of the tensor-core peak large GEMMs reach, (0, 1]
  // The k (inner dimension) at which a tile's k-loop reaches half of `gemm` (plan/gemm_time.h:
  // k / (k + gemm_half_dim), the loop's fixed prologue and epilogue), > 0.
  double gemm_half_dim = 0;
  double gemm_tile_m = 0, gemm_tile_n = 0;  // the GEMM kernel's output tile (rows, columns)
  double attention = 0;      // fraction of the BF16 peak fused attention reaches, (0, 1]
  double attention_fa2 = 0;  // the same for FlashAttention-2 (PyTorch SDPA's flash backend)
  // The key length at which each kernel runs at half its steady rate, > 0: attention and
  // attention_fa2 are their rates over 8,192 keys, AttentionSeqScale carries them to others.
  double attention_half_seq = 0, attention_fa2_half_seq = 0;
  // The head dimension at which each kernel would run at half its large-head rate, > 0: the rates
  // above are at head dim 128, AttentionHeadDimScale carries them to 64-128.
  double attention_half_head_dim = 0, attention_fa2_half_head_dim = 0;
  double hbm = 0;  // fraction of the HBM bandwidth streaming kernels reach, (0, 1]
  // Fraction of the GPU's host link (hw::Gpu::host_link_bytes_per_s) that copies between device
  // and pinned host memory reach, (0, 1]: activation offloading's rate (plan/cpu_offload.h).
  double host_link = 0;
  std::string origin;  // where the GEMM value came from (the others say the same or less)
  // The CTAs one NCCL collective keeps resident, one per channel, each holding an SM from the
  // compute beside it (plan/sm_contention.h): within a node, and for a group that crosses the
  // scale-out network. 0: none charged.
  double collective_channels = 0, collective_channels_scale_out = 0;
  // The links' (see the file comment); 0 = no row: the cluster's own value applies.
  double scale_up_link = 0, scale_out_link = 0;
  std::string scale_up_link_origin, scale_out_link_origin;  // "" when no row
};

class EfficiencyTable {
 public:
  // InvalidArgument naming `origin`, the line and the column for a malformed row: an unknown GPU
  // (not a preset), quantity or precision, a value outside its range, a repeated key.
  static StatusOr<EfficiencyTable> Parse(std::string_view csv, std::string_view origin);
  // data/hw/efficiency.csv as built in (it covers every quantity for every GPU).
  static const EfficiencyTable& Builtin();

  // `user`'s rows replace this table's rows with the same gpu, quantity and precision; the others
  // are added.
  void Overlay(const EfficiencyTable& user);
  DeviceEfficiency For(const hw::Gpu& gpu, Precision precision) const;
  const std::vector<EfficiencyRow>& rows() const { return rows_; }

 private:
  std::vector<EfficiencyRow> rows_;
};

// A fused attention kernel's rate over `keys` keys per query (the sequence, or a context-parallel
// ring step's share of it) relative to its rate over 8,192 keys: k / (k + half) over
// 8192 / (8192 + half), the per-query-tile fixed cost (loading Q, the softmax's final rescale,
// writing O, the causal diagonal) amortised over the key loop, as gemm_half_dim is over k. Keys are
// held to [512, 16384], the range the measurements behind `half_seq` span
// (data/hw/efficiency.csv); half_seq <= 0 gives 1.
double AttentionSeqScale(double keys, double half_seq);

// A fused attention kernel's rate at head dimension `head_dim` relative to its rate at 128:
// d / (d + half) over 128 / (128 + half). Each score costs the two products' 4 d FLOPs plus
// work that does not grow with d (the softmax's exponential and rescale), so a narrower head
// spends more of its time off the tensor cores. d is held to [64, 128], the range the
// measurements behind `half` span (data/hw/efficiency.csv); half <= 0 gives 1.
double AttentionHeadDimScale(double head_dim, double half);

// `c` with the table's scale_up_link and scale_out_link rows for `gpu` (its own value where the
// table has none) as scale_up_efficiency and nic_efficiency.
void ApplyLinkEfficiency(const EfficiencyTable& table, const hw::Gpu& gpu, cluster::Cluster* c);

// The file's bytes, built in (generated from data/hw/efficiency.csv by cmake/embed_file.cmake).
std::string_view BundledEfficiencyCsv();

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_EFFICIENCY_H_
