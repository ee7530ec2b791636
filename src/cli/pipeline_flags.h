// Flags shared by `schedule` and `compare`: pipeline shape and per-action costs.
#ifndef INFRALENS_CLI_PIPELINE_FLAGS_H_
#define INFRALENS_CLI_PIPELINE_FLAGS_H_

#include <string>

#include "base/status.h"
#include "cli/flags.h"
#include "sim/simulator.h"

namespace infralens::cli {

struct PipelineFlags {
  int pp = 4;
  int vpp = 0;  // 0: the schedule's default
  int microbatches = 8;
  double f = 1.0, b = 2.0, i = 1.0, w = 1.0, fb = -1.0, p2p = 0.0;
  std::string stage_costs_path;

  void Register(Flags& flags, bool per_chunk);
  // Resolves B = I + W: --b alone splits evenly, --b with one of --i/--w gives the other,
  // --i and --w alone sum to --b. Reads --stage-costs when given (needs the stage count).
  StatusOr<sim::Costs> Costs(const Flags& flags, int num_stages) const;
};

// Per-stage costs file: CSV with a header naming the columns, "stage" first, then any of
// f, b, i, w, fb (ms); stages not listed keep the command-line costs; '#' starts a comment.
//   stage,f,b
//   0,1.2,2.4
Status ReadStageCosts(const std::string& text, const sim::StageCosts& base, int num_stages, sim::Costs& costs);

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_PIPELINE_FLAGS_H_
