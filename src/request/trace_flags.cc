#include "request/trace_flags.h"

#include <fmt/format.h>

#include "io/model_source.h"
#include "request/request_flags.h"

namespace infralens::request {

void TraceReadFlags::Register(FlagSink& flags, bool patterns) {
  flags.Bool("--hta-compat", &hta_compat,
             "use Holistic Trace Analysis' exact definitions (numbers match HTA's)");
  flags.Bool("--include-last-step", &include_last_step,
             "keep the last ProfilerStep (HTA drops it by default)");
  flags.Bool("--align-clocks", &align_clocks,
             "shift each rank's clock by the offset estimated from matched collectives");
  if (!patterns) return;
  flags.String(
      "--comm-kernels", &comm_kernels,
      fmt::format("regex for communication kernels (replaces '{}')", trace::kDefaultCommPattern));
  flags.String(
      "--memory-kernels", &memory_kernels,
      fmt::format("regex for memory kernels (replaces '{}')", trace::kDefaultMemoryPattern));
}

trace::AnalysisOptions TraceReadFlags::Options() const {
  trace::AnalysisOptions o;
  o.hta_compat = hta_compat;
  o.include_last_step = include_last_step;
  o.align_clocks = align_clocks;
  o.comm_pattern = comm_kernels;
  o.memory_pattern = memory_kernels;
  return o;
}

void TraceMemoryFlag::Register(FlagSink& flags) {
  flags.Int("--memory-limit", &mib,
            fmt::format("MiB the kept events of the traces read may take (about {} bytes per "
                        "kernel with its launch; the default keeps the process under 1 GB)",
                        trace::kAnalysisBytesPerGpuEvent + trace::kAnalysisBytesPerLaunch));
}

StatusOr<uint64_t> TraceMemoryFlag::Bytes() const {
  constexpr int kMinMib = 64, kMaxMib = 4 << 20;  // 64 MiB to 4 TiB
  if (mib < kMinMib || mib > kMaxMib) {
    return InvalidArgument(
        fmt::format("‹memory_limit› {}: expected {} to {} MiB", mib, kMinMib, kMaxMib));
  }
  return static_cast<uint64_t>(mib) << 20;
}

void RegisterSynthSteps(FlagSink& flags, int* steps) {
  flags.Int("--steps", steps,
            "profiled steps (iterations); analysis drops the last unless --include-last-step");
}

void RegisterGpuFlag(FlagSink& flags, std::string* gpu) {
  flags.String("--gpu", gpu, "the GPU preset the traces ran on (its datasheet peaks)");
}

void RegisterCalibrateFlags(FlagSink& flags, std::string* gpu, int* min_samples) {
  RegisterGpuFlag(flags, gpu);
  flags.Int("--min-samples", min_samples,
            "samples a curve needs to be fitted; with fewer it keeps the default and says so");
}

void ShapesSynthFlags::Register(FlagSink& flags) {
  flags.Bool("--record-shapes", &record_shapes,
             "write CPU operators with Input Dims / Input type linked to their kernels (one rank; "
             "for `trace calibrate`) instead of a pipeline schedule");
  // The same flags, with the same meaning, as everywhere else: the efficiency file the kernel
  // durations follow, the GPU whose peaks they scale, the model whose layer GEMMs run (H100-SXM
  // and llama3-8b when not given), and the tensor-parallel degree splitting those GEMMs.
  RegisterEfficiency(flags, &efficiency_path);
  RegisterGpuFlag(flags, &gpu);
  flags.String("--model", &model,
               "a preset name (infralens presets), a path to a config.json, or - for a "
               "config.json on stdin");
  flags.Int("--tp", &tp, "tensor-parallel degree");
  flags.Int("--repeats", &repeats, "with --record-shapes: the token sweep written this many times");
}

StatusOr<trace::ShapesSynthOptions> ShapesSynthFlags::Options() const {
  trace::ShapesSynthOptions o;
  ASSIGN_OR_RETURN(o.gpu, hw::FindGpu(gpu.empty() ? "H100-SXM" : gpu));
  ASSIGN_OR_RETURN(o.model, io::ResolveModel(model.empty() ? "llama3-8b" : model));
  ASSIGN_OR_RETURN(auto table, LoadEfficiency(efficiency_path));
  o.curves = (table ? *table : plan::EfficiencyTable::Builtin()).For(o.gpu, plan::Precision::kBf16);
  // The collectives follow the file's link rows when it has them (0: none, the defaults stand).
  if (o.curves.scale_up_link > 0) o.scale_up_link = o.curves.scale_up_link;
  if (o.curves.scale_out_link > 0) o.scale_out_link = o.curves.scale_out_link;
  o.tp = tp;
  o.repeats = repeats;
  RETURN_IF_ERROR(trace::CheckShapesSynthOptions(o));
  return o;
}

StatusOr<CalibrationTarget> ResolveCalibrationTarget(
    const std::vector<trace::RankTrace>& traces, const std::optional<hw::Gpu>& named_gpu,
    const StatusOr<cluster::Cluster>& cluster, bool cluster_named, const std::string& cluster_name,
    const std::string& gpu_word, const std::string& cluster_word) {
  // Traces without shapes cannot be calibrated whatever GPU they ran on: say that first.
  RETURN_IF_ERROR(trace::CheckShapesRecorded(traces));
  CalibrationTarget t;
  // The GPU: the one named wins; the traces' deviceProperties otherwise (and a note when they
  // disagree with the one named).
  auto from_traces = trace::GpuFromTraces(traces);
  if (!named_gpu) {
    if (!from_traces.ok()) {
      return InvalidArgument(fmt::format("{}; name the GPU the traces ran on with {}",
                                         from_traces.status().message(), gpu_word));
    }
    t.gpu = from_traces->gpu;
    t.notes.push_back(fmt::format("GPU {} from the traces' deviceProperties ('{}')", t.gpu.name,
                                  from_traces->device_name));
  } else {
    t.gpu = *named_gpu;
    if (from_traces.ok() && from_traces->gpu.name != t.gpu.name) {
      t.notes.push_back(fmt::format(
          "{} {} differs from the traces' deviceProperties ('{}', {}): {} wins", gpu_word,
          t.gpu.name, from_traces->device_name, from_traces->gpu.name, gpu_word));
    }
  }
  // The cluster: the one named; the default only for traces of its own GPU (its link rates are
  // that system's).
  if (cluster_named) {
    RETURN_IF_ERROR(cluster.status());
    if (cluster->node.gpu_model != t.gpu.name) {
      t.notes.push_back(
          fmt::format("{} {} holds {}, the traces ran on {}: its link rates are used as given",
                      cluster_word, cluster->name, cluster->node.gpu_model, t.gpu.name));
    }
    t.cluster = *cluster;
  } else if (cluster.ok() && cluster->node.gpu_model == t.gpu.name) {
    t.cluster = *cluster;
  } else {
    t.no_cluster_note = fmt::format(
        "link rows not fitted: the default cluster {} holds {}, not {}; name the cluster with {} "
        "to fit scale_up_link and scale_out_link",
        cluster_name, cluster.ok() ? cluster->node.gpu_model : std::string("?"), t.gpu.name,
        cluster_word);
  }
  return t;
}

}  // namespace infralens::request
