// Compute slowed by the SMs an overlapped NCCL collective holds, a term of the planner's step
// time (plan/planner.cc, StepTime::contention_s) wherever a collective runs beside compute:
// data-parallel gradient reduction behind the backward, the updated weights' gather behind the
// next forward, ZeRO-3 / FSDP gathers and reduce-scatters behind the layers; and the EP
// all-to-all's NCCL channels where it overlaps compute (charged in its own part, ep_comm_s).
//
// NCCL launches one CTA per channel (src/enqueue.cc: dim3 grid = {nChannels, 1, 1}, NVIDIA/nccl
// 2.30.7), and each CTA stays resident on its SM until the call ends, polling for its peers' data.
// The compute kernels beside it get the other SMs only: a Hopper GEMM CTA fills an SM's registers
// and shared memory, so it cannot share one with an NCCL CTA. The channel counts are data
// (data/hw/efficiency.csv collective_channels, collective_channels_scale_out, with their
// sources).
#ifndef INFRALENS_PLAN_SM_CONTENTION_H_
#define INFRALENS_PLAN_SM_CONTENTION_H_

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "plan/efficiency.h"

namespace infralens::plan {

// The share of `gpu`'s SMs, [0, 1], that one large collective holds while it runs over links of
// class `link` (the outermost its group crosses): collective_channels / SMs within a node,
// collective_channels_scale_out / SMs for a group that crosses the scale-out network (rail or
// spine); 0 for a group of one GPU or a GPU without an SM count.
double CollectiveSmShare(const hw::Gpu& gpu, const DeviceEfficiency& e, cluster::LinkClass link);

// The seconds `compute_s` of compute loses beside `comm_s` of collectives that hold `share` of
// the SMs while they run, over what the pair takes with the compute at full rate
// (max(comm, compute)). While the collectives run the compute proceeds at 1 - share of its rate,
// evenly over the remaining SMs (plan/gemm_time.h spreads a part-filled wave the same way); if it
// finishes inside them the pair takes comm_s, else comm_s + (compute_s - (1 - share) comm_s). So
// the pair takes max(comm, compute + share x comm), and the loss is that less max(comm, compute):
// share x comm while the collectives hide, less once they are exposed, 0 once the compute fits
// in the collectives at the reduced rate. Every argument at or below 0 counts as 0; share is
// held to [0, 1].
double ContendedOverlapSeconds(double comm_s, double compute_s, double share);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_SM_CONTENTION_H_
