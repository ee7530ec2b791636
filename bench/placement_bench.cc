// Placement and link classification at scale: the issue asks that placing a 16,384-GPU job
// (tp=8 pp=16 dp=128 on 2,048 DGX H100 nodes) and classifying every group of every axis take
// milliseconds. Also the cost of one collective estimate on the largest DP group.
#include <benchmark/benchmark.h>

#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "collective/collective.h"

namespace {

using namespace infralens;

cluster::Cluster H100Nodes(int nodes) {
  cluster::Cluster c = *cluster::FindClusterPreset("dgx-h100");
  c.num_nodes = nodes;
  return c;
}

cluster::Degrees Degrees(int tp, int dp, int pp) {
  cluster::Degrees d;
  d[cluster::Axis::kTp] = tp;
  d[cluster::Axis::kDp] = dp;
  d[cluster::Axis::kPp] = pp;
  return d;
}

// args: GPUs, dp (tp = 8, pp = GPUs / 8 / dp).
void Sizes(benchmark::internal::Benchmark* b) {
  b->Args({16384, 128})->Args({65536, 512})->Args({64, 4});
}

void BM_PlaceAndClassify(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0)), dp = static_cast<int>(state.range(1));
  const cluster::Cluster c = H100Nodes(gpus / 8);
  int64_t groups = 0;
  for (auto _ : state) {
    auto p = cluster::Placement::Make(Degrees(8, dp, gpus / 8 / dp), cluster::kDefaultOrder, gpus);
    auto axes = cluster::ClassifyAxes(c, *p);
    groups = 0;
    for (const auto& a : axes) groups += a.groups;
    benchmark::DoNotOptimize(axes);
  }
  state.counters["gpus"] = gpus;
  state.counters["groups"] = static_cast<double>(groups);
  // Items = group memberships classified (GPUs x axes with degree > 1).
  state.SetItemsProcessed(state.iterations() * int64_t{gpus} * 3);
}
BENCHMARK(BM_PlaceAndClassify)->Apply(Sizes)->Unit(benchmark::kMillisecond);

// The same placements classified group by group every time (no cache): the cost a search paid
// per layout before issue 21, side by side with BM_PlaceAndClassify (which, after the first
// iteration, answers from the cache as a search does for every layout after the first of its
// degrees and order).
void BM_PlaceAndClassifyGroupByGroup(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0)), dp = static_cast<int>(state.range(1));
  const cluster::Cluster c = H100Nodes(gpus / 8);
  for (auto _ : state) {
    auto p = cluster::Placement::Make(Degrees(8, dp, gpus / 8 / dp), cluster::kDefaultOrder, gpus);
    for (const cluster::AxisSet& set : cluster::MegatronGroups(*p)) {
      auto links = cluster::ClassifyAxisSetGroupByGroup(c, *p, set);
      benchmark::DoNotOptimize(links);
    }
  }
  state.SetItemsProcessed(state.iterations() * int64_t{gpus} * 3);
}
BENCHMARK(BM_PlaceAndClassifyGroupByGroup)->Apply(Sizes)->Unit(benchmark::kMillisecond);

void BM_AllReduceOnLargestDpGroup(benchmark::State& state) {
  const cluster::Cluster c = H100Nodes(2048);
  auto p = cluster::Placement::Make(Degrees(8, 128, 16), cluster::kDefaultOrder, 16384);
  std::vector<int64_t> ranks;
  p->GroupRanks(cluster::Axis::kDp, 0, &ranks);
  collective::Request r;
  r.size_bytes = int64_t{1} << 30;
  for (auto _ : state) {
    auto e = collective::EstimateAlgorithms(c, ranks, r);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_AllReduceOnLargestDpGroup)->Unit(benchmark::kMicrosecond);

}  // namespace
