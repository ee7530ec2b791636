// A process-wide memo of Generate, for callers that ask for the same schedule many times: the
// layout search evaluates each (schedule, pp, vpp, microbatches) for up to nine layouts (ZeRO
// stages x recompute modes), and each evaluation needs the schedule twice (the memory estimate's
// peak activations and the simulation). Generating a schedule of millions of actions costs more
// than simulating it, so the search spent most of its time regenerating the same lists.
#ifndef INFRALENS_SCHEDULE_GENERATE_CACHE_H_
#define INFRALENS_SCHEDULE_GENERATE_CACHE_H_

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "schedule/schedule.h"

namespace infralens::schedule {

// The schedules kept: at most this many actions in all (about 20 bytes each, so about 40 MB),
// least recently used dropped first; the schedule just made is always kept, even alone above the
// bound, so a caller can reuse it. The search evaluates the layouts of one schedule one after
// another, so a few schedules suffice: GPT 1T on 1,024 GPUs searched as fast with this bound as
// with 8 million actions (12.97 s and 13.16 s on 2 threads).
inline constexpr int64_t kGenerateCacheActions = 2'000'000;

// Generate(kind, params), shared: equal requests (the default vpp resolved) get the same
// immutable schedule. Errors are Generate's and are not cached. Safe to call from many threads;
// two threads asking at once for a schedule not yet made may both generate it (the results are
// equal). The cache is never destroyed, so threads still running at exit cannot outlive it.
StatusOr<std::shared_ptr<const Schedule>> GenerateShared(ScheduleKind kind,
                                                         const ScheduleParams& params);

// What the cache holds now, for tests and benchmarks.
struct GenerateCacheStats {
  int64_t schedules = 0;
  int64_t actions = 0;
  int64_t hits = 0;    // since the process started
  int64_t misses = 0;  // since the process started
};
GenerateCacheStats GenerateCacheStatsNow();

// Sets the bound (kGenerateCacheActions at start), evicting what is now above it; for tests.
void SetGenerateCacheLimit(int64_t actions);

}  // namespace infralens::schedule

#endif  // INFRALENS_SCHEDULE_GENERATE_CACHE_H_
