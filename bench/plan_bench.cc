// Planner speed (issue 4): the default search for Llama-3 70B on 64 H100s, for Llama-3 405B on
// 16,384 H100s and for GPT 1T on 1,024 H100s; reports layouts evaluated per second. Calculon, for
// scale, takes over 20 minutes for a 13B model on 64 GPUs on this machine.
#include <benchmark/benchmark.h>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/planner.h"
#include "plan/testing.h"

namespace {

using namespace infralens;

void RunSearch(benchmark::State& state, const char* model, int nodes, int64_t batch, int64_t seq,
               bool prune = true) {
  const plan::PlanRequest req = plan::testing::PresetRequest(model, nodes, batch, seq);
  plan::SearchOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  opt.prune = prune;
  int64_t layouts = 0, simulated = 0;
  for (auto _ : state) {
    auto sr = plan::Search(req, opt);
    if (!sr.ok()) {
      state.SkipWithError(sr.status().message().c_str());
      return;
    }
    layouts = sr->evaluated + sr->pruned;
    simulated = sr->simulated;
    benchmark::DoNotOptimize(sr);
  }
  state.SetItemsProcessed(state.iterations() * layouts);
  state.counters["layouts"] = static_cast<double>(layouts);
  state.counters["simulated"] = static_cast<double>(simulated);
}

void BM_SearchLlama70bOn64(benchmark::State& s) { RunSearch(s, "llama3-70b", 8, 512, 8192); }
void BM_SearchLlama405bOn16384(benchmark::State& s) {
  RunSearch(s, "llama3-405b", 2048, 2048, 8192);
}
BENCHMARK(BM_SearchLlama70bOn64)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SearchLlama405bOn16384)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
// The workbench's largest design view (issue 11): 6,600 layouts, up to 16,384 microbatches each.
// 88 s on 2 threads before memory-first evaluation and shared schedules, 12.7 s after.
void BM_SearchGpt1tOn1024(benchmark::State& s) { RunSearch(s, "gpt-1t", 128, 16384, 2048); }
BENCHMARK(BM_SearchGpt1tOn1024)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Issue 21: Mixtral 8x7B on 2,048 H100 at 32K tokens (73,800 layouts), with the lower-bound
// pruning (SearchOptions::prune) and without it (every layout that fits simulated): the same
// answer (src/plan/search_test.cc), the "simulated" counter and the time differ.
void BM_SearchMixtralOn2048(benchmark::State& s) { RunSearch(s, "mixtral-8x7b", 256, 2048, 32768); }
void BM_SearchMixtralOn2048Exhaustive(benchmark::State& s) {
  RunSearch(s, "mixtral-8x7b", 256, 2048, 32768, /*prune=*/false);
}
BENCHMARK(BM_SearchMixtralOn2048)
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SearchMixtralOn2048Exhaustive)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
