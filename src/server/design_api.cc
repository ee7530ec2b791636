#include "server/design_api.h"

#include <fmt/format.h>

#include "cli/engine_requests.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

ApiResult HandleMemory(ApiCall& call) {
  ParamReader& p = call.params;
  cli::MemoryQuery q;
  ReadTraining(p, /*degrees=*/true, &q.training);
  q.gpu = ShortText(p, "gpu", q.gpu);
  q.reserve_gib = p.Number("reserve_gib", q.reserve_gib, 0, 1e6);
  if (p.error()) return ReaderError(p);
  auto r = cli::ComputeMemory(q, GivenOf(p));
  if (!r.ok()) return EngineError(call, r.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(cli::MemoryJson(*r, 0));
}

ApiResult HandlePlan(ApiCall& call) {
  ParamReader& p = call.params;
  const int max_gpus = static_cast<int>(call.limits.max_plan_gpus);
  cli::PlanQuery q;
  ReadCluster(p, &q.request.cf);
  ReadTraining(p, /*degrees=*/false, &q.request.tf);
  q.request.gpus = p.Int("gpus", 0, 1, max_gpus);
  q.top = p.Int("top", 10, 1, 100);
  if (p.error()) return ReaderError(p);
  const cli::GivenFn given = GivenOf(p);
  // The GPU count first: a search over more GPUs than the server plans for is refused before any
  // work (the request's cluster is sized the way the CLI sizes it).
  auto req = cli::PlanRequestOf(q, given);
  if (!req.ok()) return EngineError(call, req.status());
  if (req->gpus() > max_gpus) {
    return ParamFailure(
        p.Given("gpus") ? "gpus" : "nodes",
        fmt::format("{} GPUs ({} nodes of {}): the server plans for at most {} GPUs per request; "
                    "the CLI goes to {} (infralens plan)",
                    req->gpus(), req->cluster.num_nodes, req->cluster.node.gpus_per_node, max_gpus,
                    cluster::kMaxGpus));
  }
  // One thread, so that a search leaves the machine's other cores to the other requests, and a
  // stop between layouts at the time limit.
  q.threads = 1;
  auto o = cli::ComputePlan(q, given, {}, [&call] { return call.Expired(); });
  if (!o.ok() && o.status().code() == StatusCode::kResourceExhausted) {
    ApiError e = call.TimeLimitError();
    e.message = fmt::format(
        "the layout search ran past the server's time limit of {} ms ({}); name a schedule to "
        "search fewer layouts, give fewer GPUs or a smaller global batch, or run the search on "
        "every core with the CLI (infralens plan)",
        call.limits.time_limit.count(), o.status().message());
    return e;
  }
  if (!o.ok()) return EngineError(call, o.status());
  if (call.Expired()) return call.TimeLimitError();
  return JsonResponse(cli::PlanJson(*o, 0));
}

}  // namespace

void RegisterDesignEndpoints(Api& api) {
  api.Register({"/api/memory",
                {"GET", "POST"},
                "bytes per GPU for weights, gradients, optimizer states and activations, per "
                "pipeline rank (infralens memory --json)",
                JoinParams({TrainingParams(/*degrees=*/true),
                            {{"gpu", {}, "GPU preset (infralens presets --kind gpus)", "H100-SXM"},
                             {"reserve_gib",
                              {"reserve-gib"},
                              "HBM kept back for CUDA context, NCCL and fragmentation (GiB)",
                              "4"}}}),
                false,
                HandleMemory});
  api.Register(
      {"/api/plan",
       {"GET", "POST"},
       "the ranked layouts of a model on a cluster, with the reasons; or one layout evaluated when "
       "a degree is given (infralens plan --json)",
       JoinParams({{{"gpus",
                     {},
                     "GPUs to use (a multiple of the cluster's GPUs per node); or give nodes",
                     ""},
                    {"top", {}, "how many layouts to list (1..100)", "10"}},
                   ClusterParams(),
                   TrainingParams(/*degrees=*/false, "selective")}),
       false,
       HandlePlan});
}

}  // namespace infralens::server
