// The analyses on tiny hand-made traces whose answers are worked out by hand in the comments.
#include "trace/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>

#include "trace/analysis_internal.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/synth.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::CollectiveArgs;
using testing::TraceBuilder;

using testing::Read;

TraceAnalysis AnalyzeOk(const std::vector<RankTrace>& traces, AnalysisOptions o = {}) {
  auto a = Analyze(traces, o);
  EXPECT_TRUE(a.ok()) << a.status().message();
  return a.ok() ? std::move(a).value() : TraceAnalysis{};
}

using testing::kAllReduce;

// compute [0,10) [20,30) on stream 7, all-reduce [5,25) on stream 20, memcpy [40,45) on stream 8.
// Window 45; busy [0,30) + [40,45) = 35, so idle 10; compute 20; non-compute 15; the all-reduce
// overlaps compute over [5,10) + [20,25) = 10 of its 20 (50%); communication alone [10,20) = 10;
// memory alone 5.
TEST(AnalysisTest, TemporalBreakdownAndOverlapByHand) {
  RankTrace t = Read(testing::ComputeCommMemcpyTrace());
  for (bool hta : {false, true}) {
    AnalysisOptions o;
    o.hta_compat = hta;
    TraceAnalysis a = AnalyzeOk({t}, o);
    ASSERT_EQ(a.ranks.size(), 1u);
    const RankResult& r = a.ranks[0];
    EXPECT_DOUBLE_EQ(r.kernel_time_us, 45);
    EXPECT_DOUBLE_EQ(r.idle_us, 10);
    EXPECT_DOUBLE_EQ(r.compute_us, 20);
    EXPECT_DOUBLE_EQ(r.non_compute_us, 15);
    EXPECT_DOUBLE_EQ(r.comm_only_us, 10);
    EXPECT_DOUBLE_EQ(r.memory_only_us, 5);
    EXPECT_DOUBLE_EQ(r.overlap_pct, 50);
    EXPECT_NEAR(r.idle_pct, 100.0 * 10 / 45, 1e-12);
    EXPECT_DOUBLE_EQ(r.kernel_types[1], 10);  // computation alone: [0,5) + [25,30)
    EXPECT_DOUBLE_EQ(r.kernel_types[3], 10);  // computation + communication
    EXPECT_DOUBLE_EQ(r.kernel_types[2], 10);
    EXPECT_DOUBLE_EQ(r.kernel_types[4], 5);
  }
}

// HTA rounds fractional timestamps inwards: start up, end down (trace_parser.py).
TEST(AnalysisTest, HtaCompatRoundsFractionalTimes) {
  RankTrace t = Read(TraceBuilder().Kernel("a", 7, 0.4, 10.2).Kernel("b", 7, 20.6, 4.0));
  TraceAnalysis native = AnalyzeOk({t});
  EXPECT_NEAR(native.ranks[0].kernel_time_us, 24.2, 1e-9);  // 0.4 .. 24.6
  EXPECT_NEAR(native.ranks[0].idle_us, 10.0, 1e-9);         // 10.6 .. 20.6
  AnalysisOptions o;
  o.hta_compat = true;
  TraceAnalysis hta = AnalyzeOk({t}, o);
  EXPECT_DOUBLE_EQ(hta.ranks[0].kernel_time_us, 23);  // 1 .. 24
  EXPECT_DOUBLE_EQ(hta.ranks[0].idle_us, 11);         // 10 .. 21
}

// Stream 7: A [0,10) launched at -5; B [12,20) launched at 1 (before A ended: a 2 us launch
// gap, kernel wait); C [100,110) launched at 50, after B ended (host wait 80); D [200,210)
// launched at 105, while C ran, and the 90 us gap is over 30 us (other).
TEST(AnalysisTest, IdleTimeSplitPerStream) {
  RankTrace t = Read(TraceBuilder()
                         .Launch(1, -5)
                         .Launch(2, 1)
                         .Launch(3, 50)
                         .Launch(4, 105)
                         .Kernel("a", 7, 0, 10, 1)
                         .Kernel("b", 7, 12, 8, 2)
                         .Kernel("c", 7, 100, 10, 3)
                         .Kernel("d", 7, 200, 10, 4));
  TraceAnalysis a = AnalyzeOk({t});
  ASSERT_EQ(a.ranks[0].streams.size(), 1u);
  const StreamIdle& s = a.ranks[0].streams[0];
  EXPECT_EQ(s.events, 4);
  EXPECT_DOUBLE_EQ(s.host_wait_us, 80);
  EXPECT_DOUBLE_EQ(s.kernel_wait_us, 2);
  EXPECT_DOUBLE_EQ(s.other_us, 90);
  EXPECT_TRUE(s.has_host_wait && s.has_kernel_wait && s.has_other);
}

// HTA joins a kernel whose correlation id matches no CPU event with event number 0 of the trace:
// here a CPU operator at t=1000, so HTA files B's 40 us gap as host wait (1000 > 10); InfraLens,
// knowing no launch for B, files it as other (40 >= 30).
TEST(AnalysisTest, HtaIndexZeroJoin) {
  RankTrace t = Read(
      TraceBuilder()
          .Raw(
              R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000, "dur": 5})")
          .Launch(1, -5)
          .Kernel("a", 7, 0, 10, 1)
          .Kernel("b", 7, 50, 10, 99));
  TraceAnalysis native = AnalyzeOk({t});
  EXPECT_DOUBLE_EQ(native.ranks[0].streams[0].other_us, 40);
  EXPECT_DOUBLE_EQ(native.ranks[0].streams[0].host_wait_us, 0);
  AnalysisOptions o;
  o.hta_compat = true;
  TraceAnalysis hta = AnalyzeOk({t}, o);
  EXPECT_DOUBLE_EQ(hta.ranks[0].streams[0].host_wait_us, 40);
  EXPECT_DOUBLE_EQ(hta.ranks[0].streams[0].other_us, 0);
}

// Three steps on the CPU; the kernel of each is launched inside it. By default the last step is
// dropped (HTA's default); --include-last-step keeps it.
TEST(AnalysisTest, LastStepDroppedUnlessAsked) {
  TraceBuilder b;
  b.Step(1, 0, 100).Step(2, 100, 100).Step(3, 200, 100);
  b.Launch(1, 10).Kernel("a", 7, 20, 10, 1);
  b.Launch(2, 110).Kernel("b", 7, 120, 30, 2);
  b.Launch(3, 210).Kernel("c", 7, 220, 40, 3);
  RankTrace t = Read(b);
  for (bool hta : {false, true}) {
    AnalysisOptions o;
    o.hta_compat = hta;
    TraceAnalysis dropped = AnalyzeOk({t}, o);
    EXPECT_EQ(dropped.ranks[0].gpu_events_analyzed, 2);
    EXPECT_EQ(dropped.ranks[0].steps_analyzed, 2);
    EXPECT_DOUBLE_EQ(dropped.ranks[0].kernel_time_us, 130);  // 20 .. 150
    EXPECT_DOUBLE_EQ(dropped.ranks[0].compute_us, 40);
    o.include_last_step = true;
    TraceAnalysis all = AnalyzeOk({t}, o);
    EXPECT_EQ(all.ranks[0].gpu_events_analyzed, 3);
    EXPECT_DOUBLE_EQ(all.ranks[0].kernel_time_us, 240);  // 20 .. 260
    // Pipeline windows are the steps: [20,30), [120,150) and, with the last step, [220,260).
    EXPECT_EQ(all.pipeline.windows, 3);
    EXPECT_DOUBLE_EQ(all.pipeline.window_us, 10 + 30 + 40);
    EXPECT_DOUBLE_EQ(all.pipeline.bubble_fraction, 0);
  }
}

// all_reduce of 1e6 floats (4 MB) in 1000 us on 4 ranks: algbw 4 GB/s, busbw 4 x 2(4-1)/4 = 6 GB/s.
// all_gather to 1e6 bf16 (2 MB out) in 500 us: algbw 4 GB/s, busbw 4 x 3/4 = 3 GB/s.
TEST(AnalysisTest, CollectiveBandwidthAsNcclTests) {
  RankTrace t = Read(
      TraceBuilder()
          .Distributed(0, 4)
          .Kernel(kAllReduce, 20, 0, 1000, -1,
                  CollectiveArgs("allreduce", 1000000, "Float", 4, "[0, 1, 2, 3]"))
          .Kernel(
              "ncclDevKernel_AllGather_RING_LL", 20, 2000, 500, -1,
              ", \"Collective name\": \"_allgather_base\", \"In msg nelems\": 250000, \"Out msg "
              "nelems\": 1000000, \"Group size\": 4, \"dtype\": \"BFloat16\"")
          .Kernel("gemm", 7, 0, 10));
  TraceAnalysis a = AnalyzeOk({t});
  const auto& c = a.ranks[0].collectives;
  ASSERT_EQ(c.size(), 2u);
  const CollectiveSummary& ar = c[0].kind == "all_reduce" ? c[0] : c[1];
  const CollectiveSummary& ag = c[0].kind == "all_reduce" ? c[1] : c[0];
  EXPECT_EQ(ar.kind, "all_reduce");
  EXPECT_DOUBLE_EQ(ar.bytes, 4e6);
  EXPECT_DOUBLE_EQ(ar.algbw_gbps, 4);
  EXPECT_DOUBLE_EQ(ar.busbw_gbps, 6);
  EXPECT_EQ(ag.kind, "all_gather");
  EXPECT_DOUBLE_EQ(ag.algbw_gbps, 4);
  EXPECT_DOUBLE_EQ(ag.busbw_gbps, 3);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 8), 1);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_to_all", 2), 0.5);
}

// Two all-reduces on 3 ranks, matched by sequence number.
//   seq 0: starts 0, 10, 50, all end at 100: waits 50, 40, 0; transfer 50 each; rank 2 last,
//          holding the others 40 us past the second-to-last arrival.
//   seq 1: starts 200, 260, 205, all end at 300: waits 60, 0, 55; transfer 40; rank 1 last, 55 us.
// Totals: wait 110, 40, 55; transfer 90 each; delay caused 0, 55, 40 of 95: rank 1 stands out
// (above 1.5 x an even share, 47.5).
std::vector<RankTrace> ThreeRanks(double shift_rank1 = 0) {
  const double starts[2][3] = {{0, 10, 50}, {200, 260, 205}};
  const double ends[2] = {100, 300};
  std::vector<RankTrace> out;
  for (int r = 0; r < 3; ++r) {
    TraceBuilder b;
    b.Distributed(r, 3);
    const double s = r == 1 ? shift_rank1 : 0;
    for (int k = 0; k < 2; ++k) {
      b.Kernel(kAllReduce, 20, starts[k][r] + s, ends[k] - starts[k][r], -1,
               CollectiveArgs("allreduce", 1000, "Float", 3, "[0, 1, 2]", k));
    }
    b.Kernel("gemm", 7, 400 + s, 10);
    out.push_back(Read(b, "rank" + std::to_string(r)));
  }
  return out;
}

TEST(AnalysisTest, WaitVersusTransferAndStragglers) {
  TraceAnalysis a = AnalyzeOk(ThreeRanks());
  EXPECT_EQ(a.cross.instances, 2);
  EXPECT_EQ(a.cross.method, "seq");
  const double wait[3] = {110, 40, 55}, caused[3] = {0, 55, 40};
  for (int r = 0; r < 3; ++r) {
    EXPECT_DOUBLE_EQ(a.ranks[r].coll_wait_us, wait[r]) << r;
    EXPECT_DOUBLE_EQ(a.ranks[r].coll_transfer_us, 90) << r;
    EXPECT_DOUBLE_EQ(a.ranks[r].coll_delay_caused_us, caused[r]) << r;
    EXPECT_DOUBLE_EQ(a.ranks[r].clock_offset_us, 0) << r;
  }
  EXPECT_EQ(a.cross.stragglers, std::vector<int64_t>{1});
}

// Rank 1's clock runs 1000 us ahead: the offset is found from the collective ends, reported, and
// --align-clocks removes it, giving back the numbers above.
TEST(AnalysisTest, ClockOffsetEstimatedAndAligned) {
  TraceAnalysis skewed = AnalyzeOk(ThreeRanks(1000));
  EXPECT_DOUBLE_EQ(skewed.ranks[1].clock_offset_us, 1000);
  EXPECT_NE(skewed.cross.note.find("--align-clocks"), std::string::npos) << skewed.cross.note;
  AnalysisOptions o;
  o.align_clocks = true;
  TraceAnalysis aligned = AnalyzeOk(ThreeRanks(1000), o);
  const double wait[3] = {110, 40, 55};
  for (int r = 0; r < 3; ++r) EXPECT_DOUBLE_EQ(aligned.ranks[r].coll_wait_us, wait[r]) << r;
}

// Without metadata, kernels are matched by their order only when every rank ran as many of them
// and the k-th ones overlap in time.
TEST(AnalysisTest, KernelOrderMatchingNeedsAgreement) {
  auto make = [&](int rank, std::vector<std::pair<double, double>> spans) {
    TraceBuilder b;
    b.Distributed(rank, 2);
    for (auto [ts, dur] : spans) b.Kernel(kAllReduce, 20, ts, dur);
    b.Kernel("gemm", 7, 0, 1);
    return Read(b, "r" + std::to_string(rank));
  };
  TraceAnalysis ok = AnalyzeOk({make(0, {{0, 10}, {50, 10}}), make(1, {{5, 5}, {45, 15}})});
  EXPECT_EQ(ok.cross.instances, 2);
  EXPECT_EQ(ok.cross.method, "kernel order");
  EXPECT_DOUBLE_EQ(ok.ranks[0].coll_wait_us, 5 + 0);
  EXPECT_DOUBLE_EQ(ok.ranks[1].coll_wait_us, 0 + 5);
  TraceAnalysis disjoint = AnalyzeOk({make(0, {{0, 10}, {50, 10}}), make(1, {{20, 5}, {70, 5}})});
  EXPECT_EQ(disjoint.cross.instances, 0);
  EXPECT_NE(disjoint.cross.note.find("could not be matched"), std::string::npos);
  TraceAnalysis counts = AnalyzeOk({make(0, {{0, 10}, {50, 10}}), make(1, {{5, 5}})});
  EXPECT_EQ(counts.cross.instances, 0);
}

// A SendRecv kernel without metadata is a pipeline transfer only in a trace with PP: annotations
// (otherwise it is as likely an all_to_all). Compute [0,10) and [30,40), SendRecv [10,25): the
// window is 40 and 20 of it has no compute; with PP annotations 15 of that is p2p wait.
TEST(AnalysisTest, SendRecvCountsAsPipelineWaitOnlyInPipelineTraces) {
  const char* kSendRecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)";
  TraceBuilder plain;
  plain.Kernel("gemm", 7, 0, 10).Kernel(kSendRecv, 30, 10, 15).Kernel("gemm", 7, 30, 10);
  TraceAnalysis a = AnalyzeOk({Read(plain)});
  EXPECT_DOUBLE_EQ(a.ranks[0].no_compute_us, 20);
  EXPECT_DOUBLE_EQ(a.ranks[0].p2p_wait_us, 0);
  EXPECT_DOUBLE_EQ(a.ranks[0].bubble_us, 5);
  TraceBuilder pp = plain;
  pp.Annotation("PP:0F0", 0, 1);
  TraceAnalysis b = AnalyzeOk({Read(pp)});
  EXPECT_DOUBLE_EQ(b.ranks[0].p2p_wait_us, 15);
  EXPECT_DOUBLE_EQ(b.ranks[0].pure_idle_us, 5);
  EXPECT_DOUBLE_EQ(b.ranks[0].bubble_us, 20);
  EXPECT_DOUBLE_EQ(b.ranks[0].bubble_pct, 50);
}

TEST(AnalysisTest, CustomKernelPatterns) {
  RankTrace t =
      Read(TraceBuilder().Kernel("my_allreduce_kernel", 7, 0, 10).Kernel("gemm", 7, 10, 10));
  TraceAnalysis def = AnalyzeOk({t});
  EXPECT_DOUBLE_EQ(def.ranks[0].compute_us, 20);
  AnalysisOptions o;
  o.comm_pattern = "^my_allreduce";
  TraceAnalysis custom = AnalyzeOk({t}, o);
  EXPECT_DOUBLE_EQ(custom.ranks[0].compute_us, 10);
  EXPECT_DOUBLE_EQ(custom.ranks[0].comm_only_us, 10);
  o.comm_pattern = "([unclosed";
  auto bad = Analyze({t}, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--comm-kernels"), std::string::npos);
}

TEST(AnalysisTest, KernelClassesAsHtaDefinesThem) {
  auto k = KernelClassifier::Create(false, "", "");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->Classify("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                        GpuCat::kKernel),
            KernelClass::kCommunication);
  EXPECT_EQ(k->Classify("ncclSymkDevKernel_AllReduce_RSxLD_AGxST_bf16", GpuCat::kKernel),
            KernelClass::kCommunication);
  EXPECT_EQ(k->Classify("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", GpuCat::kKernel),
            KernelClass::kCommunication);
  EXPECT_EQ(k->Classify("hcom_allReduce__123", GpuCat::kKernel), KernelClass::kCommunication);
  EXPECT_EQ(k->Classify("Memcpy DtoD (Device -> Device)", GpuCat::kMemcpy), KernelClass::kMemory);
  EXPECT_EQ(k->Classify("Memset (Device)", GpuCat::kKernel), KernelClass::kMemory);
  EXPECT_EQ(k->Classify("my_copy", GpuCat::kMemcpy), KernelClass::kMemory);  // by Kineto's category
  EXPECT_EQ(k->Classify("void at::native::vectorized_elementwise_kernel<4>", GpuCat::kKernel),
            KernelClass::kCompute);
  auto hta = KernelClassifier::Create(true, "", "");
  EXPECT_EQ(hta->Classify("my_copy", GpuCat::kMemcpy),
            KernelClass::kCompute);  // HTA looks at names only
  EXPECT_EQ(NormalizeCollectiveKind("_reduce_scatter_base", ""), "reduce_scatter");
  EXPECT_EQ(NormalizeCollectiveKind("all_gather_into_tensor_coalesced", ""), "all_gather");
  EXPECT_EQ(NormalizeCollectiveKind("", "ncclKernel_Broadcast_RING_LL_Sum_int8_t"), "broadcast");
  EXPECT_EQ(DtypeBytes("BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("Long"), 8);
}

// AnalysisOptions::stop is asked as the analysis goes (before each rank's events, after sorting
// them, between ranks, after the cross-rank parts); its first true stops the analysis at once with
// the stopped status, whichever ask it is.
TEST(AnalysisTest, StopEndsTheAnalysisAtItsFirstTrue) {
  const std::vector<RankTrace> traces = {
      Read(TraceBuilder().Distributed(0, 2).Kernel("gemm", 7, 0, 10).Kernel("gemm", 7, 20, 10),
           "r0"),
      Read(TraceBuilder().Distributed(1, 2).Kernel("gemm", 7, 0, 10), "r1")};
  int asks = 0;
  AnalysisOptions o;
  o.stop = [&asks] {
    ++asks;
    return false;
  };
  TraceAnalysis full = AnalyzeOk(traces, o);
  EXPECT_EQ(full.ranks.size(), 2u);
  EXPECT_FALSE(full.options.stop);  // the caller's callback is not kept in the result
  const int n = asks;
  EXPECT_GE(n, 7);  // 3 per rank and 1 after the cross-rank parts
  for (int k = 1; k <= n; ++k) {
    asks = 0;
    o.stop = [&asks, k] { return ++asks >= k; };
    auto stopped = Analyze(traces, o);
    ASSERT_FALSE(stopped.ok()) << "stop true at ask " << k;
    EXPECT_EQ(stopped.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(stopped.status().message().find("the analysis was stopped"), std::string::npos)
        << stopped.status().message();
    EXPECT_LE(asks, k + 1);  // nothing more is computed (one more ask says where it stopped)
  }
}

// SpanMerger (one span at a time) gives MergeSorted's groups and Length, on random spans in start
// order, some of them with end < start (HTA's inward rounding of sub-microsecond events).
TEST(AnalysisTest, SpanMergerEqualsMergeSorted) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> step(0, 5), len(-2, 12), count(0, 60);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<internal::Span> spans;
    double t = 0;
    const int n = count(rng);
    for (int i = 0; i < n; ++i) {
      t += step(rng) * 0.5;
      spans.push_back({t, t + len(rng) * 0.75});
    }
    std::vector<internal::Span> kept;
    internal::SpanMerger m(&kept);
    for (const internal::Span& s : spans) m.Add(s);
    const double length = m.Finish();
    const std::vector<internal::Span> want = internal::MergeSorted(spans);
    ASSERT_EQ(kept.size(), want.size()) << trial;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(kept[i].begin, want[i].begin);
      EXPECT_EQ(kept[i].end, want[i].end);
    }
    EXPECT_EQ(length, internal::Length(want));
    if (!want.empty()) {
      EXPECT_EQ(m.first_begin(), want.front().begin);
      EXPECT_EQ(m.last_end(), want.back().end);
    }
  }
}

// LengthsOf merges events in start order as they go by and sorts any other order first: both
// give the same lengths (the same merged spans, summed in the same order).
TEST(AnalysisTest, LengthsOfInAnyOrder) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> step(0, 4), len(-1, 9), kind(0, 3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<internal::Ev> events(40);
    double t = 0;
    for (internal::Ev& e : events) {
      t += step(rng);
      e.ts = t;
      e.end = t + len(rng);
      const int k = kind(rng);
      e.cls = k == 0 ? KernelClass::kCommunication : KernelClass::kCompute;
      e.p2p = k == 0;
    }
    std::vector<const internal::Ev*> in_order, shuffled;
    for (const internal::Ev& e : events) in_order.push_back(&e);
    shuffled = in_order;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const internal::WindowLengths a = internal::LengthsOf(in_order);
    const internal::WindowLengths b = internal::LengthsOf(shuffled);
    EXPECT_EQ(a.all_us, b.all_us);
    EXPECT_EQ(a.compute_us, b.compute_us);
    EXPECT_EQ(a.p2p_wait_us, b.p2p_wait_us);
    EXPECT_GT(a.all_us, 0);
  }
}

// LaunchIndex finds the last launch of an id in file order, in its dense table (ids close
// together) and in its sorted form (ids far apart) alike: checked against a search of every
// launch, on ids with repeats, gaps, negatives and the ends of int64.
TEST(AnalysisTest, LaunchIndexFindsTheLastLaunchOfAnId) {
  std::mt19937_64 rng(5);
  auto brute = [](const RankTrace& tr, int64_t id) {
    uint32_t found = internal::kNoLaunch;
    for (size_t i = 0; i < tr.launches.size(); ++i)
      if (id != -1 && tr.launches[i].correlation == id) found = static_cast<uint32_t>(i);
    return found;
  };
  for (int trial = 0; trial < 60; ++trial) {
    RankTrace tr;
    const int n = static_cast<int>(rng() % 50);
    // Spans below 2n (dense), around it, and far above it (sorted).
    const int64_t spread = trial % 3 == 0 ? n + 1 : trial % 3 == 1 ? 2 * n + 1 : 1'000'000;
    const int64_t base = trial % 5 == 0   ? std::numeric_limits<int64_t>::max() - spread
                         : trial % 5 == 1 ? std::numeric_limits<int64_t>::min()
                                          : static_cast<int64_t>(rng() % 100) - 50;
    for (int i = 0; i < n; ++i) {
      tr.launches.push_back({base + static_cast<int64_t>(rng() % static_cast<uint64_t>(spread)),
                             static_cast<double>(i), 1, -1});
    }
    if (n > 0 && trial % 4 == 0) tr.launches[0].correlation = -1;  // -1 is never found
    const internal::LaunchIndex index(tr);
    std::vector<int64_t> probes = {-1, 0, base + spread, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max()};
    if (base > std::numeric_limits<int64_t>::min()) probes.push_back(base - 1);
    for (const Launch& l : tr.launches) probes.push_back(l.correlation);
    for (int64_t id : probes) {
      const uint32_t want = brute(tr, id);
      ASSERT_EQ(index.Position(id), want) << trial << " " << id;
      EXPECT_EQ(index.Find(id), want == internal::kNoLaunch ? nullptr : &tr.launches[want]);
    }
  }
}

TEST(AnalysisTest, AnalysedEventKeepsItsLaunch) {
  static_assert(sizeof(internal::Ev) == 48, "kAnalysisBytesPerGpuEvent counts a 48-byte Ev");
  // Two launches of id 11 (the last is the join's), none of id 12.
  RankTrace tr = Read(TraceBuilder()
                          .Launch(11, 1)
                          .Launch(11, 3)
                          .Kernel("gemm", 7, 10, 5, 11)
                          .Kernel("gemm", 7, 20, 5, 12));
  std::vector<internal::RankWork> work;
  auto a = internal::AnalyzeKeepingWork({tr}, AnalysisOptions{}, &work);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(work.size(), 1u);
  ASSERT_EQ(work[0].events.size(), 2u);
  EXPECT_EQ(work[0].events[0].launch, 1u);
  EXPECT_EQ(work[0].events[1].launch, internal::kNoLaunch);
}

// Without a stop callback the ranks are analysed on every core at once; with one, one after
// another. The JSON is the same, on the shared multi-rank traces and a generated pipeline (with
// and without HTA's mode), and so is a job's failure.
TEST(AnalysisTest, RanksInParallelEqualOneAfterAnother) {
  std::vector<std::vector<RankTrace>> jobs;
  const std::string shared = testing::SharedTracesDir();
  for (const char* dir : {"param_dlrm_8rank", "hta_sampled_2rank"}) {
    if (shared.empty()) break;
    auto files = ExpandTracePaths({shared + "/" + dir});
    ASSERT_TRUE(files.ok()) << files.status().message();
    jobs.push_back(LoadTraces(*files).traces);
  }
  auto s = schedule::Generate(schedule::ScheduleKind::kInterleaved1F1B, {4, 2, 8});
  ASSERT_TRUE(s.ok());
  SynthOptions so;
  so.megatron = true;
  const std::string dir = testing::TestDir("synth");
  ASSERT_TRUE(WriteSynthTrace(*s, sim::Costs{}, so, dir).ok());
  auto files = ExpandTracePaths({dir});
  ASSERT_TRUE(files.ok());
  jobs.push_back(LoadTraces(*files).traces);
  std::filesystem::remove_all(dir);
  // A job whose second rank has no GPU event in its analysed steps: the same error, in order.
  jobs.push_back(
      {Read(TraceBuilder().Step(1, 0, 10).Step(2, 10, 10).Launch(1, 1).Kernel("gemm", 7, 2, 1, 1)),
       Read(TraceBuilder().Step(1, 0, 10).Step(2, 10, 10).Launch(1, 15).Kernel("gemm", 7, 16, 1,
                                                                               1))});
  for (const auto& job : jobs) {
    ASSERT_GE(job.size(), 2u);
    for (bool hta : {false, true}) {
      AnalysisOptions parallel;
      parallel.hta_compat = hta;
      AnalysisOptions sequential = parallel;
      sequential.stop = [] { return false; };
      auto a = Analyze(job, parallel);
      auto b = Analyze(job, sequential);
      ASSERT_EQ(a.ok(), b.ok());
      if (!a.ok()) {
        EXPECT_EQ(a.status().message(), b.status().message());
        continue;
      }
      JsonWriter wa(0), wb(0);
      WriteAnalysisJson(wa, *a);
      WriteAnalysisJson(wb, *b);
      EXPECT_EQ(wa.str(), wb.str()) << job[0].path;
      EXPECT_EQ(a->errors.size(), b->errors.size());
    }
  }
}

}  // namespace
}  // namespace infralens::trace
