// Megatron-Core's general pipeline layout, `--pipeline-model-parallel-layout`
// (megatron/training/arguments.py; PipelineParallelLayerLayout in megatron/core/transformer/
// pipeline_parallel_layer_layout.py): one string names what every (virtual) pipeline stage
// builds, for splits the even and the first/last forms cannot say (DeepSeek-V3's 61 layers over
// 16 stages).
//
//   "E|(t|)*3,m|m||L"   E embedding, L loss, t one transformer layer, m one MTP layer; '|' ends a
//                       stage; "(...)*n" and "x*n" repeat; commas and spaces are cosmetic.
//
// Stages are listed in model order: stage s is chunk s / pp of pipeline rank s % pp, as the
// looped schedules place them (plan::StageLayerCounts).
#ifndef INFRALENS_PLAN_LAYER_LAYOUT_H_
#define INFRALENS_PLAN_LAYER_LAYOUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens::plan {

// Layout strings longer than this, or expanding past kMaxExpandedLayout characters, are refused.
inline constexpr size_t kMaxLayoutChars = 4096;
inline constexpr size_t kMaxExpandedLayout = 1 << 20;

// The transformer layers of each of `stages` stages. InvalidArgument naming the layout and the
// rule for: a character outside E L t m | ( ) * digits , and spaces; an unbalanced parenthesis or
// a '*' without a count; a stage count other than `stages`; a layer count other than
// `num_layers`; E anywhere but once in the first stage, L anywhere but once in the last (Megatron
// asserts both); MTP layers (m), which the planner does not model.
StatusOr<std::vector<int64_t>> ParseLayerLayout(std::string_view layout, int64_t num_layers,
                                                int64_t stages);

// The number of stages a layout string describes (its '|' separators plus one after expansion),
// for reading the virtual-stage count back from a Megatron command; InvalidArgument as above.
StatusOr<int64_t> LayerLayoutStages(std::string_view layout);

// The most even split of `num_layers` layers, the embedding and the loss counted as one layer
// each, over `stages` stages (each holds floor or ceil of (L + 2) / stages, the first stage the
// lighter ones), written compactly: 61 layers over 16 stages -> "Ett|(tttt|)*14tttL".
// Requires stages >= 1 and num_layers + 2 >= stages.
std::string BalancedLayerLayout(int64_t num_layers, int64_t stages);

// The layout that gives pipeline rank r its per_rank[r] layers spread over its `vpp` chunks as
// evenly as possible (the lighter chunks first; stage s is chunk s / pp of rank s % pp), the
// embedding in the first stage and the loss in the last: 7, 8, 8, 7 over pp 4 with vpp 2 ->
// "Ettt|tttt|tttt|ttt|tttt|tttt|tttt|ttttL". Requires vpp >= 1 and per_rank non-empty.
std::string LayerLayoutOfRanks(const std::vector<int64_t>& per_rank, int vpp);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_LAYER_LAYOUT_H_
