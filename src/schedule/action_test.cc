#include "schedule/action.h"

#include <gtest/gtest.h>

namespace infralens::schedule {
namespace {

TEST(ActionTest, PytorchSpellingRoundTrips) {
  for (const Action& a : {Action::F(0, 3), Action::B(12, 0), Action::I(1, 2), Action::W(2, 0),
                          Action::FB(0, 3, 7, 1)}) {
    auto parsed = ParseAction(ToString(a));
    ASSERT_TRUE(parsed.ok()) << ToString(a);
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_EQ(ToString(Action::F(2, 0)), "2F0");
  EXPECT_EQ(ToString(Action::I(1, 3)), "1I3");
  EXPECT_EQ(ToString(Action::FB(0, 3, 7, 1)), "(0F3;7B1)OVERLAP_F_B");
}

TEST(ActionTest, RejectsWhatIsNotAComputeAction) {
  const char* bad[] = {"F0",
                       "0X1",
                       "0F",
                       "0Fx",
                       "abc",
                       "1SEND_F0",
                       "0UNSHARD",
                       "(0F1)OVERLAP_F_B",
                       "(0B1;1F0)OVERLAP_F_B",
                       "(0F1;1B0)",
                       "0F99999999999"};
  for (const char* text : bad) {
    auto a = ParseAction(text);
    EXPECT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string::npos) << a.status().message();
  }
  EXPECT_NE(ParseAction("1SEND_F0").status().message().find("compute-only"), std::string::npos);
}

}  // namespace
}  // namespace infralens::schedule
