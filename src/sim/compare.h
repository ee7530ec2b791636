// Every generated pipeline schedule side by side for one P, m and per-rank cost set, and the
// bubble against the number of microbatches, all by simulation. `infralens compare` and the web
// API's /api/compare print this one result.
#ifndef INFRALENS_SIM_COMPARE_H_
#define INFRALENS_SIM_COMPARE_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "base/status.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::sim {

struct CompareRow {
  const schedule::ScheduleInfo* info = nullptr;
  int vpp = 0;
  Status status;        // not ok: the schedule cannot run with these parameters (and why)
  SimResult result;     // when status is ok
  int peak_chunks = 0;  // highest per-rank peak activations, in chunks
};

struct CompareResult {
  int pp = 0;
  int microbatches = 0;
  Costs per_rank;                // per rank per microbatch
  std::vector<CompareRow> rows;  // schedule::AllSchedules() order
  // (m, bubble fraction per schedule in AllSchedules() order; NaN where it cannot run at m)
  std::vector<std::pair<int, std::vector<double>>> sweep;
};

// Costs are per rank per microbatch; a schedule with v chunks per rank runs each chunk in 1/v of
// that, so every schedule does the same total work and the comparison is fair.
Costs ChunkCosts(const Costs& per_rank, int v);

// The microbatch counts of the bubble sweep: 1, 2, 4, ..., 64 and m itself.
std::vector<int> SweepMicrobatches(int m);

// An upper bound on the actions CompareSchedules simulates in all, so a caller can bound the work
// before starting (at most 3 actions per stage and microbatch, every schedule, every sweep point).
// Saturates at INT64_MAX rather than overflowing; pp, vpp and m must be >= 0.
int64_t CompareWorkBound(int pp, int vpp, int m);

// `vpp` applies to the schedules that take any chunk count (interleaved-1f1b, looped-bfs); 0 =
// each schedule's default. InvalidArgument for pp or m below 1 or vpp below 0. `cancelled`, when
// given, is polled between simulations; when it returns true the work stops with
// ResourceExhausted.
StatusOr<CompareResult> CompareSchedules(int pp, int vpp, int m, const Costs& per_rank,
                                         const std::function<bool()>& cancelled = nullptr);

}  // namespace infralens::sim

#endif  // INFRALENS_SIM_COMPARE_H_
