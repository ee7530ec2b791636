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

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FSDP_COPY_H_
