// GenerateShared against Generate itself: equal schedules, one copy per request, errors passed
// through, and the bound on what is kept.
#include "schedule/generate_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace infralens::schedule {
namespace {

bool SameActions(const Schedule& a, const Schedule& b) {
  return a.pp == b.pp && a.vpp == b.vpp && a.microbatches == b.microbatches && a.ranks == b.ranks &&
         a.stage_to_rank == b.stage_to_rank;
}

TEST(GenerateCacheTest, EqualsGenerateAndIsSharedAcrossCalls) {
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B,
                            ScheduleKind::kZBH1, ScheduleKind::kZBV, ScheduleKind::kDualPipeV}) {
    const ScheduleParams p{4, 0, 12};
    auto direct = Generate(kind, p);
    ASSERT_TRUE(direct.ok());
    auto a = GenerateShared(kind, p);
    auto b = GenerateShared(kind, p);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(SameActions(**a, *direct)) << Info(kind).name;
    EXPECT_EQ(a->get(), b->get()) << "the second call reuses the first's schedule";
  }
}

TEST(GenerateCacheTest, DefaultVppIsTheSameScheduleAsTheExplicitOne) {
  const int v = Info(ScheduleKind::kZBV).default_vpp;
  auto a = GenerateShared(ScheduleKind::kZBV, {4, 0, 8});
  auto b = GenerateShared(ScheduleKind::kZBV, {4, v, 8});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
}

TEST(GenerateCacheTest, ErrorsAreGeneratesAndNotKept) {
  // 1F1B needs at least one microbatch: Generate's own refusal, word for word, every time.
  const ScheduleParams bad{4, 1, 0};
  auto direct = Generate(ScheduleKind::k1F1B, bad);
  ASSERT_FALSE(direct.ok());
  for (int k = 0; k < 2; ++k) {
    auto r = GenerateShared(ScheduleKind::k1F1B, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), direct.status().message());
  }
}

TEST(GenerateCacheTest, KeepsAtMostTheBoundButAlwaysTheNewest) {
  // 1F1B on 4 ranks with m microbatches has 4 x m x 2 actions.
  SetGenerateCacheLimit(1000);
  for (int m = 40; m < 60; ++m) {
    ASSERT_TRUE(GenerateShared(ScheduleKind::k1F1B, {4, 1, m}).ok());
    const GenerateCacheStats st = GenerateCacheStatsNow();
    EXPECT_LE(st.actions, 1000);
    EXPECT_GE(st.schedules, 1);
  }
  // One schedule above the bound on its own is still kept (4 x 800 x 2 = 6,400 > 1,000).
  auto big = GenerateShared(ScheduleKind::k1F1B, {4, 1, 800});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(GenerateCacheStatsNow().schedules, 1);
  EXPECT_EQ(GenerateCacheStatsNow().actions, 4 * 800 * 2);
  auto again = GenerateShared(ScheduleKind::k1F1B, {4, 1, 800});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(big->get(), again->get());
  SetGenerateCacheLimit(kGenerateCacheActions);
}

TEST(GenerateCacheTest, ManyThreadsGetEqualSchedules) {
  std::vector<std::shared_ptr<const Schedule>> got(8);
  {
    std::vector<std::jthread> pool;
    for (size_t t = 0; t < got.size(); ++t) {
      pool.emplace_back([&got, t] {
        auto r = GenerateShared(ScheduleKind::kInterleaved1F1B,
                                {4, 2, 16 + 4 * static_cast<int>(t % 2)});
        if (r.ok()) got[t] = *r;
      });
    }
  }
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_NE(got[t], nullptr);
    auto direct =
        Generate(ScheduleKind::kInterleaved1F1B, {4, 2, 16 + 4 * static_cast<int>(t % 2)});
    ASSERT_TRUE(direct.ok());
    EXPECT_TRUE(SameActions(*got[t], *direct));
  }
}

}  // namespace
}  // namespace infralens::schedule
