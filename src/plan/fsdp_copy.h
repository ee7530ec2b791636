// ZeRO-3 / FSDP's copies on the compute stream, a term of the planner's step time
// (plan/planner.cc; data/frameworks/*.csv fsdp_copies).
#ifndef INFRALENS_PLAN_FSDP_COPY_H_
#define INFRALENS_PLAN_FSDP_COPY_H_

namespace infralens::plan {

// HBM bytes one layer's ZeRO-3 / FSDP copies move on the compute stream per microbatch,
// {forward, backward}, for `weights`, the layer's weights gathered on this rank (its TP shard and
// its sharded experts: LinearWeights over LayerLinears), in BF16:
//   - `copy_out` (PyTorch FSDP2's foreach_all_gather_copy_out, split_with_sizes_copy; DeepSpeed
//     ZeRO-3's torch.cat in AllGatherCoalescedHandle.wait): each gathered parameter read from the
//     all-gather buffer and written into its own tensor, 2 + 2 bytes, once per forward and once
//     per backward (the backward gathers again after the forward resharded).
//   - `copy_in` (FSDP2's foreach_reduce: chunk_cat of the unsharded gradients into the
//     reduce-scatter input, cast to the reduce dtype, before the reduce-scatter stream waits):
//     2 bytes read and `reduce_bytes` (4 under FP32 reduction, else 2) written per parameter,
//     once per backward.
// Megatron FSDP's parameters view the gathered buffer: neither (both false: {0, 0}).
struct FsdpCopyBytes {
  double forward = 0, backward = 0;
};
FsdpCopyBytes FsdpCopyBytesPerLayer(double weights, bool copy_out, bool copy_in,
                                    double reduce_bytes);
// The same, averaged over a step's `microbatches`, under a pipeline as torchtitan runs FSDP2
// (PlanRequest::fsdp_once_per_step_with_pp): the weights are gathered, and copied out, once per
// step (2 + 2 bytes per parameter, over the microbatches); each microbatch's backward adds its
// BF16 gradients into the unsharded accumulator in the reduce dtype (FSDP2's
// unsharded_accumulated_grad: 2 bytes read, `reduce_bytes` read and written); the accumulated
// gradients are copied into the reduce-scatter input once per step (`reduce_bytes` read and
// written, over the microbatches). `copy_in` marks FSDP2's gradient handling; `copy_out` its
// gathered copies.
FsdpCopyBytes FsdpCopyBytesPerLayerOncePerStep(double weights, bool copy_out, bool copy_in,
                                               double reduce_bytes, double microbatches);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FSDP_COPY_H_
