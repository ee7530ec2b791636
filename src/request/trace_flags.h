// The options of the trace commands that the web API shares (`trace analyze` and
// /api/trace/analyze, `trace synth` and /api/trace/synth), declared once.
#ifndef INFRALENS_REQUEST_TRACE_FLAGS_H_
#define INFRALENS_REQUEST_TRACE_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "request/flag_sink.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/calibrate_synth.h"
#include "trace/kineto_reader.h"

namespace infralens::request {

// How traces are read and measured: --hta-compat, --include-last-step, --align-clocks, and (with
// `patterns`; the API takes no regular expressions) --comm-kernels, --memory-kernels.
struct TraceReadFlags {
  bool hta_compat = false;
  bool include_last_step = false;
  bool align_clocks = false;
  std::string comm_kernels, memory_kernels;  // "" = trace::kDefaultCommPattern / MemoryPattern

  void Register(FlagSink& flags, bool patterns = true);
  trace::AnalysisOptions Options() const;
};

// --memory-limit MiB: what the events kept from the traces one command reads may take
// (trace::TraceMemoryBudget; the default keeps peak memory under 1 GB). The CLI's alone: an
// upload has the server's own budget.
struct TraceMemoryFlag {
  int mib = static_cast<int>(trace::kDefaultTraceMemoryBudgetBytes >> 20);

  void Register(FlagSink& flags);
  // InvalidArgument naming ‹memory_limit› outside 64 MiB to 4 TiB.
  StatusOr<uint64_t> Bytes() const;
};

// --steps N: the profiled steps `trace synth` writes.
void RegisterSynthSteps(FlagSink& flags, int* steps);

// `trace calibrate`: --gpu NAME (the GPU preset whose peaks the efficiencies are fractions of)
// and --min-samples N (fewer keeps a curve's default).
// --gpu NAME: the GPU preset the traces ran on (calibrate) or are made for (synth).
void RegisterGpuFlag(FlagSink& flags, std::string* gpu);

void RegisterCalibrateFlags(FlagSink& flags, std::string* gpu, int* min_samples);

// What a calibration is for, decided once for `trace calibrate` and /api/trace/calibrate: the GPU
// (the one named, else the one the traces' deviceProperties name, trace::GpuFromTraces) and the
// cluster whose link rates the link rows are fractions of (the one named, else `default_cluster`
// when it holds that GPU: a DGX H100's links say nothing of an A100's).
struct CalibrationTarget {
  hw::Gpu gpu;
  std::optional<cluster::Cluster> cluster;  // nullopt: the link rows are not fitted
  std::string no_cluster_note;              // why not, when not
  std::vector<std::string> notes;           // where the GPU came from, disagreements
};
// `named_gpu` absent: from the traces. `cluster` is the one the user named when `cluster_named`
// (it must then be ok), else the default, called `cluster_name`, which counts only for its own
// GPU. `gpu_word` and `cluster_word` are how the caller's user names the two choices ("--gpu" and
// "--cluster" on the command line, "the gpu field" and "the cluster field" on the page): errors
// and notes speak them. trace::CheckShapesRecorded's error first; then InvalidArgument, one line,
// when the GPU is not named and the traces do not name exactly one preset.
StatusOr<CalibrationTarget> ResolveCalibrationTarget(
    const std::vector<trace::RankTrace>& traces, const std::optional<hw::Gpu>& named_gpu,
    const StatusOr<cluster::Cluster>& cluster, bool cluster_named, const std::string& cluster_name,
    const std::string& gpu_word, const std::string& cluster_word);

// `trace synth --record-shapes`: GEMM, attention and streaming operators with shapes, kernel
// durations from --efficiency FILE's curves (trace/calibrate_synth.h).
struct ShapesSynthFlags {
  bool record_shapes = false;
  std::string efficiency_path, gpu, model;  // empty: H100-SXM, llama3-8b
  int tp = 1, repeats = 1;

  void Register(FlagSink& flags);
  // The options, with the curves of --efficiency over the built-in table for --gpu (BF16).
  StatusOr<trace::ShapesSynthOptions> Options() const;
};

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_TRACE_FLAGS_H_
