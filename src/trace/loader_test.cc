#include "trace/loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "base/units.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TraceBuilder;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/infralens_loader_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const TraceBuilder& b) {
    return b.Write(dir_ + "/" + name);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
    return dir_ + "/" + name;
  }
  static TraceBuilder Rank(int rank, int world) {
    TraceBuilder b;
    if (rank >= 0) b.Distributed(rank, world);
    return b.Kernel("gemm", 7, 0, 10);
  }
  std::string dir_;
};

TEST_F(LoaderTest, RankFromFileName) {
  EXPECT_EQ(RankFromFileName("/x/rank3.json"), 3);
  EXPECT_EQ(RankFromFileName("sampled_rank-12.json.gz"), 12);
  EXPECT_EQ(RankFromFileName("trace_rank_7.json"), 7);
  EXPECT_EQ(RankFromFileName("worker5_step_12.1694128201549.pt.trace.json.gz"), 5);
  EXPECT_EQ(RankFromFileName("df_index_resolver.json.gz"), -1);
  EXPECT_EQ(RankFromFileName("ranking.json"), -1);
}

TEST_F(LoaderTest, FolderExpansionSortsAndFilters) {
  Write("b_rank1.json", Rank(1, 2));
  Write("a_rank0.json", Rank(0, 2));
  Write("notes.txt", "not a trace");
  auto files = ExpandTracePaths({dir_});
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_NE((*files)[0].find("a_rank0.json"), std::string::npos);
  auto missing = ExpandTracePaths({dir_ + "/nope"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::filesystem::create_directories(dir_ + "/empty");
  auto empty = ExpandTracePaths({dir_ + "/empty"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no trace files"), std::string::npos);
}

// One bad file among many is reported, each problem in one line naming the file; the others load.
TEST_F(LoaderTest, BadFilesAreReportedAndTheRestKept) {
  std::vector<std::string> files = {
      Write("rank0.json", Rank(0, 4)),
      Write("rank1.json", Rank(1, 4)),
      Write("copy_of_rank1.json", Rank(1, 4)),  // same rank twice
      Write("rank2.json", Rank(3, 4)),          // name and content disagree
      Write("big.json", Rank(9, 4)),            // outside world_size
      Write("other_job.json", Rank(2, 8)),      // world_size differs
      Write("cpu_only.json",
            TraceBuilder().Distributed(2, 4).Annotation("x", 0, 1)),  // no GPU events
      Write("cut.json", Rank(2, 4).Json().substr(0, 60)),             // truncated
      Write("anon.json", Rank(-1, 4)),                                // no rank anywhere
  };
  LoadedTraces loaded = LoadTraces(files);
  ASSERT_EQ(loaded.traces.size(), 2u);
  EXPECT_EQ(loaded.traces[0].rank, 0);
  EXPECT_EQ(loaded.traces[1].rank, 1);
  ASSERT_EQ(loaded.errors.size(), 7u);
  const char* expected[] = {"already loaded from",
                            "file name says rank 2 but distributedInfo.rank is 3",
                            "outside world_size 4",
                            "world_size 8 differs from 4",
                            "no GPU events",
                            "truncated",
                            "cannot tell it from the other ranks"};
  for (size_t i = 0; i < 7; ++i) {
    const std::string& m = loaded.errors[i].status.message();
    EXPECT_NE(m.find(expected[i]), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind(loaded.errors[i].path, 0), 0u) << "names the file: " << m;
  }
}

// Files are read on every core without a progress callback and one after another with one; the
// ranks kept, the files refused and their order are the same either way (file order). Two copies
// of rank 1: the first in file order is kept, whichever thread finishes first.
TEST_F(LoaderTest, ParallelReadEqualsSequentialRead) {
  std::vector<std::string> files;
  for (int r = 0; r < 6; ++r) files.push_back(Write(fmt::format("a{}.json", r), Rank(r, 6)));
  files.push_back(Write("b_again.json", Rank(1, 6)));
  files.push_back(Write("c_cut.json", Rank(2, 6).Json().substr(0, 40)));
  const LoadedTraces parallel = LoadTraces(files);
  trace::KinetoReadOptions sequential;
  int calls = 0;
  sequential.progress = [&calls](uint64_t) {
    ++calls;
    return Status::Ok();
  };
  const LoadedTraces in_order = LoadTraces(files, sequential);
  EXPECT_GT(calls, 0);
  ASSERT_EQ(parallel.traces.size(), 6u);
  ASSERT_EQ(in_order.traces.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(parallel.traces[i].rank, static_cast<int64_t>(i));
    EXPECT_EQ(in_order.traces[i].rank, static_cast<int64_t>(i));
    EXPECT_EQ(parallel.traces[i].gpu.size(), in_order.traces[i].gpu.size());
  }
  ASSERT_EQ(parallel.errors.size(), 2u);
  ASSERT_EQ(in_order.errors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(parallel.errors[i].path, in_order.errors[i].path);
    EXPECT_EQ(parallel.errors[i].status.message(), in_order.errors[i].status.message());
  }
  EXPECT_NE(parallel.errors[0].status.message().find("rank 1 is already loaded from"),
            std::string::npos);
  EXPECT_NE(parallel.errors[0].status.message().find("a1.json"), std::string::npos);
}

// The files of one job share one memory budget, charged with kAnalysisBytesPerGpuEvent per GPU
// event and kAnalysisBytesPerLaunch per launch: a file beyond it is refused in one line naming
// the size and the limit (exit 1 in the CLI), and so is every file after it; a file refused for
// its content gives its charge back.
TEST_F(LoaderTest, MemoryBudgetRefusesInOneLine) {
  auto ten = [](int rank) {  // 10 kernels, each with its launch
    TraceBuilder t = Rank(rank, 2);
    for (int k = 0; k < 10; ++k)
      t.Launch(k + 1, 10.0 * k).Kernel("gemm", 7, 10.0 * k + 3, 5, k + 1);
    return t;
  };
  const std::string a = Write("a.json", ten(0)), b = Write("b.json", ten(1));
  auto alone = ReadKinetoTraceFile(b);  // with a budget of its own, far above it
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  const size_t kernels = alone->gpu.size(), launches = alone->launches.size();
  ASSERT_EQ(launches, 10u);
  const uint64_t cost = kernels * kAnalysisBytesPerGpuEvent + launches * kAnalysisBytesPerLaunch;
  const std::string bad = Write("bad.json", ten(1).Json().substr(0, ten(1).Json().size() - 5));
  {
    TraceMemoryBudget budget(2 * cost);  // room for both
    KinetoReadOptions o;
    o.budget = &budget;
    LoadedTraces loaded = LoadTraceBytes({{"a", ten(0).Json()}, {"b", ten(1).Json()}}, o);
    EXPECT_EQ(loaded.traces.size(), 2u);
    EXPECT_EQ(budget.used_bytes(), 2 * cost);
  }
  {
    TraceMemoryBudget budget(cost + cost / 2);  // room for one
    KinetoReadOptions o;
    o.budget = &budget;
    o.progress = [](uint64_t) { return Status::Ok(); };  // one file after another: a, bad, b
    LoadedTraces loaded = LoadTraces({a, bad, b}, o);
    ASSERT_EQ(loaded.traces.size(), 1u);
    EXPECT_EQ(loaded.traces[0].path, a);
    ASSERT_EQ(loaded.errors.size(), 2u);
    EXPECT_EQ(loaded.errors[0].path, bad);  // truncated: its charge (if any) is given back
    EXPECT_EQ(loaded.errors[1].path, b);
    const Status& st = loaded.errors[1].status;
    EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(st.ExitCode(), 1);
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
    for (const std::string& part :
         {b + ": too large to analyse: after ", std::string(" GPU events and 10 CPU launches"),
          fmt::format("memory budget of {} for all the files together",
                      FormatBytes(static_cast<int64_t>(cost + cost / 2))),
          std::string("(--memory-limit raises it; "),
          fmt::format("about {} bytes per kernel",
                      kAnalysisBytesPerGpuEvent + kAnalysisBytesPerLaunch)}) {
      EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
    }
    EXPECT_EQ(st.field(), "memory_limit");
  }
  // The default budget of a lone read is kDefaultTraceMemoryBudgetBytes.
  TraceMemoryBudget defaults;
  EXPECT_EQ(defaults.limit_bytes(), kDefaultTraceMemoryBudgetBytes);
}

TEST_F(LoaderTest, LoneFileWithoutRankIsRankZero) {
  LoadedTraces loaded = LoadTraces({Write("trace.json", Rank(-1, 0))});
  ASSERT_EQ(loaded.traces.size(), 1u);
  EXPECT_EQ(loaded.traces[0].rank, 0);
}

}  // namespace
}  // namespace infralens::trace
