// The JSON writer's string escaping: every document it writes is valid JSON in UTF-8.
#include "base/json_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace infralens {
namespace {

TEST(JsonWriterTest, EscapesControlsQuotesAndBackslashes) {
  EXPECT_EQ(JsonWriter::Escape("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(JsonWriterTest, KeepsWellFormedUtf8) {
  // U+00E9 (2 bytes), U+20AC (3 bytes), U+1F600 (4 bytes): RFC 3629 encodings.
  const std::string s = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  EXPECT_EQ(JsonWriter::Escape(s), "\"" + s + "\"");
}

TEST(JsonWriterTest, ReplacesInvalidUtf8SoTheDocumentParses) {
  const std::string kFffd = "\xEF\xBF\xBD";
  // A lone continuation byte, an overlong '/', a surrogate (U+D800), a truncated sequence, a
  // byte that never occurs (0xFF), and a code point above U+10FFFF: each byte that does not start
  // a well-formed sequence becomes one U+FFFD (Unicode 15 sec. 3.9, Table 3-7).
  EXPECT_EQ(JsonWriter::Escape("\x80"), "\"" + kFffd + "\"");
  EXPECT_EQ(JsonWriter::Escape("\xC0\xAF"), "\"" + kFffd + kFffd + "\"");
  EXPECT_EQ(JsonWriter::Escape("\xED\xA0\x80"), "\"" + kFffd + kFffd + kFffd + "\"");
  EXPECT_EQ(JsonWriter::Escape("a\xE2\x82"), "\"a" + kFffd + kFffd + "\"");
  EXPECT_EQ(JsonWriter::Escape("\xFF"), "\"" + kFffd + "\"");
  EXPECT_EQ(JsonWriter::Escape("\xF4\x90\x80\x80"), "\"" + kFffd + kFffd + kFffd + kFffd + "\"");
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    EXPECT_TRUE(nlohmann::json::accept(JsonWriter::Escape(one + "x" + one))) << b;
  }
}

TEST(JsonWriterTest, ArraysOfStringsAndWholeNumbers) {
  JsonWriter w(0);
  w.BeginObject();
  w.Field("names", std::vector<std::string>{"a", "b\""});
  w.Field("none", std::vector<std::string>{});
  w.Field("ranks", std::vector<int64_t>{3, -1});
  w.EndObject();
  EXPECT_EQ(w.str(), "{\"names\":[\"a\",\"b\\\"\"],\"none\":[],\"ranks\":[3,-1]}\n");
}

}  // namespace
}  // namespace infralens
