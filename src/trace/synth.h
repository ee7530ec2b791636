// A synthetic multi-rank Kineto trace of a simulated pipeline schedule, so the measurement can be
// checked against a known answer (the schedule's bubble and action order) and traces of any size
// can be made for benchmarks.
//
// Per rank and per step: a ProfilerStep#N annotation on the CPU; per action a "PP:<action>"
// annotation (PyTorch pipelining's record_function name), CPU operators and one
// cudaLaunchKernel per kernel; compute kernels that exactly cover the action's simulated
// [start, end); for every dependency that crosses ranks an NCCL send kernel on the producer
// (from the producer's end, lasting the p2p latency) and a recv kernel on the consumer (posted
// when the consumer finished its previous action, ending when the data arrives), with PyTorch's
// collective metadata. distributedInfo carries rank, world size and the process group.
#ifndef INFRALENS_TRACE_SYNTH_H_
#define INFRALENS_TRACE_SYNTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::trace {

// The JSON bytes one synth may write over all its rank files (before gzip): past it the request
// is refused before anything is written (docs/cli.md, "Limits"). kMinSynthEventBytes is what
// the estimate counts per event: the files hold 420-440 bytes per counted event (1F1B, pp 4,
// m 8, 1 or 10 kernels per action: 588,485 bytes for 1,344 events, 1,942,911 for 4,608), so
// the estimate stays below the truth and only what surely passes the bound is refused.
inline constexpr uint64_t kMaxSynthJsonBytes = 2'000'000'000;
inline constexpr double kMinSynthEventBytes = 300;

struct SynthOptions {
  int steps = 3;               // profiled iterations
  int kernels_per_action = 1;  // compute kernels per action, splitting it evenly
  int cpu_ops_per_kernel = 1;  // extra aten:: CPU events per kernel (bulk, as real traces have)
  double step_gap_ms = 0.5;    // idle between iterations
  bool gzip = false;           // rank<r>.json.gz instead of rank<r>.json
  bool no_metadata = false;    // leave out "Collective name" etc. (PyTorch before 2.2)
  bool force = false;          // write into a non-empty folder, replacing earlier rank files
  // --style megatron: no PP: annotations, as Megatron-LM / NeMo write it: forward kernels launched
  // by aten ops on the main thread, backward kernels inside autograd::engine::evaluate_function
  // ops on the autograd thread, and between two actions one batch_isend_irecv: a
  // record_param_comms send / recv op per transfer (with "Dst Rank" / "Src Rank"), then one
  // NCCL SendRecv kernel without metadata launched under "nccl:coalesced".
  bool megatron = false;
};

struct SynthSummary {
  std::vector<std::string> files;
  int64_t kernels = 0;  // GPU kernels over all ranks
  uint64_t bytes = 0;   // written
  double makespan_ms = 0;
  double bubble_fraction = 0;  // the simulator's, for one step
};

// Simulates `s` with `costs` and writes one trace per rank into `dir` (created if missing).
// A folder that exists must be empty (FailedPrecondition naming it and --force otherwise);
// with `options.force` the rank<N>.json[.gz] files of an earlier run are removed or replaced and
// any other file is left alone. The rank files are written to temporaries and renamed into place
// only when all are complete: on a failure the folder keeps what it held before.
StatusOr<SynthSummary> WriteSynthTrace(const schedule::Schedule& s, const sim::Costs& costs,
                                       const SynthOptions& options, const std::string& dir);

// The same traces in memory (the web API's generated example): one file per rank, named as
// WriteSynthTrace names them (rank<r>.json). Plain JSON only: `options.gzip` is refused.
struct SynthFile {
  std::string name;
  std::string content;
};
StatusOr<SynthSummary> SynthTraceFiles(const schedule::Schedule& s, const sim::Costs& costs,
                                       const SynthOptions& options, std::vector<SynthFile>* files);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_SYNTH_H_
