#include "plan/loss.h"

#include <gtest/gtest.h>

namespace infralens::plan {
namespace {

// The bytes per logit of each implementation, counted by hand from its kernels (loss.h): every
// FP32 pass reads or writes 4 bytes per element, the BF16 logits and gradient 2.
TEST(LossTest, BytesPerLogitByHand) {
  // Megatron-Core unfused: forward .float() 6, max 4, shift 8, exp 8, sum 4, division 8;
  // backward scaling 8, cast 6.
  const LogitBytes unfused = CrossEntropyBytesPerLogit(CrossEntropyKernels::kUnfused);
  EXPECT_EQ(unfused.forward, 38);
  EXPECT_EQ(unfused.backward, 14);
  // Fused: forward 6 + 8 + 8; backward 6 plus the saved softmax written back, 4.
  const LogitBytes fused = CrossEntropyBytesPerLogit(CrossEntropyKernels::kFused);
  EXPECT_EQ(fused.forward, 22);
  EXPECT_EQ(fused.backward, 10);
  // Eager PyTorch: forward .float() 6 and log_softmax 3 reads + 1 write of FP32, 16; backward the
  // zeroed gradient 4, log_softmax's backward 16, the cast 6.
  const LogitBytes eager = CrossEntropyBytesPerLogit(CrossEntropyKernels::kEager);
  EXPECT_EQ(eager.forward, 22);
  EXPECT_EQ(eager.backward, 26);
  // Fusing never moves more than the same steps unfused.
  EXPECT_LT(fused.forward + fused.backward, unfused.forward + unfused.backward);
}

TEST(LossTest, NamesRoundTripAndBadNamesAreRefused) {
  for (CrossEntropyKernels k :
       {CrossEntropyKernels::kFused, CrossEntropyKernels::kUnfused, CrossEntropyKernels::kEager}) {
    auto parsed = ParseCrossEntropyKernels(CrossEntropyKernelsName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  auto bad = ParseCrossEntropyKernels("compiled");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'compiled'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("fused, unfused or eager"), std::string::npos);
}

}  // namespace
}  // namespace infralens::plan
