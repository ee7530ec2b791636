// A pipeline schedule: P ranks, v chunks (stages) per rank, S = v*P stages, m microbatches, and for
// each rank the ordered list of actions it runs. Vocabulary and stage placement follow PyTorch's
// torch.distributed.pipelining: looped placement puts stage s on rank s % P; the V placement of
// ZBV and DualPipeV puts stages r and 2P-1-r on rank r (_utils.generate_stage_to_rank_mapping).
#ifndef INFRALENS_SCHEDULE_SCHEDULE_H_
#define INFRALENS_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "schedule/action.h"

namespace infralens::schedule {

enum class ScheduleKind {
  kGPipe,
  k1F1B,
  kInterleaved1F1B,
  kLoopedBFS,
  kZBH1,
  kZBH2,
  kZBV,
  kDualPipeV,
  kCustom,  // loaded from a file
};

struct ScheduleInfo {
  ScheduleKind kind;
  std::string_view name;          // InfraLens' CLI name, e.g. "interleaved-1f1b"
  std::string_view pytorch_name;  // PyTorch's get_schedule_class name, e.g. "Interleaved1F1B"
  std::string_view summary;
  int default_vpp;      // chunks per rank when --vpp is not given
  bool split_backward;  // uses I and W instead of B
  bool v_shape;         // V placement, exactly two chunks per rank
};

// Every generated schedule, in the order `compare` lists them.
const std::vector<ScheduleInfo>& AllSchedules();
const ScheduleInfo& Info(ScheduleKind kind);

// Case-insensitive; '-', '_' and spaces are ignored, and PyTorch's class names and short aliases
// (interleaved, bfs, zbh1, zb-v, dualpipe-v, ...) are accepted. The error lists the valid names.
StatusOr<ScheduleKind> ParseScheduleKind(std::string_view name);

enum class Placement { kLoop, kV, kCustom };

struct Schedule {
  std::string name;  // CLI name, or "custom" for a loaded file
  ScheduleKind kind = ScheduleKind::kCustom;
  int pp = 0;            // pipeline ranks P
  int vpp = 1;           // chunks (stages) per rank v
  int microbatches = 0;  // m
  Placement placement = Placement::kLoop;
  std::vector<int32_t> stage_to_rank;      // size S
  std::vector<int32_t> stage_chunk;        // size S: index of the stage among its rank's chunks
  std::vector<std::vector<Action>> ranks;  // size P, each in execution order

  int num_stages() const { return pp * vpp; }
  int64_t num_actions() const;
  // True when any action is I or W (backward split into input and weight parts).
  bool split_backward() const;
};

// A typo must not exhaust memory: schedules are refused beyond this many actions. Generating,
// simulating and printing one as text (ascii, csv) takes about 50 bytes per action at peak
// (measured with /usr/bin/time -v, bench/cli_limits.sh), so the limit is about 500 MB of memory
// and a few seconds.
inline constexpr int64_t kMaxActions = 10'000'000;

struct ScheduleParams {
  int pp = 4;
  int vpp = 0;  // 0: the schedule's default
  int microbatches = 8;
};

// The most actions Generate(kind, params) can make: pp x v x m x (3 when the backward is split
// into I and W, else 2), v = params.vpp or the schedule's default. Computed without overflow:
// saturates at INT64_MAX, and is 0 when a factor is below 1. Checked before anything is allocated.
int64_t ActionUpperBound(ScheduleKind kind, const ScheduleParams& params);

// a x b for counts >= 0, saturating at INT64_MAX instead of overflowing.
int64_t SaturatingMul(int64_t a, int64_t b);

// Builds the schedule, or InvalidArgument naming the value and the rule it breaks.
StatusOr<Schedule> Generate(ScheduleKind kind, const ScheduleParams& params);

// Fills stage_to_rank, stage_chunk and placement from the placement kind.
void SetPlacement(Schedule& s, Placement placement);

// Checks the schedule is complete and consistent: every stage lives on one rank, and every
// (stage, microbatch) has exactly one F and either one B or one I and one W, on that rank.
// Ordering problems (dependencies, deadlocks) are found by the simulator, which knows the timing.
Status ValidateStructure(const Schedule& s);

}  // namespace infralens::schedule

#endif  // INFRALENS_SCHEDULE_SCHEDULE_H_
