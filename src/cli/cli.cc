#include "cli/cli.h"

#include <fmt/format.h>

#include <optional>
#include <sstream>

#include "base/atomic_file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_declared.h"
#include "request/engine_requests.h"

namespace infralens::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"schedule", "generate, validate, simulate and draw one pipeline schedule", nullptr,
       request::ScheduleCommand},
      {"compare", "every pipeline schedule side by side for one P, m and cost set", nullptr,
       request::CompareCommand},
      {"model", "parameters and FLOPs of a model (preset or Hugging Face config.json)", nullptr,
       request::ModelCommand},
      {"memory", "bytes per GPU: weights, gradients, optimizer, activations per pipeline rank",
       nullptr, request::MemoryCommand},
      {"topology", "a cluster, a job's rank placement and the link class each group crosses",
       nullptr, request::TopologyCommand},
      {"comm", "time, algbw and busbw of one collective on a group, and the link that bounds it",
       nullptr, request::CommCommand},
      {"comm-plan", "every collective a training step issues: group, size, link, time, overlap",
       nullptr, request::CommPlanCommand},
      {"plan",
       "search every parallel layout of a model on a cluster, or evaluate one, with the reasons",
       nullptr, request::PlanCommand},
      {"validate", "the step-time model against published training runs (median error)", nullptr,
       request::ValidateCommand},
      {"worksheet",
       "lab 12: the design worksheet filled for the best plan, or a learner's worksheet checked",
       nullptr, request::WorksheetCommand},
      {"explain",
       "lab 09: the five-part answer (problem, mechanism, communication, tradeoff, measurement)",
       nullptr, request::ExplainCommand},
      {"scenarios", "lab 09: interview scenarios, each answered live by the engine", nullptr,
       request::ScenariosCommand},
      {"presets", "the model, GPU and cluster presets built in", nullptr, request::PresetsCommand},
      {"serve", "the lab workbench in the browser: pages and a JSON API (127.0.0.1:8080)",
       RunServe},
      {"trace", "read profiler traces: analyze, compare with a prediction, merge ranks, synth",
       RunTrace},
  };
  return kCommands;
}

namespace {

std::string TopLevelHelp() {
  std::string out =
      "infralens: distributed-training parallelism, made concrete and measurable\n\n"
      "usage: infralens <command> [options]     infralens <command> --help\n\ncommands:\n";
  size_t width = 0;
  for (const auto& c : Commands()) width = std::max(width, std::string(c.name).size());
  for (const auto& c : Commands()) out += fmt::format("  {:<{}}  {}\n", c.name, width, c.summary);
  out +=
      "\nexamples:\n"
      "  infralens compare --pp 4 -m 8\n"
      "  infralens schedule --schedule 1f1b --pp 4 -m 8\n"
      "  infralens schedule --schedule zbv --pp 4 -m 8 --format svg -o zbv.svg\n"
      "  infralens serve                 # the lab workbench at http://127.0.0.1:8080/\n"
      "\noptions:\n  -h, --help     print this help\n  --version      print the version\n";
  return out;
}

// Standard input is one stream: "-" stands for one input file of a command line (the second
// would read nothing). "-o -" is stdout, not an input. Counts "-" as an argument and as a value
// (`--cluster -`, `--cluster=-`).
Status CheckStdinOnce(const std::vector<std::string>& args) {
  int inputs = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool output = i > 0 && (args[i - 1] == "-o" || args[i - 1] == "--output");
    if (a == "-" && !output) ++inputs;
    if (a.size() > 4 && a.starts_with("--") && a.ends_with("=-") && a != "--output=-") ++inputs;
  }
  if (inputs <= 1) return Status::Ok();
  return InvalidArgument(fmt::format(
      "- given {} times: standard input can feed one input; name files for the others", inputs));
}

}  // namespace

Status RunCommandOf(const Command& c, const std::vector<std::string>& rest, CliIO& io) {
  // A declared subcommand ("worksheet check") before the command itself.
  const request::Command* sub =
      rest.empty() ? nullptr : request::FindCommand(std::string(c.name) + " " + rest[0]);
  if (sub != nullptr) return RunDeclared(*sub, {rest.begin() + 1, rest.end()}, io);
  return c.declared != nullptr ? RunDeclared(c.declared(), rest, io) : c.run(rest, io);
}

Status RunCommand(const std::vector<std::string>& args, CliIO& io) {
  if (args.empty()) return InvalidArgument("no command given");
  for (const auto& c : Commands()) {
    if (args[0] == c.name) return RunCommandOf(c, {args.begin() + 1, args.end()}, io);
  }
  return InvalidArgument("unknown command '" + args[0] + "'");
}

int RunCli(const std::vector<std::string>& args, CliIO& io) {
  if (args.empty()) {
    // A usage error, as for git or ninja: the help goes to stderr, stdout stays empty for scripts.
    io.err << TopLevelHelp();
    return 2;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") return RunCli({args[1], "--help"}, io);
    io.out << TopLevelHelp();
    return 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    io.out << "infralens " << INFRALENS_VERSION << "\n";
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& c : Commands()) {
    if (args[0] == c.name) {
      // --version on every command and subcommand (before any "--"), as at the top level.
      for (const std::string& a : rest) {
        if (a == "--") break;
        if (a == "--version") {
          io.out << "infralens " << INFRALENS_VERSION << "\n";
          return 0;
        }
      }
      Status st = CheckStdinOnce(rest);
      if (st.ok()) {
        // A line on a terminal's stderr for work over a second; `plan` draws its own bar, and
        // `serve` runs until stopped.
        std::optional<ProgressTicker> ticker;
        if (args[0] != "plan" && args[0] != "serve") ticker.emplace("infralens " + args[0]);
        st = RunCommandOf(c, rest, io);
      }
      // Bounded: a message may quote the argument it refuses, up to 128 KiB of it (issue 26).
      if (!st.ok())
        io.err << "infralens " << c.name << ": error: " << BoundedMessage(st.message()) << "\n";
      return st.ExitCode();
    }
  }
  std::vector<std::string> names;
  for (const auto& c : Commands()) names.emplace_back(c.name);
  std::string hint = ClosestMatch(args[0], names);
  if (!args[0].empty() && args[0][0] == '-') {
    io.err << "infralens: unknown option '" << args[0]
           << "'; a command comes first (see infralens --help)\n";
  } else {
    io.err << "infralens: unknown command '" << args[0] << "'"
           << (hint.empty() ? "" : "; did you mean '" + hint + "'?")
           << " (commands: " << Join(names, ", ") << ")\n";
  }
  return 2;
}

Status WriteOutput(const std::string& path, const std::string& data, CliIO& io) {
  if (path.empty() || path == "-") {
    io.out << data;
    return Status::Ok();
  }
  // Whole or not at all: a failed write leaves an earlier file as it was (base/atomic_file.h).
  Status st = WriteFileAtomically(path, data);
  if (!st.ok()) return Status(st.code(), "-o " + st.message());
  return Status::Ok();
}

}  // namespace infralens::cli
