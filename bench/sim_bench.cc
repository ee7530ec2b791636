// Simulator throughput: the target is >= 10 million actions per second on one core for
// P=64, m=4096, interleaved v=2 (about a million actions).
#include <benchmark/benchmark.h>

#include "io/pytorch_csv.h"
#include "schedule/rank_actions.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"
#include "sim/stream_simulator.h"

namespace {

using namespace infralens;

void BM_SimulateInterleaved(benchmark::State& state) {
  const int P = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {P, 2, m});
  if (!s.ok()) {
    state.SkipWithError(s.status().message().c_str());
    return;
  }
  sim::Costs costs;
  for (auto _ : state) {
    auto r = sim::Simulate(*s, costs);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * s->num_actions());
  state.counters["actions"] = static_cast<double>(s->num_actions());
}
BENCHMARK(BM_SimulateInterleaved)->Args({64, 4096})->Args({8, 64})->Unit(benchmark::kMillisecond);

void BM_GenerateInterleaved(benchmark::State& state) {
  int64_t actions = 0;
  for (auto _ : state) {
    auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {64, 2, 4096});
    actions = s->num_actions();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * actions);
}
BENCHMARK(BM_GenerateInterleaved)->Unit(benchmark::kMillisecond);

void BM_SimulateEverySchedule(benchmark::State& state) {
  const auto& info = schedule::AllSchedules()[state.range(0)];
  auto s = schedule::Generate(info.kind, {16, 0, 1024});
  sim::Costs costs;
  for (auto _ : state) {
    auto r = sim::Simulate(*s, costs);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(std::string(info.name));
  state.SetItemsProcessed(state.iterations() * s->num_actions());
}
BENCHMARK(BM_SimulateEverySchedule)->DenseRange(0, 7)->Unit(benchmark::kMillisecond);

// Issue 21 item 3: interleaved 1F1B at pp 64, v 4 simulated from the rank action streams
// (sim::SimulateGenerated) and, with the second argument 1, printed as PyTorch CSV into a sink
// that only counts bytes; m = 100,032 is 51.2 million actions (m = 100,000 is not a multiple of
// PyTorch's round count, 1,562). Peak memory of the same through the CLI: bench/cpu_figures.sh.
void BM_StreamInterleaved(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0));
  const bool csv = state.range(1) != 0;
  auto shape =
      schedule::GenerateShape(schedule::ScheduleKind::kInterleaved1F1B, {64, 4, m}, INT64_MAX);
  if (!shape.ok()) {
    state.SkipWithError(shape.status().message().c_str());
    return;
  }
  sim::Costs costs;
  int64_t actions = 0, bytes = 0;
  for (auto _ : state) {
    auto r = sim::SimulateGenerated(*shape, costs);
    actions = 0;
    for (const auto& rm : r->ranks) actions += rm.actions;
    if (csv) {
      bytes = 0;
      Status st = io::StreamPytorchCsv(*shape, [&bytes](std::string_view piece) {
        bytes += static_cast<int64_t>(piece.size());
        return Status::Ok();
      });
      benchmark::DoNotOptimize(st);
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * actions);
  state.counters["actions"] = static_cast<double>(actions);
  state.counters["csv_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_StreamInterleaved)
    ->Args({4096, 0})
    ->Args({100032, 0})
    ->Args({100032, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->Iterations(1);

}  // namespace
