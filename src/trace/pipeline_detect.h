// Recovers the pipeline structure of traces that carry no "PP:" annotations (Megatron-LM, NeMo,
// DeepSpeed): which ranks form a pipeline and in what stage order, from the send/recv peers in
// PyTorch's collective metadata; each rank's forward/backward order, from the CPU thread that
// launched each compute kernel (inside an autograd::engine::evaluate_function operator: backward);
// and the generated schedule (src/schedule) whose per-rank order is exactly that. A trace whose
// send/recv form no chain is not a pipeline, and its no-compute time is "idle", not a "bubble".
// Every rule and its sources: docs/measurement.md, "Pipelines without PP: annotations".
#ifndef INFRALENS_TRACE_PIPELINE_DETECT_H_
#define INFRALENS_TRACE_PIPELINE_DETECT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/model.h"

namespace infralens::trace {

// One operation of a send/recv: the peer's global rank and the direction.
struct PipePeer {
  bool send = false;
  int64_t peer = -1;
  bool operator==(const PipePeer& o) const { return send == o.send && peer == o.peer; }
};

// What the detection sees of one rank.
struct PipeRank {
  int64_t rank = -1;
  // One step's GPU work in CPU launch order, consecutive compute kernels of one phase folded into
  // one letter: 'F' compute launched outside any autograd operator, 'B' inside one, 'P' a
  // send/recv kernel (a batch_isend_irecv kernel is one 'P' with all of its operations).
  std::string ops;
  std::vector<std::vector<PipePeer>> p2p;  // the operations of each 'P' of `ops`, in order
  // Every send/recv operation of the analysed steps (the p2p graph), and how many named no peer.
  std::vector<PipePeer> transfers;
  int64_t p2p_kernels = 0, p2p_without_peer = 0;
  // SendRecv kernels with neither metadata nor record_param_comms peers: not taken for transfers.
  int64_t sendrecv_without_metadata = 0;
  bool has_autograd = false;  // the trace has autograd::engine::evaluate_function operators
};

struct PipelineDetection {
  bool detected = false;
  std::string note;  // how the pipeline was found, or why the trace is not one
  std::vector<std::vector<int64_t>> chains;  // global ranks in stage order, one per pipeline
  // Per input rank (the order of DetectPipeline's argument):
  std::vector<int> stage;  // position in its chain; -1 in none (or not fully loaded)
  std::vector<int64_t> forwards, backwards;  // counted phases of the step; -1 unknown
  // "F0" .. by occurrence, or the matched schedule's "1F3"; at most the first 10,000.
  std::vector<std::vector<std::string>> actions;
  // The schedule of the first chain.
  std::string schedule = "unknown";
  std::string schedule_note;  // what matched, or why "unknown"
  int pp = 0, vpp = 0, microbatches = 0;
  std::vector<std::string> matches;  // generated schedules with exactly the observed order
};

// Bounded: O(n log n) in the operations given, and the schedule matching generates at most a
// few million actions (beyond that the schedule is "unknown").
PipelineDetection DetectPipeline(const std::vector<PipeRank>& ranks);

// The send/recv operations of each kernel that carries no collective metadata but was launched
// right after record_param_comms send / recv operators on the same CPU thread (batch_isend_irecv
// records one per operation, then launches the batch's one kernel): (index into tr.gpu, its
// operations), sorted by index. Empty when the trace has no such operators.
std::vector<std::pair<size_t, std::vector<PipePeer>>> BatchedP2pPeers(const RankTrace& tr);

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_PIPELINE_DETECT_H_
