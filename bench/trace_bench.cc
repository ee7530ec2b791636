// Trace reading + analysis throughput (MB of JSON per CPU-second of the whole process) and peak
// memory.
//  - the largest shared real trace: HTA's df_index_resolver (54 MB of JSON, gzip), when present
//    beside the repository; HTA itself loads and analyses it at about 15-20 MB/s;
//  - a generated multi-rank pipeline trace of INFRALENS_BENCH_TRACE_MB megabytes (default 3072),
//    written to /tmp for the run and deleted afterwards;
//  - a generated kernel-heavy trace of 100,000 kernels (BM_AnalyzeKernelHeavyTrace);
//  - `trace calibrate` on a generated trace set recorded with shapes (trace/calibrate_synth.h),
//    INFRALENS_BENCH_CALIB_MB megabytes (default 1024) in files of about 128 MB, every event a
//    calibration operator, launch or kernel (the worst case: real traces hold mostly other
//    events), next to the reader alone on the same files: calibration should run at the reader's
//    speed.
// Peak memory is the process' maximum resident set (getrusage), reported with each benchmark.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>

#include "base/atomic_file.h"
#include "model/presets.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/calibrate_synth.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/pipeline_detect.h"
#include "trace/synth.h"
#include "trace/testing.h"

namespace {

using namespace infralens;

double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Reads and analyses every file of `files` once; returns the JSON bytes parsed.
int64_t ReadAndAnalyze(const std::vector<std::string>& files, benchmark::State& state) {
  trace::LoadedTraces loaded = trace::LoadTraces(files);
  if (!loaded.errors.empty()) {
    state.SkipWithError(loaded.errors[0].status.message().c_str());
    return 0;
  }
  auto a = trace::Analyze(loaded.traces, trace::AnalysisOptions{});
  if (!a.ok()) {
    state.SkipWithError(a.status().message().c_str());
    return 0;
  }
  benchmark::DoNotOptimize(a->pipeline.bubble_fraction);
  int64_t bytes = 0;
  for (const auto& t : loaded.traces) bytes += static_cast<int64_t>(t.json_bytes);
  return bytes;
}

// Reads and analyses the traces in `dir` once per iteration; reports the JSON bytes parsed and
// the peak memory.
void ReadAndAnalyzeEachIteration(const std::string& dir, benchmark::State& state) {
  auto files = trace::ExpandTracePaths({dir});
  int64_t bytes = 0;
  for (auto _ : state) bytes += ReadAndAnalyze(*files, state);
  state.SetBytesProcessed(bytes);
  state.counters["json_MB"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / 1e6;
  state.counters["peak_rss_MB"] = PeakRssMb();
}

void BM_AnalyzeSharedTrace(benchmark::State& state) {
  std::string dir;
  for (const std::string& d : {std::string(INFRALENS_SOURCE_DIR) + "/../shared/data/traces",
                               std::string("/work/shared/data/traces")}) {
    if (std::filesystem::exists(d + "/hta_ddp_allreduce_5step_rank1"))
      dir = d + "/hta_ddp_allreduce_5step_rank1";
  }
  if (dir.empty()) {
    state.SkipWithError("shared traces not found beside the repository");
    return;
  }
  ReadAndAnalyzeEachIteration(dir, state);
}
// Process CPU time: one file's events are parsed on a second thread (KinetoReadOptions::
// parse_on_second_thread), whose CPU the default (this thread's) would leave out.
BENCHMARK(BM_AnalyzeSharedTrace)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

// Writes `s`'s synthetic trace into `dir` (emptied first), reads and analyses it once per
// iteration, and deletes it.
void AnalyzeSynthTrace(benchmark::State& state, const schedule::Schedule& s,
                       const trace::SynthOptions& so, const std::string& dir) {
  std::filesystem::remove_all(dir);
  auto written = trace::WriteSynthTrace(s, sim::Costs{}, so, dir);
  if (!written.ok()) {
    state.SkipWithError(written.status().message().c_str());
    return;
  }
  ReadAndAnalyzeEachIteration(dir, state);
  std::filesystem::remove_all(dir);
}

void BM_AnalyzeGeneratedTrace(benchmark::State& state) {
  const char* env = std::getenv("INFRALENS_BENCH_TRACE_MB");
  const double target_mb = env != nullptr ? std::atof(env) : 3072;
  // 4 ranks of 1F1B with 32 microbatches; about 2.9 MB of JSON per step.
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 0, 32});
  trace::SynthOptions so;
  so.kernels_per_action = 8;
  so.cpu_ops_per_kernel = 2;
  so.steps = std::max(2, static_cast<int>(target_mb / 2.9));
  AnalyzeSynthTrace(state, *s, so, "/tmp/infralens_bench_trace");
}
BENCHMARK(BM_AnalyzeGeneratedTrace)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

// A kernel-heavy trace (what the reader keeps most of: kernels and their launches), as the CLI
// figures in docs/performance.md use at 1M kernels: one rank of 1F1B, 100 kernels per action, no
// extra CPU operators, gzip; 100,000 kernels here (about 85 MB of JSON), written once to /tmp.
// The reader's event vectors, the launch join and the number reads show here, not in the HTA
// trace above (90% CPU operators).
void BM_AnalyzeKernelHeavyTrace(benchmark::State& state) {
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {1, 0, 125});
  trace::SynthOptions so;
  so.steps = 4;
  so.kernels_per_action = 100;
  so.cpu_ops_per_kernel = 0;
  so.gzip = true;
  AnalyzeSynthTrace(state, *s, so, "/tmp/infralens_bench_kernel_trace");
}
BENCHMARK(BM_AnalyzeKernelHeavyTrace)->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

// The shapes trace set, written once per process.
const std::vector<std::string>& CalibrationFiles() {
  static const std::vector<std::string> kFiles = [] {
    std::vector<std::string> files;
    const char* env = std::getenv("INFRALENS_BENCH_CALIB_MB");
    const double target_mb = env != nullptr ? std::atof(env) : 1024;
    const std::string dir = "/tmp/infralens_bench_calibrate";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    trace::ShapesSynthOptions o;
    o.gpu = *hw::FindGpu("H100-SXM");
    o.model = *model::FindPreset("llama3-8b");
    o.tp = 2;
    o.curves = plan::EfficiencyTable::Builtin().For(o.gpu, plan::Precision::kBf16);
    // About 64 KB per sweep.
    const int files_n = std::max(1, static_cast<int>(target_mb / 128 + 0.5));
    o.repeats = std::max(1, static_cast<int>(target_mb / files_n * 1e6 / 64e3));
    auto json = trace::ShapesTraceJson(o);
    if (!json.ok()) return files;
    for (int f = 0; f < files_n; ++f) {
      const std::string path = dir + "/rank" + std::to_string(f) + ".json";
      // Each file its own rank of a world of files_n, as the loader requires.
      std::string text = *json;
      const std::string from = "\"rank\": 0, \"world_size\": 2",
                        to = "\"rank\": " + std::to_string(f) +
                             ", \"world_size\": " + std::to_string(files_n);
      if (auto at = text.find(from); at != std::string::npos) text.replace(at, from.size(), to);
      if (WriteFileAtomically(path, text).ok()) files.push_back(path);
    }
    return files;
  }();
  return kFiles;
}

void CalibrateOrRead(benchmark::State& state, bool calibrate) {
  const auto& files = CalibrationFiles();
  if (files.empty()) {
    state.SkipWithError("could not write the shapes trace set");
    return;
  }
  int64_t bytes = 0, samples = 0;
  for (auto _ : state) {
    trace::LoadedTraces loaded = trace::LoadTraces(files);
    if (!loaded.errors.empty()) {
      state.SkipWithError(loaded.errors[0].status.message().c_str());
      return;
    }
    for (const auto& t : loaded.traces) bytes += static_cast<int64_t>(t.json_bytes);
    if (calibrate) {
      trace::CalibrationOptions o;
      o.gpu = *hw::FindGpu("H100-SXM");
      auto c = trace::Calibrate(loaded.traces, o);
      if (!c.ok()) {
        state.SkipWithError(c.status().message().c_str());
        return;
      }
      samples += static_cast<int64_t>(c->gemm.size() + c->attention.size() + c->hbm.size());
    }
  }
  state.SetBytesProcessed(bytes);
  state.counters["json_MB"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / 1e6;
  state.counters["samples"] =
      static_cast<double>(samples) / static_cast<double>(state.iterations());
  state.counters["peak_rss_MB"] = PeakRssMb();
}

void BM_ReadShapesTrace(benchmark::State& state) { CalibrateOrRead(state, false); }
BENCHMARK(BM_ReadShapesTrace)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CalibrateShapesTrace(benchmark::State& state) { CalibrateOrRead(state, true); }
BENCHMARK(BM_CalibrateShapesTrace)->Iterations(1)->Unit(benchmark::kMillisecond);

// Pipeline detection on hostile input (trace/pipeline_detect_test.cc LargeHostileInputIsBounded):
// 64 ranks of 20,000 send/recv operations each to scattered peers among 1,000, one step's
// operation string as long. Seconds per detection; it was about 3 s on one idle core here.
void BM_DetectPipelineHostile(benchmark::State& state) {
  const std::vector<trace::PipeRank> ranks = trace::testing::HostilePipeRanks();
  for (auto _ : state) benchmark::DoNotOptimize(trace::DetectPipeline(ranks));
}
BENCHMARK(BM_DetectPipelineHostile)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
