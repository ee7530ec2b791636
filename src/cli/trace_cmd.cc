// infralens trace: read what a job ran (PyTorch profiler / Kineto traces) and put it next to what
// was predicted. Subcommands: analyze, summarize, compare, merge, synth, calibrate, each a declared
// command (request/command.h); this file draws the overview and finds the one named.
#include <fmt/format.h>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/run_declared.h"
#include "request/command.h"

namespace infralens::cli {

namespace {

// The overview's lines (shorter than the declarations' summaries); each runs its declared
// command "trace <name>" (src/request/trace_request.cc).
struct Subcommand {
  const char* name;
  const char* summary;
};

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kSubs = {
      {"analyze",
       "what each rank's GPUs did: breakdown, overlap, idle, collectives, pipeline bubble"},
      {"summarize", "one rank's file as a summary that `analyze --summaries` merges"},
      {"compare", "predicted (schedule or plan JSON) vs measured"},
      {"merge", "one Chrome trace of all ranks, clocks aligned, for Perfetto"},
      {"synth", "write a multi-rank Kineto trace of a simulated pipeline schedule"},
      {"calibrate", "fit the planner's efficiency constants from traces with shapes"},
  };
  return kSubs;
}

std::string TraceHelp() {
  std::string out =
      "infralens trace: read PyTorch profiler (Kineto) traces and measure what ran\n\n"
      "usage: infralens trace <subcommand> [options]     infralens trace <subcommand> "
      "--help\n\nsubcommands:\n";
  for (const auto& s : Subcommands()) out += fmt::format("  {:<9}  {}\n", s.name, s.summary);
  out +=
      "\nexamples:\n"
      "  infralens trace analyze traces/ --json\n"
      "  infralens trace summarize traces/rank0.json -o rank0.summary.json\n"
      "  infralens trace analyze --summaries rank0.summary.json\n"
      "  infralens trace compare predicted.json traces/\n"
      "  infralens trace merge traces/ -o all.json\n"
      "  infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth\n"
      "  infralens trace synth --record-shapes --tp 2 -o synth-shapes\n"
      "  infralens trace calibrate synth-shapes --gpu H100-SXM -o efficiency.csv\n"
      "\nDefinitions and sources: docs/measurement.md\n";
  return out;
}

}  // namespace

Status RunTrace(const std::vector<std::string>& args, CliIO& io) {
  if (args.empty()) {
    // A usage error, as `infralens` alone: the help on stderr, stdout empty, exit 2.
    io.err << TraceHelp();
    std::vector<std::string> names;
    for (const auto& s : Subcommands()) names.emplace_back(s.name);
    return InvalidArgument(fmt::format("a subcommand is required ({})", Join(names, ", ")));
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    io.out << TraceHelp();
    return Status::Ok();
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& s : Subcommands()) {
    if (args[0] != s.name) continue;
    // RunCli finds the declared commands first; here for completeness.
    const request::Command* c = request::FindCommand(std::string("trace ") + s.name);
    return c != nullptr ? RunDeclared(*c, rest, io) : Status(StatusCode::kInternal, s.name);
  }
  std::vector<std::string> names;
  for (const auto& s : Subcommands()) names.emplace_back(s.name);
  std::string hint = ClosestMatch(args[0], names);
  return InvalidArgument(fmt::format("unknown subcommand '{}'{} (subcommands: {})", args[0],
                                     hint.empty() ? "" : "; did you mean '" + hint + "'?",
                                     Join(names, ", ")));
}

}  // namespace infralens::cli
