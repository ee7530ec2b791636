// plan --from-megatron: a user's Megatron-LM launch script read into the plan request, so that
// the planner predicts exactly that job. The script is expanded (io/launch_script.h: variables,
// arrays, if/else) and its command read back (io/megatron_args.h); the model, degrees, virtual
// stages, uneven split, ZeRO (distributed optimizer / Megatron FSDP), recomputation, micro and
// global batch, sequence and precision become the request's, as the matching flags would.
#ifndef INFRALENS_REQUEST_MEGATRON_LAUNCH_H_
#define INFRALENS_REQUEST_MEGATRON_LAUNCH_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/megatron_args.h"
#include "request/request_flags.h"

namespace infralens::request {

struct MegatronLaunch {
  io::MegatronJob job;
  std::set<std::string> given;     // the flags the script stands for ("--tp", "--seq", ...)
  std::vector<std::string> notes;  // assumptions, flags not modelled, vocabulary taken
};

// Reads `text` (a launch script; `origin` names it) into `rf`. `user_given` tells which flags the
// user gave: a layout or batch flag given both ways is an InvalidArgument naming it, as is a
// script without --vocab-size whose shape matches no preset (the vocabulary is the tokenizer's).
// The GPU count is the script's torchrun --nnodes x --nproc_per_node unless --gpus or --nodes is
// given.
StatusOr<MegatronLaunch> ApplyMegatronLaunch(std::string_view text, std::string_view origin,
                                             const GivenFn& user_given, RequestFlags* rf);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_MEGATRON_LAUNCH_H_
