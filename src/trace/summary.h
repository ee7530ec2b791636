// Trace analysis in two steps, for jobs whose traces do not fit one machine: each rank's file is
// summarised on its own (`infralens trace summarize`, a Dask task in infralens.distributed), and
// any number of summaries merge into exactly the analysis `infralens trace analyze` gives on all
// the files at once (`trace analyze --summaries`): the same TraceAnalysis, the same JSON.
//
// A summary holds the rank's own figures (RankResult as Analyze computes it per file) and what
// the cross-rank parts need of its events, already reduced: the communication kernels (the
// collective matching), the pipeline lengths of each step, the PP: actions, and the pipeline
// detection's view of each step (trace/analysis_internal.h RankWork). Its size grows with the
// collectives and steps, not with the kernels; reading a file holds one rank's kept events
// (trace/kineto_reader.h), never two ranks'. The format is JSON, versioned ("format":
// "infralens-trace-summary", "version": 1), documented in docs/scale-out.md.
//
// Whether the job filters by ProfilerStep depends on every rank (two or more distinct step names
// in the job): a summary whose own file has fewer than two carries both analyses, and the merge
// picks. Reading options (hta_compat, include_last_step, the kernel patterns) are fixed when
// summarising; every merged summary must have the same; align_clocks is the merge's.
#ifndef INFRALENS_TRACE_SUMMARY_H_
#define INFRALENS_TRACE_SUMMARY_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/analysis.h"
#include "trace/kineto_reader.h"
#include "trace/model.h"

namespace infralens::trace {

inline constexpr std::string_view kSummaryFormat = "infralens-trace-summary";
inline constexpr int kSummaryVersion = 1;
// The largest summary the merge reads (a summary grows with a rank's collectives).
inline constexpr size_t kMaxSummaryBytes = size_t{1} << 30;

// The summary of the file at `path` (its JSON; indent 0 = one line). A file that cannot be read,
// or has no usable GPU events, still gives a summary: it records the error, which the merge
// reports as `trace analyze` does. Fails only for bad options (a kernel pattern).
StatusOr<std::string> SummarizeTraceFile(const std::string& path, const AnalysisOptions& options,
                                         const trace::KinetoReadOptions& read = {}, int indent = 0);
// The same for a file already read (or its read error); `path` names it.
StatusOr<std::string> SummarizeRankTrace(const std::string& path, StatusOr<RankTrace> read,
                                         const AnalysisOptions& options, int indent = 0);

// A summary's text and the name of where it came from (for messages).
struct SummaryText {
  std::string label;
  std::string text;
};

// The analysis of the ranks the summaries describe, given in the order `trace analyze` reads
// their files (a folder's files sorted by name): equal to Analyze on the files with the
// summaries' options and `align_clocks`. InvalidArgument naming the summary for one that is not
// a summary, of another version, or made with other options than the first.
StatusOr<TraceAnalysis> AnalyzeSummaries(const std::vector<SummaryText>& summaries,
                                         bool align_clocks);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_SUMMARY_H_
