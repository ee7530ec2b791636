#include "server/engine_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "cluster/cluster.h"
#include "cluster/placement.h"

namespace infralens::server {

namespace {

constexpr int kMaxGpus = static_cast<int>(cluster::kMaxGpus);
// Names (presets, schedules, orders) are short; a longer value is a mistake, refused before it
// is echoed in an error message.
constexpr size_t kMaxWordBytes = 100;

}  // namespace

std::string ShortText(ParamReader& p, std::string_view name, std::string_view def) {
  std::string v = p.Text(name, def);
  if (v.size() > kMaxWordBytes) {
    p.Fail(std::string(name), fmt::format("{}: at most {} characters", name, kMaxWordBytes));
    return std::string(def);
  }
  return v;
}

std::vector<ParamSpec> JoinParams(std::vector<std::vector<ParamSpec>> parts) {
  std::vector<ParamSpec> out;
  for (auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

std::vector<ParamSpec> PickParams(const std::vector<ParamSpec>& all,
                                  const std::vector<std::string_view>& names) {
  std::vector<ParamSpec> out;
  for (std::string_view n : names) {
    for (const ParamSpec& s : all) {
      if (s.name == n) out.push_back(s);
    }
  }
  return out;
}

std::vector<ParamSpec> ClusterParams() {
  return {
      {"cluster", {}, "a cluster preset (" + cluster::ClusterPresetNames() + ")", "dgx-h100"},
      {"nodes", {}, "nodes in the cluster; absent = what the degrees need, else 1", ""},
      {"tp", {}, "tensor-parallel degree", "1"},
      {"cp", {}, "context-parallel degree", "1"},
      {"ep", {}, "expert-parallel degree, carved out of dp (must divide it)", "1"},
      {"dp", {}, "data-parallel degree; 0 = the GPUs over the other degrees", "0"},
      {"pp", {}, "pipeline-parallel degree", "1"},
      {"order", {}, "rank order, leftmost varies fastest (Megatron-LM's RankGenerator)",
       std::string(cluster::kDefaultOrder)},
  };
}

void ReadCluster(ParamReader& p, cli::ClusterFlags* out) {
  out->files_allowed = false;
  out->cluster = ShortText(p, "cluster", "dgx-h100");
  out->nodes = p.Int("nodes", 0, 1, kMaxGpus);
  out->tp = p.Int("tp", 1, 1, kMaxGpus);
  out->cp = p.Int("cp", 1, 1, kMaxGpus);
  out->ep = p.Int("ep", 1, 1, kMaxGpus);
  out->dp = p.Int("dp", 0, 0, kMaxGpus);
  out->pp = p.Int("pp", 1, 1, kMaxGpus);
  out->order = ShortText(p, "order", cluster::kDefaultOrder);
}

std::vector<ParamSpec> TrainingParams(bool degrees, const char* recompute_default) {
  std::vector<ParamSpec> out = {
      {"model", {}, "a model preset (infralens presets --kind models); required", ""},
  };
  if (degrees) {
    out.push_back({"tp", {}, "tensor-parallel size", "1"});
    out.push_back({"pp", {}, "pipeline-parallel size", "1"});
    out.push_back({"dp", {}, "data-parallel size (GPUs = tp x pp x dp x cp)", "1"});
    out.push_back({"cp", {}, "context-parallel size", "1"});
    out.push_back({"ep", {}, "expert-parallel size, carved out of dp x cp (must divide it)", "1"});
  }
  const std::vector<ParamSpec> rest = {
      {"vpp", {}, "model chunks per pipeline rank; 0 = the schedule's default", "0"},
      {"zero", {}, "ZeRO stage: 0 none, 1 optimizer, 2 + gradients, 3 + weights", "0"},
      {"distributed_optimizer",
       {"distributed-optimizer"},
       "1: Megatron's distributed optimizer (= zero 1)",
       "0"},
      {"fsdp", {}, "1: fully sharded data parallel (= zero 3)", "0"},
      {"sp", {}, "1: sequence parallelism (with tensor parallelism)", "0"},
      {"recompute", {}, "activation recomputation: none, selective or full", recompute_default},
      {"micro_batch", {"micro-batch"}, "sequences per microbatch", "1"},
      {"global_batch",
       {"global-batch"},
       fmt::format("sequences per step (at most {} here); 0 = micro-batch x dp x 2pp",
                   kMaxApiGlobalBatch),
       "0"},
      {"seq", {}, "sequence length; 0 = the model's", "0"},
      {"schedule", {}, "pipeline schedule (1f1b, interleaved-1f1b, zb-h1, zbv, dualpipev, ...)", "1f1b"},
      {"precision", {}, "matmul precision: bf16 or fp8", "bf16"},
      {"fp32_grads", {"fp32-grads"}, "1: keep and reduce gradients in FP32 (4 bytes, not 2)", "0"},
  };
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

void ReadTraining(ParamReader& p, bool degrees, cli::TrainingFlags* out) {
  out->files_allowed = false;
  out->model_name = ShortText(p, "model", "");
  if (degrees) {
    out->par.tp = p.Int("tp", 1, 1, kMaxGpus);
    out->par.pp = p.Int("pp", 1, 1, kMaxGpus);
    out->par.dp = p.Int("dp", 1, 1, kMaxGpus);
    out->par.cp = p.Int("cp", 1, 1, kMaxGpus);
    out->par.ep = p.Int("ep", 1, 1, kMaxGpus);
  }
  out->par.vpp = p.Int("vpp", 0, 0, 1024);
  out->par.zero_stage = p.Int("zero", 0, 0, 3);
  out->distributed_optimizer = p.Flag("distributed_optimizer");
  out->fsdp = p.Flag("fsdp");
  out->par.sequence_parallel = p.Flag("sp");
  out->recompute = ShortText(p, "recompute", out->recompute);
  out->micro_batch = p.Int("micro_batch", 1, 1, 65536);
  out->global_batch = p.Int("global_batch", 0, 0, kMaxApiGlobalBatch);
  out->seq = p.Int("seq", 0, 0, 1 << 21);
  out->schedule_name = ShortText(p, "schedule", "1f1b");
  out->precision = ShortText(p, "precision", "bf16");
  out->fp32_grads = p.Flag("fp32_grads");
}

cli::GivenFn GivenOf(const ParamReader& p) {
  return [&p](const std::string& flag) {
    std::string name = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
    for (char& c : name) {
      if (c == '-') c = '_';
    }
    return p.Given(name);
  };
}

ParamSpec DocumentFormatParam() { return {"format", {}, "json (as --json) or markdown", "json"}; }

bool ReadDocumentFormat(ParamReader& p) { return p.Choice("format", "json", {"json", "markdown"}) == "json"; }

std::vector<ParamSpec> PlanRequestParams() {
  return JoinParams({{{"gpus", {}, "GPUs to use (a multiple of the cluster's GPUs per node); or give nodes", ""}},
                     ClusterParams(),
                     TrainingParams(/*degrees=*/false, "selective")});
}

void ReadPlanRequest(ParamReader& p, const ServerLimits& limits, cli::RequestFlags* out) {
  out->tf.recompute = "selective";
  ReadCluster(p, &out->cf);
  ReadTraining(p, /*degrees=*/false, &out->tf);
  out->cf.gpus = p.Int("gpus", 0, 1, static_cast<int>(std::min<int64_t>(limits.max_plan_gpus, kMaxGpus)));
}

std::variant<plan::PlanRequest, ApiError> PlanRequestOf(const ApiCall& call, const cli::RequestFlags& rf) {
  const ParamReader& p = call.params;
  auto req = rf.Request(GivenOf(p));
  if (!req.ok()) return EngineError(call, req.status());
  const int64_t max_gpus = call.limits.max_plan_gpus;
  if (req->gpus() > max_gpus) {
    return ParamFailure(
        p.Given("gpus") ? "gpus" : "nodes",
        fmt::format("{} GPUs ({} nodes of {}): the server plans for at most {} GPUs per request; "
                    "the CLI goes to {} (infralens plan)",
                    req->gpus(), req->cluster.num_nodes, req->cluster.node.gpus_per_node, max_gpus,
                    cluster::kMaxGpus));
  }
  return *std::move(req);
}

std::variant<cli::LayoutChoice, ApiError> ChooseRequestLayout(ApiCall& call, const cli::RequestFlags& rf,
                                                              bool want_best) {
  auto req = PlanRequestOf(call, rf);
  if (auto* e = std::get_if<ApiError>(&req)) return *e;
  auto c = cli::ChooseLayout(std::get<plan::PlanRequest>(std::move(req)), rf, GivenOf(call.params), want_best,
                             RequestSearchOptions(call));
  if (!c.ok()) return SearchError(call, c.status());
  if (call.Expired()) return call.TimeLimitError();
  return *std::move(c);
}

plan::SearchOptions RequestSearchOptions(const ApiCall& call) {
  plan::SearchOptions o;
  o.threads = 1;
  o.stop = [&call] { return call.Expired(); };
  return o;
}

ApiError SearchError(const ApiCall& call, const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return EngineError(call, status);
  ApiError e = call.TimeLimitError();
  e.message = fmt::format(
      "the layout search ran past the server's time limit of {} ms ({}); name a schedule to "
      "search fewer layouts, give fewer GPUs or a smaller global batch, or run the search on "
      "every core with the CLI (infralens plan)",
      call.limits.time_limit.count(), status.message());
  return e;
}

ApiError ReaderError(const ParamReader& p) {
  return ParamFailure(p.error()->parameter, p.error()->message);
}

ApiError EngineError(const ApiCall& call, const Status& status) {
  if (status.code() == StatusCode::kResourceExhausted) return call.TimeLimitError();
  return FromStatus(status);
}

}  // namespace infralens::server
