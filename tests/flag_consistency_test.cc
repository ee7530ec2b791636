// Issue 12: one flag vocabulary. Every command's options are read from its own --help (the text a
// user sees, so the test cannot drift from what is printed), and every option that appears in
// more than one command must carry one help text and one default everywhere. The web API's
// parameters (GET /api lists them) are the same options under their underscore names, and must
// have the same defaults and, except where the API states its own limits, the same help.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "golden_test_util.h"
#include "server/api.h"

namespace infralens {
namespace {

using testing::RunCliCapture;

struct Option {
  std::string help;
  std::string default_text;  // "" when none is shown
};

// The options section of one --help: "  -o, --output S   write to ... [default]".
std::map<std::string, Option> ParseOptions(const std::string& help) {
  std::map<std::string, Option> out;
  const size_t start = help.find("\noptions:\n");
  if (start == std::string::npos) return out;
  size_t pos = start + 10;
  static const std::regex kRow(R"(^  (\S.*?)  +(\S.*)$)");
  static const std::regex kDefault(R"(^(.*) \[([^\[\]]*)\]$)");
  while (pos < help.size()) {
    const size_t end = help.find('\n', pos);
    const std::string line = help.substr(pos, end - pos);
    pos = end == std::string::npos ? help.size() : end + 1;
    if (line.empty()) break;
    std::smatch m;
    if (!std::regex_match(line, m, kRow)) continue;
    const std::string left = m[1];
    Option opt;
    opt.help = m[2];
    std::smatch d;
    if (std::regex_match(opt.help, d, kDefault)) {
      opt.default_text = d[2];
      opt.help = d[1];
    }
    // The long names in the left column ("-o, --output S" -> --output).
    static const std::regex kLong(R"(--[a-z0-9-]+)");
    for (std::sregex_iterator it(left.begin(), left.end(), kLong), e; it != e; ++it) {
      out[it->str()] = opt;
    }
  }
  return out;
}

// Every command and subcommand with its --help.
std::map<std::string, std::string> AllHelp() {
  std::map<std::string, std::string> helps;
  std::vector<std::vector<std::string>> invocations;
  for (const cli::Command& c : cli::Commands()) invocations.push_back({c.name});
  invocations.push_back({"worksheet", "check"});
  for (size_t k = 0; k < invocations.size(); ++k) {
    std::vector<std::string> args = invocations[k];
    args.push_back("--help");
    auto run = RunCliCapture(args);
    EXPECT_EQ(run.exit_code, 0) << args[0] << ": " << run.err;
    std::string name = invocations[k][0];
    for (size_t i = 1; i < invocations[k].size(); ++i) name += " " + invocations[k][i];
    helps[name] = run.out;
    // A command with subcommands lists them ("subcommands:\n  analyze   ..."): each gets its
    // own --help.
    const size_t sub = run.out.find("\nsubcommands:\n");
    if (invocations[k].size() == 1 && sub != std::string::npos) {
      size_t pos = sub + 14;
      while (pos < run.out.size() && run.out.compare(pos, 2, "  ") == 0) {
        const size_t end = run.out.find('\n', pos);
        const std::string line = run.out.substr(pos + 2, end - pos - 2);
        invocations.push_back({invocations[k][0], line.substr(0, line.find(' '))});
        pos = end + 1;
      }
    }
  }
  return helps;
}

// Options whose meaning is the command's by nature, each with the reason.
const std::map<std::string, std::string>& PerCommandOptions() {
  static const std::map<std::string, std::string> kAllowed = {
      {"--format", "each command lists its own output formats"},
  };
  return kAllowed;
}

TEST(FlagConsistencyTest, OneNameOneHelpOneDefault) {
  const auto helps = AllHelp();
  ASSERT_GE(helps.size(), cli::Commands().size() + 4);  // trace's subcommands and worksheet check
  // name -> (help, default) -> the commands that say so
  std::map<std::string, std::map<std::pair<std::string, std::string>, std::vector<std::string>>>
      seen;
  size_t options = 0;
  for (const auto& [cmd, help] : helps) {
    for (const auto& [name, opt] : ParseOptions(help)) {
      seen[name][{opt.help, opt.default_text}].push_back(cmd);
      ++options;
    }
  }
  EXPECT_GT(options, 150u);  // the parser found the options sections
  // The shared vocabulary is really shared (a parse that missed it would pass vacuously).
  for (const char* shared : {"--model", "--cluster", "--gpus", "--tp", "--recompute", "--json"}) {
    ASSERT_TRUE(seen.count(shared)) << shared;
    size_t commands = 0;
    for (const auto& [variant, cmds] : seen[shared]) commands += cmds.size();
    EXPECT_GE(commands, 3u) << shared;
  }
  for (const auto& [name, variants] : seen) {
    if (variants.size() == 1 || PerCommandOptions().count(name)) continue;
    std::string report;
    for (const auto& [variant, cmds] : variants) {
      std::string list;
      for (const auto& c : cmds) list += (list.empty() ? "" : ", ") + c;
      report += "\n  [" + list + "]: \"" + variant.first + "\" default [" + variant.second + "]";
    }
    ADD_FAILURE() << name << " has " << variants.size() << " meanings:" << report;
  }
}

TEST(FlagConsistencyTest, ApiParametersAreTheCliOptions) {
  const auto helps = AllHelp();
  std::map<std::string, std::set<std::pair<std::string, std::string>>> cli;
  for (const auto& [cmd, help] : helps) {
    for (const auto& [name, opt] : ParseOptions(help))
      cli[name].insert({opt.help, opt.default_text});
  }
  server::Api api(server::ServerLimits{}, server::AccessPolicy{});
  server::RegisterAllEndpoints(api);
  // Parameters whose help states the API's own rule: presets only (no request reads a file), and
  // the API's smaller bound on the batch.
  const std::set<std::string> kOwnHelp = {"--cluster",     "--model", "--global-batch", "--top",
                                          "--stage-costs",  // CSV text, not a file
                                          "--efficiency",   // CSV text, not a file
                                          "--width"};       // no terminal: 100 columns
  const std::set<std::string> kOwnDefault = {"--width"};
  size_t checked = 0;
  for (const server::Endpoint& e : api.endpoints()) {
    for (const server::ParamSpec& p : e.params) {
      std::string flag = "--" + p.name;
      for (char& c : flag) {
        if (c == '_') c = '-';
      }
      auto it = cli.find(flag);
      if (it == cli.end() || it->second.size() != 1) continue;  // not a shared CLI option
      const auto& [help, def] = *it->second.begin();
      // Booleans show no default in --help; the API lists 0.
      if (!(def.empty() && p.default_text == "0") && !kOwnDefault.count(flag)) {
        EXPECT_EQ(p.default_text, def) << e.path << " " << p.name;
      }
      if (!kOwnHelp.count(flag)) {
        EXPECT_EQ(p.help, help) << e.path << " " << p.name;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace infralens
