#include "server/params.h"

#include <gtest/gtest.h>

namespace infralens::server {
namespace {

TEST(PercentDecodeTest, DecodesAndRefusesMalformed) {
  EXPECT_EQ(PercentDecode("a%20b+c", true), "a b c");
  EXPECT_EQ(PercentDecode("a%20b+c", false), "a b+c");
  EXPECT_EQ(PercentDecode("%2e%2E", false), "..");
  EXPECT_FALSE(PercentDecode("%", false));
  EXPECT_FALSE(PercentDecode("%4", false));
  EXPECT_FALSE(PercentDecode("%zz", false));
  EXPECT_FALSE(PercentDecode("a%00b", false));  // NUL never reaches a handler
}

TEST(ParseFormTest, PairsInOrder) {
  ParamError err;
  auto p = ParseForm("pp=4&&m=8&flag&x=a%3Db", {}, &err);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->size(), 4u);
  EXPECT_EQ((*p)[0], (std::pair<std::string, std::string>{"pp", "4"}));
  EXPECT_EQ((*p)[2], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_EQ((*p)[3].second, "a=b");
  EXPECT_TRUE(ParseForm("", {}, &err)->empty());
}

TEST(ParseFormTest, Limits) {
  ParamError err;
  ParamLimits lim;
  lim.max_params = 2;
  EXPECT_FALSE(ParseForm("a=1&b=2&c=3", lim, &err));
  EXPECT_NE(err.message.find("more than 2 parameters"), std::string::npos);
  lim = {};
  lim.max_value_bytes = 3;
  EXPECT_FALSE(ParseForm("pp=1234", lim, &err));
  EXPECT_EQ(err.parameter, "pp");
  EXPECT_FALSE(ParseForm("pp=%G1", {}, &err));
  EXPECT_EQ(err.parameter, "pp");
  EXPECT_FALSE(ParseForm("=1", {}, &err));
}

std::vector<ParamSpec> Specs() {
  return {{"pp", {"stages"}, "", ""},
          {"microbatches", {"m"}, "", ""},
          {"f", {}, "", ""},
          {"format", {}, "", ""},
          {"download", {}, "", ""}};
}

TEST(ParamReaderTest, AliasesDefaultsAndRanges) {
  ParamReader r({{"stages", "8"}, {"m", "16"}, {"f", "0.5"}}, Specs());
  EXPECT_FALSE(r.error());
  EXPECT_EQ(r.Int("pp", 4, 1, 1024), 8);
  EXPECT_EQ(r.Int("microbatches", 8, 1, 100), 16);
  EXPECT_DOUBLE_EQ(r.Number("f", 1, 0, 10), 0.5);
  EXPECT_EQ(r.Choice("format", "json", {"json", "csv"}), "json");
  EXPECT_FALSE(r.Flag("download"));
  EXPECT_FALSE(r.error());
}

TEST(ParamReaderTest, ErrorsNameTheParameter) {
  {
    ParamReader r({{"microbatch", "8"}}, Specs());
    ASSERT_TRUE(r.error());
    EXPECT_EQ(r.error()->parameter, "microbatch");
    EXPECT_NE(r.error()->message.find("did you mean 'microbatches'?"), std::string::npos)
        << r.error()->message;
  }
  {
    ParamReader r({{"pp", "4"}, {"stages", "5"}}, Specs());
    ASSERT_TRUE(r.error());
    EXPECT_EQ(r.error()->parameter, "pp");
    EXPECT_NE(r.error()->message.find("more than once"), std::string::npos);
  }
  for (const char* bad : {"abc", "0", "1025", "4.5", "", "99999999999"}) {
    ParamReader r({{"pp", bad}}, Specs());
    r.Int("pp", 4, 1, 1024);
    ASSERT_TRUE(r.error()) << bad;
    EXPECT_EQ(r.error()->parameter, "pp");
    EXPECT_NE(r.error()->message.find("from 1 to 1024"), std::string::npos);
  }
  for (const char* bad : {"nan", "inf", "-1", "1e10", "x"}) {
    ParamReader r({{"f", bad}}, Specs());
    r.Number("f", 1, 0, 1e9);
    ASSERT_TRUE(r.error()) << bad;
    EXPECT_EQ(r.error()->parameter, "f");
  }
  ParamReader r({{"format", "png"}, {"download", "maybe"}}, Specs());
  r.Choice("format", "json", {"json", "csv"});
  r.Flag("download");
  ASSERT_TRUE(r.error());
  EXPECT_EQ(r.error()->parameter, "format");  // the first error wins
  EXPECT_EQ(r.error()->message, "format=png: expected one of json, csv");
}

}  // namespace
}  // namespace infralens::server
