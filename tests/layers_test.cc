// The layers of src/, lowest first, and the rule that keeps them: a file includes only its own
// folder and the folders below it (tests may reach higher, to compare layers). Written down here
// so that a change that breaks the rule fails CI instead of waiting for a reviewer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "golden_test_util.h"

namespace infralens {
namespace {

// Folder (or one file that is its own layer) -> rank. trace/model.h is the trace data model that
// io's Kineto reader fills (as model/ is what io's config.json reader fills); the rest of trace/
// (the loader, analysis, merge) reads through io and sits above it.
int Rank(const std::string& unit) {
  static const std::map<std::string, int> kRanks = {
      {"base", 0},       {"model", 1}, {"hw", 1},      {"cluster", 1}, {"schedule", 1},
      {"collective", 2}, {"sim", 2},   {"plan", 3},    {"render", 3},  {"trace/model.h", 3},
      {"io", 4},         {"trace", 5}, {"request", 6}, {"server", 7},  {"cli", 8},
  };
  auto it = kRanks.find(unit);
  return it == kRanks.end() ? -1 : it->second;
}

std::string UnitOf(const std::string& path) {  // "trace/loader.h" -> "trace"
  if (path == "trace/model.h") return path;
  return path.substr(0, path.find('/'));
}

TEST(LayersTest, NoFileIncludesALayerAboveItsOwn) {
  const std::filesystem::path src = testing::SourcePath("src");
  static const std::regex kInclude(R"(^#include "([a-z_]+/[^"]+)\")");
  int files = 0, includes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(entry.path(), src).generic_string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    const std::string stem = entry.path().stem().string();
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_test") == 0) continue;
    if (rel.find("test_util") != std::string::npos) continue;
    const int own = Rank(UnitOf(rel));
    ASSERT_GE(own, 0) << rel << ": a folder this test does not know; give it a rank";
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string target = m[1];
      const int rank = Rank(UnitOf(target));
      if (rank < 0) continue;  // a library header such as "CLI/CLI.hpp"
      ++includes;
      EXPECT_LE(rank, own) << rel << " includes " << target << ", a layer above its own";
    }
  }
  EXPECT_GT(files, 100);
  EXPECT_GT(includes, 300);
}

}  // namespace
}  // namespace infralens
