// ZeRO-3 / FSDP as a timeline of fetch units: each unit's all-gather on the links against the
// compute that needs it, for frameworks whose prefetch is bounded by parameters rather than by
// one layer ahead (DeepSpeed ZeRO-3, data/frameworks/deepspeed.csv fsdp_unit parameter), a term
// of the planner's step time (plan/planner.cc).
#ifndef INFRALENS_PLAN_FSDP_TIMELINE_H_
#define INFRALENS_PLAN_FSDP_TIMELINE_H_

#include <vector>

namespace infralens::plan {

// One fetch unit in execution order (the forward's order, or the backward's, which is reversed).
struct FsdpUnit {
  double params = 0;     // elements gathered (this rank's share of them after TP, whole after DP)
  double gather_s = 0;   // its all-gather; 0: nothing to gather (kept whole)
  double compute_s = 0;  // compute from its start to the next unit's start
  // Backward: the reduce-scatter issued when this unit's compute ends (the gradient bucket it
  // closes; 0: none), on the same links as the gathers, after the gathers issued before it.
  double reduce_s = 0;
};

// How far ahead gathers run. DeepSpeed's PartitionedParameterCoordinator.fetch_sub_module
// (deepspeed/runtime/zero/partitioned_param_coordinator.py) prefetches, at every submodule it
// enters, further parameters of its recorded trace while the parameters gathered and not yet
// released stay within stage3_max_live_parameters; it always fetches the module it is about to
// run. Units are released when their compute ends.
struct FsdpPrefetch {
  double max_live_params = 0;  // > 0: the bound on gathered, unreleased parameters
};

// The timeline of `units` on two resources, the links (gathers and reduce-scatters, one at a
// time in issue order) and the compute stream:
//   - unit i's gather is issued as soon as every unit before it has been issued and the live
//     parameters (issued and not released) plus its own fit in max_live_params, or when nothing
//     else is live (the unit about to run is always fetched), and starts when the links are free;
//   - unit i computes once unit i-1 has computed and its gather has ended; it is released, and
//     its reduce-scatter issued, when its compute ends.
// Returns the time the links and the compute stream are both done less the compute, the
// seconds the unit's communication adds to the pass (0 when everything hides).
double FsdpExposedSeconds(const std::vector<FsdpUnit>& units, const FsdpPrefetch& prefetch);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FSDP_TIMELINE_H_
