// One function per subcommand, each defined in its own file (src/cli/<name>_cmd.cc).
#ifndef INFRALENS_CLI_COMMANDS_H_
#define INFRALENS_CLI_COMMANDS_H_

#include "cli/cli.h"

namespace infralens::cli {

Status RunServe(const std::vector<std::string>& args, CliIO& io);
Status RunTrace(const std::vector<std::string>& args, CliIO& io);

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_COMMANDS_H_
