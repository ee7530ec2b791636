// The request parameters of the cluster and training engines (labs 08 and 12), read into the
// CLI's own flag structs so that the API runs exactly what the commands run
// (cli/engine_requests.h). Names are the CLI's long flags without the dashes, '_' for '-'
// (global_batch); the hyphenated spellings are accepted too.
#ifndef INFRALENS_SERVER_ENGINE_PARAMS_H_
#define INFRALENS_SERVER_ENGINE_PARAMS_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/cluster_flags.h"
#include "cli/engine_requests.h"
#include "cli/flags.h"
#include "cli/request_flags.h"
#include "cli/training_flags.h"
#include "plan/planner.h"
#include "server/api.h"
#include "server/params.h"

namespace infralens::server {

// Bounds the API puts on the engines' inputs before any work (the engines check the rest and
// give the CLI's messages).
inline constexpr int kMaxApiGlobalBatch = 16'384;  // sequences per step; the largest published runs use ~15k

// cluster, nodes, tp, cp, ep, dp, pp, order.
std::vector<ParamSpec> ClusterParams();
void ReadCluster(ParamReader& p, cli::ClusterFlags* out);

// model, vpp, zero, distributed_optimizer, fsdp, sp, recompute, micro_batch, global_batch, seq,
// schedule, precision, fp32_grads; with `degrees` also tp, pp, dp, cp, ep.
std::vector<ParamSpec> TrainingParams(bool degrees, const char* recompute_default = "selective");
void ReadTraining(ParamReader& p, bool degrees, cli::TrainingFlags* out);

// A short text parameter (a name, a size): at most 100 bytes, so that an error never echoes a
// huge value.
std::string ShortText(ParamReader& p, std::string_view name, std::string_view def);

// Whether a CLI flag ("--global-batch") was given as a parameter (global_batch).
cli::GivenFn GivenOf(const ParamReader& p);

std::vector<ParamSpec> JoinParams(std::vector<std::vector<ParamSpec>> parts);
// The specs of `all` named in `names`, in that order (an endpoint taking part of a shared list).
std::vector<ParamSpec> PickParams(const std::vector<ParamSpec>& all,
                                  const std::vector<std::string_view>& names);

// `format` of the endpoints that answer a command's document: json (as --json) or markdown.
ParamSpec DocumentFormatParam();
// true for json.
bool ReadDocumentFormat(ParamReader& p);

// --- A plan request (labs 09 and 12: /api/plan, /api/explain, /api/worksheet, /api/export) ----

// gpus, the cluster parameters (degrees, order), the training parameters (recompute selective).
// Any degree names one layout; none asks for the planner's best (or its search).
std::vector<ParamSpec> PlanRequestParams();
// Reads them into `out` (a parameter the endpoint does not list keeps its default); gpus at most
// limits.max_plan_gpus.
void ReadPlanRequest(ParamReader& p, const ServerLimits& limits, cli::RequestFlags* out);
// The request `rf` describes, refused before any work when it has more GPUs than the server plans
// for (an error naming gpus or nodes).
std::variant<plan::PlanRequest, ApiError> PlanRequestOf(const ApiCall& call, const cli::RequestFlags& rf);
// The layout the degrees name, evaluated (with `want_best` the planner's best beside it), or the
// planner's best: cli::ChooseLayout on the request PlanRequestOf bounds, searching as
// RequestSearchOptions says; errors as SearchError, and the time limit checked after.
std::variant<cli::LayoutChoice, ApiError> ChooseRequestLayout(ApiCall& call, const cli::RequestFlags& rf,
                                                              bool want_best);
// A search inside a request: one thread (the other cores serve other requests), stopped at the
// time limit.
plan::SearchOptions RequestSearchOptions(const ApiCall& call);
// A plan search's failure: past the time limit, a 503 saying how to search less; else EngineError.
ApiError SearchError(const ApiCall& call, const Status& status);

// The parameter error recorded by the reader, as an API error.
ApiError ReaderError(const ParamReader& p);
// An engine's failure: ResourceExhausted from a stopped loop is the time limit (503); anything
// else as FromStatus (400 naming the parameter the message starts with).
ApiError EngineError(const ApiCall& call, const Status& status);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_ENGINE_PARAMS_H_
