// The precision names round-trip, FP16 is refused for the reason the model cannot price it, and a
// layout is uneven exactly when one of Megatron-Core's uneven forms is set.
#include "plan/parallel_config.h"

#include <gtest/gtest.h>

namespace infralens::plan {
namespace {

TEST(ParallelConfigTest, PrecisionNamesRoundTrip) {
  for (Precision p : {Precision::kBf16, Precision::kFp8}) {
    auto parsed = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(parsed.ok()) << PrecisionName(p);
    EXPECT_EQ(*parsed, p);
  }
  auto spaced = ParsePrecision(" FP8 ");  // case and surrounding space are not meaning
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(*spaced, Precision::kFp8);
}

TEST(ParallelConfigTest, UnpricedPrecisionsAreRefusedByName) {
  auto fp16 = ParsePrecision("fp16");
  ASSERT_FALSE(fp16.ok());
  EXPECT_NE(fp16.status().message().find("loss scaling"), std::string::npos);
  auto int4 = ParsePrecision("int4");
  ASSERT_FALSE(int4.ok());
  EXPECT_NE(int4.status().message().find("int4: expected bf16 or fp8"), std::string::npos);
  EXPECT_EQ(int4.status().field(), "precision");
}

TEST(ParallelConfigTest, UnevenOnlyWithAnUnevenForm) {
  ParallelConfig even;
  even.tp = 8;
  even.pp = 4;
  even.vpp = 2;
  EXPECT_FALSE(even.uneven());
  ParallelConfig first = even;
  first.first_stage_layers = 3;
  EXPECT_TRUE(first.uneven());
  ParallelConfig emb = even;
  emb.embedding_in_split = true;
  EXPECT_TRUE(emb.uneven());
  ParallelConfig layout = even;
  layout.layout = "Et|tt|tt|tL";
  EXPECT_TRUE(layout.uneven());
}

}  // namespace
}  // namespace infralens::plan
