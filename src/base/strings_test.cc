#include "base/strings.h"

#include <gtest/gtest.h>

namespace infralens {
namespace {

TEST(ParseIntTest, AcceptsWholeNumbersOnly) {
  EXPECT_EQ(ParseInt("42"), 42);
  EXPECT_EQ(ParseInt(" -7 "), -7);
  EXPECT_EQ(ParseInt("+3"), 3);
  for (const char* bad : {"4x", "", "1.5", "99999999999999999999999"}) {
    EXPECT_FALSE(ParseInt(bad).has_value()) << bad;
  }
}

TEST(ParseDoubleTest, RejectsGarbageAndNonFinite) {
  EXPECT_EQ(ParseDouble("2.5"), 2.5);
  EXPECT_EQ(ParseDouble("1e3"), 1000.0);
  for (const char* bad : {"abc", "inf", "nan", "1.0.0"}) {
    EXPECT_FALSE(ParseDouble(bad).has_value()) << bad;
  }
}

TEST(EditDistanceTest, ClassicCases) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
  EXPECT_EQ(EditDistance("gpiep", "gpipe"), 1);  // one transposition
}

TEST(ClosestMatchTest, SuggestsTyposAndPrefixesButNotNoise) {
  std::vector<std::string> cmds = {"schedule", "compare", "topology"};
  EXPECT_EQ(ClosestMatch("shedule", cmds), "schedule");
  EXPECT_EQ(ClosestMatch("comprae", cmds), "compare");
  EXPECT_EQ(ClosestMatch("sched", cmds), "schedule");
  EXPECT_EQ(ClosestMatch("xyzzy", cmds), "");
}

TEST(SplitTest, KeepsEmptyFields) {
  auto parts = Split("a,,b,", ',');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], "a");
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(parts[3], "");
}

}  // namespace
}  // namespace infralens

namespace infralens {
namespace {

TEST(ExcerptTest, OneShortLine) {
  EXPECT_EQ(Excerpt("abc"), "abc");
  EXPECT_EQ(Excerpt("a\nb\tc"), "a?b?c");
  EXPECT_EQ(Excerpt(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
  EXPECT_EQ(Excerpt("", 5), "");
}

TEST(AlnumKeyTest, KeepsLowerCaseLettersAndDigits) {
  EXPECT_EQ(AlnumKey("Llama-2-7B"), "llama27b");
  EXPECT_EQ(AlnumKey("llama2_7b"), "llama27b");
  EXPECT_EQ(AlnumKey("GPT 18.4B"), "gpt184b");
  EXPECT_EQ(AlnumKey("-_ ."), "");
}

TEST(KeyNamesTest, TheNameOrAnAlias) {
  EXPECT_TRUE(KeyNames("h100sxm", "H100-SXM", {}));
  EXPECT_TRUE(KeyNames("h100sxm5", "H100-SXM", {"H100 SXM5"}));
  EXPECT_FALSE(KeyNames("h100", "H100-SXM", {"H100 SXM5"}));
  EXPECT_FALSE(KeyNames("", "", {}));  // an empty key names nothing
}

TEST(DidYouMeanTest, NamesTheClosestNameAsWritten) {
  const std::vector<std::string> names = {"H100-SXM", "A100-80GB"};
  // "h100sxn" is one edit from H100-SXM's key "h100sxm".
  EXPECT_EQ(DidYouMean("h100sxn", names), "; did you mean 'H100-SXM'?");
  EXPECT_EQ(DidYouMean("zzzzzzzz", names), "");
  EXPECT_EQ(DidYouMean("h100sxm", {}), "");
}

TEST(BoundedMessageTest, LongMessagesAreCutAtACharacterAndSayTheirLength) {
  EXPECT_EQ(BoundedMessage("short"), "short");
  const std::string exact(1024, 'x');
  EXPECT_EQ(BoundedMessage(exact), exact);
  // 1,025 bytes: the first 1024 - 64 = 960 kept.
  EXPECT_EQ(BoundedMessage(std::string(1025, 'x')),
            std::string(960, 'x') + "... (1025 bytes in all)");
  // A two-byte character across the cut is dropped whole, not split: "é" is C3 A9, and byte 960
  // is its second half.
  const std::string utf8 = std::string(959, 'x') + "\xC3\xA9" + std::string(200, 'y');
  EXPECT_EQ(BoundedMessage(utf8), std::string(959, 'x') + "... (1161 bytes in all)");
}

TEST(XmlEscapeTest, EscapesTheFourSpecialCharactersOnly) {
  EXPECT_EQ(XmlEscape(R"(a<b>&"c' d)"), "a&lt;b&gt;&amp;&quot;c' d");
  EXPECT_EQ(XmlEscape(""), "");
  EXPECT_EQ(XmlEscape("&amp;"), "&amp;amp;");  // not idempotent: escape once
}

}  // namespace
}  // namespace infralens
