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

// Issue 27: the line of an unterminated quote is where it opened (the file "a,b\nc,\"d\n" has
// two lines; the quote opens on line 2), and each row's first line is reported beside it.
TEST(CsvTest, LinesOfRowsAndOfAnOpenQuote) {
  auto open = ParseCsv("a,b\nc,\"d\n");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("line 2:"), std::string::npos) << open.status().message();
  std::vector<size_t> lines;
  // Line 1 the header, line 2 blank, lines 3-4 one row (a quoted newline), line 5 the last row.
  auto rows = ParseCsv("h1,h2\n\nx,\"two\nlines\"\ny,z", 100, &lines);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ(lines, (std::vector<size_t>{1, 3, 5}));
}

}  // namespace
}  // namespace infralens
