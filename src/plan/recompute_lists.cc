#include "plan/recompute_lists.h"

#include <initializer_list>
#include <utility>

namespace infralens::plan {

std::vector<model::RecomputeModules> HeavierRecomputeModules(const model::Model& m,
                                                             model::RecomputeModules base) {
  std::vector<model::RecomputeModules> out;
  model::RecomputeModules list = base;
  const auto step = [&](std::initializer_list<std::pair<model::RecomputeModule, bool>> adds) {
    const model::RecomputeModules before = list;
    for (const auto& [module, has] : adds) {
      if (has) list.bits |= module;
    }
    if (list != before) out.push_back(list);
  };
  // mlp applies to the dense layers: every layer of a dense model, the first ones of DeepSeek's.
  bool dense_layers = !m.is_moe();
  for (int64_t l = 0; l < m.num_layers && !dense_layers; ++l) {
    dense_layers = !model::IsMoeLayer(m, l);
  }
  // layernorm reaches only the norms Transformer Engine's layer spec keeps as their own modules,
  // a MoE layer's pre-MLP norm and MLA's input norm (the others are fused into the projection
  // after them, where Megatron-Core's TransformerLayer ignores the module): as memory.cc counts.
  step({{model::kRecomputeLayernorm, m.is_moe() || m.is_mla()},
        {model::kRecomputeMoeAct, m.is_moe()},
        {model::kRecomputeMlaUpProj, m.is_mla()}});
  step({{model::kRecomputeMlp, dense_layers},
        {model::kRecomputeSharedExperts, m.is_moe() && m.num_shared_experts > 0}});
  step({{model::kRecomputeMoe, m.is_moe()}});
  return out;
}

}  // namespace infralens::plan
