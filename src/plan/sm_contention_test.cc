#include "plan/sm_contention.h"

#include <gtest/gtest.h>

#include "hw/gpu.h"

namespace infralens::plan {
namespace {

hw::Gpu GpuWithSms(int sms) {
  hw::Gpu g;
  g.name = "test";
  g.sms = sms;
  return g;
}

DeviceEfficiency Channels(double in_node, double scale_out) {
  DeviceEfficiency e;
  e.collective_channels = in_node;
  e.collective_channels_scale_out = scale_out;
  return e;
}

TEST(SmContentionTest, ShareIsTheChannelsOverTheSms) {
  const hw::Gpu h100 = GpuWithSms(132);  // the H100 SXM's 132 SMs
  const DeviceEfficiency e = Channels(24, 16);
  EXPECT_DOUBLE_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kScaleUp), 24.0 / 132);
  EXPECT_DOUBLE_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kNvLinkBridge), 24.0 / 132);
  EXPECT_DOUBLE_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kPcie), 24.0 / 132);
  EXPECT_DOUBLE_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kRail), 16.0 / 132);
  EXPECT_DOUBLE_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kSpine), 16.0 / 132);
  // No communication, no SM count, no channels: nothing held.
  EXPECT_EQ(CollectiveSmShare(h100, e, cluster::LinkClass::kNone), 0);
  EXPECT_EQ(CollectiveSmShare(GpuWithSms(0), e, cluster::LinkClass::kScaleUp), 0);
  EXPECT_EQ(CollectiveSmShare(h100, Channels(0, 0), cluster::LinkClass::kRail), 0);
  // More channels than SMs hold them all.
  EXPECT_EQ(CollectiveSmShare(GpuWithSms(16), e, cluster::LinkClass::kScaleUp), 1);
}

TEST(SmContentionTest, HiddenCollectivesCostTheirShareOfTheirTime) {
  // 1 s of collectives under 10 s of compute at a fifth of the SMs: the compute runs at 4/5 for
  // 1 s (0.8 s of work), then 9.2 s at full rate: 10.2 s, 0.2 s more.
  EXPECT_NEAR(ContendedOverlapSeconds(1, 10, 0.2), 0.2, 1e-12);
}

TEST(SmContentionTest, ExposedCollectivesCostLessAndThenNothing) {
  // 5 s of collectives beside 4.5 s of compute at a fifth: 4 s of work in the 5 s, 0.5 s after:
  // 5.5 s against max(5, 4.5) = 5.
  EXPECT_NEAR(ContendedOverlapSeconds(5, 4.5, 0.2), 0.5, 1e-12);
  // 10 s beside 1 s: the compute is done (1 s of work in 1.25 s) long before the collectives.
  EXPECT_EQ(ContendedOverlapSeconds(10, 1, 0.2), 0);
  // The boundary, compute = (1 - share) comm: 8 s of work in exactly 10 s.
  EXPECT_NEAR(ContendedOverlapSeconds(10, 8, 0.2), 0, 1e-12);
}

TEST(SmContentionTest, SharesAtTheEnds) {
  // Nothing held: no loss. Every SM held: the compute waits for the collectives, so the pair
  // runs serially, comm + compute, min(comm, compute) over max(comm, compute).
  EXPECT_EQ(ContendedOverlapSeconds(3, 7, 0), 0);
  EXPECT_DOUBLE_EQ(ContendedOverlapSeconds(3, 7, 1), 3);
  EXPECT_DOUBLE_EQ(ContendedOverlapSeconds(7, 3, 1), 3);
  // Out-of-range arguments count as their nearest valid value.
  EXPECT_DOUBLE_EQ(ContendedOverlapSeconds(3, 7, 2), 3);
  EXPECT_EQ(ContendedOverlapSeconds(-1, 7, 0.5), 0);
  EXPECT_EQ(ContendedOverlapSeconds(3, -7, 0.5), 0);
}

}  // namespace
}  // namespace infralens::plan
