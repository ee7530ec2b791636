// A command declared once: its options, its work and its documents. The CLI (cli/command_runner.h)
// and the web API (server/command_api.h) are adapters generated from the declaration: the CLI
// parses the declared options as flags and adds --format/--json/-o; the API reads the same options
// as query or form parameters (named as the flags without dashes, '_' for '-') and answers with
// the command's JSON. Neither front end repeats a command's options, defaults, help or validation.
//
// A declaration is built with MakeCommand from four parts:
//   declare(Query&, FlagSink&)                      the options, bound to a query's fields
//   compute(const Query&, const RunContext&)        -> StatusOr<Result>, the command's work
//   render(const Result&, const Query&, const RunContext&) -> StatusOr<std::string>, the document
//                                                   in RunContext::format
// and CommandInfo, what a front end shows of it.
#ifndef INFRALENS_REQUEST_COMMAND_H_
#define INFRALENS_REQUEST_COMMAND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "request/flag_sink.h"

namespace infralens::request {

// A flag the command does not take (any more, or unlike its neighbours), and the one-line
// message that says what to use instead.
struct RetiredFlag {
  std::string flag;  // "--gpu" (also refused as "--gpu=...")
  std::string message;
};

struct CommandInfo {
  std::string name;                   // the CLI's subcommand ("memory", "trace analyze")
  std::string summary;                // one line
  std::string usage;                  // the CLI's synopsis
  std::vector<std::string> examples;  // one command line each, run by the test suite
  // The documents it writes; formats[0] is the default. "json" is the API's.
  std::vector<std::string> formats;
  // The CLI's --format help when the formats need words ("csv (the efficiency file), ..."); "":
  // the formats listed ("table, markdown or json"), FormatHelp.
  std::string format_help;
  std::vector<RetiredFlag> retired;
  // Options of the CLI alone, which the API neither lists nor reads ("--threads": the server
  // picks its own; "--export": the API has /api/export).
  std::vector<std::string> cli_only;
  // The command writes files its own options name (trace synth's folder, its own -o): the CLI
  // adds neither -o nor --format, and the document, a report of what was written, goes to stdout.
  // The API does not serve such a command.
  bool own_output = false;
};

// What the front end asks of one run, beside the options.
struct RunContext {
  GivenFn given;              // whether an option was given, by its long flag ("--nodes")
  StopFn stop;                // the caller wants the work abandoned (ResourceExhausted)
  std::string format;         // one of CommandInfo::formats
  bool files_allowed = true;  // false in the API: presets and text, never paths
  bool color = false;         // ANSI colour in text documents (a terminal, NO_COLOR unset)
  int json_indent = 2;        // 0: one line (the API)
  int threads = 0;            // worker threads for searches (0: the engine's default)
  bool api = false;           // run by the web API (its own limits apply)
  // The most GPUs one run may plan for (0: the engines' own bound); the server's is smaller.
  int64_t max_gpus = 0;
  // A search stopped by `stop` answers with its ranking so far, marked partial (the server's).
  bool keep_partial = false;
  // Long work's progress (done of total), for a bar on a terminal; empty: none drawn.
  std::function<void(int64_t done, int64_t total)> progress;

  // An input the CLI names by a file path and the API sends as text (a CSV, a worksheet): with
  // files_allowed the file's content (at most max_bytes; a read failure is a failure, exit 1),
  // else `value` itself, refused naming ‹field› when longer than max_bytes.
  StatusOr<std::string> ReadInput(const std::string& value, std::string_view field,
                                  size_t max_bytes) const;
  int term_width = 100;  // columns of the terminal a text document is drawn for
  // Where a document too large to hold may be written piece by piece as it is made (the CLI's
  // stdout or -o file, the file still whole or not at all); null: build it whole. A command that
  // streams its document renders "".
  std::function<Status(std::string_view)> stream;
  // The most actions one run may simulate (the server's limit); 0: the command's own (the CLI's).
  int64_t max_actions = 0;
  // A message for the person running the command beside its document (the CLI's stderr); null:
  // none is shown.
  std::function<void(const std::string&)> note;
  // Text for the user once the document is written (files skipped, the file written), and a
  // failure the run reports then (trace files that could not be used: the document covers the
  // others). The CLI prints the text and fails with the status after writing; empty: dropped.
  std::function<void(const std::string&)> note_after;
  std::function<void(const Status&)> fail_after;
  // The CLI's -o file ("" or "-": stdout), for a message that names it.
  std::string output;
};

// One run: a query whose fields the declared options are bound to.
class CommandRun {
 public:
  virtual ~CommandRun() = default;
  // The command's work and its document in ctx.format.
  virtual StatusOr<std::string> Document(const RunContext& ctx) = 0;
};

class Command {
 public:
  using Start = std::function<std::unique_ptr<CommandRun>(FlagSink&)>;
  Command(CommandInfo info, Start start) : info_(std::move(info)), start_(std::move(start)) {}

  const CommandInfo& info() const { return info_; }
  // A fresh run whose options are declared on `flags` (bound to its query, defaults shown).
  std::unique_ptr<CommandRun> Declare(FlagSink& flags) const { return start_(flags); }

 private:
  CommandInfo info_;
  Start start_;
};

template <class Query, class Result>
Command MakeCommand(
    CommandInfo info, std::function<void(Query&, FlagSink&)> declare,
    std::function<StatusOr<Result>(const Query&, const RunContext&)> compute,
    std::function<StatusOr<std::string>(const Result&, const Query&, const RunContext&)> render) {
  struct Run : CommandRun {
    Query query;
    const std::function<StatusOr<Result>(const Query&, const RunContext&)>* compute;
    const std::function<StatusOr<std::string>(const Result&, const Query&, const RunContext&)>*
        render;
    StatusOr<std::string> Document(const RunContext& ctx) override {
      ASSIGN_OR_RETURN(Result r, (*compute)(query, ctx));
      return (*render)(r, query, ctx);
    }
  };
  // The functions live as long as the Command (shared by its runs).
  auto parts = std::make_shared<std::tuple<decltype(declare), decltype(compute), decltype(render)>>(
      std::move(declare), std::move(compute), std::move(render));
  return Command(std::move(info), [parts](FlagSink& flags) -> std::unique_ptr<CommandRun> {
    auto run = std::make_unique<Run>();
    run->compute = &std::get<1>(*parts);
    run->render = &std::get<2>(*parts);
    std::get<0> (*parts)(run->query, flags);
    return run;
  });
}

// The --format help of a command: its format_help, else its formats listed ("table or json",
// "table, markdown or json").
std::string FormatHelp(const CommandInfo& info);

// Every declared command, in the order `infralens --help` lists them.
const std::vector<const Command*>& DeclaredCommands();
// The declared command named `name` ("memory", "trace analyze"); null when none.
const Command* FindCommand(std::string_view name);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_COMMAND_H_
