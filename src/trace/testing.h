// Test helpers (header-only, used by *_test.cc): a builder for small hand-made Kineto traces
// whose answers are worked out by hand, and the location of the shared real traces.
#ifndef INFRALENS_TRACE_TESTING_H_
#define INFRALENS_TRACE_TESTING_H_

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace/kineto_reader.h"
#include "trace/pipeline_detect.h"

namespace infralens::trace::testing {

class TraceBuilder {
 public:
  TraceBuilder& Distributed(int rank, int world_size) {
    dist_ =
        fmt::format(R"J("distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}},)J",
                    rank, world_size);
    return *this;
  }
  // A GPU kernel; `extra_args` is appended inside args (start it with ", ").
  TraceBuilder& Kernel(const std::string& name, int stream, double ts, double dur,
                       long correlation = -1, const std::string& extra_args = "") {
    std::string corr = correlation >= 0 ? fmt::format(R"J(, "correlation": {})J", correlation) : "";
    events_.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": {}{}{}}}}})J",
        name, stream, ts, dur, stream, corr, extra_args));
    return *this;
  }
  TraceBuilder& Memcpy(int stream, double ts, double dur, long correlation = -1) {
    std::string corr = correlation >= 0 ? fmt::format(R"J(, "correlation": {})J", correlation) : "";
    events_.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": {}, "ts": {}, "dur": {}, "args": {{"stream": {}{}}}}})J",
        stream, ts, dur, stream, corr));
    return *this;
  }
  TraceBuilder& Launch(long correlation, double ts, double dur = 2) {
    events_.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": {}, "args": {{"correlation": {}}}}})J",
        ts, dur, correlation));
    return *this;
  }
  TraceBuilder& Annotation(const std::string& name, double ts, double dur) {
    events_.push_back(fmt::format(
        R"J({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": {}, "args": {{"External id": 1}}}})J",
        name, ts, dur));
    return *this;
  }
  TraceBuilder& Step(int n, double ts, double dur) {
    return Annotation(fmt::format("ProfilerStep#{}", n), ts, dur);
  }
  TraceBuilder& Raw(const std::string& event) {
    events_.push_back(event);
    return *this;
  }
  std::string Json() const {
    std::string out = "{\"schemaVersion\": 1, " + dist_ + "\n\"traceEvents\": [\n";
    for (size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n" : "") + events_[i];
    return out + "\n]}\n";
  }
  // Writes the trace to `path` and returns the path.
  std::string Write(const std::string& path) const {
    std::ofstream(path, std::ios::binary) << Json();
    return path;
  }

 private:
  std::string dist_;
  std::vector<std::string> events_;
};

// Collective metadata as PyTorch writes it on NCCL kernels.
inline std::string CollectiveArgs(const std::string& name, long nelems, const std::string& dtype,
                                  int group_size, const std::string& ranks, long seq = -1) {
  std::string s = fmt::format(
      R"J(, "Collective name": "{}", "In msg nelems": {}, "Out msg nelems": {}, "Group size": {}, "dtype": "{}", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "{}")J",
      name, nelems, nelems, group_size, dtype, ranks);
  if (seq >= 0) s += fmt::format(R"J(, "Seq": {})J", seq);
  return s;
}

// The shared real traces (HTA's test data and PARAM's), beside the repository: "" when absent.
inline std::string SharedTracesDir() {
  for (const std::string& dir : {std::string(INFRALENS_SOURCE_DIR) + "/../shared/data/traces",
                                 std::string("/work/shared/data/traces")}) {
    if (std::filesystem::is_directory(dir)) return dir;
  }
  return "";
}

// `b`'s trace read as the Kineto reader reads a file called `label`.
inline RankTrace Read(const TraceBuilder& b, const std::string& label = "t") {
  auto t = ReadKinetoTraceBytes(b.Json(), label);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : RankTrace{};
}

// A ring all-reduce kernel's name as NCCL 2.x writes it in a Kineto trace.
inline constexpr const char* kAllReduce =
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

// One rank's hand-worked trace (analysis_test.cc and kernel_timeline_test.cc), `t0` us later:
// compute [0,10) and [20,30) on stream 7, a ring all-reduce [5,25) on stream 20, a memcpy [40,45)
// on stream 8.
inline TraceBuilder ComputeCommMemcpyTrace(double t0 = 0) {
  return TraceBuilder()
      .Kernel("gemm", 7, t0, 10)
      .Kernel("gemm", 7, t0 + 20, 10)
      .Kernel(kAllReduce, 20, t0 + 5, 20)
      .Memcpy(8, t0 + 40, 5);
}

// Hostile input for pipeline detection (pipeline_detect_test.cc and bench/trace_bench.cc): 64
// ranks of 20,000 send/recv operations each to peers scattered among 1,000 by a fixed linear
// congruential sequence, one step's operation string as long.
inline std::vector<PipeRank> HostilePipeRanks() {
  std::vector<PipeRank> ranks;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int r = 0; r < 64; ++r) {
    PipeRank pr;
    pr.rank = r;
    pr.has_autograd = true;
    for (int k = 0; k < 20000; ++k) {
      const int64_t peer = static_cast<int64_t>((next() >> 33) % 1000);
      const bool send = (next() >> 40) & 1;
      pr.transfers.push_back({send, peer});
      pr.ops += "FPB"[(next() >> 35) % 3];
      if (pr.ops.back() == 'P') pr.p2p.push_back({{send, peer}});
    }
    pr.p2p_kernels = static_cast<int64_t>(pr.p2p.size());
    ranks.push_back(std::move(pr));
  }
  return ranks;
}

// An empty folder under gtest's temporary directory named after the running test (ctest runs
// suites in parallel, so the suite and test names keep them apart) and `name`.
inline std::string TestDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string d = ::testing::TempDir() + "/infralens_" + info->test_suite_name() + "_" +
                  info->name() + "_" + name;
  std::filesystem::remove_all(d);
  return d;
}

}  // namespace infralens::trace::testing

#endif  // INFRALENS_TRACE_TESTING_H_
