// The options of the trace commands that the web API shares (`trace analyze` and
// /api/trace/analyze, `trace synth` and /api/trace/synth), declared once.
#ifndef INFRALENS_REQUEST_TRACE_FLAGS_H_
#define INFRALENS_REQUEST_TRACE_FLAGS_H_

#include <string>

#include "request/flag_sink.h"
#include "trace/analysis.h"

namespace infralens::request {

// How traces are read and measured: --hta-compat, --include-last-step, --align-clocks, and (with
// `patterns`; the API takes no regular expressions) --comm-kernels, --memory-kernels.
struct TraceReadFlags {
  bool hta_compat = false;
  bool include_last_step = false;
  bool align_clocks = false;
  std::string comm_kernels, memory_kernels;  // "" = trace::kDefaultCommPattern / MemoryPattern

  void Register(FlagSink& flags, bool patterns = true);
  trace::AnalysisOptions Options() const;
};

// --steps N: the profiled steps `trace synth` writes.
void RegisterSynthSteps(FlagSink& flags, int* steps);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_TRACE_FLAGS_H_
