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

ApiResult HandleComm(ApiCall& call) {
  ParamReader& p = call.params;
  request::CommQuery q;
  ReadCluster(p, static_cast<int>(cluster::kMaxGpus), &q.cluster);
  q.collective = ShortText(p, "collective", q.collective);
  q.size = ShortText(p, "size", q.size);
  q.group = ShortText(p, "group", q.group);
  q.ranks = p.Int("ranks", q.ranks, 0, static_cast<int>(cluster::kMaxGpus));
  q.algorithm = ShortText(p, "algorithm", q.algorithm);
  q.bandwidth_gbps = p.Number("bandwidth", 0, 0, cluster::kMaxBytesPerS / 1e9);
  q.latency_us = p.Number("latency", 0, 0, 1e6);
  if (p.error()) return ReaderError(p);
  auto r = request::ComputeComm(q, GivenOf(p), [&call] { return call.Expired(); });
  if (!r.ok()) return EngineError(call, r.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(request::CommJson(*r, 0));
}

ApiResult HandleCommPlan(ApiCall& call) {
  ParamReader& p = call.params;
  request::CommPlanQuery q;
  ReadCluster(p, static_cast<int>(cluster::kMaxGpus), &q.cluster);
  ReadTraining(p, &q.training);
  if (p.error()) return ReaderError(p);
  auto r = request::ComputeCommPlan(q, GivenOf(p));
  if (!r.ok()) return EngineError(call, r.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(request::CommPlanJson(*r, 0));
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
  api.Register({"/api/comm",
                {"GET", "POST"},
                "time, algbw and busbw of one collective on a group, and the link that bounds it "
                "(infralens comm --json)",
                JoinParams({ClusterParams(), ParamSpecsOf([](request::FlagSink& f) {
                              request::CommQuery().Register(f);
                            })}),
                false,
                HandleComm});
  api.Register({"/api/comm-plan",
                {"GET", "POST"},
                "every collective a training step issues: group, size, link, time, overlap "
                "(infralens comm-plan --json)",
                JoinParams({ClusterParams(), TrainingParams()}),
                false,
                HandleCommPlan});
}

}  // namespace infralens::server
