// Discrete-event executor for pipeline schedules: each rank runs its action list in order; an
// action starts when its rank is free and its dependencies have finished (plus a point-to-point
// latency when the dependency ran on another rank). Dependencies (PyTorch's vocabulary):
//   F(s,i)      after F(s-1,i)
//   B/I(s,i)    after B/I(s+1,i); on the last stage after F(S-1,i)
//   W(s,i)      after I(s,i)
//   FB pair     after the dependencies of both its forward and its backward
// Runs in time linear in the number of actions. Times are in milliseconds.
#ifndef INFRALENS_SIM_SIMULATOR_H_
#define INFRALENS_SIM_SIMULATOR_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "schedule/schedule.h"

namespace infralens::sim {

// Durations of one action on one chunk (stage), in milliseconds.
struct StageCosts {
  double f_ms = 1.0;
  double b_ms = 2.0;
  double i_ms = 1.0;
  double w_ms = 1.0;
  double fb_ms = -1.0;  // overlapped forward+backward pair; negative: f + b (no overlap benefit)
};

struct Costs {
  StageCosts uniform;                 // every stage, unless overridden
  std::vector<StageCosts> per_stage;  // empty, or one entry per stage
  double p2p_ms = 0.0;                // latency of an activation or gradient between two ranks

  const StageCosts& stage(int s) const {
    return per_stage.empty() ? uniform : per_stage[static_cast<size_t>(s)];
  }
  // How long `a` runs, in ms: its stage's cost of its type; an overlapped F&B pair its stage's
  // fb_ms, or when that is unset (< 0) the forward plus the backward of its backward half's stage.
  double DurationMs(const schedule::Action& a) const;
};

// The largest duration or latency accepted, in ms (about 11.6 days per action). With at most
// schedule::kMaxActions actions a makespan stays below 1e17 ms, far from overflowing a double, so
// a simulation of valid costs never yields inf or NaN.
inline constexpr double kMaxCostMs = 1e9;

// InvalidArgument naming the first cost that is negative, non-finite or above kMaxCostMs.
Status ValidateCosts(const Costs& costs, int num_stages);

// Uniform costs from what a user gave, B = I + W resolved as docs/schedules.md says: b alone
// splits evenly into i and w; b with one of i, w gives the other; i and/or w without b sum to b;
// nothing given keeps b = 2, i = w = 1. Shared by the CLI flags and the web API.
struct CostInput {
  double f = 1.0;
  std::optional<double> b, i, w;
  double fb = -1.0;
  double p2p = 0.0;
};
StatusOr<Costs> ResolveCosts(const CostInput& in);

struct RankMetrics {
  int rank = 0;
  int64_t actions = 0;
  double busy_ms = 0;         // sum of action durations
  double idle_ms = 0;         // makespan - busy
  double first_start_ms = 0;  // span: first start to last end
  double last_end_ms = 0;
  double span_ms = 0;
  double span_idle_ms = 0;   // idle inside the span
  int peak_activations = 0;  // max microbatch activations held at once, in chunks
};

struct SimResult {
  double makespan_ms = 0;
  // Total idle over P * makespan: what a single iteration wastes, ramp included.
  double bubble_fraction = 0;
  // Idle inside each rank's own span over the sum of spans: the bubble the zero-bubble papers
  // quote, which ignores the ramp-up and ramp-down offsets between ranks.
  double span_bubble_fraction = 0;
  std::vector<RankMetrics> ranks;
  // start_ms[r][k], end_ms[r][k]: timing of schedule.ranks[r][k].
  std::vector<std::vector<double>> start_ms, end_ms;
};

// One hop of a deadlock: the action schedule.ranks[rank][index] waits for an event that never
// comes: the forward (waits_forward) or the input gradient (B or I) of (waits_stage,
// waits_microbatch), produced on producer_rank by its action producer_index (-1: not on that
// rank's list at all).
struct DeadlockWait {
  int rank = 0;
  int64_t index = 0;
  int waits_stage = 0;
  bool waits_forward = true;
  int waits_microbatch = 0;
  int producer_rank = 0;
  int64_t producer_index = -1;
};

// The chain of waits behind a deadlock, starting at the lowest stuck rank: the first entry is the
// first broken dependency, each next entry the producer it waits on, as the error message says.
struct DeadlockReport {
  std::vector<DeadlockWait> chain;
};

// Fills each rank's idle, span and span_idle and the two bubble fractions from its busy_ms,
// first_start_ms and last_end_ms and from makespan_ms, all set before (Simulate's last step,
// shared with sim::SimulateGenerated so that both sum in the same order).
void FillSummaryFractions(SimResult& res);

// Simulates the schedule. A dependency that can never be met (a cycle, or an action before its
// own prerequisite on the same rank) is a deadlock: InvalidArgument naming the stuck action and
// the chain of actions it waits on, also filled into *deadlock when given. Call
// ValidateStructure first for completeness checks.
StatusOr<SimResult> Simulate(const schedule::Schedule& s, const Costs& costs,
                             DeadlockReport* deadlock = nullptr);

// Simulate without the per-action times: start_ms and end_ms are left empty, every other field is
// what Simulate gives, bit for bit. For callers that need only the makespan and the per-rank
// metrics (the planner simulates thousands of layouts): 16 bytes less per action.
StatusOr<SimResult> SimulateSummary(const schedule::Schedule& s, const Costs& costs);

// A memo of SimulateSummary for callers that simulate the same generated schedule with the same
// costs many times (the layout search: layouts that differ only in ZeRO stage, or in anything
// else the pipeline's stage costs do not depend on, give the same simulation). Exact: a hit is a
// schedule of the same kind, pp, vpp, microbatches and placement (generated, so the same actions)
// with costs equal bit for bit, and returns the result SimulateSummary gave for them. Custom
// schedules (loaded from files) are simulated every time. Safe to call from many threads; holds
// at most `max_entries` results (a full memo is emptied and starts again).
class SummaryMemo {
 public:
  explicit SummaryMemo(size_t max_entries = 2048) : max_entries_(max_entries) {}
  StatusOr<SimResult> Simulate(const schedule::Schedule& s, const Costs& costs);
  int64_t hits() const;
  int64_t misses() const;

 private:
  size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, SimResult> results_;  // key: MemoKey's bytes
  int64_t hits_ = 0, misses_ = 0;
};

// The dependencies of every action as positions in the flattened action list (rank 0's actions
// in order, then rank 1's, ...; the order of the JSON "actions" array): result[k] lists the
// actions action k waits for, by the rules above (an FB pair lists those of both halves). Needs a
// structurally valid schedule; a dependency nobody produces is left out.
std::vector<std::vector<int64_t>> ActionDependencies(const schedule::Schedule& s);

// Peak in-flight activations per rank, in chunks. A microbatch's activation on a stage lives from
// its F until its B, or until its W when the backward is split. Depends only on each rank's
// order, not on timing, since a rank runs its actions one after another.
std::vector<int> PeakActivations(const schedule::Schedule& s);

}  // namespace infralens::sim

#endif  // INFRALENS_SIM_SIMULATOR_H_
