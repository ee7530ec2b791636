#include "request/count_format.h"

#include <gtest/gtest.h>

namespace infralens::request {
namespace {

TEST(SiCountTest, SignificantDigitsAndSuffix) {
  // Llama 2 7B's 6,738,415,616 parameters (Touvron et al. 2023, the released checkpoint).
  EXPECT_EQ(SiCount(6738415616, 3), "6.74B");
  EXPECT_EQ(SiCount(6738415616, 4), "6.738B");
  EXPECT_EQ(SiCount(175e9, 3), "175B");
  EXPECT_EQ(SiCount(1.0106e12, 3), "1.01T");
  EXPECT_EQ(SiCount(1.234e12, 4, " "), "1.234 T");
  EXPECT_EQ(SiCount(524288, 4), "524.3K");
  EXPECT_EQ(SiCount(12'500'000, 3, " "), "12.5 M");
}

TEST(SiCountTest, EachPrefixStartsAtItsPower) {
  EXPECT_EQ(SiCount(999, 3), "999");
  EXPECT_EQ(SiCount(1000, 3), "1K");
  EXPECT_EQ(SiCount(1e6, 4), "1M");
  EXPECT_EQ(SiCount(0, 4), "0");
}

}  // namespace
}  // namespace infralens::request
