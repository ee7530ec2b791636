// Planner speed (issue 4): the default search for Llama-3 70B on 64 H100s and for Llama-3 405B on
// 16,384 H100s; reports layouts evaluated per second. Calculon, for scale, takes over 20 minutes
// for a 13B model on 64 GPUs on this machine.
#include <benchmark/benchmark.h>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/planner.h"

namespace {

using namespace infralens;

void RunSearch(benchmark::State& state, const char* model, int nodes, int64_t batch, int64_t seq) {
  plan::PlanRequest req;
  req.model = *model::FindPreset(model);
  req.cluster = *cluster::FindClusterPreset("dgx-h100");
  req.cluster.num_nodes = nodes;
  req.gpu = *hw::FindGpu("H100-SXM");
  req.global_batch = batch;
  req.seq_len = seq;
  plan::SearchOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  int64_t layouts = 0;
  for (auto _ : state) {
    auto sr = plan::Search(req, opt);
    if (!sr.ok()) {
      state.SkipWithError(sr.status().message().c_str());
      return;
    }
    layouts = sr->evaluated + sr->pruned;
    benchmark::DoNotOptimize(sr);
  }
  state.SetItemsProcessed(state.iterations() * layouts);
  state.counters["layouts"] = static_cast<double>(layouts);
}

void BM_SearchLlama70bOn64(benchmark::State& s) { RunSearch(s, "llama3-70b", 8, 512, 8192); }
void BM_SearchLlama405bOn16384(benchmark::State& s) { RunSearch(s, "llama3-405b", 2048, 2048, 8192); }
BENCHMARK(BM_SearchLlama70bOn64)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SearchLlama405bOn16384)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
