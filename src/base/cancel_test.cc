#include "base/cancel.h"

#include <gtest/gtest.h>

#include <thread>

namespace infralens {
namespace {

TEST(CancelTokenTest, WithoutDeadlineOnlyCancelStops) {
  CancelToken t;
  EXPECT_FALSE(t.Cancelled());
  EXPECT_FALSE(t.CancelRequested());
  t.Cancel();
  EXPECT_TRUE(t.Cancelled());
  EXPECT_TRUE(t.CancelRequested());
}

TEST(CancelTokenTest, PassedDeadlineCancelsWithoutRequest) {
  const CancelToken past(CancelToken::Clock::now() - std::chrono::seconds(1));
  EXPECT_TRUE(past.Cancelled());
  EXPECT_FALSE(past.CancelRequested());
  const CancelToken future(CancelToken::Clock::now() + std::chrono::hours(1));
  EXPECT_FALSE(future.Cancelled());
}

TEST(CancelTokenTest, CancelFromAnotherThreadIsSeen) {
  CancelToken t;
  std::thread([&t] { t.Cancel(); }).join();
  EXPECT_TRUE(t.Cancelled());
}

}  // namespace
}  // namespace infralens
