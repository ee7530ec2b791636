// The command-line front end: a table of subcommands (as ninja has a table of tools) and the
// function main() calls. Commands write data to `out` and messages to `err`, and return a Status;
// RunCli prints an error as one line on `err` and picks the exit code (0, 1 failure, 2 usage).
#ifndef INFRALENS_CLI_CLI_H_
#define INFRALENS_CLI_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "request/command.h"

namespace infralens::cli {

struct CliIO {
  std::ostream& out;
  std::ostream& err;
  bool color = false;    // ANSI colour on `out` (a terminal, and NO_COLOR unset)
  int term_width = 100;  // columns available on `out`
};

using CommandFn = Status (*)(const std::vector<std::string>& args, CliIO& io);

// A subcommand: a declared one (request/command.h; cli/run_declared.h runs it) or, for those
// that are not one document from one set of options (serve, trace's subcommand group), a function.
struct Command {
  const char* name;
  const char* summary;
  CommandFn run = nullptr;
  const request::Command& (*declared)() = nullptr;
};

// Every subcommand, in the order `infralens --help` lists them.
const std::vector<Command>& Commands();

// Runs command `c` with its arguments `rest` (a declared subcommand first: "worksheet check").
Status RunCommandOf(const Command& c, const std::vector<std::string>& rest, CliIO& io);
// The command args[0] with the rest of args, its Status unprinted (InvalidArgument for an unknown
// command): for a caller that embeds the CLI (the Python module).
Status RunCommand(const std::vector<std::string>& args, CliIO& io);

// argv without the program name. Returns the process exit code.
int RunCli(const std::vector<std::string>& args, CliIO& io);

// Writes `data` to the file named by `path`, or to io.out when path is "" or "-". The file is
// written whole or not at all (a temporary beside it, renamed over it when complete).
Status WriteOutput(const std::string& path, const std::string& data, CliIO& io);

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_CLI_H_
