// infralens scenarios: lab 09's interview scenarios, listed with their live answers, or one of
// them as the five-part explanation.
#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "lab/scenarios.h"
#include "request/engine_requests.h"

namespace infralens::cli {

using request::ScenarioDocument;
using request::ScenarioListDocument;

Status RunScenarios(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> names;
  std::string format = "markdown", output;
  bool json = false;
  Flags flags("scenarios", "interview scenarios, each answered live by the engine (lab 09)",
              "infralens scenarios [NAME] [--json]",
              {"infralens scenarios", "infralens scenarios dp64-oom",
               "infralens scenarios tp-across-nodes --json"});
  flags.Positionals("NAME", &names, "a scenario to answer in five parts; none: list them all");
  AddOutputFlags(flags, &format, &json, &output, "markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"markdown", "json"}));
  if (names.size() > 1)
    return InvalidArgument(fmt::format("scenarios: one NAME at most, got {}", names.size()));
  if (names.size() == 1) {
    ASSIGN_OR_RETURN(std::string data, ScenarioDocument(names[0], format == "json"));
    return WriteOutput(output, data, io);
  }
  ASSIGN_OR_RETURN(std::string data, ScenarioListDocument(format == "json"));
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
