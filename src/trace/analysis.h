// Analyses of what a job ran, per rank and across ranks: HTA's temporal breakdown, comm/comp
// overlap, kernel-type breakdown and per-stream idle split; collectives with achieved bandwidth;
// the cross-rank wait (until the last rank arrives) vs transfer split with stragglers; and the
// measured pipeline bubble with the schedule recovered from PyTorch pipelining's "PP:" annotations.
// Every definition and its source is in docs/measurement.md. Times are microseconds.
#ifndef INFRALENS_TRACE_ANALYSIS_H_
#define INFRALENS_TRACE_ANALYSIS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "schedule/action.h"
#include "schedule/schedule.h"
#include "trace/kernel_class.h"
#include "trace/model.h"

namespace infralens::trace {

struct AnalysisOptions {
  // Reproduce HTA's numbers exactly (docs/measurement.md lists what changes).
  bool hta_compat = false;
  // HTA drops the kernels launched in the last ProfilerStep by default (the step may be cut off).
  bool include_last_step = false;
  // HTA get_idle_time_breakdown's consecutive_kernel_delay: a gap shorter than this between two
  // kernels on one stream is launch overhead ("kernel wait").
  double consecutive_kernel_delay_us = 30;
  // Shift every rank's clock by the offset estimated from matched collectives.
  bool align_clocks = false;
  std::string comm_pattern, memory_pattern;  // empty: the defaults of kernel_class.h
  // Asked between ranks and every 65,536 events: true stops the analysis with a
  // ResourceExhausted status ("the analysis was stopped ..."). The server's deadline; empty =
  // never stop. Not kept in TraceAnalysis::options.
  std::function<bool()> stop;
};

// Idle time between consecutive events of one stream, split as HTA's get_idle_time_breakdown does.
struct StreamIdle {
  int64_t stream = 0;
  int64_t events = 0;
  double host_wait_us = 0, kernel_wait_us = 0, other_us = 0;
  // HTA lists a category only when some gap (or the stream's first event, "other") falls in it.
  bool has_host_wait = false, has_kernel_wait = false, has_other = false;
  double total_us() const { return host_wait_us + kernel_wait_us + other_us; }
};

// One kind of collective on one rank.
struct CollectiveSummary {
  std::string
      kind;  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, ...
  int64_t count = 0;
  double time_us = 0;
  int64_t group_size = -1;  // largest group seen; -1 unknown
  int64_t sized = 0;        // events whose size is known
  double bytes = 0;         // over the sized events
  double sized_time_us = 0;
  double algbw_gbps = -1;  // bytes / time over the sized events; -1 unknown
  double busbw_gbps = -1;  // algbw x the nccl-tests factor for the kind and group size
};

// Kernel-type combinations (HTA get_gpu_kernel_breakdown): index = bitmask of
// 1 computation, 2 communication, 4 memory running at the same time.
using KernelTypeTimes = std::array<double, 8>;
std::string KernelTypeComboName(int mask);

struct StepSummary {
  int64_t number = -1;
  double cpu_start_us = 0, cpu_dur_us = 0;  // the ProfilerStep annotation
  bool analyzed = false;
  int64_t gpu_events = 0;
  double gpu_start_us = 0, gpu_end_us = 0;  // first start / last end of its GPU events on this rank
};

struct RankResult {
  int64_t rank = -1;
  std::string path;
  int64_t world_size = -1;
  uint64_t file_bytes = 0, json_bytes = 0;
  int64_t events_total = 0, gpu_events_total = 0, gpu_events_analyzed = 0;
  std::vector<StepSummary> steps;
  int64_t steps_analyzed = 0;

  // HTA get_temporal_breakdown: window = first start to last end of the analysed GPU events.
  double kernel_time_us = 0, idle_us = 0, compute_us = 0, non_compute_us = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;
  // non_compute split: communication not hidden under computation, memory under neither.
  double comm_only_us = 0, memory_only_us = 0;
  double comm_us = 0;       // union of communication events
  double overlap_us = 0;    // communication and computation at once (HTA get_comm_comp_overlap)
  double overlap_pct = -1;  // overlap / comm_us; -1 with no communication
  KernelTypeTimes kernel_types{};

  // Pipeline view over the steps' windows shared by all ranks (see PipelineResult).
  double pipeline_window_us = 0;
  double no_compute_us = 0;  // window - computation
  double p2p_wait_us = 0;    // no computation, inside a send/recv kernel
  double pure_idle_us = 0;   // no GPU event at all
  double bubble_us = 0;      // pure idle + p2p wait
  double bubble_pct = 0;     // bubble / window

  std::vector<StreamIdle> streams;
  std::vector<CollectiveSummary> collectives;
  // Communication not hidden under computation, per parallelism axis: "pp" for send/recv, else the
  // process group's description without DeviceMesh's "mesh_" prefix ("dp", "tp", "default_pg"),
  // else its name ("pg 3"), else "unknown". An axis' time is the union of its kernels.
  std::vector<std::pair<std::string, double>> exposed_comm_us;
  // The collectives again, per axis label (as exposed_comm_us names them) and kind, with the
  // group's ranks where the trace names them ("Process Group Ranks" or distributedInfo's
  // pg_config): what `trace compare` needs to put a measured group on a plan's axis.
  struct AxisCollective {
    std::string axis;
    std::vector<int64_t> ranks;  // ascending; empty when the trace does not say
    CollectiveSummary summary;
  };
  std::vector<AxisCollective> axis_collectives;

  // Pipelining actions recovered from "PP:" annotations, in the order they ran, for the first
  // analysed step that has them.
  std::vector<schedule::Action> pp_actions;
  int64_t pp_annotations = 0;  // analysed PP: annotations, compute and communication actions alike

  // Pipeline structure (PipelineResult::detected): the rank's stage (its position in the chain of
  // send/recv peers, or its pipeline rank from PP: annotations), -1 when in no pipeline; the
  // forwards and backwards counted in the recovered step (-1 unknown) and their order ("F0 F1 B0
  // .." numbered by occurrence, or the matched schedule's actions).
  int64_t stage = -1;
  int64_t forwards = -1, backwards = -1;
  std::vector<std::string> fb_actions;

  // Cross-rank collective timing (CrossRankResult).
  double coll_wait_us = 0, coll_transfer_us = 0;
  int64_t coll_matched = 0, coll_last_arrivals = 0;
  double coll_delay_caused_us =
      0;                       // sum of (last arrival - second-to-last) where this rank was last
  double clock_offset_us = 0;  // estimated; applied with --align-clocks
};

struct CrossRankResult {
  std::string method;         // "seq", "order", "kernel order", or "" when nothing could be matched
  int64_t instances = 0;      // collectives matched on all their loaded participants
  int64_t p2p_instances = 0;  // send/recv pairs matched (clock offsets only)
  int64_t unmatched = 0;
  std::string note;                 // why matching was skipped, or a clock warning
  std::vector<int64_t> stragglers;  // ranks, most delay caused first
};

struct PipelineResult {
  bool has_steps = false;  // windows come from ProfilerSteps (else: the whole analysed span)
  int64_t windows = 0;
  double window_us = 0;        // summed over the analysed steps
  double bubble_fraction = 0;  // sum of ranks' bubbles / (ranks x window)
  double p2p_wait_fraction = 0;
  double pure_idle_fraction = 0;
  double step_time_us = 0;  // mean window
  // Recovered schedule (PP: annotations on every rank).
  bool recovered = false;
  std::string recover_note;          // why not, or what it matched
  schedule::Schedule schedule;       // pp, vpp, microbatches, placement and per-rank order
  std::vector<int64_t> pp_rank_of;   // global rank of each pipeline rank
  std::vector<std::string> matches;  // generated schedules with exactly this order

  // Whether the trace is a pipeline at all: PP: annotations, or send/recv peers that chain ranks
  // into stages (trace/pipeline_detect.h). Without one, no-compute time is "idle", not "bubble".
  bool detected = false;
  std::string source;       // "PP: annotations", "send/recv peers", or "" when not detected
  std::string detect_note;  // what was found, or why the trace is not a pipeline
  std::vector<std::vector<int64_t>> chains;  // global ranks in stage order, one per pipeline
  // The schedule: the PP: recovery's match, else the generated schedule whose per-rank
  // forward/backward order is the one recovered from send/recv and the autograd thread; "unknown"
  // with the reason in schedule_note otherwise.
  std::string schedule_name = "unknown";
  std::string schedule_note;
  int detected_pp = 0, detected_vpp = 0, detected_microbatches = 0;
  std::vector<std::string> detected_matches;
  // "bubble" for a pipeline, else "idle": the word for time without computation.
  const char* GapTerm() const { return detected ? "bubble" : "idle"; }
};

struct FileError {
  std::string path;
  Status status;
};

struct TraceAnalysis {
  AnalysisOptions options;
  std::string comm_pattern, memory_pattern;
  std::vector<RankResult> ranks;   // by rank
  KernelTypeTimes kernel_types{};  // summed over ranks
  CrossRankResult cross;
  PipelineResult pipeline;
  std::vector<FileError> errors;  // files that could not be used
};

// Analyses traces already read and checked (one per rank, distinct ranks).
StatusOr<TraceAnalysis> Analyze(const std::vector<RankTrace>& traces,
                                const AnalysisOptions& options);

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, send, recv 1.
double BusBandwidthFactor(const std::string& kind, int64_t n);
// PyTorch's "Collective name" or an NCCL kernel name, to one spelling.
std::string NormalizeCollectiveKind(const std::string& collective_name,
                                    const std::string& kernel_name);
// Bytes per element of a PyTorch dtype name ("Float", "BFloat16", ...); 0 when unknown.
int DtypeBytes(const std::string& dtype);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_ANALYSIS_H_
