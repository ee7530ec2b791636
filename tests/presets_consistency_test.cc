// Cross-module consistency of the built-in presets: every cluster's GPU is a GPU preset, so the
// planner can look up its FLOP/s and memory.
#include <gtest/gtest.h>

#include "cluster/cluster.h"
#include "hw/gpu.h"

namespace infralens {
namespace {

TEST(PresetsConsistencyTest, EveryClusterGpuIsAGpuPreset) {
  for (const auto& p : cluster::ClusterPresets()) {
    auto gpu = hw::FindGpu(p.cluster.node.gpu_model);
    EXPECT_TRUE(gpu.ok()) << p.name << ": " << p.cluster.node.gpu_model;
  }
}

}  // namespace
}  // namespace infralens
