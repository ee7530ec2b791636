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
#include <tuple>
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

// The API's action limit for one document format, as a multiple of the server's figure
// (RunContext::max_actions): a compact document holds more actions in the same bytes.
struct FormatActionScale {
  std::string format;  // "columns"
  int64_t numerator = 1;
  int64_t denominator = 1;
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
  // Documents only the API serves (schedule's `columns`, the compact form the pipeline page
  // draws), rendered by the command like the others in RunContext::format; an endpoint lists
  // them among its formats (server::CommandRoute::formats), the CLI's --format refuses them.
  std::vector<std::string> api_formats;
  // Options only the API reads (schedule's --dependencies: what a page draws): the CLI neither
  // lists nor parses them, and their fields keep their defaults there.
  std::vector<std::string> api_only;
  // The API's action limit per format, over the server's (schedule's `columns`: 5/2 of it).
  std::vector<FormatActionScale> action_scale;
  // The document depends on the options alone (and the binary) and is fixed work the command
  // bounds itself (the interview scenarios): the API computes each answer once per server, on
  // its own thread, and keeps it (server/command_api.h).
  bool cacheable = false;
};

// The options a front end shows of a declaration: those of `inner` less the ones `dropped` names
// by a flag ("--threads"; the API drops CommandInfo::cli_only, the CLI api_only). Positional
// arguments pass.
class OptionFilter : public FlagSink {
 public:
  OptionFilter(FlagSink& inner, const std::vector<std::string>& dropped)
      : inner_(inner), dropped_(dropped) {}
  void Int(const std::string& names, int* out, const std::string& help) override;
  void OptionalInt(const std::string& names, int* out, const std::string& help) override;
  void Double(const std::string& names, double* out, const std::string& help) override;
  void String(const std::string& names, std::string* out, const std::string& help) override;
  void Bool(const std::string& names, bool* out, const std::string& help) override;
  void Positionals(const std::string& name, std::vector<std::string>* out,
                   const std::string& help) override;
  bool Given(const std::string& name) const override { return inner_.Given(name); }

 protected:
  FlagSink& inner() { return inner_; }

 private:
  bool Kept(const std::string& names) const;
  FlagSink& inner_;
  const std::vector<std::string>& dropped_;
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
  // After Document: the document's file name without its extension ("1f1b_pp4_m8"), when the
  // command declares one (Command::downloadable); "" otherwise.
  virtual std::string FileStem() const { return {}; }
};

class Command {
 public:
  using Start = std::function<std::unique_ptr<CommandRun>(FlagSink&)>;
  Command(CommandInfo info, Start start, bool downloadable = false)
      : info_(std::move(info)), start_(std::move(start)), downloadable_(downloadable) {}

  const CommandInfo& info() const { return info_; }
  // Its runs name their document's file (CommandRun::FileStem): the API may send it as one.
  bool downloadable() const { return downloadable_; }
  // A fresh run whose options are declared on `flags` (bound to its query, defaults shown).
  std::unique_ptr<CommandRun> Declare(FlagSink& flags) const { return start_(flags); }

 private:
  CommandInfo info_;
  Start start_;
  bool downloadable_ = false;
};

// `file_name` (optional): the document's file name without its extension, from the result and
// the query (CommandRun::FileStem).
template <class Query, class Result>
Command MakeCommand(
    CommandInfo info, std::function<void(Query&, FlagSink&)> declare,
    std::function<StatusOr<Result>(const Query&, const RunContext&)> compute,
    std::function<StatusOr<std::string>(const Result&, const Query&, const RunContext&)> render,
    std::function<std::string(const Result&, const Query&)> file_name = nullptr) {
  using Parts =
      std::tuple<decltype(declare), decltype(compute), decltype(render), decltype(file_name)>;
  struct Run : CommandRun {
    Query query;
    const Parts* parts;
    std::string stem;
    StatusOr<std::string> Document(const RunContext& ctx) override {
      ASSIGN_OR_RETURN(Result r, std::get<1>(*parts)(query, ctx));
      if (std::get<3>(*parts)) stem = std::get<3>(*parts)(r, query);
      return std::get<2>(*parts)(r, query, ctx);
    }
    std::string FileStem() const override { return stem; }
  };
  const bool downloadable = static_cast<bool>(file_name);
  // The functions live as long as the Command (shared by its runs).
  auto parts = std::make_shared<Parts>(std::move(declare), std::move(compute), std::move(render),
                                       std::move(file_name));
  return Command(
      std::move(info),
      [parts](FlagSink& flags) -> std::unique_ptr<CommandRun> {
        auto run = std::make_unique<Run>();
        run->parts = parts.get();
        std::get<0> (*parts)(run->query, flags);
        return run;
      },
      downloadable);
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
