// infralens scenarios: lab 09's interview scenarios, listed with their live answers, or one of
// them as the five-part explanation.
#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/table.h"
#include "lab/scenarios.h"
#include "request/engine_requests.h"

namespace infralens::request {

StatusOr<std::string> ScenarioDocument(std::string_view name, bool json,
                                       const plan::SearchOptions& search) {
  auto a = lab::RunScenario(name, search);
  if (!a.ok() && a.status().code() == StatusCode::kNotFound)
    return a.status().WithCode(StatusCode::kInvalidArgument);
  if (!a.ok()) return a.status();
  lab::Explanation e = a->explanation;
  e.title = fmt::format("{}: {}", a->info.name, e.title);
  return json ? lab::RenderExplanationJson(e) : lab::RenderExplanationMarkdown(e);
}

StatusOr<std::string> ScenarioListDocument(bool json, const plan::SearchOptions& search) {
  // Each answered now.
  std::vector<std::pair<lab::ScenarioInfo, std::string>> rows;
  for (const lab::ScenarioInfo& info : lab::Scenarios()) {
    auto a = lab::RunScenario(info.name, search);
    if (!a.ok() && a.status().code() == StatusCode::kResourceExhausted) return a.status();
    rows.emplace_back(info, a.ok() ? a->headline : "error: " + a.status().message());
  }
  if (json) {
    JsonWriter w;
    w.BeginObject().Key("scenarios").BeginArray();
    for (const auto& [info, headline] : rows) {
      w.BeginObject()
          .Field("name", info.name)
          .Field("title", info.title)
          .Field("question", info.question);
      w.Field("answer", headline).EndObject();
    }
    w.EndArray().EndObject();
    return w.str();
  }
  std::string data =
      "# Interview scenarios (lab 09)\n\nEach answer is computed now by the engine; `infralens "
      "scenarios NAME` "
      "gives the five-part explanation.\n\n| Scenario | Question | Answer (live) |\n| --- | --- | "
      "--- |\n";
  for (const auto& [info, headline] : rows) {
    data += fmt::format("| {} | {} | {} |\n", info.name, info.title, headline);
  }
  return data;
}

namespace {

struct ScenariosQuery {
  std::vector<std::string> names;
};

}  // namespace

const Command& ScenariosCommand() {
  static const Command kCommand = MakeCommand<ScenariosQuery, std::string>(
      {.name = "scenarios",
       .summary = "interview scenarios, each answered live by the engine (lab 09)",
       .usage = "infralens scenarios [NAME] [--json]",
       .examples = {"infralens scenarios", "infralens scenarios dp64-oom",
                    "infralens scenarios tp-across-nodes --json"},
       .formats = {"markdown", "json"},
       .cacheable = true},
      [](ScenariosQuery& q, FlagSink& flags) {
        flags.Positionals("NAME", &q.names,
                          "a scenario to answer in five parts; none: list them all");
      },
      // The document is the work: the list and one scenario differ in what they compute.
      [](const ScenariosQuery& q, const RunContext& ctx) -> StatusOr<std::string> {
        if (q.names.size() > 1) {
          return InvalidArgument(
              fmt::format("scenarios: one NAME at most, got {}", q.names.size()));
        }
        const bool json = ctx.format == "json";
        if (q.names.size() == 1) return ScenarioDocument(q.names[0], json);
        return ScenarioListDocument(json);
      },
      [](const std::string& document, const ScenariosQuery&, const RunContext&) {
        return StatusOr<std::string>(document);
      });
  return kCommand;
}

}  // namespace infralens::request
