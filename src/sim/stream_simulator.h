// The simulator for generated schedules too large to hold: each rank's actions come one at a time
// from schedule::RankActions, and a completion time is kept only while an action that needs it has
// not yet run. Same dependencies, same arithmetic, same order of sums per rank as sim::Simulate,
// so every field of the result equals SimulateSummary's bit for bit.
//
// Memory: a coroutine frame per rank, O(P + S) counters, and per (event kind, stage) a ring of the
// completion times produced and still awaited: 9 bytes each. In 1F1B-like schedules that is about
// the microbatches in flight; in GPipe and looped BFS, which hold every forward until the first
// backward, up to pp x v x m / 2 times (the last rank's forwards), so at most 4.5 bytes per
// action whatever the order the ranks are visited in.
#ifndef INFRALENS_SIM_STREAM_SIMULATOR_H_
#define INFRALENS_SIM_STREAM_SIMULATOR_H_

#include "base/status.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::sim {

// Simulates the schedule described by `shape` (schedule::GenerateShape's result: a generated
// kind, actions not listed) without listing its actions. SimResult as SimulateSummary gives it
// (start_ms and end_ms empty). InvalidArgument for a custom shape, bad costs, or a deadlock.
StatusOr<SimResult> SimulateGenerated(const schedule::Schedule& shape, const Costs& costs);

}  // namespace infralens::sim

#endif  // INFRALENS_SIM_STREAM_SIMULATOR_H_
