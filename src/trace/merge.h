// `trace merge`: one Chrome trace for Perfetto with every rank as its own process, its GPU streams
// and kept CPU annotations (ProfilerStep, PP: actions) as threads, and each rank's clock shifted by
// the offset estimated from matched collectives (collective kernels end together on every rank).
#ifndef INFRALENS_TRACE_MERGE_H_
#define INFRALENS_TRACE_MERGE_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/analysis.h"
#include "trace/model.h"

namespace infralens::trace {

struct MergeSummary {
  int64_t ranks = 0;
  int64_t events = 0;
  bool aligned = false;
  int64_t matched = 0;  // collective instances the offsets come from
  std::string note;     // why the clocks were left as recorded
};

// Writes the merged trace to `write` piece by piece (about 1 MiB each), as it is made; stops at
// the first piece `write` refuses and returns its status. Whether the destination ends up whole
// or not at all is the writer's (the CLI's -o is an AtomicFile).
using MergeWriter = std::function<Status(std::string_view piece)>;
StatusOr<MergeSummary> MergeTraces(const std::vector<RankTrace>& traces,
                                   const AnalysisOptions& options, const MergeWriter& write);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_MERGE_H_
