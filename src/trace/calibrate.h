// `infralens trace calibrate`: the planner's efficiency constants (plan/efficiency.h) fitted from a
// team's own PyTorch profiler traces recorded with record_shapes=True.
//
// Each kept CPU operator (trace::ShapedOp: GEMMs, fused attention, streaming ops) is joined to the
// kernels it launched: kernel "correlation" = launch "correlation" (CUPTI's id), launch
// "External id" = operator "External id" (libkineto/src/output_json.cpp handleActivity writes the
// linked CPU activity's id there). Older traces whose launches carry their own correlation as
// "External id" (PyTorch 1.13-2.0, e.g. PARAM's DLRM traces) are joined by time instead: the
// innermost kept operator on the launching thread whose [ts, ts + dur] holds the launch.
//
// From each operator's shapes and its kernels' summed duration:
//   GEMM       FLOPs = 2 M N K (per batch), achieved fraction of the dtype's dense peak;
//   attention  FLOPs = 4 B H Sq Sk D forward, halved under a causal mask, backward 2.5x forward;
//   streaming  bytes read and written, achieved fraction of the HBM bandwidth;
// and from each NCCL kernel's collective metadata the bus bandwidth (nccl-tests' factors).
//
// Fits, with few parameters per curve (every residual relative: model / measured - 1):
//   gemm, gemm_half_dim per precision: the planner's GEMM model (plan/gemm_time.h), tiles in
//   waves over the SMs (the last wave's k-loops split as the model splits them, at its fastest
//   split), each wave's k-loop at e k / (k + k_half) (gemm_half_dim is k_half), least squares
//   (FitGemmKLoop) over the kernels the model keeps more than a factor of 2 above its memory
//   floor at the fitted HBM rate; the kept kernels and their splits start from the defaults and
//   are taken again from the fitted values until they settle; each GEMM sample then carries the
//   model's efficiency for its shape;
//   attention (cuDNN), attention_fa2 (flash): one value, total FLOPs / (peak x total time);
//   hbm: one value, total bytes / (bandwidth x total time).
//   scale_up_link, scale_out_link (with a cluster): per link class, the median bus bandwidth of
//   all_reduce, all_gather and reduce_scatter kernels of >= 64 MiB (none: the largest
//   power-of-4 band present of at least 16 MiB, so DDP's 25 MB buckets count, and the note says
//   so) over the link's datasheet rate per GPU per direction: scale_up_bytes_per_s, or
//   nics_per_node x nic_bytes_per_s / gpus_per_node (cluster/cluster.h).
// A curve with fewer than `min_samples` samples keeps the built-in default (for the links: the
// cluster's value) and says so.
// The core returns data; it never prints.
#ifndef INFRALENS_TRACE_CALIBRATE_H_
#define INFRALENS_TRACE_CALIBRATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/status.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "plan/efficiency.h"
#include "trace/model.h"

namespace infralens::trace {

struct GemmSample {
  std::string op;  // "aten::mm", ...
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::string precision;  // "bf16" (BF16 or FP16), "fp8", "fp32" (reported, not fitted)
  double flops = 0;       // 2 batch M N K
  double kernel_us = 0;   // the operator's kernels, summed
  double efficiency = 0;  // flops / (kernel time x the precision's peak); 0 without a peak
  // The planner's GEMM model (plan::GemmSeconds) for this shape, as a fraction of the same peak:
  // at the calibrated constants (the fitted gemm, gemm_half_dim and hbm, or the defaults kept)
  // and at the defaults; `split` is the calibrated model's split-K of the last wave
  // (plan::GemmSplitK). 0 for FP32 samples (not modelled).
  double model_efficiency = 0, default_efficiency = 0;
  int split = 0;
};

struct AttentionSample {
  std::string op;
  std::string backend;  // "flash" (attention_fa2), "cudnn" (attention), "efficient" (not fitted)
  int64_t batch = 0, heads = 0, seq_q = 0, seq_k = 0, head_dim = 0;
  bool causal = false, backward = false;
  double flops = 0;  // executed FLOPs (see the file comment)
  double kernel_us = 0;
  double efficiency = 0;  // of the BF16 peak
};

struct HbmSample {
  std::string op;
  double bytes = 0;  // read + written
  double kernel_us = 0;
  double efficiency = 0;  // of the HBM bandwidth
  bool in_fit = false;    // bytes >= CalibrationOptions::min_hbm_bytes
};

struct CollectiveSample {
  std::string kind;  // trace::NormalizeCollectiveKind
  double bytes = 0;  // max(in, out) elements x dtype size, as `trace analyze` counts them
  int64_t group_size = 0;
  std::string link;  // "scale-up", "scale-out" or "unknown" (no ranks in the metadata)
  double kernel_us = 0;
  double busbw_bytes_per_s = 0;
};

struct CurveFit {
  plan::EfficiencyQuantity quantity = plan::EfficiencyQuantity::kGemm;
  std::string name;       // "gemm", "gemm_half_dim", "attention", "attention_fa2", "hbm"
  std::string precision;  // "bf16", "fp8" or "" (both)
  int samples = 0;        // samples the value rests on
  bool fitted = false;    // false: `value` is the default, kept
  double value = 0;
  double default_value = 0;
  double rms_residual = 0;  // relative, over the samples; 0 when not fitted
  double max_residual = 0;  // largest |relative residual|
  std::string note;         // why the default was kept, or how the value was fitted
};

// Bus bandwidth of one kind of collective, link class, group size and message-size band.
struct CollectiveBand {
  std::string kind, link;
  int64_t group_size = 0;
  double min_bytes = 0, max_bytes = 0;  // [min, max) of the band: powers of 4 from 1 KiB
  int samples = 0;
  double median_busbw_bytes_per_s = 0, max_busbw_bytes_per_s = 0;
};

struct CalibrationOptions {
  hw::Gpu gpu;                 // peaks: dense BF16 / FP8 FLOP/s, HBM bandwidth, scale-up domain
  int min_samples = 8;         // a curve with fewer keeps its default
  double min_hbm_bytes = 8e6;  // smaller streaming kernels are launch-bound: reported, not fitted
  const plan::EfficiencyTable* defaults = nullptr;  // nullptr: the built-in table
  // The cluster the traces ran on: its link rates (and scale-up domain, which classes a group's
  // link); nullptr: the link rows are not fitted and `no_cluster_note` says why.
  const cluster::Cluster* cluster = nullptr;
  std::string no_cluster_note = "no --cluster given: the link rows are not fitted";
};

struct Calibration {
  std::string gpu;
  std::vector<std::string> files;
  int64_t shaped_ops = 0;           // operators with shapes, over all files
  int64_t ops_without_shapes = 0;   // calibration operators recorded without shapes
  int64_t ops_without_kernels = 0;  // shaped operators no kernel was joined to
  int64_t ops_unusable = 0;         // shapes or types that do not fit the operator
  int64_t joined_by_time = 0;       // operators joined by time (no External id link)
  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;
  std::vector<HbmSample> hbm;
  std::vector<CollectiveSample> collectives;
  std::vector<CurveFit> fits;  // gemm, gemm_half_dim (bf16, fp8), attention, attention_fa2, hbm
                               // and, with a cluster, scale_up_link and scale_out_link
  std::vector<CollectiveBand> bands;
  std::string cluster;             // the cluster whose link rates the link fits use; "" = none
  std::vector<std::string> notes;  // one line each (the CSV's comments, the table's footer)
};

// The GPU the traces' deviceProperties name (hw::GpuForDeviceName), and what named it.
struct TraceGpu {
  hw::Gpu gpu;
  std::string device_name;  // as the trace spells it
  std::string file;         // the first file that names it
};
// Every device of every file must map to one preset. InvalidArgument, one line saying what was
// found (the caller adds how to name the GPU in its own vocabulary), when no file has
// deviceProperties, a name maps to no preset, or the files name GPUs of different presets (the
// first two are named with their files).
StatusOr<TraceGpu> GpuFromTraces(const std::vector<RankTrace>& traces);

// FailedPrecondition "no shapes recorded: profile with record_shapes=True ..." when no file holds
// an operator with shapes: the first thing to say of such traces, before anything else about
// them (which GPU they ran on).
Status CheckShapesRecorded(const std::vector<RankTrace>& traces);

// CheckShapesRecorded's error when no file holds an operator with shapes; InvalidArgument for
// options out of range.
StatusOr<Calibration> Calibrate(const std::vector<RankTrace>& traces,
                                const CalibrationOptions& options);

// The fitted rows in data/hw/efficiency.csv's form (plan::EfficiencyTable::Parse reads it back):
// one row per fitted curve for `calibration.gpu`, its source cell naming the samples, files and
// residuals. Curves that kept their default are left out (the built-in row then applies), and
// a comment line says so.
std::string CalibrationCsv(const Calibration& c);
// The fit table (curve, samples, value, default, residual, note) and the collective bands.
std::string CalibrationText(const Calibration& c);
void WriteCalibrationJson(JsonWriter& w, const Calibration& c);

// Helpers, exposed for the tests.
// The k-loop of the planner's GEMM model (plan/gemm_time.h): a wave of tiles takes
// tile FLOPs x (k + k_half) / (SM rate x e), so z = (k + k_half) / e with z a kernel's time in
// units of a tile's FLOPs at one SM's peak, per wave (k: the wave's average k-loop length when
// the last wave is split). Least squares (relative residuals) of e and k_half to (k_i, z_i);
// false when it cannot be made (fewer than 2 distinct k, or no positive solution).
bool FitGemmKLoop(const std::vector<double>& k, const std::vector<double>& z, double* e,
                  double* k_half);
// "[[16, 13], [13, 256], []]" -> {{16, 13}, {13, 256}, {}}; false on anything else.
bool ParseInputDims(std::string_view json, std::vector<std::vector<int64_t>>* dims);
// ["float", "c10::BFloat16"] -> {"float", "c10::BFloat16"}; false on anything else.
bool ParseStringList(std::string_view json, std::vector<std::string>* out);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_CALIBRATE_H_
