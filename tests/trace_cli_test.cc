// Golden tests of `infralens trace` on the shared real traces and on synthetic ones, plus its exit
// codes and one-line errors. The shared traces live beside the repository (../shared); tests that
// need them are skipped with a message when it is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "golden_test_util.h"
#include "request/command.h"
#include "trace/testing.h"

namespace infralens::testing {
namespace {

// Output with the machine-specific folder of the shared traces replaced by "<traces>".
std::string Portable(std::string s, const std::string& dir) {
  for (size_t at = s.find(dir); at != std::string::npos; at = s.find(dir, at))
    s.replace(at, dir.size(), "<traces>");
  return s;
}

class TraceCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = trace::testing::SharedTracesDir();
    tmp_ = ::testing::TempDir() + "/infralens_trace_cli_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(tmp_);
    std::filesystem::create_directories(tmp_);
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }
  std::string shared_, tmp_;
};

#define REQUIRE_SHARED() \
  if (shared_.empty()) GTEST_SKIP() << "shared traces not found beside the repository (../shared)"

TEST_F(TraceCliTest, Help) {
  auto run = RunCliCapture({"trace", "--help"});
  ASSERT_EQ(run.exit_code, 0);
  ExpectGolden("trace_help.txt", run.out);
  auto analyze = RunCliCapture({"trace", "analyze", "--help"});
  ASSERT_EQ(analyze.exit_code, 0);
  ExpectGolden("trace_analyze_help.txt", analyze.out);
}

TEST_F(TraceCliTest, AnalyzeSharedTracesHtaCompat) {
  REQUIRE_SHARED();
  for (const char* name : {"hta_ddp_allreduce_5step_rank1", "hta_ddp_allreduce_rank0",
                           "hta_sampled_2rank", "param_dlrm_8rank"}) {
    auto run = RunCliCapture({"trace", "analyze", shared_ + "/" + name, "--hta-compat"});
    ASSERT_EQ(run.exit_code, 0) << name << ": " << run.err;
    EXPECT_EQ(run.err, "");
    ExpectGolden(std::string("trace_analyze_") + name + "_hta.txt", Portable(run.out, shared_));
  }
  // The numbers HTA printed (HTA_REFERENCE.txt) show up in the table.
  auto run =
      RunCliCapture({"trace", "analyze", shared_ + "/hta_ddp_allreduce_rank0", "--hta-compat"});
  EXPECT_NE(run.out.find("77.78      17.26           4.97"), std::string::npos) << run.out;
}

TEST_F(TraceCliTest, AnalyzeSharedTracesJson) {
  REQUIRE_SHARED();
  auto run = RunCliCapture({"trace", "analyze", shared_ + "/hta_sampled_2rank", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ExpectGolden("trace_analyze_hta_sampled_2rank.json", Portable(run.out, shared_));
  auto j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["ranks"].size(), 2u);
  for (const char* key :
       {"rank", "idle_us", "compute_us", "non_compute_us", "idle_pct", "compute_pct",
        "non_compute_pct", "overlap_pct", "bubble_pct", "collectives", "streams"}) {
    EXPECT_TRUE(j["ranks"][0].contains(key)) << key;
  }
  auto last = RunCliCapture({"trace", "analyze", shared_ + "/hta_ddp_allreduce_rank0", "--json",
                             "--hta-compat", "--include-last-step"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  ExpectGolden("trace_analyze_hta_ddp_allreduce_rank0_last.json", Portable(last.out, shared_));
  auto lj = nlohmann::json::parse(last.out);
  EXPECT_EQ(lj["ranks"][0]["idle_us"],
            506512.0);  // HTA_REFERENCE.txt, include_last_profiler_step=True
}

// A Megatron-style interleaved run (no PP: annotations): the pipeline, its stages and its
// schedule come from the send/recv peers and the autograd thread.
TEST_F(TraceCliTest, SynthMegatronAnalyze) {
  auto synth =
      RunCliCapture({"trace", "synth", "--style", "megatron", "--schedule", "interleaved-1f1b",
                     "--pp", "4", "--vpp", "2", "-m", "8", "--p2p", "0.05", "-o", tmp_ + "/meg"});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto analyze = RunCliCapture({"trace", "analyze", tmp_ + "/meg"});
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  ExpectGolden("trace_analyze_synth_megatron_interleaved_pp4_v2_m8.txt",
               Portable(analyze.out, tmp_));
  EXPECT_NE(analyze.out.find("schedule: interleaved-1f1b"), std::string::npos);
  EXPECT_EQ(analyze.out.find("PP:"), std::string::npos);
  auto bad = RunCliCapture({"trace", "synth", "--style", "deepspeed", "-o", tmp_ + "/x"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--style deepspeed"), std::string::npos) << bad.err;
}

// A synthetic 1F1B run, analysed, then compared with the schedule engine's own prediction.
TEST_F(TraceCliTest, SynthAnalyzeCompare) {
  auto synth = RunCliCapture({"trace", "synth", "--schedule", "1f1b", "--pp", "4", "-m", "8",
                              "--p2p", "0.05", "-o", tmp_ + "/synth"});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto analyze =
      ExpectCliGolden({"trace", "analyze", tmp_ + "/synth"}, "trace_analyze_synth_1f1b_pp4_m8.txt");
  EXPECT_NE(analyze.out.find("matches 1f1b"), std::string::npos);

  auto pred = RunCliCapture(
      {"schedule", "--schedule", "1f1b", "--pp", "4", "-m", "8", "--p2p", "0.05", "--json"});
  ASSERT_EQ(pred.exit_code, 0);
  std::ofstream(tmp_ + "/pred.json") << pred.out;
  ExpectCliGolden({"trace", "compare", tmp_ + "/pred.json", tmp_ + "/synth"},
                  "trace_compare_synth_1f1b.txt");
  // A different schedule predicted: the order check points at the first difference.
  auto gpipe = RunCliCapture({"schedule", "--schedule", "gpipe", "--pp", "4", "-m", "8", "--json"});
  std::ofstream(tmp_ + "/gpipe.json") << gpipe.out;
  auto diff = RunCliCapture({"trace", "compare", tmp_ + "/gpipe.json", tmp_ + "/synth", "--json"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  auto j = nlohmann::json::parse(diff.out);
  EXPECT_EQ(j["order"][0]["same"], false);
  EXPECT_EQ(j["order"][0]["first_difference"], 4);  // 1F1B runs 0B0 where GPipe runs 0F4
  EXPECT_EQ(j["order"][0]["predicted"], "0F4");
  EXPECT_EQ(j["order"][0]["measured"], "0B0");
  // A plan (the future planner's format) is read too.
  std::ofstream(tmp_ + "/plan.json")
      << R"({"name": "p", "step_time_s": 0.033, "bubble_fraction": 0.25,
                                           "exposed_comm_s": {"pp": 0.001}})";
  auto plan = RunCliCapture({"trace", "compare", tmp_ + "/plan.json", tmp_ + "/synth", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  auto pj = nlohmann::json::parse(plan.out);
  EXPECT_EQ(pj["prediction"]["format"], "plan");
  EXPECT_DOUBLE_EQ(pj["rows"][0]["predicted"].get<double>(), 33.0);
}

TEST_F(TraceCliTest, MergeAlignsRanksIntoOneTrace) {
  auto synth = RunCliCapture({"trace", "synth", "--schedule", "1f1b", "--pp", "2", "-m", "2",
                              "--steps", "2", "--p2p", "0.1", "-o", tmp_ + "/s"});
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  auto merge = ExpectCliGolden({"trace", "merge", tmp_ + "/s", "-o", "-"},
                               "trace_merge_synth_1f1b_pp2_m2.json");
  auto j = nlohmann::json::parse(merge.out);
  std::set<int> pids;
  for (const auto& e : j["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  auto to_file = RunCliCapture({"trace", "merge", tmp_ + "/s", "-o", tmp_ + "/all.json"});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  // stdout is data: with -o the report of what was written is a message, on stderr.
  EXPECT_EQ(to_file.out, "");
  EXPECT_NE(to_file.err.find("clocks aligned on"), std::string::npos) << to_file.err;
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(tmp_ + "/all.json")));
}

// merge and synth write files: declared (one declaration, as every command but serve), never run
// for the API (no files there), and synth's -o is its folder, not the adapter's output file.
TEST_F(TraceCliTest, MergeAndSynthAreDeclaredAndWriteFilesOnlyFromTheCli) {
  for (const char* name : {"trace merge", "trace synth"}) {
    const request::Command* c = request::FindCommand(name);
    ASSERT_NE(c, nullptr) << name;
    cli::Flags flags(name, "", "", {});
    auto run = c->Declare(flags);
    request::RunContext api;
    api.files_allowed = false;
    api.given = [](const std::string&) { return false; };
    auto doc = run->Document(api);
    ASSERT_FALSE(doc.ok()) << name;
    EXPECT_NE(doc.status().message().find("writes files: run it from the CLI"), std::string::npos)
        << doc.status().message();
  }
  EXPECT_TRUE(request::FindCommand("trace synth")->info().own_output);
  auto help = RunCliCapture({"trace", "synth", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("-o, --output-dir"), std::string::npos);
  EXPECT_EQ(help.out.find("--output S"), std::string::npos) << help.out;
}

// Bad input: a clear one-line message naming the file, exit 2 (1 for a missing file); a bad file
// among good ones is reported after the others' results.
TEST_F(TraceCliTest, BadInputIsOneLine) {
  const std::string good =
      trace::testing::TraceBuilder().Distributed(0, 2).Kernel("gemm", 7, 0, 10).Json();
  std::ofstream(tmp_ + "/rank0.json") << good;
  std::ofstream(tmp_ + "/cut.json") << good.substr(0, good.size() / 2);
  std::ofstream(tmp_ + "/bad.json") << "{\"traceEvents\": [{\"a\": 1} {\"b\": 2}]}";
  std::ofstream(tmp_ + "/cpu.json")
      << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1}]})";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      // Unusable input files are a failure (1), missing or malformed alike (docs/cli.md).
      {{"trace", "analyze", tmp_ + "/cut.json"}, 1, "cut.json: truncated"},
      {{"trace", "analyze", tmp_ + "/bad.json"},
       1,
       "bad.json: invalid JSON at byte 26: missing ','"},
      {{"trace", "analyze", tmp_ + "/cpu.json"}, 1, "cpu.json: no GPU events"},
      {{"trace", "analyze", tmp_ + "/nope.json"}, 1, "nope.json: no such file"},
      {{"trace", "analyze"}, 2, "no trace given"},
      {{"trace", "analyse", tmp_}, 2, "did you mean 'analyze'"},
      {{"trace", "analyze", tmp_ + "/rank0.json", "--comm-kernels", "(["},
       2,
       "not a valid regular expression"},
      {{"trace", "merge"}, 2, "no trace given"},
      {{"trace", "compare", tmp_ + "/rank0.json", tmp_ + "/rank0.json"},
       1,
       "neither a schedule prediction"},
      {{"trace", "synth", "--schedule", "1f1b", "--pp", "4", "-m", "2", "-o", tmp_ + "/x"},
       2,
       "-m 2"},
  };
  for (const Case& c : cases) {
    auto run = RunCliCapture(c.args);
    EXPECT_EQ(run.exit_code, c.code) << c.args.back() << ": " << run.err;
    EXPECT_NE(run.err.find(c.fragment), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  // One bad file among many: the good file's results are printed, each bad file gets a line.
  auto mixed = RunCliCapture(
      {"trace", "analyze", tmp_ + "/rank0.json", tmp_ + "/cut.json", tmp_ + "/bad.json", "--json"});
  EXPECT_EQ(mixed.exit_code, 1);  // unusable input files are a failure (docs/cli.md, exit codes)
  auto j = nlohmann::json::parse(mixed.out);
  EXPECT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["errors"].size(), 2u);
  EXPECT_EQ(std::count(mixed.err.begin(), mixed.err.end(), '\n'), 3)
      << mixed.err;  // two files + summary
  EXPECT_NE(mixed.err.find("2 of 3 trace files could not be used"), std::string::npos) << mixed.err;
}

}  // namespace
}  // namespace infralens::testing
