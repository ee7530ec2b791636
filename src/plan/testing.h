// Test helpers (header-only, used by *_test.cc and bench/): a plan request on built-in presets and
// a layout by its degrees.
#ifndef INFRALENS_PLAN_TESTING_H_
#define INFRALENS_PLAN_TESTING_H_

#include <cstdint>
#include <string_view>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/planner.h"

namespace infralens::plan::testing {

// `m` on `nodes` DGX H100 nodes (the "dgx-h100" preset and its GPU), `global_batch` sequences of
// `seq_len` tokens (0: the model's own).
inline PlanRequest PresetRequest(const model::Model& m, int nodes, int64_t global_batch,
                                 int64_t seq_len = 0) {
  PlanRequest r;
  r.model = m;
  r.cluster = *cluster::FindClusterPreset("dgx-h100");
  r.cluster.num_nodes = nodes;
  r.gpu = *hw::FindGpu(r.cluster.node.gpu_model);
  r.global_batch = global_batch;
  r.seq_len = seq_len;
  return r;
}

// The same for the model preset `model` (which must exist).
inline PlanRequest PresetRequest(std::string_view model, int nodes, int64_t global_batch,
                                 int64_t seq_len = 0) {
  return PresetRequest(*model::FindPreset(model), nodes, global_batch, seq_len);
}

// tp x pp x dp with ZeRO stage `zero` and sequence parallelism where tp > 1; the rest as Layout
// has it (cp = ep = 1, vpp 0, selective recompute, micro-batch 1, 1F1B).
inline Layout Degrees(int tp, int pp, int dp, int zero) {
  Layout l;
  l.parallel.tp = tp;
  l.parallel.pp = pp;
  l.parallel.dp = dp;
  l.parallel.zero_stage = zero;
  l.parallel.sequence_parallel = tp > 1;
  return l;
}

}  // namespace infralens::plan::testing

#endif  // INFRALENS_PLAN_TESTING_H_
