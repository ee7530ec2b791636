#include "plan/pipeline_p2p.h"

#include <gtest/gtest.h>

namespace infralens::plan {
namespace {

// The three words of data/frameworks/README.md's p2p_blocking row, both ways.
TEST(PipelineP2pTest, NamesRoundTrip) {
  for (P2pWait w : {P2pWait::kOverlapped, P2pWait::kBlocking, P2pWait::kBlockingSingleChunk}) {
    StatusOr<P2pWait> back = ParseP2pWait(P2pWaitName(w));
    ASSERT_TRUE(back.ok()) << P2pWaitName(w);
    EXPECT_EQ(*back, w);
  }
  EXPECT_STREQ(P2pWaitName(P2pWait::kBlockingSingleChunk), "single_chunk");
  StatusOr<P2pWait> bad = ParseP2pWait("sometimes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'sometimes'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("yes, no or single_chunk"), std::string::npos);
}

// DeepSpeed blocks under every schedule, PyTorch's pipelining under none, Megatron-Core only
// without interleaving (one chunk per rank).
TEST(PipelineP2pTest, BlocksWhereTheFrameworkWaits) {
  for (int chunks : {1, 2, 4}) {
    EXPECT_TRUE(P2pBlocks(P2pWait::kBlocking, chunks)) << chunks;
    EXPECT_FALSE(P2pBlocks(P2pWait::kOverlapped, chunks)) << chunks;
  }
  EXPECT_TRUE(P2pBlocks(P2pWait::kBlockingSingleChunk, 1));
  EXPECT_FALSE(P2pBlocks(P2pWait::kBlockingSingleChunk, 2));
  EXPECT_FALSE(P2pBlocks(P2pWait::kBlockingSingleChunk, 4));
}

}  // namespace
}  // namespace infralens::plan
