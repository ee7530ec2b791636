#include "request/engine_requests.h"
#include "server/command_api.h"
#include "server/endpoints.h"

namespace infralens::server {

void RegisterScenarioEndpoints(Api& api) {
  // The scenarios are fixed questions on fixed presets: their answers depend only on the binary,
  // so the route keeps each once computed (CommandInfo::cacheable; `infralens serve` starts the
  // list, which the scenarios page asks for first, when the endpoints are registered).
  RegisterCommand(api, request::ScenariosCommand(),
                  {.path = "/api/scenarios",
                   .methods = {"GET"},
                   .formats = {"json", "markdown"},
                   .format_help = "json (as --json) or markdown"});
  RegisterCommand(api, request::ExplainCommand(),
                  {.path = "/api/explain",
                   .formats = {"json", "markdown"},
                   .format_help = "json (as --json) or markdown",
                   .search = true});
}

}  // namespace infralens::server
