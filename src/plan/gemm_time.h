// A GEMM's time from its shape (issue 20 item 3, "kernels as shaped").
//
// C[m x n] = A[m x k] B[k x n] as cuBLAS and CUTLASS run it on a GPU of S streaming
// multiprocessors: the output is cut into tiles of Tm x Tn (the kernel's threadblock tile), each
// tile is one CTA that loops over k, and the tiles run in waves of S (one CTA per SM: the large
// tensor-core tiles fill an SM's shared memory). So
//
//   tiles   = ceil(m / Tm) x ceil(n / Tn)         (x batch: the groups of a grouped GEMM and the
//                                                  products of a batched one share the waves)
//   waves   = ceil(tiles / S)
//   compute = waves x 2 Tm Tn (k + k_half) / (peak / S x e)
//   memory  = ((m k + k n) x input bytes + m n x output bytes) / (HBM x hbm efficiency)
//   time    = max(compute, memory)
//
// e is the fraction of an SM's share of the peak that a tile's k-loop reaches in its steady
// state (the `gemm` row of data/hw/efficiency.csv); k_half (`gemm_half_dim`) is the loop's fixed
// cost in units of k: the prologue that fills the software pipeline before the first MMA and the
// epilogue that writes the tile, so a tile runs at e k / (k + k_half). A padded edge tile costs
// as much as a full one (it runs the whole k-loop), which is the tile quantisation; the last,
// partly filled wave costs as much as a full one, which is the wave quantisation (NVIDIA Deep
// Learning Performance Guide, "Matrix Multiplication Background", sec. 5 and 6). The memory floor
// is the roofline of skinny shapes (a small m or n): the operands must cross HBM at least once.
//
// The SMs a part-filled last wave leaves idle (all but a few when the GEMM is under one wave,
// e.g. the tp chunks of a TP-overlapped GEMM or a small expert) are not left idle by today's
// libraries: they split the k-loops of that wave's tiles over several CTAs and reduce the partial
// sums (CUTLASS's split-K, GemmSplitKParallel, and stream-K's data-parallel + stream-K hybrid,
// Osama et al., PPoPP 2023; cuBLAS's "segment_k" kernels on Hopper). The model splits the last
// wave's tiles s ways, s in [1, floor(sms / its tiles)] (the most that still run as one wave):
// each of those CTAs runs k / s plus the fixed k_half (so splitting pays less the shorter the
// slices), and their s FP32 partial tiles are written and read back through HBM. Of those splits
// it takes the fastest, max(compute, memory) least, as the libraries pick theirs by cost:
// CUTLASS's stream-K (include/cutlass/gemm/threadblock/threadblock_swizzle_streamk.h at
// 49f8555, ThreadblockSwizzleStreamK::get_sk_blocks) tries every count of stream-K CTAs and keeps
// the one that saves the most k-loop iterations after charging the partials' fix-up, and falls
// back to whole tiles when none saves; cuBLASLt's heuristic picks the split-K factor
// (CUBLASLT_ALGO_CONFIG_SPLITK_NUM) with the tile per shape. So a memory-bound skinny GEMM
// splits less than the most (its partials would cost more HBM time than the split saves) and a
// compute-bound one splits the most (its time falls with every way, the partials staying under
// it). The full waves stay as they are: the quantisation that remains is the tail's k_half and
// its partials.
//
// Units: dimensions are elements (doubles: a routed expert's rows per token can be fractional on
// average), FLOP/s, bytes/s, seconds. A kernel with `sms` 0 (an unknown GPU) or a tile under 1
// has no quantisation of that kind (tiles of 1, waves of 1 SM: time = 2 m n (k + k_half) /
// (peak x e)).
#ifndef INFRALENS_PLAN_GEMM_TIME_H_
#define INFRALENS_PLAN_GEMM_TIME_H_

#include <string_view>
#include <vector>

#include "hw/gpu.h"
#include "model/model.h"
#include "plan/efficiency.h"

namespace infralens::plan {

// One GEMM (or `batch` independent GEMMs of the same shape run as one kernel).
struct GemmShape {
  double m = 0, n = 0, k = 0;
  double batch = 1;
};

// The backward of Y[m x n] = X[m x k] W[k x n]: dX = dY W^T is (m, k, n) (m rows, k columns,
// inner n); dW = X^T dY is (k, n, m) (inner m, the tokens).
inline GemmShape DgradShape(const GemmShape& f) { return {f.m, f.k, f.n, f.batch}; }
inline GemmShape WgradShape(const GemmShape& f) { return {f.k, f.n, f.m, f.batch}; }

// What a GEMM's time depends on besides its shape.
struct GemmKernel {
  int sms = 0;                  // streaming multiprocessors (hw::Gpu::sms); 0: no waves
  double peak_flops_per_s = 0;  // the operands' dense tensor-core peak (BF16 or FP8)
  double efficiency = 0;        // e, of an SM's share of the peak, in the k-loop's steady state
  double k_half = 0;            // the k-loop's fixed cost in units of k (gemm_half_dim)
  double tile_m = 1, tile_n = 1;
  double hbm_bytes_per_s = 0;  // achieved: datasheet x the hbm efficiency
  double input_bytes = 2;      // per element of A and B: 2 BF16, 1 FP8
  double output_bytes = 2;     // per element of C: BF16 (FP8 GEMMs write BF16 too)
};

// `g` launched on its SMs less `taken` (held by a concurrent kernel: Transformer Engine's
// userbuffers with set_sm_margin give cuBLAS the SM count less the communication kernel's): the
// same rate per SM over fewer SMs, so fewer tiles per wave. `taken` is held to [0, sms - 1]; a
// kernel without an SM count is returned as it is.
GemmKernel GemmKernelOnSms(const GemmKernel& g, int taken);

// The kernel for `gpu` at FP8 (`fp8`, where the GPU has FP8) or BF16, with `e`'s constants.
GemmKernel GemmKernelFor(const hw::Gpu& gpu, const DeviceEfficiency& e, bool fp8);

double GemmTiles(const GemmKernel& g, const GemmShape& s);  // output tiles, all batches
double GemmWaves(const GemmKernel& g, const GemmShape& s);  // ceil(tiles / sms)
// The most ways the last wave's tiles can split their k-loops and still run as one wave:
// floor(sms / tiles in the last wave); 1 when the waves are full.
int GemmMaxSplit(const GemmKernel& g, const GemmShape& s);
// The waves' time with the last wave's k-loops split `split` ways (clamped to
// [1, GemmMaxSplit]; each of its CTAs runs k / split plus k_half).
double GemmComputeSeconds(const GemmKernel& g, const GemmShape& s, int split = 1);
// The operands and the result through HBM once; a split adds its FP32 partials, written and read.
double GemmMemorySeconds(const GemmKernel& g, const GemmShape& s, int split = 1);
// The split the kernel runs: of [1, GemmMaxSplit] the one of least max(GemmComputeSeconds,
// GemmMemorySeconds), the smaller on a tie. GemmMaxSplit whenever the GEMM is compute-bound at
// it (the compute time falls with the split); less when the partials' traffic makes the most
// ways slower. 1 for an empty shape.
int GemmSplitK(const GemmKernel& g, const GemmShape& s);
// max(compute, memory) at GemmSplitK's split; 0 for an empty shape.
double GemmSeconds(const GemmKernel& g, const GemmShape& s);
inline double GemmFlops(const GemmShape& s) { return 2 * s.batch * s.m * s.n * s.k; }

// One weight matrix of a transformer layer as one tensor-parallel rank multiplies it: k x n per
// group, `groups` of them run as one grouped GEMM (a rank's routed experts), each over
// `rows_per_token` x tokens rows (1; for routed experts ep x top_k / experts, the expected rows
// of one expert under balanced routing).
struct LinearGemm {
  std::string_view name;  // "qkv", "proj", "fc1", "fc2", "router", "expert_fc1", ...
  double k = 0, n = 0;
  double groups = 1, rows_per_token = 1;
  // Next to a sequence-parallel collective: under TP overlap it runs in tp chunks of the tokens.
  bool chunked_under_tp_overlap = true;
  // Outside Transformer Engine's FP8 modules (the MoE router): BF16 under its FP8 recipes.
  bool router = false;
};

// The weights one of a layer's GEMMs holds on this rank: k x n per group.
inline double LinearWeights(const LinearGemm& l) { return l.k * l.n * l.groups; }

// The layer's GEMMs (dense or MoE) split over tp (column-parallel: n / tp, row-parallel: k / tp)
// and, for routed experts, ep. Their FLOPs per token sum to 2 LayerParams::matmul_active / tp.
// `fused_projections` (PlanRequest::fused_projections): the query, key and value projections as
// one GEMM named "qkv", and a gated MLP's gate and up projections as one "fc1" (and
// "shared_fc1", "expert_fc1"), as Megatron-Core builds them; false: each as a GEMM of its own
// under the same name (torchtitan's wq, wk, wv and w1, w3), the same FLOPs in smaller GEMMs.
std::vector<LinearGemm> LayerLinears(const model::Model& m, bool moe_layer, int tp, int ep,
                                     bool fused_projections = true);

// The time of a layer's GEMMs for `tokens` rows on one rank: the forward, and the backward's
// input-gradient (dgrad) and weight-gradient (wgrad) GEMMs.
//
// `chunks` (TP overlap): the GEMMs next to a sequence-parallel collective run as that many GEMMs
// of tokens / chunks rows, one per step of the collective they hide. A column-parallel GEMM's
// forward (qkv, fc1: fed by an all-gather) and a row-parallel GEMM's dgrad (proj, fc2: fed by the
// all-gather of the output gradient) run in `gather` chunks; a row-parallel GEMM's forward (its
// output reduce-scattered) in `scatter` chunks. A column-parallel GEMM's dgrad runs whole (its
// reduce-scatter overlaps the wgrad GEMM in Transformer Engine's bulk method, or runs after it in
// PyTorch's), as does every wgrad (its inner dimension is the tokens) and every GEMM not next to
// a collective (LinearGemm::chunked_under_tp_overlap false).
//
// `sms_taken` (TP overlap through Transformer Engine's userbuffers, PlanRequest): the forward of
// "proj" and "fc2" runs on the SMs less `rs` (the pipeline method's reduce-scatter), the dgrad and
// wgrad of "qkv" and "fc1" on the SMs less `bulk` (the bulk method's all-gather and
// reduce-scatter); every other GEMM, and every GEMM with both 0, on all of them.
struct GemmTimes {
  double fwd_s = 0, dgrad_s = 0, wgrad_s = 0;
  double fwd_flops = 0;
};
struct TpOverlapChunks {
  int gather = 1, scatter = 1;
};
struct TpOverlapSmsTaken {
  int rs = 0, bulk = 0;
};
// A row-parallel GEMM (proj, fc2, a shared expert's fc2): its output is reduce-scattered (or
// all-reduced) across TP, its dgrad fed by the gathered output gradient.
bool RowParallel(const LinearGemm& l);
GemmTimes LinearGemmTimes(const GemmKernel& g, const std::vector<LinearGemm>& linears,
                          double tokens, TpOverlapChunks chunks = {},
                          TpOverlapSmsTaken sms_taken = {});

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_GEMM_TIME_H_
