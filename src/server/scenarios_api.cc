#include "server/endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <variant>

#include "lab/scenarios.h"
#include "request/engine_requests.h"
#include "server/command_api.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

// The scenarios are fixed questions on fixed presets, so their answers depend only on the
// binary: each document is computed once per server and kept; `infralens serve` starts the list,
// which the scenarios page asks for first, when the endpoints are registered. The computation is
// bounded by the scenarios themselves (about a second in all on two cores; several under the
// sanitizers), so it runs to its end on its own thread, on every core, one document at a time,
// whatever happens to the request that started it: a request waits for it until its own deadline
// and then gets a 503, and a later request finds the answer ready.
class ScenarioCache {
 public:
  ~ScenarioCache() {
    // The computations hold no reference to the cache; wait for any still running.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, doc] : docs_) doc.wait();
  }

  // The document or the engine's error; ResourceExhausted when it is not ready by `deadline`.
  StatusOr<std::string> Get(const std::string& name, bool json,
                            std::chrono::steady_clock::time_point deadline) {
    std::shared_future<StatusOr<std::string>> doc = Start(name, json);
    if (doc.wait_until(deadline) != std::future_status::ready) {
      return ResourceExhausted(
          "the interview scenarios are still being computed (once per server, a few seconds "
          "at most); ask again in a moment");
    }
    return doc.get();
  }

  // The document's computation, started if it was not.
  std::shared_future<StatusOr<std::string>> Start(const std::string& name, bool json) {
    const std::string key = name + (json ? "\njson" : "\nmarkdown");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = docs_.find(key);
    if (it == docs_.end()) {
      std::shared_ptr<std::mutex> computing = computing_;
      it = docs_
               .emplace(key, std::async(std::launch::async,
                                        [name, json, computing] {
                                          std::lock_guard<std::mutex> one_at_a_time(*computing);
                                          return name.empty()
                                                     ? request::ScenarioListDocument(json)
                                                     : request::ScenarioDocument(name, json);
                                        })
                                 .share())
               .first;
    }
    return it->second;
  }

 private:
  std::mutex mu_;  // guards docs_
  std::shared_ptr<std::mutex> computing_ =
      std::make_shared<std::mutex>();  // held while a document is computed
  std::map<std::string, std::shared_future<StatusOr<std::string>>>
      docs_;  // at most (scenarios + 1) x 2
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
    for (const lab::ScenarioInfo& info : lab::Scenarios()) {
      known = known || info.name == name;
      names += (names.empty() ? "" : ", ") + info.name;
    }
    if (!known)
      return ParamFailure("name",
                          fmt::format("name '{}': no such scenario; one of {}", name, names));
  }
  // The documents are fixed work bounded by the scenarios, not by the request: waiting for them
  // costs a worker thread and no CPU, so a request may wait ServerLimits::scenario_wait beyond
  // its compute limit (a busy machine computes the list in 5-10 s).
  auto doc = cache.Get(
      name, json,
      std::max(call.deadline(), std::chrono::steady_clock::now() + call.limits.scenario_wait));
  if (!doc.ok() && doc.status().code() == StatusCode::kResourceExhausted) {
    ApiError e = call.TimeLimitError();
    e.message = doc.status().message();
    return e;
  }
  if (!doc.ok()) return EngineError(call, doc.status());
  return DocumentResponse(*std::move(doc), json);
}

}  // namespace

void RegisterScenarioEndpoints(Api& api) {
  const ParamSpec format = DocumentFormatParam();
  // One cache per Api (per server); the list started now when the server asks for it.
  auto cache = std::make_shared<ScenarioCache>();
  if (api.limits().warm_scenarios) cache->Start("", /*json=*/true);
  api.Register({"/api/scenarios",
                {"GET"},
                "lab 09's interview scenarios with their live one-line answers, or one scenario's "
                "five-part answer when a name is given (infralens scenarios [NAME] --json)",
                {{"name", {}, "a scenario (as listed); absent = the list", ""}, format},
                false,
                [cache](ApiCall& call) { return HandleScenarios(call, *cache); }});
  RegisterCommand(api, request::ExplainCommand(),
                  {.path = "/api/explain",
                   .formats = {"json", "markdown"},
                   .format_help = "json (as --json) or markdown",
                   .search = true});
}

}  // namespace infralens::server
