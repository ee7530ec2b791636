#include "golden_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/cli.h"

namespace infralens::testing {

std::string SourcePath(const std::string& relative) {
  return std::string(INFRALENS_SOURCE_DIR) + "/" + relative;
}

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::vector<std::string> Tp8Pp4Vpp5Interleaved() {
  return {"--tp", "8", "--pp", "4", "--vpp", "5", "--schedule", "interleaved-1f1b"};
}

std::string ReadSource(const std::string& relative) {
  std::ifstream f(SourcePath(relative), std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot read " << relative;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CliRun RunCliCapture(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CliIO io{out, err, false, 100};
  CliRun run;
  run.exit_code = cli::RunCli(args, io);
  run.out = out.str();
  run.err = err.str();
  return run;
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = SourcePath("tests/golden/" + name);
  const char* update = std::getenv("INFRALENS_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f.good()) << "missing golden file " << path
                        << " (create it with INFRALENS_UPDATE_GOLDEN=1 and review it)";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string expected = ss.str();
  if (expected == actual) return;
  std::istringstream e(expected), a(actual);
  std::string el, al;
  int line = 0;
  while (true) {
    ++line;
    bool he = static_cast<bool>(std::getline(e, el));
    bool ha = static_cast<bool>(std::getline(a, al));
    if (!he && !ha) break;
    if (!he || !ha || el != al) {
      ADD_FAILURE() << name << " differs at line " << line
                    << "\n  expected: " << (he ? el : "<end>")
                    << "\n  actual:   " << (ha ? al : "<end>");
      return;
    }
  }
  ADD_FAILURE() << name << " differs (line endings or trailing bytes)";
}

CliRun ExpectCliGolden(const std::vector<std::string>& args, const std::string& golden) {
  CliRun run = RunCliCapture(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // A failed run's output is not compared (nor, under INFRALENS_UPDATE_GOLDEN, written).
  if (run.exit_code == 0) ExpectGolden(golden, run.out);
  return run;
}

}  // namespace infralens::testing
