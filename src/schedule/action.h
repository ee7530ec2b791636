// The pipeline action IR, in PyTorch's vocabulary (torch/distributed/pipelining/schedules.py,
// _ComputationType and _Action): a stage index, a computation type and a microbatch index.
//   F  forward of one microbatch on one stage (one model chunk)
//   B  full backward (input and weight gradients together)
//   I  backward for the input gradient only (the zero-bubble paper's "B")
//   W  backward for the weight gradient only, deferred to fill bubbles
//   FB an overlapped forward of one (stage, microbatch) with a full backward of another, run as one
//      unit (PyTorch's OVERLAP_F_B, used by DualPipeV)
#ifndef INFRALENS_SCHEDULE_ACTION_H_
#define INFRALENS_SCHEDULE_ACTION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace infralens::schedule {

enum class ActionType : uint8_t {
  kForward,
  kBackward,
  kBackwardInput,
  kBackwardWeight,
  kOverlapFB
};

// One letter per type, PyTorch's spelling: F, B, I, W; "FB" for the overlapped pair.
std::string_view ActionTypeLetter(ActionType type);

struct Action {
  ActionType type = ActionType::kForward;
  int32_t stage = 0;          // for kOverlapFB: the forward's stage
  int32_t microbatch = 0;     // for kOverlapFB: the forward's microbatch
  int32_t b_stage = -1;       // kOverlapFB only: the backward's stage
  int32_t b_microbatch = -1;  // kOverlapFB only: the backward's microbatch

  static Action F(int stage, int mb) { return {ActionType::kForward, stage, mb}; }
  static Action B(int stage, int mb) { return {ActionType::kBackward, stage, mb}; }
  static Action I(int stage, int mb) { return {ActionType::kBackwardInput, stage, mb}; }
  static Action W(int stage, int mb) { return {ActionType::kBackwardWeight, stage, mb}; }
  static Action FB(int f_stage, int f_mb, int b_stage, int b_mb) {
    return {ActionType::kOverlapFB, f_stage, f_mb, b_stage, b_mb};
  }
  bool operator==(const Action&) const = default;
};

// PyTorch's string form: "2F0" (stage 2, forward, microbatch 0); the overlapped pair is
// "(0F3;7B1)OVERLAP_F_B" as _Action.__repr__ writes it.
std::string ToString(const Action& action);
// Appends ToString(action) to `out` (for writers of millions of actions).
void AppendAction(std::string& out, const Action& action);

// Parses the forms ToString writes. Communication and FSDP actions (SEND_F, RECV_B, UNSHARD, ...)
// are rejected: InfraLens reads the compute-only form of PyTorch's CSV.
StatusOr<Action> ParseAction(std::string_view text);

}  // namespace infralens::schedule

#endif  // INFRALENS_SCHEDULE_ACTION_H_
