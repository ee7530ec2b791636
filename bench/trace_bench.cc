// Trace reading + analysis throughput (MB of JSON per second, on one core) and peak memory.
//  - the largest shared real trace: HTA's df_index_resolver (54 MB of JSON, gzip), when present
//    beside the repository; HTA itself loads and analyses it at about 15-20 MB/s;
//  - a generated multi-rank pipeline trace of INFRALENS_BENCH_TRACE_MB megabytes (default 3072),
//    written to /tmp for the run and deleted afterwards.
// Peak memory is the process' maximum resident set (getrusage), reported with each benchmark.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>

#include "io/kineto_reader.h"
#include "trace/analysis.h"
#include "trace/loader.h"
#include "trace/synth.h"

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
  auto files = trace::ExpandTracePaths({dir});
  int64_t bytes = 0;
  for (auto _ : state) bytes += ReadAndAnalyze(*files, state);
  state.SetBytesProcessed(bytes);
  state.counters["json_MB"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / 1e6;
  state.counters["peak_rss_MB"] = PeakRssMb();
}
BENCHMARK(BM_AnalyzeSharedTrace)->Unit(benchmark::kMillisecond);

void BM_AnalyzeGeneratedTrace(benchmark::State& state) {
  const char* env = std::getenv("INFRALENS_BENCH_TRACE_MB");
  const double target_mb = env != nullptr ? std::atof(env) : 3072;
  const std::string dir = "/tmp/infralens_bench_trace";
  std::filesystem::remove_all(dir);
  // 4 ranks of 1F1B with 32 microbatches; about 2.9 MB of JSON per step.
  auto s = schedule::Generate(schedule::ScheduleKind::k1F1B, {4, 0, 32});
  trace::SynthOptions so;
  so.kernels_per_action = 8;
  so.cpu_ops_per_kernel = 2;
  so.steps = std::max(2, static_cast<int>(target_mb / 2.9));
  auto written = trace::WriteSynthTrace(*s, sim::Costs{}, so, dir);
  if (!written.ok()) {
    state.SkipWithError(written.status().message().c_str());
    return;
  }
  auto files = trace::ExpandTracePaths({dir});
  int64_t bytes = 0;
  for (auto _ : state) bytes += ReadAndAnalyze(*files, state);
  state.SetBytesProcessed(bytes);
  state.counters["json_MB"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / 1e6;
  state.counters["peak_rss_MB"] = PeakRssMb();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_AnalyzeGeneratedTrace)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
