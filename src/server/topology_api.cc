#include "server/topology_api.h"

#include <fmt/format.h>

#include "request/engine_requests.h"
#include "server/command_api.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

ApiResult HandlePresets(ApiCall& call) {
  ParamReader& p = call.params;
  const std::string kind = ShortText(p, "kind", "all");
  if (p.error()) return ReaderError(p);
  auto doc = request::PresetsJson(kind, 0);
  if (!doc.ok()) return FromStatus(doc.status(), "kind");
  return JsonResponse(*std::move(doc));
}

}  // namespace

void RegisterTopologyEndpoints(Api& api) {
  api.Register({"/api/presets",
                {"GET"},
                "the model, GPU and cluster presets built in (infralens presets --json)",
                ParamSpecsOf([](request::FlagSink& f) {
                  std::string kind = "all";
                  request::RegisterPresetKind(f, &kind);
                }),
                false,
                HandlePresets,
                /*upload=*/false,
                /*light=*/true});
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
