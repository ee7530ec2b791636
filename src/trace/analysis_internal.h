// Working data shared by the per-rank analysis (analysis.cc) and the cross-rank parts
// (cross_rank.cc). Not part of the public interface.
#ifndef INFRALENS_TRACE_ANALYSIS_INTERNAL_H_
#define INFRALENS_TRACE_ANALYSIS_INTERNAL_H_

#include <algorithm>
#include <map>
#include <vector>

#include "trace/analysis.h"
#include "trace/pipeline_detect.h"

namespace infralens::trace::internal {

// The launch of an event without one (Ev::launch, LaunchIndex::Position).
inline constexpr uint32_t kNoLaunch = UINT32_MAX;

// An analysed GPU event, in the analysis' time base (HTA rounding and clock offset applied).
// 48 bytes (trace/kineto_reader.h's kAnalysisBytesPerGpuEvent counts it): positions are 32-bit,
// as the memory budget keeps a rank's events far below 2^32 (AnalyzeOneRank refuses more).
struct Ev {
  double ts = 0, end = 0;
  int64_t stream = 0;
  uint32_t name = 0;
  int32_t coll = -1;  // index into RankTrace::collectives
  int32_t step = -1;  // index into RankWork::steps
  KernelClass cls = KernelClass::kCompute;
  bool p2p = false;    // a send/recv (pipeline transfer)
  uint32_t order = 0;  // position in RankTrace::gpu (file order), for stable ordering
  // Position of its CPU launch in RankTrace::launches (LaunchIndex), found once when the event
  // is selected; kNoLaunch when none has its correlation id.
  uint32_t launch = kNoLaunch;
};

// The pipeline view's lengths over one set of a rank's events (PipelineWindows): the union of its
// computation, of all its events, and its send/recv time not under computation (us).
struct WindowLengths {
  double compute_us = 0, all_us = 0, p2p_wait_us = 0;
};

struct RankWork {
  const RankTrace* trace = nullptr;
  // Analysed, sorted by (ts, order). In a merge of summaries (trace/summary.h): the
  // communication events only, which is all MatchCollectives reads.
  std::vector<Ev> events;
  std::vector<StepSummary> steps;                               // sorted by CPU start
  std::map<int64_t, std::vector<schedule::Action>> pp_by_step;  // step number (-1: none) -> order
  std::vector<std::string> kinds;  // collective kind per event with coll >= 0, by coll index

  // What the cross-rank parts need of the events besides the communication, computed per rank
  // before any clock shift (lengths do not change with one), so that a rank summarised on its own
  // gives the cross-rank figures exactly (trace/summary.h):
  std::map<int64_t, WindowLengths> step_lengths;  // by step number: the events of its steps
  WindowLengths all_lengths;                      // every analysed event
  double first_us = 0, last_us = 0;               // first start, last end (shifted with events)
  std::map<int64_t, PipeRank> pipe_by_step;       // by step number; -1: every analysed event
};

// The cross-rank parts in order (collectives, pipeline windows, schedule recovery, pipeline
// detection) and the job's kernel-type sums, on ranks already analysed one by one: `out.ranks`
// in the order of `work`.
void CrossRank(std::vector<RankWork>& work, TraceAnalysis& out);

// One rank's own analysis (what Analyze does per file): `filter_steps` is whether the job has two
// or more distinct ProfilerStep names (JobFiltersSteps). `work->trace` points to `tr`.
Status AnalyzeOneRank(const RankTrace& tr, const KernelClassifier& classifier,
                      const AnalysisOptions& opt, bool filter_steps, RankWork* work,
                      RankResult* result);

// The lengths of WindowLengths over `events` (in start order).
WindowLengths LengthsOf(const std::vector<const Ev*>& events);
// Every step number's PipeRank (the events of that step) and -1's (every analysed event), in one
// pass: what DetectPipelineStructure picks from once it knows the step all ranks share.
std::map<int64_t, PipeRank> PipeRanksByStep(const RankWork& w, int64_t rank);

// The CPU launch of each correlation id: the last CPU event with that id in file order (HTA's
// join keeps the last). Holds positions in tr.launches, not a copy: when the ids are dense (as
// Kineto numbers them, 1, 2, 3, ... in launch order; ids spanning at most twice as many values
// as there are launches), a table indexed by id, 4 bytes per value of the span (8 per launch at
// most), built in one pass and looked up in one step; otherwise 4 bytes per launch sorted by
// (correlation, position) and a binary search.
class LaunchIndex {
 public:
  explicit LaunchIndex(const RankTrace& tr);
  // Position in tr.launches of the launch of `correlation`; kNoLaunch when none (or it is -1).
  uint32_t Position(int64_t correlation) const;
  // The same launch; null when none.
  const Launch* Find(int64_t correlation) const {
    const uint32_t p = Position(correlation);
    return p == kNoLaunch ? nullptr : &(*launches_)[p];
  }

 private:
  const std::vector<Launch>* launches_;
  int64_t min_id_ = 0;
  std::vector<uint32_t> by_id_;    // dense: [id - min_id_] -> position, kNoLaunch for none
  std::vector<uint32_t> by_corr_;  // sparse: positions, sorted by (correlation, position)
};

// The analysis asks AnalysisOptions::stop after every kStopCheckEvents events it goes through
// and between ranks; StoppedStatus says where it stopped.
inline constexpr size_t kStopCheckEvents = size_t{1} << 16;
bool StopRequested(const AnalysisOptions& options);
Status StoppedStatus(const std::string& where);

// A merged interval.
struct Span {
  double begin, end;
};

// HTA's merge_kernel_intervals (hta/utils/utils.py): events sorted by start; a new group starts
// when a start is later than every earlier end; a group spans min start .. max end.
std::vector<Span> MergeSorted(const std::vector<Span>& sorted);

// MergeSorted one span at a time, for spans that arrive in start order: the same groups and the
// same Length (summed in the same order), without holding the input. `keep` (may be null) gets
// the merged spans.
class SpanMerger {
 public:
  explicit SpanMerger(std::vector<Span>* keep = nullptr) : keep_(keep) {}
  void Add(const Span& s) {
    if (!any_ || s.begin > max_end_) {
      Close();
      cur_ = s;
      open_ = true;
      max_end_ = any_ ? std::max(max_end_, s.end) : s.end;
      any_ = true;
      if (first_) {
        first_begin_ = s.begin;
        first_ = false;
      }
    } else {
      cur_.end = std::max(cur_.end, s.end);
      max_end_ = std::max(max_end_, s.end);
    }
  }
  // Closes the last group: Length(MergeSorted(spans)). No Add after it.
  double Finish() {
    Close();
    return length_;
  }
  bool empty() const { return !any_; }
  double first_begin() const { return first_begin_; }  // front().begin
  double last_end() const { return cur_.end; }         // back().end

 private:
  void Close() {
    if (!open_) return;
    length_ += cur_.end - cur_.begin;
    if (keep_ != nullptr) keep_->push_back(cur_);
    open_ = false;
  }
  std::vector<Span>* keep_;
  Span cur_{0, 0};
  double max_end_ = 0, length_ = 0, first_begin_ = 0;
  bool any_ = false, open_ = false, first_ = true;
};
// "[0, 1, 2]" (Kineto's "Process Group Ranks") -> {0, 1, 2}; empty on anything else.
std::vector<int64_t> ParseRankList(const std::string& text);
double Length(const std::vector<Span>& merged);

// Analyze(), also handing back each analysed rank's working data (events in the analysis' time
// base, after any clock alignment), in the order of TraceAnalysis::ranks, for views that draw the
// events (kernel_timeline.cc). `kept` may be null; its RankWork::trace points into `traces`.
StatusOr<TraceAnalysis> AnalyzeKeepingWork(const std::vector<RankTrace>& traces,
                                           const AnalysisOptions& options,
                                           std::vector<RankWork>* kept);

// The windows the pipeline figures are measured over: one per ProfilerStep analysed (with GPU
// events) on every rank, in step order, [first GPU start, last GPU end] over all ranks, with its
// step number; else one window over every analysed event, step -1. Never empty for non-empty work.
struct StepWindow {
  double begin_us = 0, end_us = 0;
  int64_t step = -1;
};
std::vector<StepWindow> CommonStepWindows(const std::vector<RankWork>& work);

// Cross-rank parts, filling the results in place.
void MatchCollectives(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                      CrossRankResult& cross, bool align_clocks);
void PipelineWindows(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline);
void RecoverSchedule(const std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline);

// Pipeline structure without PP: annotations (pipeline_detect.cc): whether a send/recv kernel
// without metadata is one of a batch_isend_irecv's (BatchedP2pPeers), and the detection that
// fills PipelineResult's detected, source, chains and schedule_name and each rank's stage.
bool IsBatchedP2p(const std::vector<std::pair<size_t, std::vector<PipePeer>>>& batched,
                  size_t gpu_index);
void DetectPipelineStructure(const std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                             PipelineResult& pipeline);

}  // namespace infralens::trace::internal

#endif  // INFRALENS_TRACE_ANALYSIS_INTERNAL_H_
