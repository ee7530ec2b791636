#include "server/topology_api.h"

#include <fmt/format.h>

#include "cli/engine_requests.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

ApiResult HandlePresets(ApiCall& call) {
  ParamReader& p = call.params;
  const std::string kind = ShortText(p, "kind", "all");
  if (p.error()) return ReaderError(p);
  auto doc = cli::PresetsJson(kind, 0);
  if (!doc.ok()) return FromStatus(doc.status(), "kind");
  return JsonResponse(*std::move(doc));
}

ApiResult HandleTopology(ApiCall& call) {
  ParamReader& p = call.params;
  cli::TopologyQuery q;
  ReadCluster(p, &q.cluster);
  q.color_axis = ShortText(p, "color_axis", "");
  q.max_nodes = p.Int("max_nodes", 8, 1, cli::kMaxDrawnNodes);
  q.coordinates = p.Flag("coordinates");
  const std::string format = p.Choice("format", "json", {"json", "svg", "ascii"});
  if (p.error()) return ReaderError(p);
  auto t = cli::ComputeTopology(q, GivenOf(p));
  if (!t.ok()) return EngineError(call, t.status());
  if (call.Expired()) return call.TimeLimitError();
  if (format == "svg") return TextResponse(cli::TopologyText(*t, q, "svg", false), "image/svg+xml");
  if (format == "ascii") {
    return TextResponse(cli::TopologyText(*t, q, "ascii", false), "text/plain; charset=utf-8");
  }
  return JsonResponse(cli::TopologyJson(*t, q, 0));
}

ApiResult HandleComm(ApiCall& call) {
  ParamReader& p = call.params;
  cli::CommQuery q;
  ReadCluster(p, &q.cluster);
  q.collective = ShortText(p, "collective", q.collective);
  q.size = ShortText(p, "size", q.size);
  q.group = ShortText(p, "group", "");
  q.ranks = p.Int("ranks", 0, 0, static_cast<int>(cluster::kMaxGpus));
  q.algorithm = ShortText(p, "algorithm", q.algorithm);
  q.bandwidth_gbps = p.Number("bandwidth", 0, 0, cluster::kMaxBytesPerS / 1e9);
  q.latency_us = p.Number("latency", 0, 0, 1e6);
  if (p.error()) return ReaderError(p);
  auto r = cli::ComputeComm(q, GivenOf(p), [&call] { return call.Expired(); });
  if (!r.ok()) return EngineError(call, r.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(cli::CommJson(*r, 0));
}

ApiResult HandleCommPlan(ApiCall& call) {
  ParamReader& p = call.params;
  cli::CommPlanQuery q;
  ReadCluster(p, &q.cluster);
  ReadTraining(p, /*degrees=*/false, &q.training);
  if (p.error()) return ReaderError(p);
  auto r = cli::ComputeCommPlan(q, GivenOf(p));
  if (!r.ok()) return EngineError(call, r.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(cli::CommPlanJson(*r, 0));
}

}  // namespace

void RegisterTopologyEndpoints(Api& api) {
  api.Register({"/api/presets",
                {"GET"},
                "the model, GPU and cluster presets built in (infralens presets --json)",
                {{"kind", {}, "all, models, gpus or clusters", "all"}},
                false,
                HandlePresets});
  api.Register(
      {"/api/topology",
       {"GET", "POST"},
       "a cluster, a job's rank placement on it and the link class every group crosses "
       "(infralens topology --json)",
       JoinParams({ClusterParams(),
                   {{"color_axis",
                     {"color-axis"},
                     "colour the drawing by this axis (tp, cp, ep, dp, pp); default the fastest axis > 1",
                     ""},
                    {"max_nodes", {"max-nodes"}, "nodes drawn (1..256)", "8"},
                    {"coordinates",
                     {},
                     "1: add \"drawing\", every drawn GPU's node, rail, coordinates and groups",
                     "0"},
                    {"format", {}, "json (as infralens topology --json), svg or ascii", "json"}}}),
       false,
       HandleTopology});
  api.Register(
      {"/api/comm",
       {"GET", "POST"},
       "time, algbw and busbw of one collective on a group, and the link that bounds it "
       "(infralens comm --json)",
       JoinParams(
           {ClusterParams(),
            {{"collective",
              {},
              "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast or send_recv",
              "all_reduce"},
             {"size", {}, "message size S: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB", "1GiB"},
             {"group", {}, "the groups of one kind (tp, cp, ep, dp, edp, pp): the slowest", ""},
             {"ranks", {}, "ranks 0..N-1 instead of a group; 0 = every GPU", "0"},
             {"algorithm",
              {},
              "auto, ring, multi-rail, tree, hierarchical, pairwise or direct",
              "auto"},
             {"bandwidth", {}, "GB/s per GPU per direction on every link (textbook alpha-beta)", ""},
             {"latency", {}, "microseconds per step on every link (textbook alpha-beta)", ""}}}),
       false,
       HandleComm});
  api.Register({"/api/comm-plan",
                {"GET", "POST"},
                "every collective a training step issues: group, size, link, time, overlap "
                "(infralens comm-plan --json)",
                JoinParams({ClusterParams(), TrainingParams(/*degrees=*/false)}),
                false,
                HandleCommPlan});
}

}  // namespace infralens::server
