// The simulator for generated schedules too large to hold: each rank's actions come one at a time
// from schedule::RankActions, and a completion time is kept only while an action that needs it has
// not yet run. Same dependencies, same arithmetic, same order of sums per rank as sim::Simulate,
// so every field of the result equals SimulateSummary's bit for bit.
//
// Memory: a coroutine frame per rank, O(P + S) counters, and per (event kind, stage) a ring over
// the span of completion times produced and still awaited (9 bytes each, the ring a power of two).
// With ranks taking turns that is about the microbatches in flight (7-15 MB at 51 million actions
// with pp 64); at worst, one rank holding every forward until its backwards (GPipe or looped BFS at
// pp 1), one time per forward.
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
