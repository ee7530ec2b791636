#include "base/units.h"

#include <gtest/gtest.h>

namespace infralens {
namespace {

// Each text parses to its bytes.
void ExpectBytes(std::initializer_list<std::pair<const char*, int64_t>> cases) {
  for (const auto& [text, bytes] : cases) {
    auto r = ParseBytes(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
    EXPECT_EQ(*r, bytes) << text;
  }
}

TEST(ParseBytesTest, DecimalPrefixesArePowersOf1000) {
  ExpectBytes({{"1KB", 1000},
               {"1 MB", 1000000},
               {"1GB", 1000000000},
               {"2TB", 2000000000000},
               {"1.5GB", 1500000000},
               {"1.1KB", 1100},
               {"1e3KB", 1000000}});
}

TEST(ParseBytesTest, BinaryPrefixesArePowersOf1024) {
  ExpectBytes({{"1KiB", 1024},
               {"1MiB", 1048576},
               {"1GiB", 1073741824},
               {"1TiB", 1099511627776},
               {"0.5KiB", 512}});
}

TEST(ParseBytesTest, BareNumbersAreBytesAndUnitsAreCaseInsensitive) {
  ExpectBytes({{"4096", 4096}, {"17 B", 17}, {"1gib", 1073741824}, {" 8 mib ", 8388608}});
}

TEST(ParseBytesTest, RejectsBadInputWithOneLine) {
  for (const char* bad :
       {"", "GB", "abc", "1XB", "-1GB", "0", "1.5", "0.3B", "1e300GB", "2PiB", "nan", "1 G B"}) {
    auto r = ParseBytes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << bad;
  }
  EXPECT_NE(ParseBytes("1XB").status().message().find("KiB"), std::string::npos);
}

TEST(ParseBytesTest, LimitIsOnePebibyte) {
  EXPECT_EQ(*ParseBytes("1024TiB"), kMaxParsedBytes);
  EXPECT_FALSE(ParseBytes("1025TiB").ok());
}

TEST(FormatBytesTest, PrefersExactBinaryMultiples) {
  EXPECT_EQ(FormatBytes(1073741824), "1 GiB");
  EXPECT_EQ(FormatBytes(3 * 1048576), "3 MiB");
  EXPECT_EQ(FormatBytes(1024), "1 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1500), "1.5 KB");
  EXPECT_EQ(FormatBytes(1000000000), "1 GB");
  EXPECT_EQ(FormatBytes(123), "123 B");
  EXPECT_EQ(FormatBytes(1879048192), "1.75 GiB");
  EXPECT_EQ(FormatBytes(1000), "1 KB");
}

}  // namespace
}  // namespace infralens
