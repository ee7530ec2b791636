#include "base/csv.h"

#include <gtest/gtest.h>

namespace infralens {
namespace {

TEST(CsvTest, QuotedFieldsCommasAndQuotes) {
  auto rows = ParseCsv("a,\"b, c\",d\r\n\"say \"\"hi\"\"\",,x\n");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], (std::vector<std::string>{"a", "b, c", "d"}));
  EXPECT_EQ((*rows)[1], (std::vector<std::string>{"say \"hi\"", "", "x"}));
}

TEST(CsvTest, NoTrailingNewlineAndBlankLines) {
  auto rows = ParseCsv("a,b\n\nc,d");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1], (std::vector<std::string>{"c", "d"}));
}

TEST(CsvTest, Errors) {
  EXPECT_FALSE(ParseCsv("a,\"b\nc").ok());
  EXPECT_FALSE(ParseCsv("a,\"b\"x\n").ok());
  EXPECT_FALSE(ParseCsv("a,b,c,d", 3).ok());
}

}  // namespace
}  // namespace infralens
