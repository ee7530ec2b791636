// Loads the traces of one job: expands folders, reads every file, tells the ranks apart and
// refuses what cannot be one job. A bad file is reported and the others are kept.
#ifndef INFRALENS_TRACE_LOADER_H_
#define INFRALENS_TRACE_LOADER_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/analysis.h"
#include "trace/kineto_reader.h"
#include "trace/model.h"

namespace infralens::trace {

// Files named by `paths`: a file as is; a folder's *.json, *.json.gz and *.gz files, sorted;
// "-" (standard input) as is, once. NotFound for a path that does not exist, InvalidArgument for
// a folder without traces or a second "-".
StatusOr<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& paths);

// The rank a file name states ("rank3", "rank-3", "rank_3", "worker3"), or -1.
int64_t RankFromFileName(const std::string& path);

struct LoadedTraces {
  std::vector<RankTrace> traces;  // sorted by rank
  std::vector<FileError> errors;  // one per file that was not used, in file order
};

// Reads each file and checks it: a rank from distributedInfo (else from the file name, else 0
// for a lone file), no GPU events, a rank outside world_size, a world_size or file name that
// disagrees, a rank already loaded from another file. Without options.progress the files are
// read on every core at once (one file per thread); the result is the same as reading them one
// after another. With it they are read in order, one at a time, as the callback expects. The
// files share one memory budget (options.budget; null: kDefaultTraceMemoryBudgetBytes for them
// all): a file read beyond it is refused with a one-line error, and so are the files after it.
LoadedTraces LoadTraces(const std::vector<std::string>& files,
                        const trace::KinetoReadOptions& options = {});

// The same for traces already in memory (uploads): `label` stands for the path, in messages and
// for the rank a file name states.
struct TraceBytes {
  std::string label;
  std::string_view bytes;
};
LoadedTraces LoadTraceBytes(const std::vector<TraceBytes>& inputs,
                            const trace::KinetoReadOptions& options = {});

// OK when LoadTraces kept a trace; otherwise the one error to report: "no trace given" (no
// file), that file's own error (one file), or "none of the N files could be used; first: ...".
Status RequireATrace(const LoadedTraces& loaded);

// The analysis of loaded.traces with the files LoadTraces refused listed first among its errors;
// an error when no rank could be analysed (that file's, or "no file could be analysed; first:").
StatusOr<TraceAnalysis> WithLoadErrors(const LoadedTraces& loaded, TraceAnalysis analysis);

// Analyses what LoadTraces kept, with the files it refused listed first among the errors (as
// `infralens trace analyze` reports them). Fails only when no file is usable: with that file's
// error, or "none of the N files could be used; first: ...".
StatusOr<TraceAnalysis> AnalyzeLoaded(LoadedTraces loaded, const AnalysisOptions& options);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_LOADER_H_
