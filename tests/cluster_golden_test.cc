// Golden tests for `infralens topology` and `infralens comm`: the CLI runs in-process and its
// stdout is compared byte for byte with tests/golden/<name>. After an intended change, run
//   INFRALENS_UPDATE_GOLDEN=1 ./infralens_tests --gtest_filter='ClusterGolden*'
// and review the diff of tests/golden/ by hand before committing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace infralens::cli {
namespace {

struct Result {
  int code;
  std::string out, err;
};

Result RunInProcess(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliIO io{out, err, /*color=*/false, /*term_width=*/100};
  int code = RunCli(args, io);
  return {code, out.str(), err.str()};
}

std::string GoldenPath(const std::string& name) {
  return std::string(INFRALENS_SOURCE_DIR) + "/tests/golden/" + name;
}

void ExpectGolden(const std::string& name, const std::vector<std::string>& args) {
  Result r = RunInProcess(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const char* update = std::getenv("INFRALENS_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream f(GoldenPath(name), std::ios::binary);
    f << r.out;
    ASSERT_TRUE(f.good()) << "cannot write " << GoldenPath(name);
    return;
  }
  std::ifstream f(GoldenPath(name), std::ios::binary);
  ASSERT_TRUE(f.good()) << GoldenPath(name) << " is missing; run with INFRALENS_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(r.out, want.str()) << "golden " << name << " differs";
}

TEST(ClusterGoldenTest, TopologyMegatronOnDgxH100) {
  ExpectGolden("topology_dgx_h100_tp8_dp4_pp2.txt",
               {"topology", "--cluster", "dgx-h100", "--nodes", "8", "--tp", "8", "--pp", "2",
                "--dp", "4", "--max-nodes", "3"});
}

TEST(ClusterGoldenTest, TopologyColouredByDp) {
  ExpectGolden("topology_dgx_h100_color_dp.txt",
               {"topology", "--cluster", "dgx-h100", "--tp", "8", "--pp", "2", "--dp", "4",
                "--color-axis", "dp", "--max-nodes", "2"});
}

TEST(ClusterGoldenTest, TopologyPcieServerJson) {
  ExpectGolden("topology_h100_pcie.json", {"topology", "--cluster", "h100-pcie", "--nodes", "2",
                                           "--tp", "2", "--pp", "2", "--json"});
}

TEST(ClusterGoldenTest, TopologyMi300xSvg) {
  ExpectGolden("topology_mi300x.svg",
               {"topology", "--cluster", "mi300x", "--tp", "2", "--format", "svg"});
}

TEST(ClusterGoldenTest, TopologyPresetAsToml) {
  ExpectGolden("topology_dgx_b200.toml", {"topology", "--cluster", "dgx-b200", "--format", "toml"});
}

TEST(ClusterGoldenTest, CommTextbookAlphaBeta) {
  ExpectGolden("comm_textbook_ring.txt",
               {"comm", "--cluster", "dgx-h100", "--nodes", "1", "--ranks", "8", "--algorithm",
                "ring", "--bandwidth", "450", "--latency", "5"});
}

TEST(ClusterGoldenTest, CommDataParallelGroup) {
  ExpectGolden("comm_dp_group.txt", {"comm", "--cluster", "dgx-h100", "--tp", "8", "--pp", "2",
                                     "--dp", "4", "--group", "dp", "--size", "512MiB"});
}

TEST(ClusterGoldenTest, CommPipelineSendRecv) {
  ExpectGolden("comm_pp_send_recv.txt",
               {"comm", "--cluster", "dgx-h100", "--tp", "8", "--pp", "2", "--dp", "4", "--group",
                "pp", "--collective", "send_recv", "--size", "64MiB"});
}

TEST(ClusterGoldenTest, CommSmallMessageJson) {
  ExpectGolden("comm_two_nodes_8KiB.json", {"comm", "--cluster", "dgx-h100", "--nodes", "2",
                                            "--ranks", "16", "--size", "8KiB", "--json"});
}

// Usage errors: exit 2 and one line on stderr naming the bad value.
TEST(ClusterCliErrorsTest, OneLineExitTwo) {
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {{"topology", "--cluster", "dgx-h10"}, "did you mean dgx-h100"},
      {{"topology", "--nodes", "8", "--tp", "8", "--dp", "3", "--pp", "2"},
       "multiply to 48, but the cluster has 64 GPUs"},
      {{"topology", "--tp", "8", "--pp", "2"}, "does not divide the cluster's 8 GPUs"},
      {{"topology", "--nodes", "100000"}, "--nodes 100000"},
      {{"topology", "--nodes", "9000"}, "at most 65536 GPUs"},
      {{"topology", "--order", "tp-dp-xx"}, "unknown axis 'xx'"},
      {{"topology", "--color-axis", "zz"}, "--color-axis zz"},
      {{"topology", "--format", "png"}, "--format png"},
      {{"topology", "--cluster", "/nonexistent/dir/t.toml"}, "cannot open"},
      {{"comm", "--size", "1XB"}, "unknown unit 'XB'"},
      {{"comm", "--size", "0"}, "more than 0 bytes"},
      {{"comm", "--collective", "gather"}, "--collective gather"},
      {{"comm", "--algorithm", "butterfly"}, "--algorithm butterfly"},
      {{"comm", "--collective", "all_gather", "--algorithm", "tree"},
       "does not apply to all_gather"},
      {{"comm", "--bandwidth", "-3"}, "--bandwidth -3"},
      {{"comm", "--latency", "-1"}, "--latency -1"},
      {{"comm", "--ranks", "9"}, "--ranks 9: must be 2..8"},
      {{"comm", "--ranks", "1"}, "--ranks 1"},
      {{"comm", "--tp", "8", "--group", "dp"}, "has no dp groups with more than one GPU"},
      {{"topology", "--tp", "2", "--ep", "2", "--dp", "3"},
       "--ep 2: must divide the data-parallel degree dp = 3"},
      {{"comm", "--tp", "8"}, "pick one of its groups with --group"},
      {{"comm", "--group", "dp", "--ranks", "4"}, "one or the other"},
      {{"comm", "--group", "xp", "--tp", "8"}, "--group xp"},
      // Issue 26: a subnormal bandwidth once printed "inf us" with exit 0; an invalid order was
      // ignored when --ranks was given.
      {{"comm", "--bandwidth", "1e-310"}, "--bandwidth 1e-310: must be 0.001 to"},
      {{"comm", "--ranks", "4", "--order", "tp-xx"}, "unknown axis 'xx'"},
  };
  for (const auto& c : cases) {
    Result r = RunInProcess(c.args);
    EXPECT_EQ(r.code, c.needle == std::string("cannot open") ? 1 : 2) << c.args[1] << " " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(ClusterCliErrorsTest, HelpListsExamples) {
  for (const char* cmd : {"topology", "comm"}) {
    Result r = RunInProcess({cmd, "--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("examples:"), std::string::npos);
  }
  Result top = RunInProcess({"--help"});
  EXPECT_NE(top.out.find("topology"), std::string::npos);
  EXPECT_NE(top.out.find("comm"), std::string::npos);
}

// A topology file on disk goes through the same path as a preset.
TEST(ClusterCliErrorsTest, TopologyFileFromDisk) {
  const std::string path = ::testing::TempDir() + "/cluster_golden_test.toml";
  {
    std::ofstream f(path);
    f << "base = \"dgx-h100\"\nnodes = 2\n[network]\nnic_Gbps = 200\n";
  }
  Result r = RunInProcess({"comm", "--cluster", path, "--ranks", "16", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"gpus\": 16"), std::string::npos);
  {
    std::ofstream f(path);
    f << "base = \"dgx-h100\"\n[network]\nnic_Gbps = -200\n";
  }
  r = RunInProcess({"topology", "--cluster", path});
  EXPECT_EQ(r.code, 1);  // a malformed input file is a failure (docs/cli.md, exit codes)
  EXPECT_NE(r.err.find("network.nic_Gbps = -200"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace infralens::cli
