// Golden tests of what the CLI prints for the pipeline lab, plus end-to-end checks of the numbers
// in the printed output against the closed forms.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

TEST(CliGoldenTest, CompareDefault) {
  auto run = ExpectCliGolden({"compare", "--pp", "4", "-m", "8"}, "compare_pp4_m8.txt");
  // The fill-drain row must say 27.27% (3/11), whatever else changes.
  EXPECT_NE(run.out.find("27.27%"), std::string::npos);
}

TEST(CliGoldenTest, CompareJson) {
  ExpectCliGolden({"compare", "--pp", "4", "-m", "8", "--json"}, "compare_pp4_m8.json");
}

TEST(CliGoldenTest, Schedule1F1BAscii) {
  auto run = ExpectCliGolden(
      {"schedule", "--schedule", "1f1b", "--pp", "4", "-m", "8", "--f", "1", "--b", "1"},
      "schedule_1f1b_pp4_m8.txt");
  EXPECT_NE(run.out.find("makespan 22 ms; bubble 27.27%"), std::string::npos);
}

TEST(CliGoldenTest, EveryScheduleAscii) {
  for (const char* name :
       {"gpipe", "interleaved-1f1b", "looped-bfs", "zb-h1", "zb-h2", "zbv", "dualpipev"}) {
    ExpectCliGolden({"schedule", "--schedule", name, "--pp", "4", "-m", "8"},
                    std::string("schedule_") + name + "_pp4_m8.txt");
  }
}

TEST(CliGoldenTest, ScheduleFormats) {
  ExpectCliGolden({"schedule", "--schedule", "zb-h1", "--pp", "2", "-m", "3", "--json"},
                  "schedule_zbh1_pp2_m3.json");
  ExpectCliGolden(
      {"schedule", "--schedule", "dualpipev", "--pp", "2", "-m", "4", "--format", "csv"},
      "schedule_dualpipev_pp2_m4.csv");
  ExpectCliGolden({"schedule", "--schedule", "1f1b", "--pp", "2", "-m", "2", "--format", "chrome"},
                  "schedule_1f1b_pp2_m2.chrome.json");
  ExpectCliGolden(
      {"schedule", "--schedule", "interleaved-1f1b", "--pp", "2", "-m", "4", "--format", "svg"},
      "schedule_interleaved_pp2_m4.svg");
}

// Writing PyTorch's CSV and loading it back gives the same simulation.
TEST(CliGoldenTest, LoadRoundTrip) {
  auto csv =
      RunCliCapture({"schedule", "--schedule", "zbv", "--pp", "4", "-m", "8", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0);
  std::string path = ::testing::TempDir() + "/zbv.csv";
  std::ofstream(path) << csv.out;
  auto loaded = RunCliCapture({"schedule", "--load", path, "--json"});
  auto generated =
      RunCliCapture({"schedule", "--schedule", "zbv", "--pp", "4", "-m", "8", "--json"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  // Same timings; only the schedule's name differs.
  std::string a = loaded.out, b = generated.out;
  a.replace(a.find("\"custom\""), 8, "\"zbv\"");
  EXPECT_EQ(a, b);
  std::remove(path.c_str());
}

TEST(CliGoldenTest, LoadErrorsPointAtTheProblem) {
  std::string path = ::testing::TempDir() + "/broken.csv";
  std::ofstream(path)
      << "0F0,0F1,0B1,0B0\n1F0,1F1,1B0,1B1\n";  // rank 0 runs B1 first: fine, but ...
  auto ok = RunCliCapture({"schedule", "--load", path});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;  // ... reversed backward order is a legal (if odd) schedule
  std::ofstream(path) << "0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n";
  auto cyc = RunCliCapture({"schedule", "--load", path});
  EXPECT_EQ(cyc.exit_code, 1);  // a malformed input file is a failure (docs/cli.md, exit codes)
  EXPECT_NE(cyc.err.find("deadlock"), std::string::npos) << cyc.err;
  EXPECT_NE(cyc.err.find(path), std::string::npos) << cyc.err;
  std::ofstream(path) << "0F0,0B0\n1F0,1Q0\n";
  auto bad = RunCliCapture({"schedule", "--load", path});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("1Q0"), std::string::npos) << bad.err;
  std::remove(path.c_str());
}

TEST(CliGoldenTest, HelpAndUnknownCommand) {
  auto help = RunCliCapture({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  ExpectGolden("help.txt", help.out);
  // No argument at all is a usage error: the command list on stderr, exit 2, nothing on stdout.
  auto none = RunCliCapture({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(none.out.empty());
  EXPECT_EQ(none.err, help.out);
  auto typo = RunCliCapture({"shedule"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'schedule'?"), std::string::npos) << typo.err;
  auto sched_help = RunCliCapture({"schedule", "--help"});
  EXPECT_EQ(sched_help.exit_code, 0);
  ExpectGolden("schedule_help.txt", sched_help.out);
}

// Every command that writes a document takes --format from its own list, --json as --format json,
// and refuses any other format in one line naming the value and the list.
TEST(CliTest, OutputFormatsAreCheckedPerCommand) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"schedule", "--format", "xml"}, "--format xml: expected ascii, json, csv, chrome or svg\n"},
      {{"compare", "--format", "html"}, "--format html: expected table, markdown or json\n"},
      {{"topology", "--format", "png"}, "--format png: expected ascii, svg, json or toml\n"},
      {{"scenarios", "--format", "table"}, "--format table: expected markdown or json\n"},
  };
  for (const auto& [args, message] : cases) {
    auto run = RunCliCapture(args);
    EXPECT_EQ(run.exit_code, 2) << args[0];
    EXPECT_EQ(run.err, "infralens " + args[0] + ": error: " + message);
  }
  // --json wins over --format, as the help says.
  auto json = RunCliCapture({"schedule", "--format", "xml", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{", 0), 0u);
}

}  // namespace
}  // namespace infralens::testing
