// The CLI adapter of a declared command (request/command.h): its options become flags, beside
// them --format F / --json (a command with several documents) and -o,--output FILE; --help prints
// the declaration's usage, examples and options. Every step is the same for every command, so no
// command repeats it.
#ifndef INFRALENS_CLI_RUN_DECLARED_H_
#define INFRALENS_CLI_RUN_DECLARED_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "cli/cli.h"
#include "request/command.h"

namespace infralens::cli {

// Parses `args` (without the program and command names) against `command`'s options, runs it
// and writes its document to stdout or the -o file (whole or not at all).
Status RunDeclared(const request::Command& command, const std::vector<std::string>& args,
                   CliIO& io);

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_RUN_DECLARED_H_
