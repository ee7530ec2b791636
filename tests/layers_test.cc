// The layers of src/, lowest first, and the rule that keeps them: a file includes only its own
// folder and the folders below it (tests may reach higher, to compare layers). Written down here
// so that a change that breaks the rule fails CI instead of waiting for a reviewer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "golden_test_util.h"

namespace infralens {
namespace {

// Folder -> rank, as docs/architecture.md draws them. The trace data model and its Kineto reader
// are both in trace/, above io (which no longer knows about traces), so no folder needs a rank of
// its own file by file.
int Rank(const std::string& unit) {
  static const std::map<std::string, int> kRanks = {
      {"base", 0},       {"model", 1}, {"hw", 1},      {"cluster", 1}, {"schedule", 1},
      {"collective", 2}, {"sim", 2},   {"plan", 3},    {"render", 3},  {"lab", 4},
      {"io", 5},         {"trace", 6}, {"request", 7}, {"server", 8},  {"cli", 9},
  };
  auto it = kRanks.find(unit);
  return it == kRanks.end() ? -1 : it->second;
}

std::string UnitOf(const std::string& path) {  // "trace/loader.h" -> "trace"
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

// No two files include each other in a circle, directly or through others (a header that
// includes a header that includes it back compiles only by accident of include guards), and no two
// folders do: the folder graph, each folder a node, is acyclic too.
TEST(LayersTest, NoIncludeCycles) {
  const std::filesystem::path src = testing::SourcePath("src");
  static const std::regex kInclude(R"(^#include "([a-z_]+/[^"]+)\")");
  std::map<std::string, std::vector<std::string>> files, folders;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    const std::string rel = std::filesystem::relative(entry.path(), src).generic_string();
    std::ifstream in(entry.path());
    std::string line;
    auto& out = files[rel];
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string target = m[1];
      if (!std::filesystem::exists(src / target)) continue;  // a library header
      out.push_back(target);
      const std::string stem = entry.path().stem().string();
      const bool test = stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_test") == 0;
      const std::string from = rel.substr(0, rel.find('/')),
                        to = target.substr(0, target.find('/'));
      if (!test && from != to) folders[from].push_back(to);  // tests may reach higher
    }
  }
  // Depth-first search with three colours; returns the cycle found, as a path, or "".
  auto find_cycle = [](const std::map<std::string, std::vector<std::string>>& graph) {
    std::map<std::string, int> colour;  // 0 new, 1 on the stack, 2 done
    std::vector<std::string> stack;
    std::string cycle;
    std::function<bool(const std::string&)> visit = [&](const std::string& n) {
      colour[n] = 1;
      stack.push_back(n);
      auto it = graph.find(n);
      if (it != graph.end()) {
        for (const std::string& next : it->second) {
          if (colour[next] == 1) {
            auto from = std::find(stack.begin(), stack.end(), next);
            for (; from != stack.end(); ++from) cycle += *from + " -> ";
            cycle += next;
            return true;
          }
          if (colour[next] == 0 && visit(next)) return true;
        }
      }
      stack.pop_back();
      colour[n] = 2;
      return false;
    };
    for (const auto& [n, _] : graph)
      if (colour[n] == 0 && visit(n)) break;
    return cycle;
  };
  EXPECT_GT(files.size(), 100u);
  EXPECT_EQ(find_cycle(files), "") << "files include each other in a circle";
  EXPECT_EQ(find_cycle(folders), "") << "folders include each other in a circle";
  // The search itself finds a circle when there is one.
  EXPECT_EQ(find_cycle({{"a.h", {"b.h"}}, {"b.h", {"c.h"}}, {"c.h", {"a.h"}}}),
            "a.h -> b.h -> c.h -> a.h");
  EXPECT_EQ(find_cycle({{"a.h", {"b.h", "c.h"}}, {"b.h", {"c.h"}}}), "");
}

// Issue 23: an engine's error names the input it is about as a field (base/status.h), which each
// front end spells its own way; it never writes a CLI flag. The CLI, the server and the requests
// above the engine spell flags themselves, and the readers of Megatron-LM launch scripts quote
// Megatron's own flags.
TEST(LayersTest, EngineErrorsNameFieldsNotFlags) {
  const std::filesystem::path src = testing::SourcePath("src");
  static const std::regex kError(
      R"(\b(InvalidArgument|FailedPrecondition|NotFound|IoError|ResourceExhausted|Internal)\()");
  static const std::regex kLiteral(R"("(?:[^"\\]|\\.)*")");
  static const std::regex kFlag(R"((^|[" (/'`])--[a-z])");
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cc") continue;
    const std::string rel = std::filesystem::relative(entry.path(), src).generic_string();
    const std::string stem = entry.path().stem().string();
    if (stem.ends_with("_test") || stem.ends_with("_fuzz") || stem == "main") continue;
    const int rank = Rank(UnitOf(rel));
    if (rank < 0 || rank >= Rank("request")) continue;
    if (rel == "io/megatron_args.cc" || rel == "io/launch_script.cc") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kError);
         it != std::sregex_iterator(); ++it) {
      const size_t start = static_cast<size_t>(it->position());
      const std::string call = text.substr(start, text.find(';', start) - start);
      for (auto lit = std::sregex_iterator(call.begin(), call.end(), kLiteral);
           lit != std::sregex_iterator(); ++lit) {
        ++checked;
        EXPECT_FALSE(std::regex_search(lit->str(), kFlag))
            << rel << ": " << lit->str() << " names a flag; write the field as \u2039name\u203a";
      }
    }
  }
  EXPECT_GT(checked, 300);  // the engine's messages were read
}

}  // namespace
}  // namespace infralens
