// The trace view's timeline on tiny hand-made traces whose answers are worked out in the comments.
#include "trace/kernel_timeline.h"

#include <gtest/gtest.h>

#include "trace/kineto_reader.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::CollectiveArgs;
using testing::TraceBuilder;

using testing::Read;

const char* kSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

// compute [1000,1010) [1020,1030), all-reduce [1005,1025), memcpy [1040,1045): no steps, so one
// window [1000,1045), origin 1000. Every kernel is its own interval; the only gap is [30,40),
// pure idle. Kernel time summed: 10 + 10 + 20 + 5 = 45.
TEST(KernelTimelineTest, EveryKernelAtItsPlaceAndTheIdleGap) {
  RankTrace t = Read(testing::ComputeCommMemcpyTrace(1000));
  KernelTimeline tl;
  auto a = AnalyzeWithTimeline({t}, {}, {}, &tl);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_DOUBLE_EQ(tl.origin_us, 1000);
  EXPECT_DOUBLE_EQ(tl.span_us, 45);
  ASSERT_EQ(tl.windows.size(), 1u);
  EXPECT_EQ(tl.windows[0].step, -1);
  EXPECT_DOUBLE_EQ(tl.resolution_us, 0);
  ASSERT_EQ(tl.ranks.size(), 1u);
  const RankTimeline& r = tl.ranks[0];
  EXPECT_EQ(r.kernels_in_windows, 4);
  ASSERT_EQ(r.kernels.size(), 4u);  // by class: compute, compute, communication, memory
  EXPECT_EQ(r.kernels[0].cls, KernelClass::kCompute);
  EXPECT_DOUBLE_EQ(r.kernels[0].begin_us, 0);
  EXPECT_DOUBLE_EQ(r.kernels[0].end_us, 10);
  EXPECT_EQ(tl.names[r.kernels[0].name], "gemm");
  EXPECT_DOUBLE_EQ(r.kernels[1].begin_us, 20);
  EXPECT_EQ(r.kernels[2].cls, KernelClass::kCommunication);
  EXPECT_DOUBLE_EQ(r.kernels[2].begin_us, 5);
  EXPECT_DOUBLE_EQ(r.kernels[2].end_us, 25);
  EXPECT_EQ(r.kernels[3].cls, KernelClass::kMemory);
  EXPECT_DOUBLE_EQ(r.kernels[3].begin_us, 40);
  ASSERT_EQ(r.gaps.size(), 1u);
  EXPECT_EQ(r.gaps[0].kind, GapKind::kPureIdle);
  EXPECT_DOUBLE_EQ(r.gaps[0].begin_us, 30);
  EXPECT_DOUBLE_EQ(r.gaps[0].end_us, 40);
  EXPECT_DOUBLE_EQ(r.pure_idle_us, a->ranks[0].pure_idle_us);
  EXPECT_EQ(tl.intervals, 5);
  // Top kernels: gemm and the all-reduce 20 each (20/45), the copy 5 (5/45) last.
  ASSERT_EQ(tl.top_kernels.size(), 3u);
  EXPECT_DOUBLE_EQ(tl.top_kernels[0].total_us, 20);
  EXPECT_DOUBLE_EQ(tl.top_kernels[0].share, 20.0 / 45);
  EXPECT_EQ(tl.top_kernels[2].cls, KernelClass::kMemory);
  EXPECT_EQ(tl.top_kernels[2].count, 1);
  EXPECT_DOUBLE_EQ(tl.top_kernels[2].share, 5.0 / 45);
}

// Two pipeline ranks, one window [0,40):
//   rank 0: compute [0,10), send [10,12), compute [30,40)
//   rank 1: recv [0,12) (posted at 0, data at 12), compute [12,22), compute [25,40)
// Rank 0: no event in [12,30): pure idle 18; send [10,12) with no compute: p2p wait 2.
// Rank 1: pure idle [22,25) = 3; the recv with no compute: p2p wait [0,12) = 12.
TEST(KernelTimelineTest, BubbleIntervalsWhereTheyAreAndSumToTheAnalysis) {
  const std::string send = CollectiveArgs("send", 1024, "Float", 2, "[0, 1]");
  const std::string recv = CollectiveArgs("recv", 1024, "Float", 2, "[0, 1]");
  RankTrace r0 = Read(TraceBuilder()
                          .Distributed(0, 2)
                          .Kernel("fwd", 7, 0, 10)
                          .Kernel(kSendRecv, 100, 10, 2, -1, send)
                          .Kernel("bwd", 7, 30, 10),
                      "rank0");
  RankTrace r1 = Read(TraceBuilder()
                          .Distributed(1, 2)
                          .Kernel(kSendRecv, 200, 0, 12, -1, recv)
                          .Kernel("fwd", 7, 12, 10)
                          .Kernel("bwd", 7, 25, 15),
                      "rank1");
  KernelTimeline tl;
  auto a = AnalyzeWithTimeline({r0, r1}, {}, {}, &tl);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(tl.ranks.size(), 2u);
  const double want_idle[2] = {18, 3}, want_wait[2] = {2, 12};
  const double idle_at[2][2] = {{12, 30}, {22, 25}}, wait_at[2][2] = {{10, 12}, {0, 12}};
  for (int k = 0; k < 2; ++k) {
    const RankTimeline& r = tl.ranks[k];
    EXPECT_DOUBLE_EQ(r.pure_idle_us, want_idle[k]);
    EXPECT_DOUBLE_EQ(r.p2p_wait_us, want_wait[k]);
    EXPECT_DOUBLE_EQ(r.pure_idle_us + r.p2p_wait_us, a->ranks[k].bubble_us);
    ASSERT_EQ(r.gaps.size(), 2u);
    EXPECT_EQ(r.gaps[0].kind, GapKind::kPureIdle);
    EXPECT_DOUBLE_EQ(r.gaps[0].begin_us, idle_at[k][0]);
    EXPECT_DOUBLE_EQ(r.gaps[0].end_us, idle_at[k][1]);
    EXPECT_EQ(r.gaps[1].kind, GapKind::kP2pWait);
    EXPECT_DOUBLE_EQ(r.gaps[1].begin_us, wait_at[k][0]);
    EXPECT_DOUBLE_EQ(r.gaps[1].end_us, wait_at[k][1]);
  }
  EXPECT_EQ(tl.p2p_sends, 1);
  EXPECT_DOUBLE_EQ(tl.p2p_send_mean_us, 2);
}

// The lanes and arrows of the trace view. Rank 0 sends twice to rank 1 (stream 100, at 10 and
// 30), rank 1 receives twice from rank 0 (stream 200, at 0 and 25): NCCL matches them in order,
// so the flows are send [10,12) -> recv [0,12) and send [30,32) -> recv [25,32). Rank 0's compute
// runs on streams 7 and 9: two lanes of one class, by stream. PP:0F0 on thread 1 spans [1,41),
// inside the one window [0,41) the events make (origin 0).
TEST(KernelTimelineTest, StreamsCpuSpansAndSendRecvFlows) {
  const std::string send =
      CollectiveArgs("send", 1024, "Float", 2, "[0, 1]") + R"J(, "Dst Rank": 1)J";
  const std::string recv =
      CollectiveArgs("recv", 1024, "Float", 2, "[0, 1]") + R"J(, "Src Rank": 0)J";
  RankTrace r0 = Read(TraceBuilder()
                          .Distributed(0, 2)
                          .Annotation("PP:0F0", 1, 40)
                          .Kernel("fwd", 7, 0, 10)
                          .Kernel(kSendRecv, 100, 10, 2, -1, send)
                          .Kernel("side", 9, 12, 5)
                          .Kernel(kSendRecv, 100, 30, 2, -1, send)
                          .Kernel("bwd", 7, 32, 9),
                      "rank0");
  RankTrace r1 = Read(TraceBuilder()
                          .Distributed(1, 2)
                          .Kernel(kSendRecv, 200, 0, 12, -1, recv)
                          .Kernel("fwd", 7, 12, 10)
                          .Kernel(kSendRecv, 200, 25, 7, -1, recv)
                          .Kernel("bwd", 7, 32, 8),
                      "rank1");
  KernelTimeline tl;
  auto a = AnalyzeWithTimeline({r0, r1}, {}, {}, &tl);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(tl.ranks.size(), 2u);
  // Rank 0: compute on stream 7 (fwd, bwd), compute on stream 9, then the sends on stream 100.
  const RankTimeline& z = tl.ranks[0];
  ASSERT_EQ(z.kernels.size(), 5u);
  EXPECT_EQ(z.kernels[0].stream, 7);
  EXPECT_EQ(z.kernels[1].stream, 7);
  EXPECT_DOUBLE_EQ(z.kernels[1].begin_us, 32);
  EXPECT_EQ(z.kernels[2].stream, 9);
  EXPECT_EQ(z.kernels[3].cls, KernelClass::kCommunication);
  EXPECT_EQ(z.kernels[3].stream, 100);
  ASSERT_EQ(z.cpu.size(), 1u);
  EXPECT_EQ(tl.names[z.cpu[0].name], "PP:0F0");
  EXPECT_EQ(z.cpu[0].tid, 1);
  EXPECT_DOUBLE_EQ(z.cpu[0].begin_us, 1);
  EXPECT_DOUBLE_EQ(z.cpu[0].end_us, 41);
  EXPECT_TRUE(tl.ranks[1].cpu.empty());
  ASSERT_EQ(tl.flows.size(), 2u);
  const double want[2][4] = {{10, 12, 0, 12}, {30, 32, 25, 32}};
  for (int k = 0; k < 2; ++k) {
    const TimelineFlow& f = tl.flows[k];
    EXPECT_EQ(f.from_rank, 0);
    EXPECT_EQ(f.to_rank, 1);
    EXPECT_EQ(f.from_stream, 100);
    EXPECT_EQ(f.to_stream, 200);
    EXPECT_DOUBLE_EQ(f.send_begin_us, want[k][0]);
    EXPECT_DOUBLE_EQ(f.send_end_us, want[k][1]);
    EXPECT_DOUBLE_EQ(f.recv_begin_us, want[k][2]);
    EXPECT_DOUBLE_EQ(f.recv_end_us, want[k][3]);
  }
  // The bounds: one flow and no CPU span kept.
  KernelTimelineOptions small;
  small.max_flows = 1;
  small.max_cpu_spans = 0;
  ASSERT_TRUE(AnalyzeWithTimeline({r0, r1}, {}, small, &tl).ok());
  EXPECT_EQ(tl.flows.size(), 1u);
  EXPECT_EQ(tl.flows_dropped, 1);
  EXPECT_TRUE(tl.ranks[0].cpu.empty());
  EXPECT_EQ(tl.cpu_spans_dropped, 1);
}

// Steps #0 [0,50), #1 [50,100), #2 [100,150) (the last dropped). Kernels launched in each: [5,15)
// inside PP:0F0, [60,80) inside PP:0B0, [110,120) dropped. Windows [5,15) and [60,80), origin 5:
// [0,10) step 0 and [55,75) step 1. Measured F 10, B 20.
TEST(KernelTimelineTest, StepWindowsAndActionCosts) {
  RankTrace t = Read(TraceBuilder()
                         .Step(0, 0, 50)
                         .Step(1, 50, 50)
                         .Step(2, 100, 50)
                         .Annotation("PP:0F0", 1, 3)
                         .Launch(1, 2)
                         .Kernel("f_kernel", 7, 5, 10, 1)
                         .Annotation("PP:0B0", 51, 3)
                         .Launch(2, 52)
                         .Kernel("b_kernel", 7, 60, 20, 2)
                         .Launch(3, 102)
                         .Kernel("f_kernel", 7, 110, 10, 3));
  KernelTimeline tl;
  auto a = AnalyzeWithTimeline({t}, {}, {}, &tl);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_DOUBLE_EQ(tl.origin_us, 5);
  ASSERT_EQ(tl.windows.size(), 2u);
  EXPECT_EQ(tl.windows[0].step, 0);
  EXPECT_DOUBLE_EQ(tl.windows[0].begin_us, 0);
  EXPECT_DOUBLE_EQ(tl.windows[0].end_us, 10);
  EXPECT_EQ(tl.windows[1].step, 1);
  EXPECT_DOUBLE_EQ(tl.windows[1].begin_us, 55);
  EXPECT_DOUBLE_EQ(tl.windows[1].end_us, 75);
  EXPECT_DOUBLE_EQ(tl.span_us, 75);
  EXPECT_EQ(tl.ranks[0].kernels.size(), 2u);
  EXPECT_TRUE(tl.ranks[0].gaps.empty());  // each window is covered end to end
  EXPECT_EQ(tl.actions[0].count, 1);
  EXPECT_DOUBLE_EQ(tl.actions[0].mean_us, 10);
  EXPECT_EQ(tl.actions[1].count, 1);
  EXPECT_DOUBLE_EQ(tl.actions[1].mean_us, 20);
  EXPECT_EQ(tl.actions[2].count, 0);
}

// 1000 compute kernels [2i, 2i+1): window [0,1999), 1000 kernels and 999 idle gaps of 1 us =
// 1999 intervals. With a bound of 100, the resolution starts at 1999/4000 and doubles: at
// res = 1999/4000 x 2^k a run grows while its span (1, 3, 5, ...) is below res, so runs hold
// 2, 3, 5, 9, 17, 33 members for k = 2..7, giving 1000, 667, 400, 223, 118 and, at k = 7 (res =
// 63.97), ceil(1000/33) + ceil(999/33) = 31 + 31 = 62 <= 100 intervals. The first run is
// [0,65) with 33 kernels and 33 us busy; the gaps still sum to 999.
TEST(KernelTimelineTest, MergesShortNeighboursUntilTheBoundHolds) {
  TraceBuilder b;
  for (int i = 0; i < 1000; ++i) b.Kernel("k", 7, 2 * i, 1);
  RankTrace t = Read(b);
  KernelTimelineOptions o;
  o.max_intervals = 100;
  KernelTimeline tl;
  auto a = AnalyzeWithTimeline({t}, {}, o, &tl);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_DOUBLE_EQ(tl.resolution_us, 1999.0 / 4000 * 128);
  EXPECT_EQ(tl.intervals, 62);
  const RankTimeline& r = tl.ranks[0];
  EXPECT_EQ(r.kernels.size(), 31u);
  EXPECT_EQ(r.gaps.size(), 31u);
  EXPECT_DOUBLE_EQ(r.kernels[0].begin_us, 0);
  EXPECT_DOUBLE_EQ(r.kernels[0].end_us, 65);
  EXPECT_EQ(r.kernels[0].count, 33);
  EXPECT_DOUBLE_EQ(r.kernels[0].busy_us, 33);
  EXPECT_DOUBLE_EQ(r.gaps[0].begin_us, 1);
  EXPECT_DOUBLE_EQ(r.gaps[0].end_us, 66);
  EXPECT_DOUBLE_EQ(r.gaps[0].us, 33);
  int64_t count = 0;
  double busy = 0, idle = 0;
  for (const TimelineKernel& k : r.kernels) count += k.count, busy += k.busy_us;
  for (const TimelineGap& g : r.gaps) idle += g.us;
  EXPECT_EQ(count, 1000);
  EXPECT_DOUBLE_EQ(busy, 1000);
  EXPECT_DOUBLE_EQ(idle, 999);
  EXPECT_DOUBLE_EQ(r.pure_idle_us, a->ranks[0].pure_idle_us);

  // Under the bound nothing is merged.
  KernelTimeline exact;
  ASSERT_TRUE(AnalyzeWithTimeline({t}, {}, {}, &exact).ok());
  EXPECT_DOUBLE_EQ(exact.resolution_us, 0);
  EXPECT_EQ(exact.intervals, 1999);
}

TEST(KernelTimelineTest, LongNamesAreCutAtACharacterBoundary) {
  const std::string name = std::string(9, 'a') + "\xC3\xA9" + "tail";  // é at bytes 9..10
  RankTrace t = Read(TraceBuilder().Kernel(name, 7, 0, 1));
  KernelTimelineOptions o;
  o.max_name_bytes = 10;  // would split the é
  KernelTimeline tl;
  ASSERT_TRUE(AnalyzeWithTimeline({t}, {}, o, &tl).ok());
  ASSERT_EQ(tl.names.size(), 1u);
  EXPECT_EQ(tl.names[0], std::string(9, 'a') + "…");
}

}  // namespace
}  // namespace infralens::trace
