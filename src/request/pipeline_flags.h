// Flags shared by `schedule` and `compare`: pipeline shape and per-action costs.
#ifndef INFRALENS_REQUEST_PIPELINE_FLAGS_H_
#define INFRALENS_REQUEST_PIPELINE_FLAGS_H_

#include <string>

#include "base/status.h"
#include "request/command.h"
#include "request/flag_sink.h"
#include "sim/simulator.h"

namespace infralens::request {

// Limits of schedule, compare and trace synth, checked before anything is generated so that no
// value of a flag can exhaust memory (figures measured with bench/cli_limits.sh):
//  - pipeline ranks --pp 1..1024 and chunks per rank --vpp 0..64 (as the web API);
//  - actions in one schedule: schedule::kMaxActions (10 million, about 500 MB peak as ascii text),
//    kMaxStreamedActions (64 million) for the CSV of a generated schedule, which streams;
//  - json, chrome and svg documents are built in memory, about 500 bytes per action at peak and
//    150 on disk: at most kMaxDocumentActions;
//  - compare simulates every schedule at m and at each sweep point: at most kMaxCompareActions in
//    all (sim::CompareWorkBound);
//  - costs 0..sim::kMaxCostMs (1e9 ms) each, so results stay finite.
inline constexpr int kMaxPipelineRanks = 1024;
inline constexpr int kMaxChunksPerRank = 64;
inline constexpr int64_t kMaxDocumentActions = 1'000'000;
inline constexpr int64_t kMaxCompareActions = 20'000'000;
// `schedule --format csv` of a generated schedule streams (sim::SimulateGenerated, then
// io::StreamPytorchCsv): its memory does not grow with the actions of pipelined schedules (7-15 MB
// at 51 million with pp 64, docs/performance.md), and at worst (pp 1 with GPipe or looped BFS: one
// rank holds every forward's time until its backwards) grows by 9-18 bytes per forward, under
// 600 MB at this limit. The limit bounds the time (about 4 CPU-s per 51 million actions on this
// 2-core machine) and the file (about 9.5 bytes per action: 610 MB at the limit).
inline constexpr int64_t kMaxStreamedActions = 64'000'000;

// The help of --pp and --vpp, the same in the pipeline commands (pipeline_flags) and the layout
// ones (cluster_flags, training_flags).
inline constexpr char kPipelineDegreeHelp[] = "pipeline-parallel degree (pipeline ranks)";
inline constexpr char kVirtualStagesHelp[] =
    "model chunks (virtual stages) per pipeline rank; 0 = the schedule's default";

// -s,--schedule NAME: a schedule of schedule::AllSchedules() (the layout commands and the
// pipeline ones alike).
void RegisterScheduleOption(FlagSink& flags, std::string* name);

// The largest per-stage costs CSV read (a file or the API's text).
inline constexpr size_t kMaxStageCostsBytes = 1 << 20;

struct PipelineFlags {
  int pp = 1;
  int vpp = 0;  // 0: the schedule's default
  int microbatches = 8;
  double f = 1.0, b = 2.0, i = 1.0, w = 1.0, fb = -1.0, p2p = 0.0;
  std::string stage_costs_path;

  // Costs are per rank per microbatch in every command (a chunk action takes 1/v). Without
  // `stage_costs`, no --stage-costs (compare: the chunk count differs between schedules).
  void Register(FlagSink& flags, bool stage_costs = true);
  // --pp, --vpp and -m within the limits above (InvalidArgument naming the flag and the range).
  Status CheckShape() const;
  // Resolves B = I + W: --b alone splits evenly, --b with one of --i/--w gives the other,
  // --i and --w alone sum to --b; divides them by `chunks_per_rank` (per chunk action); then
  // reads --stage-costs when given (per stage, as written; needs the stage count): the file it
  // names, or with `ctx` through RunContext::ReadInput (the API's `stage_costs` is the CSV text,
  // at most kMaxStageCostsBytes, never a path).
  StatusOr<sim::Costs> Costs(const GivenFn& given, int num_stages, int chunks_per_rank,
                             const RunContext* ctx = nullptr) const;
  StatusOr<sim::Costs> Costs(const FlagSink& flags, int num_stages, int chunks_per_rank) const {
    return Costs(GivenOf(flags), num_stages, chunks_per_rank);
  }
};

// Per-stage costs file: CSV with a header naming the columns, "stage" first, then any of
// f, b, i, w, fb (ms); stages not listed keep the command-line costs; '#' starts a comment.
//   stage,f,b
//   0,1.2,2.4
Status ReadStageCosts(const std::string& text, const sim::StageCosts& base, int num_stages,
                      sim::Costs& costs);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_PIPELINE_FLAGS_H_
