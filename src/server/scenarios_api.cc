#include "server/scenarios_api.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <variant>

#include "cli/engine_requests.h"
#include "plan/scenarios.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

// The scenarios are fixed questions on fixed presets, so their answers depend only on the
// binary: each document is computed once (the first request pays well under a second) and kept.
class ScenarioCache {
 public:
  // The document, or the engine's error (not kept: a search stopped at one request's time limit
  // is tried again by the next request).
  StatusOr<std::string> Get(const std::string& name, bool json, const plan::SearchOptions& search) {
    const std::string key = name + (json ? "\njson" : "\nmarkdown");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = docs_.find(key); it != docs_.end()) return it->second;
    }
    // One computation at a time: requests that arrive while the answers are being computed wait
    // for them instead of all computing them (each scenario's search uses every core).
    std::lock_guard<std::mutex> computing(compute_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = docs_.find(key); it != docs_.end()) return it->second;
    }
    StatusOr<std::string> doc =
        name.empty() ? cli::ScenarioListDocument(json, search) : cli::ScenarioDocument(name, json, search);
    if (!doc.ok()) return doc;
    std::lock_guard<std::mutex> lock(mu_);
    docs_.emplace(key, *doc);
    return doc;
  }

 private:
  std::mutex mu_;          // guards docs_
  std::mutex compute_mu_;  // held while an answer is computed
  std::map<std::string, std::string> docs_;  // at most (scenarios + 1) x 2 entries
};

ApiResult HandleScenarios(ApiCall& call, ScenarioCache& cache) {
  ParamReader& p = call.params;
  const std::string name = ShortText(p, "name", "");
  const bool json = ReadDocumentFormat(p);
  if (p.error()) return ReaderError(p);
  if (p.Given("name")) {
    // Only known names reach the engine (and the cache).
    bool known = false;
    std::string names;
    for (const plan::ScenarioInfo& info : plan::Scenarios()) {
      known = known || info.name == name;
      names += (names.empty() ? "" : ", ") + info.name;
    }
    if (!known) return ParamFailure("name", fmt::format("name '{}': no such scenario; one of {}", name, names));
  }
  // Every core (each answer is computed once per server, one at a time), within the time limit.
  plan::SearchOptions search = RequestSearchOptions(call);
  search.threads = 0;
  auto doc = cache.Get(name, json, search);
  if (!doc.ok()) return EngineError(call, doc.status());
  return DocumentResponse(*std::move(doc), json);
}

ApiResult HandleExplain(ApiCall& call) {
  ParamReader& p = call.params;
  cli::RequestFlags rf;
  ReadPlanRequest(p, call.limits, &rf);
  const bool json = ReadDocumentFormat(p);
  if (p.error()) return ReaderError(p);
  auto req = PlanRequestOf(call, rf);
  if (auto* e = std::get_if<ApiError>(&req)) return *e;
  auto c = cli::ChooseLayout(rf, GivenOf(p), /*want_best=*/true, RequestSearchOptions(call));
  if (!c.ok()) return SearchError(call, c.status());
  if (call.Expired()) return call.TimeLimitError();
  return DocumentResponse(cli::ExplainDocument(*c, json), json);
}

}  // namespace

void RegisterScenarioEndpoints(Api& api) {
  const ParamSpec format = DocumentFormatParam();
  // One cache per Api (per server).
  auto cache = std::make_shared<ScenarioCache>();
  api.Register({"/api/scenarios",
                {"GET"},
                "lab 09's interview scenarios with their live one-line answers, or one scenario's "
                "five-part answer when a name is given (infralens scenarios [NAME] --json)",
                {{"name", {}, "a scenario (as listed); absent = the list", ""}, format},
                false,
                [cache](ApiCall& call) { return HandleScenarios(call, *cache); }});
  api.Register({"/api/explain",
                {"GET", "POST"},
                "the five-part interview answer (problem, mechanism, communication, tradeoff, "
                "measurement) for the layout the degrees give, or for the planner's best "
                "(infralens explain --json)",
                JoinParams({PlanRequestParams(), {format}}),
                false,
                HandleExplain});
}

}  // namespace infralens::server
