// The ZeRO-3 fetch timeline against timelines drawn by hand.
#include "plan/fsdp_timeline.h"

#include <gtest/gtest.h>

#include <vector>

namespace infralens::plan {
namespace {

std::vector<FsdpUnit> Units(int n, double params, double gather_s, double compute_s,
                            double reduce_s = 0) {
  return std::vector<FsdpUnit>(static_cast<size_t>(n), {params, gather_s, compute_s, reduce_s});
}

TEST(FsdpTimelineTest, UnboundedPrefetchHidesAllButTheFirstGather) {
  // Gathers 0-1, 1-2, 2-3 back to back; compute 1-3, 3-5, 5-7: 7 s for 6 s of compute.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 1, 1, 2), {}), 1);
  // Links-bound: gathers end at 3, 6, 9, each unit computes 1 s after its own: 10 - 3 = 7.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 1, 3, 1), {}), 7);
}

TEST(FsdpTimelineTest, LiveBoundOfOneUnitSerialisesGatherAndCompute) {
  // Room for one unit: the next gather waits for the release, g c g c g c: every gather exposed.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 1, 2), {10}), 3);
  // A unit larger than the bound is still fetched when nothing else is live.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 1, 2), {5}), 3);
}

TEST(FsdpTimelineTest, LiveBoundOfTwoUnitsPrefetchesOneAhead) {
  // Units 0 and 1 issued at 0 (0-1, 1-2); unit 0 computes 1-3 and its release issues unit 2
  // (3-4); unit 1 computes 3-5, unit 2 5-7: only the first gather is exposed.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 1, 2), {20}), 1);
  // Gathers of 3 s: 0-3 and 3-6; unit 0 computes 3-4, whose release issues unit 2 at 6 (the
  // links are busy): 6-9; units 1 and 2 compute 6-7 and 9-10: 10 - 3 = 7, links-bound as above.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 3, 1), {20}), 7);
  // Gathers of 1.5 s with 1 s of compute: unit 0 computes 1.5-2.5, unit 2's gather issued at 2.5
  // (its release) runs 3-4.5 (the links hold unit 1's until 3); unit 1 computes 3-4, unit 2
  // 4.5-5.5: 5.5 - 3 = 2.5. Unbounded, the gathers run 0-1.5, 1.5-3, 3-4.5: the same 5.5 s.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 1.5, 1), {20}), 2.5);
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(3, 10, 1.5, 1), {}), 2.5);
}

TEST(FsdpTimelineTest, ReduceScattersShareTheLinks) {
  // Backward: gathers 0-1 and 1-2; unit 0 computes 1-3 and reduces 3-4; unit 1 computes 3-5
  // and reduces 5-6: 6 s for 4 s of compute, the first gather and the last reduce exposed.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(2, 1, 1, 2, 1), {}), 2);
  // Reductions of 3 s hold the links: gathers 0-1, 1-2, unit 0's reduce 3-6, unit 1 computes
  // 3-5 and reduces 6-9: 9 - 4 = 5.
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(2, 1, 1, 2, 3), {}), 5);
}

TEST(FsdpTimelineTest, NothingToGatherExposesNothing) {
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds(Units(4, 0, 0, 1), {1}), 0);
  EXPECT_DOUBLE_EQ(FsdpExposedSeconds({}, {}), 0);
}

}  // namespace
}  // namespace infralens::plan
