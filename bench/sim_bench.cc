// Simulator throughput: the target is >= 10 million actions per second on one core for
// P=64, m=4096, interleaved v=2 (about a million actions).
#include <benchmark/benchmark.h>

#include "schedule/schedule.h"
#include "sim/simulator.h"

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

}  // namespace
