// How a framework's pipeline send/recv waits (data/frameworks/*.csv p2p_blocking), and under
// which schedules that blocks the sending stage.
//
// Blocking send/recv holds the sending rank until the transfer ends: the transfer is part of the
// sender's forward (or backward), not a latency between the ranks (planner.cc charges it so).
//   - kOverlapped: batched isend/irecv waited on only before the data is used
//     (torch.distributed.pipelining's P2POp batches; Megatron-Core's interleaved schedule).
//   - kBlocking: every schedule blocks (DeepSpeed's PipelineEngine: dist.send / dist.recv).
//   - kBlockingSingleChunk: blocks only under a schedule with one model chunk per rank.
//     Megatron-Core at NVIDIA/Megatron-LM 000c4ac: megatron/training/arguments.py forces
//     overlap_p2p_comm off without interleaving, and p2p_communication.py _communicate then waits
//     on each batched send/recv and calls torch.cuda.synchronize() (batch_p2p_sync); the
//     interleaved schedule overlaps them.
#ifndef INFRALENS_PLAN_PIPELINE_P2P_H_
#define INFRALENS_PLAN_PIPELINE_P2P_H_

#include <string_view>

#include "base/status.h"

namespace infralens::plan {

enum class P2pWait { kOverlapped, kBlocking, kBlockingSingleChunk };

// The data file's words: "no", "yes", "single_chunk". Anything else is an InvalidArgument naming
// the value and the three allowed.
StatusOr<P2pWait> ParseP2pWait(std::string_view name);
const char* P2pWaitName(P2pWait w);

// Whether send/recv blocks under a schedule of `chunks_per_rank` model chunks per pipeline rank
// (1 without interleaving).
bool P2pBlocks(P2pWait w, int chunks_per_rank);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_PIPELINE_P2P_H_
