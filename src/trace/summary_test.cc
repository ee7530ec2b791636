// Summaries merged give exactly what `trace analyze` gives on the files: the same JSON, byte for
// byte, over synthetic pipelines (PyTorch and Megatron-LM styles, with and without collective
// metadata), the shared real traces (HTA's and PARAM's), every reading option, clock alignment
// and unusable files; and a summary does not grow with the compute kernels.
#include "trace/summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json_writer.h"
#include "schedule/schedule.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/synth.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

using testing::TestDir;

std::string Json(const StatusOr<TraceAnalysis>& a) {
  if (!a.ok()) return "error: " + a.status().message();
  JsonWriter w;
  WriteAnalysisJson(w, *a);
  return w.str();
}

// `trace analyze FILES` and the merge of each file's summary, as JSON.
void ExpectSame(const std::vector<std::string>& files, const AnalysisOptions& o) {
  const std::string direct = Json(AnalyzeLoaded(LoadTraces(files), o));
  std::vector<SummaryText> summaries;
  AnalysisOptions read = o;
  read.align_clocks = false;  // the merge's
  for (const std::string& f : files) {
    auto s = SummarizeTraceFile(f, read);
    ASSERT_TRUE(s.ok()) << s.status().message();
    summaries.push_back({f, *s});
  }
  const std::string merged = Json(AnalyzeSummaries(summaries, o.align_clocks));
  EXPECT_EQ(direct, merged) << "hta_compat " << o.hta_compat << " include_last_step "
                            << o.include_last_step << " align_clocks " << o.align_clocks;
}

std::vector<AnalysisOptions> EveryOption() {
  std::vector<AnalysisOptions> out;
  for (int bits = 0; bits < 8; ++bits) {
    AnalysisOptions o;
    o.hta_compat = bits & 1;
    o.include_last_step = bits & 2;
    o.align_clocks = bits & 4;
    out.push_back(o);
  }
  return out;
}

std::vector<std::string> Synth(const std::string& dir, schedule::ScheduleKind kind, int pp, int vpp,
                               int m, SynthOptions so) {
  auto s = schedule::Generate(kind, {pp, vpp, m});
  EXPECT_TRUE(s.ok());
  sim::Costs costs;
  costs.uniform.f_ms = 1;
  costs.uniform.b_ms = 2;
  costs.p2p_ms = 0.05;
  auto written = WriteSynthTrace(*s, costs, so, dir);
  EXPECT_TRUE(written.ok()) << written.status().message();
  auto files = ExpandTracePaths({dir});
  EXPECT_TRUE(files.ok());
  return files.ok() ? *files : std::vector<std::string>{};
}

TEST(TraceSummary, MergeEqualsAnalyzeOnSyntheticPipelines) {
  SynthOptions pytorch;
  SynthOptions megatron;
  megatron.megatron = true;  // no PP: annotations: the pipeline comes from send/recv peers
  SynthOptions bare;
  bare.no_metadata = true;  // collectives matched by kernel order
  const auto f1 = Synth(TestDir("1f1b"), schedule::ScheduleKind::k1F1B, 4, 0, 8, pytorch);
  const auto f2 =
      Synth(TestDir("meg"), schedule::ScheduleKind::kInterleaved1F1B, 4, 2, 8, megatron);
  const auto f3 = Synth(TestDir("bare"), schedule::ScheduleKind::k1F1B, 2, 0, 4, bare);
  for (const AnalysisOptions& o : EveryOption()) {
    ExpectSame(f1, o);
    ExpectSame(f2, o);
    ExpectSame(f3, o);
  }
}

TEST(TraceSummary, MergeEqualsAnalyzeOnSharedRealTraces) {
  const std::string root = testing::SharedTracesDir();
  if (root.empty()) GTEST_SKIP() << "shared traces not found beside the repository";
  for (const char* name : {"hta_sampled_2rank", "param_dlrm_8rank", "hta_ddp_allreduce_rank0"}) {
    auto files = ExpandTracePaths({root + "/" + name});
    ASSERT_TRUE(files.ok()) << files.status().message();
    for (const AnalysisOptions& o : EveryOption()) ExpectSame(*files, o);
  }
}

TEST(TraceSummary, UnusableFilesAreListedAsAnalyzeListsThem) {
  const std::string dir = TestDir("bad");
  auto files = Synth(dir, schedule::ScheduleKind::k1F1B, 2, 0, 4, SynthOptions{});
  std::ofstream(dir + "/rank5.json") << "{\"traceEvents\": [";    // truncated
  std::ofstream(dir + "/rank6.json") << "{\"traceEvents\": []}";  // no GPU events
  files = *ExpandTracePaths({dir});
  ASSERT_EQ(files.size(), 4u);
  ExpectSame(files, AnalysisOptions{});
  // Not a summary, another version, other options: refused, naming the summary.
  auto s = SummarizeTraceFile(files[0], AnalysisOptions{});
  ASSERT_TRUE(s.ok());
  auto bad = AnalyzeSummaries({{"x.json", "{\"traceEvents\": []}"}}, false);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("x.json: not a trace summary"), std::string::npos);
  std::string v2 = *s;
  v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
  bad = AnalyzeSummaries({{"v2.json", v2}}, false);
  EXPECT_NE(bad.status().message().find("v2.json: summary version 2"), std::string::npos);
  AnalysisOptions hta;
  hta.hta_compat = true;
  auto other = SummarizeTraceFile(files[1], hta);
  bad = AnalyzeSummaries({{"a.json", *s}, {"b.json", *other}}, false);
  EXPECT_NE(bad.status().message().find("b.json: summarised with other options than a.json"),
            std::string::npos);
  EXPECT_EQ(AnalyzeSummaries({}, false).status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceSummary, DoesNotGrowWithComputeKernels) {
  // Ten times the compute kernels (and four CPU operators each): the file grows several times,
  // the summary (communication, steps, lengths) not at all but for the digits of the lengths.
  SynthOptions few, many;
  many.kernels_per_action = 10;
  many.cpu_ops_per_kernel = 4;
  const auto a = Synth(TestDir("few"), schedule::ScheduleKind::k1F1B, 2, 0, 8, few);
  const auto b = Synth(TestDir("many"), schedule::ScheduleKind::k1F1B, 2, 0, 8, many);
  const auto file_a = std::filesystem::file_size(a[0]), file_b = std::filesystem::file_size(b[0]);
  EXPECT_GT(file_b, 5 * file_a);
  const size_t sum_a = SummarizeTraceFile(a[0], {})->size();
  const size_t sum_b = SummarizeTraceFile(b[0], {})->size();
  EXPECT_LT(sum_b, sum_a + sum_a / 10);
}

}  // namespace
}  // namespace infralens::trace
