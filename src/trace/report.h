// Renders a TraceAnalysis as text tables or JSON.
#ifndef INFRALENS_TRACE_REPORT_H_
#define INFRALENS_TRACE_REPORT_H_

#include <string>

#include "base/json_writer.h"
#include "trace/analysis.h"

namespace infralens::trace {

// The terminal report: one table per analysis, each headed by the definition it uses.
std::string AnalysisText(const TraceAnalysis& a);

// The JSON object. Stable keys: mode, include_last_step, consecutive_kernel_delay_us,
// comm_kernels, memory_kernels, ranks (rank, file, world_size, steps_analyzed, gpu_events,
// kernel_time_us, idle_us, compute_us, non_compute_us, comm_only_us, memory_only_us, idle_pct,
// compute_pct, non_compute_pct, overlap_pct, bubble_us, bubble_pct, p2p_wait_us, pure_idle_us,
// no_compute_us, pipeline_window_us, stage, forwards, backwards, fb_actions, collectives,
// streams, cross_rank, pp_actions), kernel_types, cross_rank, pipeline (detected: whether the
// trace is a pipeline; gap_term: "bubble" when it is, else "idle", the word for bubble_pct;
// source, detect_note, schedule: a generated schedule's name or "unknown", schedule_note, stages:
// each rank's stage in the order of ranks, -1 in none; chains; the PP: recovery's recovered,
// note, matches ...), errors.
void WriteAnalysisJson(JsonWriter& w, const TraceAnalysis& a);

// "1.234" ms from microseconds, for tables.
std::string FormatMs(double us);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_REPORT_H_
