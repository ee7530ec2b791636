// Memory evaluation cost: one EstimateMemory call (layout checks, schedule generation, the
// per-rank walk). A planner sweeps thousands of layouts, so this should take microseconds.
#include <benchmark/benchmark.h>

#include "model/model.h"
#include "model/presets.h"
#include "plan/memory.h"

namespace {

using namespace infralens;

// Llama 3 70B, tp 8, pp 4, interleaved with 5 chunks per rank, 16 microbatches: 128 GPUs.
void BM_EstimateMemoryLlama70bInterleaved(benchmark::State& state) {
  const model::Model m = *model::FindPreset("llama3-70b");
  plan::MemoryConfig c;
  c.parallel.tp = 8;
  c.parallel.pp = 4;
  c.parallel.vpp = 5;
  c.parallel.dp = 4;
  c.parallel.zero_stage = 1;
  c.parallel.sequence_parallel = true;
  c.recompute = model::Recompute::kSelective;
  c.schedule = schedule::ScheduleKind::kInterleaved1F1B;
  c.global_batch = 64;
  c.hbm_bytes = 80 * plan::kGiB;
  for (auto _ : state) {
    auto r = plan::EstimateMemory(m, c);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EstimateMemoryLlama70bInterleaved)->Unit(benchmark::kMicrosecond);

// GPT-3 175B with 1F1B over 8 ranks and 64 microbatches (the memory golden's layout).
void BM_EstimateMemoryGpt3(benchmark::State& state) {
  const model::Model m = *model::FindPreset("gpt3-175b");
  plan::MemoryConfig c;
  c.parallel.tp = 8;
  c.parallel.pp = 8;
  c.parallel.dp = 8;
  c.parallel.sequence_parallel = true;
  c.recompute = model::Recompute::kSelective;
  c.global_batch = 512;
  for (auto _ : state) {
    auto r = plan::EstimateMemory(m, c);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EstimateMemoryGpt3)->Unit(benchmark::kMicrosecond);

// DeepSeek-V3 without pipelining: 61 MoE/dense layers on one rank, expert parallel 64.
void BM_EstimateMemoryDeepSeekV3(benchmark::State& state) {
  const model::Model m = *model::FindPreset("deepseek-v3");
  plan::MemoryConfig c;
  c.parallel.dp = 128;
  c.parallel.ep = 64;
  c.parallel.zero_stage = 1;
  c.recompute = model::Recompute::kSelective;
  for (auto _ : state) {
    auto r = plan::EstimateMemory(m, c);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_EstimateMemoryDeepSeekV3)->Unit(benchmark::kMicrosecond);

void BM_CountParameters(benchmark::State& state) {
  const model::Model m = *model::FindPreset("deepseek-v3");
  for (auto _ : state) benchmark::DoNotOptimize(model::CountParameters(m));
}
BENCHMARK(BM_CountParameters);

}  // namespace
