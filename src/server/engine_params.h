// The request parameters of the cluster and training engines (labs 08 and 12), read into the
// CLI's own flag structs so that the API runs exactly what the commands run
// (request/engine_requests.h). Names are the CLI's long flags without the dashes, '_' for '-'
// (global_batch); the hyphenated spellings are accepted too.
#ifndef INFRALENS_SERVER_ENGINE_PARAMS_H_
#define INFRALENS_SERVER_ENGINE_PARAMS_H_

#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "plan/planner.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"
#include "request/flag_sink.h"
#include "request/request_flags.h"
#include "request/training_flags.h"
#include "server/api.h"
#include "server/params.h"

namespace infralens::server {

// Bounds the API puts on the engines' inputs before any work (the engines check the rest and
// give the CLI's messages).
inline constexpr int kMaxApiGlobalBatch =
    16'384;  // sequences per step; the largest published runs use ~15k

// The parameters a request struct declares (`declare` calls its Register on the sink): the long
// flag without its dashes and with '_' for '-' is the name, the other spellings are aliases, the
// help and the default are the flag's.
std::vector<ParamSpec> ParamSpecsOf(const std::function<void(request::FlagSink&)>& declare);
// One option's spec from its flag spellings ("-m,--microbatches": microbatches, alias m).
ParamSpec ParamSpecOfFlag(const std::string& names, std::string help, std::string def);
// The API's help where it differs from the CLI's: a request reads no file, so `cluster` and
// `model` are presets and `stage_costs` and `efficiency` come as text; `global_batch` has the
// API's bound.
void ApiHelp(std::vector<ParamSpec>& specs);
// The spec named `name` in `specs` (it must be there).
ParamSpec& FindParam(std::vector<ParamSpec>& specs, std::string_view name);

// The pipeline options as the CLI declares them (request::PipelineFlags, and with_schedule
// -s,--schedule): pp, vpp, microbatches, f, b, i, w, fb, p2p, stage_costs (CSV text: a request
// reads no file); costs per rank per microbatch (a chunk action takes 1/v).
std::vector<ParamSpec> PipelineParams(bool with_schedule);

// A short text parameter (a name, a size): at most 100 bytes, so that an error never echoes a
// huge value.
std::string ShortText(ParamReader& p, std::string_view name, std::string_view def);

// Whether a CLI flag ("--global-batch") was given as a parameter (global_batch).
request::GivenFn GivenOf(const ParamReader& p);

std::vector<ParamSpec> JoinParams(std::vector<std::vector<ParamSpec>> parts);
// The specs of `all` named in `names`, in that order (an endpoint taking part of a shared list).
std::vector<ParamSpec> PickParams(const std::vector<ParamSpec>& all,
                                  const std::vector<std::string_view>& names);

// `format` of the endpoints that answer a command's document: json (as --json) or markdown.
ParamSpec DocumentFormatParam();
// true for json.
bool ReadDocumentFormat(ParamReader& p);

// --- A plan request (labs 09 and 12: /api/plan, /api/explain, /api/worksheet, /api/export) ----

// The cluster parameters (gpus, degrees, order) and the training parameters.
// Any degree names one layout; none asks for the planner's best (or its search).
std::vector<ParamSpec> PlanRequestParams();
// The efficiency constants as CSV text (`efficiency`, the CLI's --efficiency FILE's contents; part
// of the above): at most kMaxApiEfficiencyBytes, parsed by plan::EfficiencyTable::Parse.
inline constexpr size_t kMaxApiEfficiencyBytes = 64 << 10;
std::vector<ParamSpec> EfficiencyParams();
// The text ("" when not given); a longer one fails the reader naming `efficiency`.
std::string ReadEfficiencyText(ParamReader& p);
// The request `rf` describes, refused before any work when it has more GPUs than the server plans
// for (an error naming gpus or nodes).
std::variant<plan::PlanRequest, ApiError> PlanRequestOf(const ApiCall& call,
                                                        const request::RequestFlags& rf);
// The layout the degrees name, evaluated (with `want_best` the planner's best beside it), or the
// planner's best: request::ChooseLayout on the request PlanRequestOf bounds, searching as
// RequestSearchOptions says; errors as SearchError, and the time limit checked after.
std::variant<request::LayoutChoice, ApiError> ChooseRequestLayout(ApiCall& call,
                                                                  const request::RequestFlags& rf,
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

// The per-action costs of a schedule as `infralens schedule` reads them (ms per rank per
// microbatch): f, b, i, w, fb and p2p. The caller checks p.error() before using them.
sim::CostInput ReadCostInput(ParamReader& p);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_ENGINE_PARAMS_H_
