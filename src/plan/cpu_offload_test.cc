#include "plan/cpu_offload.h"

#include <gtest/gtest.h>

#include <limits>

namespace infralens::plan {
namespace {

// Nothing offloaded: nothing waits.
TEST(CpuOffloadTest, NothingOffloadedNothingWaits) {
  StatusOr<CpuOffloadStall> s = CpuOffloadStallSeconds(80, 0, 0.012, 0.024, 1.0);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->forward_s, 0);
  EXPECT_EQ(s->backward_s, 0);
}

// 4 layers, the first 2 offloaded, forward 1 s, backward 2 s, copies 1.5 s, by hand. Forward:
// layer 0 runs [0, 1], its copy [1, 2.5]; layer 1 [1, 2], its copy queues behind, [2.5, 4]; layer
// 2 waits for copy 0 (window 4 - 2 = 2 layers): [2.5, 3.5]; layer 3 waits for copy 1: [4, 5]. 5 s
// against 4: 1 s of stall. Backward: layer 3 [0, 2]; layer 2's step starts layer 1's copy back
// [2, 3.5] and runs [2, 4]; layer 1's step starts layer 0's [4, 5.5], layer 1's is there, [4, 6];
// layer 0's is there by 6, [6, 8]: no stall.
TEST(CpuOffloadTest, ForwardWaitsForTheCopiesItsWindowCannotHide) {
  StatusOr<CpuOffloadStall> s = CpuOffloadStallSeconds(4, 2, 1.0, 2.0, 1.5);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->forward_s, 1.0);
  EXPECT_DOUBLE_EQ(s->backward_s, 0.0);
}

// All layers but the last offloaded: each copy's window is the next layer alone, so with copies
// longer than a layer's compute both ways lose the difference. 2 layers, 1 offloaded, 1 s of
// compute either way, 3 s copies: forward layer 0 [0, 1], copy [1, 4], layer 1 [4, 5]: 3 s of
// stall; backward layer 1 [0, 1], then layer 0's step starts its own copy back [1, 4] and layer 0
// runs [4, 5]: 3 s.
TEST(CpuOffloadTest, NoWindowExposesEveryCopy) {
  StatusOr<CpuOffloadStall> s = CpuOffloadStallSeconds(2, 1, 1.0, 1.0, 3.0);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->forward_s, 3.0);
  EXPECT_DOUBLE_EQ(s->backward_s, 3.0);
}

// Megatron-Bridge's Llama 3 70B recipe on GB200 offloads 40 of 80 layers. Copies queue on one
// stream from the end of layer 0 (f), so copy i ends at f + (i + 1) c when c > f, and layer
// 40 + i starts at (40 + i) f: the last copy, the tightest, fits while f + 40 c <= 79 f, i.e.
// c <= 78 f / 40. With f = 12 ms that is c <= 23.4 ms: nothing waits. At c = 24 ms the last two
// layers wait and the forward ends at f + 40 c + f = 984 ms against 960: 24 ms. The backward
// (24 ms a layer) starts each copy back a layer ahead of need, 39 layers early: nothing waits.
TEST(CpuOffloadTest, HalfTheLayersHideBehindTheWholeForward) {
  StatusOr<CpuOffloadStall> fits = CpuOffloadStallSeconds(80, 40, 0.012, 0.024, 0.0234);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_NEAR(fits->forward_s, 0.0, 1e-12);
  EXPECT_NEAR(fits->backward_s, 0.0, 1e-12);
  StatusOr<CpuOffloadStall> over = CpuOffloadStallSeconds(80, 40, 0.012, 0.024, 0.024);
  ASSERT_TRUE(over.ok()) << over.status().message();
  EXPECT_NEAR(over->forward_s, 0.024, 1e-12);
  EXPECT_NEAR(over->backward_s, 0.0, 1e-12);
}

// Megatron-Core's rules: fewer offloaded layers than the model has, no pipeline, no recompute.
TEST(CpuOffloadTest, MegatronCoreRefusals) {
  EXPECT_TRUE(CheckCpuOffload(0, 80, 8, true).ok());
  EXPECT_TRUE(CheckCpuOffload(79, 80, 1, false).ok());
  const Status all = CheckCpuOffload(80, 80, 1, false);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.message().find("0 to 79"), std::string::npos) << all.message();
  EXPECT_FALSE(CheckCpuOffload(-1, 80, 1, false).ok());
  const Status pp = CheckCpuOffload(40, 80, 4, false);
  ASSERT_FALSE(pp.ok());
  EXPECT_NE(pp.message().find("pp 4"), std::string::npos) << pp.message();
  const Status rc = CheckCpuOffload(40, 80, 1, true);
  ASSERT_FALSE(rc.ok());
  EXPECT_NE(rc.message().find("recompute none"), std::string::npos) << rc.message();
  EXPECT_FALSE(CpuOffloadStallSeconds(80, 40, -1.0, 0.0, 0.0).ok());
  EXPECT_FALSE(
      CpuOffloadStallSeconds(80, 40, 0.0, 0.0, std::numeric_limits<double>::infinity()).ok());
}

}  // namespace
// The node's host memory holds what its GPUs offload, or the layer count is refused naming the
// sizes: 100 GiB per GPU on 8 GPUs is 800 GiB, inside a 2,048 GiB node; 300 GiB per GPU is 2,400,
// over it. Nothing offloaded, or no host size known, is never refused.
TEST(CpuOffloadTest, HostMemoryHoldsTheNodesCopies) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  cluster::NodeSpec node;
  node.gpus_per_node = 8;
  node.host_memory_bytes = 2048 * kGiB;
  EXPECT_TRUE(CheckCpuOffloadHostMemory(40, 100 * kGiB, node).ok());
  EXPECT_TRUE(CheckCpuOffloadHostMemory(40, 256 * kGiB, node).ok());  // exactly full
  const Status over = CheckCpuOffloadHostMemory(40, 300 * kGiB, node);
  ASSERT_FALSE(over.ok());
  // The field is named as the command line names it (the test binary's flag names apply).
  EXPECT_NE(over.message().find(" 40: the offloaded activations take 300.0 GiB per GPU, 2400.0 "
                                "GiB on a node of 8 GPUs, more than the node's 2048.0 GiB of host "
                                "memory"),
            std::string::npos)
      << over.message();
  EXPECT_TRUE(CheckCpuOffloadHostMemory(0, 300 * kGiB, node).ok());
  node.host_memory_bytes = 0;  // not known
  EXPECT_TRUE(CheckCpuOffloadHostMemory(40, 300 * kGiB, node).ok());
}

}  // namespace infralens::plan
