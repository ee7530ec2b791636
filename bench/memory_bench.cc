// Memory evaluation cost: one EstimateMemory call (layout checks, schedule generation, the
// per-rank walk). A planner sweeps thousands of layouts, so this should take microseconds.
#include <benchmark/benchmark.h>

#include "model/model.h"
#include "model/presets.h"
#include "plan/memory.h"

namespace {

using namespace infralens;

// tp x pp x dp with ZeRO stage `zero`, sequence parallelism where tp > 1, selective recompute
// and `global_batch` sequences (0: the default).
plan::MemoryConfig MemoryDegrees(int tp, int pp, int dp, int zero, int64_t global_batch) {
  plan::MemoryConfig c;
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.zero_stage = zero;
  c.parallel.sequence_parallel = tp > 1;
  c.recompute = model::Recompute::kSelective;
  c.global_batch = global_batch;
  return c;
}

// One EstimateMemory call of the preset `model` with `c` per iteration.
void EstimateEachIteration(benchmark::State& state, const char* model,
                           const plan::MemoryConfig& c) {
  const model::Model m = *model::FindPreset(model);
  for (auto _ : state) {
    auto r = plan::EstimateMemory(m, c);
    benchmark::DoNotOptimize(r);
  }
}

// Llama 3 70B, tp 8, pp 4, interleaved with 5 chunks per rank, 16 microbatches: 128 GPUs.
void BM_EstimateMemoryLlama70bInterleaved(benchmark::State& state) {
  plan::MemoryConfig c = MemoryDegrees(8, 4, 4, 1, 64);
  c.parallel.vpp = 5;
  c.schedule = schedule::ScheduleKind::kInterleaved1F1B;
  c.hbm_bytes = 80 * plan::kGiB;
  EstimateEachIteration(state, "llama3-70b", c);
}
BENCHMARK(BM_EstimateMemoryLlama70bInterleaved)->Unit(benchmark::kMicrosecond);

// GPT-3 175B with 1F1B over 8 ranks and 64 microbatches (the memory golden's layout).
void BM_EstimateMemoryGpt3(benchmark::State& state) {
  EstimateEachIteration(state, "gpt3-175b", MemoryDegrees(8, 8, 8, 0, 512));
}
BENCHMARK(BM_EstimateMemoryGpt3)->Unit(benchmark::kMicrosecond);

// DeepSeek-V3 without pipelining: 61 MoE/dense layers on one rank, expert parallel 64.
void BM_EstimateMemoryDeepSeekV3(benchmark::State& state) {
  plan::MemoryConfig c = MemoryDegrees(1, 1, 128, 1, 0);
  c.parallel.ep = 64;
  EstimateEachIteration(state, "deepseek-v3", c);
}
BENCHMARK(BM_EstimateMemoryDeepSeekV3)->Unit(benchmark::kMicrosecond);

void BM_CountParameters(benchmark::State& state) {
  const model::Model m = *model::FindPreset("deepseek-v3");
  for (auto _ : state) benchmark::DoNotOptimize(model::CountParameters(m));
}
BENCHMARK(BM_CountParameters);

}  // namespace
