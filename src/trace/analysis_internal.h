// Working data shared by the per-rank analysis (analysis.cc) and the cross-rank parts
// (cross_rank.cc). Not part of the public interface.
#ifndef INFRALENS_TRACE_ANALYSIS_INTERNAL_H_
#define INFRALENS_TRACE_ANALYSIS_INTERNAL_H_

#include <map>
#include <vector>

#include "trace/analysis.h"

namespace infralens::trace::internal {

// An analysed GPU event, in the analysis' time base (HTA rounding and clock offset applied).
struct Ev {
  double ts = 0, end = 0;
  int64_t stream = 0;
  uint32_t name = 0;
  int32_t coll = -1;  // index into RankTrace::collectives
  int32_t step = -1;  // index into RankWork::steps
  KernelClass cls = KernelClass::kCompute;
  bool p2p = false;  // a send/recv (pipeline transfer)
  size_t order = 0;  // position in the file, for stable ordering
};

struct RankWork {
  const RankTrace* trace = nullptr;
  std::vector<Ev> events;                                       // analysed, sorted by (ts, order)
  std::vector<StepSummary> steps;                               // sorted by CPU start
  std::map<int64_t, std::vector<schedule::Action>> pp_by_step;  // step number (-1: none) -> order
  std::vector<std::string> kinds;  // collective kind per event with coll >= 0, by coll index
};

// A merged interval.
struct Span {
  double begin, end;
};

// HTA's merge_kernel_intervals (hta/utils/utils.py): events sorted by start; a new group starts
// when a start is later than every earlier end; a group spans min start .. max end.
std::vector<Span> MergeSorted(const std::vector<Span>& sorted);
double Length(const std::vector<Span>& merged);

// Cross-rank parts, filling the results in place.
void MatchCollectives(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                      CrossRankResult& cross, bool align_clocks);
void PipelineWindows(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline);
void RecoverSchedule(const std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline);

}  // namespace infralens::trace::internal

#endif  // INFRALENS_TRACE_ANALYSIS_INTERNAL_H_
