#include "base/status.h"

#include <gtest/gtest.h>

namespace infralens {
namespace {

TEST(StatusFieldsTest, EachFrontEndSpellsTheFieldsItsWay) {
  const Status s = InvalidArgument(
      "\u2039micro_batch\u203a 0: must be at least 1 (see \u2039global_batch\u203a)");
  EXPECT_EQ(s.message(), "--micro-batch 0: must be at least 1 (see --global-batch)");
  EXPECT_EQ(s.MessageFor(FieldSpelling::kFlag), s.message());
  EXPECT_EQ(s.MessageFor(FieldSpelling::kParameter),
            "micro_batch 0: must be at least 1 (see global_batch)");
  EXPECT_EQ(s.field(), "micro_batch");  // the first one named
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ExitCode(), 2);
}

TEST(StatusFieldsTest, MessagesWithoutFieldsAreKeptAsWritten) {
  const Status s = FailedPrecondition("no layout fits in 80 GiB");
  EXPECT_EQ(s.message(), "no layout fits in 80 GiB");
  EXPECT_EQ(s.MessageFor(FieldSpelling::kParameter), "no layout fits in 80 GiB");
  EXPECT_EQ(s.field(), "");
  EXPECT_EQ(Status().field(), "");
}

// A user's value may hold the quotes: only a field name (lower case, digits, '_') between them is
// a field; anything else, or an unclosed quote, is text.
TEST(StatusFieldsTest, QuotesAroundOtherTextAreText) {
  const std::string odd = "\u2039Not A Field\u203a and \u2039x";
  const Status s = InvalidArgument("model '" + odd + "': \u2039model\u203a unknown");
  EXPECT_EQ(s.message(), "model '" + odd + "': --model unknown");
  EXPECT_EQ(s.MessageFor(FieldSpelling::kParameter), "model '" + odd + "': model unknown");
  EXPECT_EQ(s.field(), "model");
  EXPECT_EQ(SpellFields("\u2039\u203a", FieldSpelling::kFlag), "\u2039\u203a");
  EXPECT_EQ(SpellFields("a\u2039tp\u203a\u2039pp\u203a", FieldSpelling::kFlag), "a--tp--pp");
}

// A positional argument's field is in capitals: the CLI shows it as its help does, the API as its
// parameter (the lower case).
TEST(StatusFieldsTest, PositionalFieldsAreSpelledAsTheHelpShowsThem) {
  const Status s = InvalidArgument("\u2039NAME\u203a 'x': no such scenario");
  EXPECT_EQ(s.message(), "NAME 'x': no such scenario");
  EXPECT_EQ(s.MessageFor(FieldSpelling::kParameter), "name 'x': no such scenario");
  EXPECT_EQ(s.field(), "name");
  // Another code keeps the fields.
  const Status missing = s.WithCode(StatusCode::kNotFound);
  EXPECT_EQ(missing.ExitCode(), 1);
  EXPECT_EQ(missing.field(), "name");
  EXPECT_EQ(missing.MessageFor(FieldSpelling::kParameter), "name 'x': no such scenario");
  // Mixed case is neither.
  EXPECT_EQ(SpellFields("\u2039Name\u203a", FieldSpelling::kFlag), "\u2039Name\u203a");
}

}  // namespace
}  // namespace infralens
