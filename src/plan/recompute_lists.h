// The selective-recompute module lists a search tries beyond the request's (Megatron-Core's
// --recompute-modules): where a layout does not fit with the request's list, Megatron users add
// modules until it does (NeMo's DeepSeek-V3 recipes recompute mla_up_proj and mlp; Megatron-LM's
// DeepSeek-V3 guides add moe_act and layernorm), rather than recompute every layer in full.
#ifndef INFRALENS_PLAN_RECOMPUTE_LISTS_H_
#define INFRALENS_PLAN_RECOMPUTE_LISTS_H_

#include <vector>

#include "model/model.h"

namespace infralens::plan {

// The heavier lists after `base`, lightest first, each the one before it and more, with only the
// modules `m` has. Megatron-Core's two kinds (megatron/core/transformer/transformer_config.py,
// recompute_modules) set the order: first the output-discarding modules, cheap to run again
// (layernorm, where a MoE or MLA layer keeps a norm of its own; a MoE layer's moe_act; MLA's
// mla_up_proj), then the checkpointed dense MLP and
// shared experts (mlp, shared_experts), last the whole MoE layer (moe), whose recompute
// dispatches and combines again. A step that adds nothing to the list before it is left out, so
// the result is empty when `base` already holds every module `m` has.
std::vector<model::RecomputeModules> HeavierRecomputeModules(const model::Model& m,
                                                             model::RecomputeModules base);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_RECOMPUTE_LISTS_H_
