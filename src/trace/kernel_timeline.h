// A to-scale, per-rank timeline of what the GPUs ran over the analysed step windows, for drawing:
// every analysed kernel by class (compute, communication, memory), the idle time split as the
// pipeline view splits it (pure idle: no GPU event; p2p wait: inside a send/recv kernel with no
// computation), the step windows, a top-kernels table and, where the traces carry PyTorch
// pipelining's "PP:" annotations, each action type's measured GPU time.
//
// The timeline is taken from the very events the analysis measured (same selection, same time
// base, same windows as PipelineWindows in cross_rank.cc), so each rank's gap intervals sum to its
// RankResult::pure_idle_us and p2p_wait_us. Times are microseconds from the start of the first
// window (origin_us, in the traces' own clock).
//
// Bounded: at most `max_intervals` kernel and gap intervals in all. When the traces have more,
// adjacent intervals of one rank, class (or gap kind) that are both shorter than a resolution
// (span / 4000 to start with, doubled until the bound holds) and less than a resolution apart are
// merged into one; a merged interval keeps its count, the time its members cover and the name of
// its longest member, and `resolution_us` says what was done (0: every interval is exact).
#ifndef INFRALENS_TRACE_KERNEL_TIMELINE_H_
#define INFRALENS_TRACE_KERNEL_TIMELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/status.h"
#include "trace/analysis.h"
#include "trace/kernel_class.h"
#include "trace/loader.h"
#include "trace/model.h"

namespace infralens::trace {

struct KernelTimelineOptions {
  int64_t max_intervals = 20'000;    // kernels and gaps over all ranks
  double resolution_divisor = 4000;  // first merge resolution = span / this
  int top_kernels = 20;              // rows of the top-kernels table
  size_t max_name_bytes = 256;       // longer kernel names are cut (at a UTF-8 boundary)
  int64_t max_cpu_spans = 10'000;    // CPU annotations over all ranks (the first ones in time kept)
  int64_t max_flows = 10'000;        // send/recv pairs (the first ones in time kept)
};

// Kernels of one class on one rank (one kernel, or adjacent short kernels merged).
struct TimelineKernel {
  double begin_us = 0, end_us = 0;  // from the origin, clipped to the step window
  double busy_us = 0;               // time covered by the members (their union)
  int32_t name = -1;                // index into KernelTimeline::names (the longest member)
  int32_t count = 1;                // kernels merged
  KernelClass cls = KernelClass::kCompute;
  int64_t stream = -1;  // the GPU stream (args "stream"); a lane is one stream's kernels of a class
};

enum class GapKind : uint8_t { kPureIdle = 0, kP2pWait = 1 };
std::string_view GapKindName(GapKind k);  // "idle", "p2p_wait"

// Time in a step window without computation that the pipeline view counts as bubble.
struct TimelineGap {
  double begin_us = 0, end_us = 0;
  double us = 0;      // the gap time inside [begin, end) (= end - begin unless merged)
  int32_t count = 1;  // exact gaps merged
  GapKind kind = GapKind::kPureIdle;
};

// A CPU-side annotation on one thread: a ProfilerStep or a pipelining action ("PP:1F3"), for the
// trace view's CPU-thread lanes. Clipped to [0, span]; those outside are left out.
struct TimelineCpuSpan {
  double begin_us = 0, end_us = 0;  // from the origin (the CPU and GPU share Kineto's clock)
  int64_t tid = 0;
  int32_t name = -1;  // index into KernelTimeline::names
};

// A pipeline transfer between ranks: the k-th send kernel from rank `from_rank` to `to_rank`
// (collective metadata "Dst Rank") paired with the k-th recv kernel on `to_rank` whose "Src Rank"
// is `from_rank`, as NCCL matches point-to-point operations in order per peer pair. Only kernels
// whose metadata names the peer are paired (a batch_isend_irecv kernel carries none).
struct TimelineFlow {
  int64_t from_rank = -1, to_rank = -1;
  int64_t from_stream = -1, to_stream = -1;
  double send_begin_us = 0, send_end_us = 0;  // from the origin
  double recv_begin_us = 0, recv_end_us = 0;
};

struct RankTimeline {
  int64_t rank = -1;
  int64_t kernels_in_windows = 0;            // analysed kernels drawn, before any merging
  std::vector<TimelineKernel> kernels;       // by class, then start
  std::vector<TimelineGap> gaps;             // by kind, then start
  std::vector<TimelineCpuSpan> cpu;          // by thread, then start (at most max_cpu_spans in all)
  double pure_idle_us = 0, p2p_wait_us = 0;  // sums over the gaps (exact, merged or not)
};

struct TimelineWindow {
  double begin_us = 0, end_us = 0;  // from the origin
  int64_t step = -1;                // ProfilerStep number; -1 for the whole analysed span
};

struct TopKernel {
  std::string name;  // cut to max_name_bytes
  KernelClass cls = KernelClass::kCompute;
  int64_t count = 0;    // over all ranks, in the windows
  double total_us = 0;  // summed durations (clipped to the windows)
  double share = 0;     // of all kernels' summed time
};

// GPU time of the kernels launched inside each "PP:<action>" annotation, per action type: what
// one rank spends per microbatch and model chunk. Absent types have count 0.
struct MeasuredActionCost {
  int64_t count = 0;   // actions with at least one compute kernel attributed
  double mean_us = 0;  // mean over those actions of their compute kernels' summed time
};

struct KernelTimeline {
  double origin_us = 0;  // the traces' clock at time 0 of the timeline
  double span_us = 0;    // first window start to last window end
  std::vector<TimelineWindow> windows;
  int64_t max_intervals = 0;
  double resolution_us = 0;  // 0: exact; else the merge resolution that met the bound
  int64_t intervals = 0;     // kernels + gaps in the answer, all ranks
  std::vector<std::string> names;
  std::vector<RankTimeline> ranks;  // in the order of TraceAnalysis::ranks
  std::vector<TopKernel> top_kernels;
  // Indexed by schedule::ActionType (F, B, I, W, FB).
  MeasuredActionCost actions[5];
  int64_t p2p_sends = 0;            // send kernels (collective metadata "send") in the windows
  double p2p_send_mean_us = 0;      // their mean duration
  std::vector<TimelineFlow> flows;  // by send start; at most max_flows
  int64_t cpu_spans_dropped = 0, flows_dropped = 0;  // left out by the bounds
};

// Analyses `traces` as Analyze() does and extracts the timeline from the same events.
StatusOr<TraceAnalysis> AnalyzeWithTimeline(const std::vector<RankTrace>& traces,
                                            const AnalysisOptions& options,
                                            const KernelTimelineOptions& timeline_options,
                                            KernelTimeline* timeline);

// AnalyzeLoaded() with the timeline: the same answer and the same errors.
StatusOr<TraceAnalysis> AnalyzeLoadedWithTimeline(const LoadedTraces& loaded,
                                                  const AnalysisOptions& options,
                                                  const KernelTimelineOptions& timeline_options,
                                                  KernelTimeline* timeline);

// The timeline as a JSON object value (docs/measurement.md, "The trace view"): compact arrays,
// kernels [begin_us, end_us, class 0|1|2, name index, count, busy_us, stream], gaps [begin_us,
// end_us, kind 0 idle|1 p2p wait, us, count], cpu [begin_us, end_us, tid, name index], flows
// [from_rank, from_stream, send_begin_us, send_end_us, to_rank, to_stream, recv_begin_us,
// recv_end_us].
void WriteKernelTimelineJson(JsonWriter& w, const KernelTimeline& t);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_KERNEL_TIMELINE_H_
