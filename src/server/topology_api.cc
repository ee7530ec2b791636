#include <fmt/format.h>

#include "request/engine_requests.h"
#include "server/command_api.h"
#include "server/endpoints.h"
#include "server/engine_params.h"

namespace infralens::server {

void RegisterTopologyEndpoints(Api& api) {
  RegisterCommand(api, request::PresetsCommand(),
                  {.path = "/api/presets", .methods = {"GET"}, .light = true});
  RegisterCommand(api, request::TopologyCommand(),
                  {.path = "/api/topology",
                   .formats = {"json", "svg", "ascii"},
                   .format_help = "json (as infralens topology --json), svg or ascii",
                   .bounds = {{"max_nodes", 1, request::kMaxDrawnNodes},
                              {"first_node", 0, static_cast<double>(cluster::kMaxGpus)}}});
  RegisterCommand(api, request::CommCommand(),
                  {.path = "/api/comm",
                   .bounds = {{"ranks", 0, static_cast<double>(cluster::kMaxGpus)},
                              {"bandwidth", 0, cluster::kMaxBytesPerS / 1e9},
                              {"latency", 0, 1e6}}});
  RegisterCommand(api, request::CommPlanCommand(), {.path = "/api/comm-plan"});
}

}  // namespace infralens::server
