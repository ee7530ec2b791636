// The subcommands that are functions rather than declarations (request/command.h): `serve` runs a
// server until stopped, and `trace` is a group whose `merge` and `synth` write files of their own
// (its other subcommands are declared). Each is defined in src/cli/<name>_cmd.cc.
#ifndef INFRALENS_CLI_COMMANDS_H_
#define INFRALENS_CLI_COMMANDS_H_

#include "cli/cli.h"

namespace infralens::cli {

Status RunServe(const std::vector<std::string>& args, CliIO& io);
Status RunTrace(const std::vector<std::string>& args, CliIO& io);

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_COMMANDS_H_
