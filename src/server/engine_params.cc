#include "server/engine_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "plan/layer_layout.h"
#include "request/pipeline_flags.h"

namespace infralens::server {

namespace {

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

// "--global-batch" -> global_batch (alias global-batch); "-m,--microbatches" -> microbatches
// (alias m); "--pp,--stages" -> pp (alias stages).
ParamSpec ParamSpecOfFlag(const std::string& names, std::string help, std::string def) {
  std::string name;
  std::vector<std::string> aliases;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string::npos) comma = names.size();
    std::string part = names.substr(start, comma - start);
    start = comma + 1;
    const bool is_long = part.rfind("--", 0) == 0;
    part.erase(0, part.find_first_not_of('-'));
    std::string underscored = part;
    std::replace(underscored.begin(), underscored.end(), '-', '_');
    if (name.empty() && is_long) {
      name = underscored;
      if (underscored != part) aliases.push_back(part);
    } else {
      aliases.push_back(part);
    }
  }
  return {name, aliases, std::move(help), std::move(def)};
}

namespace {

// The API's parameters are the CLI's options, declared once by the request structs' Register
// functions: the name is the long flag without its dashes and with '_' for '-' (global_batch;
// the hyphenated spelling is an alias), the help and the default are the flag's.
class SpecSink : public request::FlagSink {
 public:
  std::vector<ParamSpec> specs;

  void Int(const std::string& names, int* out, const std::string& help) override {
    Add(names, help, std::to_string(*out));
  }
  void OptionalInt(const std::string& names, int* out, const std::string& help) override {
    Add(names, help, "");
  }
  void Double(const std::string& names, double* out, const std::string& help) override {
    Add(names, help, fmt::format("{}", *out));
  }
  void String(const std::string& names, std::string* out, const std::string& help) override {
    Add(names, help, *out);
  }
  void Bool(const std::string& names, bool* out, const std::string& help) override {
    Add(names, help, "0");
  }
  bool Given(const std::string&) const override { return false; }

  ParamSpec& Find(std::string_view name) { return FindParam(specs, name); }

 private:
  void Add(const std::string& names, const std::string& help, std::string def) {
    specs.push_back(ParamSpecOfFlag(names, help, std::move(def)));
  }
};

}  // namespace

std::vector<ParamSpec> ParamSpecsOf(const std::function<void(request::FlagSink&)>& declare) {
  SpecSink sink;
  declare(sink);
  return sink.specs;
}

void ApiHelp(std::vector<ParamSpec>& specs) {
  for (ParamSpec& s : specs) {
    // A request reads no file: presets, and what the CLI reads from a file comes as text.
    if (s.name == "cluster") {
      s.help = "a cluster preset (" + cluster::ClusterPresetNames() + ")";
    } else if (s.name == "model") {
      s.help = "a model preset (infralens presets --kind models); required";
    } else if (s.name == "global_batch") {
      s.help += fmt::format(" (at most {} here)", kMaxApiGlobalBatch);
    } else if (s.name == "width") {
      s.help = "columns of the ascii timeline";  // the API's bound is the route's
      s.default_text = "100";                    // RunContext::term_width
    } else if (s.name == "stage_costs") {
      s.help = "per-stage costs as CSV text: stage,f,b,i,w,fb (any subset after stage)";
    } else if (s.name == "efficiency") {
      s.help = fmt::format(
          "efficiency constants as CSV text (data/hw/efficiency.csv's form, as infralens trace "
          "calibrate writes it; at most {} bytes) over the built-in ones",
          kMaxApiEfficiencyBytes);
    }
  }
}

ParamSpec& FindParam(std::vector<ParamSpec>& specs, std::string_view name) {
  for (ParamSpec& s : specs) {
    if (s.name == name) return s;
  }
  std::abort();  // a programming error: every name asked for is declared by the caller
}

// The pipeline options as the CLI declares them (request::PipelineFlags, and -s,--schedule).
std::vector<ParamSpec> PipelineParams(bool with_schedule) {
  std::string schedule_name = "1f1b";
  request::PipelineFlags defaults;
  std::vector<ParamSpec> specs = ParamSpecsOf([&](request::FlagSink& sink) {
    if (with_schedule) request::RegisterScheduleOption(sink, &schedule_name);
    defaults.Register(sink);
  });
  ApiHelp(specs);
  return specs;
}

request::GivenFn GivenOf(const ParamReader& p) {
  return [&p](const std::string& flag) {
    std::string name = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
    for (char& c : name) {
      if (c == '-') c = '_';
    }
    return p.Given(name);
  };
}

ParamSpec DocumentFormatParam() { return {"format", {}, "json (as --json) or markdown", "json"}; }

bool ReadDocumentFormat(ParamReader& p) {
  return p.Choice("format", "json", {"json", "markdown"}) == "json";
}

std::vector<ParamSpec> EfficiencyParams() {
  std::string path;
  std::vector<ParamSpec> specs =
      ParamSpecsOf([&](request::FlagSink& f) { request::RegisterEfficiency(f, &path); });
  ApiHelp(specs);
  return specs;
}

std::string ReadEfficiencyText(ParamReader& p) {
  std::string text = p.Text("efficiency", "");
  if (text.size() > kMaxApiEfficiencyBytes) {
    p.Fail("efficiency", fmt::format("efficiency: {} bytes of CSV text; at most {}", text.size(),
                                     kMaxApiEfficiencyBytes));
    return "";
  }
  return text;
}

std::vector<ParamSpec> PlanRequestParams() {
  std::vector<ParamSpec> specs = ParamSpecsOf([](request::FlagSink& f) {
    request::RequestFlags().Register(f, /*layout=*/true, /*exports=*/false);
  });
  ApiHelp(specs);
  return specs;
}

std::variant<plan::PlanRequest, ApiError> PlanRequestOf(const ApiCall& call,
                                                        const request::RequestFlags& rf) {
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

std::variant<request::LayoutChoice, ApiError> ChooseRequestLayout(ApiCall& call,
                                                                  const request::RequestFlags& rf,
                                                                  bool want_best) {
  auto req = PlanRequestOf(call, rf);
  if (auto* e = std::get_if<ApiError>(&req)) return *e;
  auto c = request::ChooseLayout(std::get<plan::PlanRequest>(std::move(req)), rf,
                                 GivenOf(call.params), want_best, RequestSearchOptions(call));
  if (!c.ok()) return SearchError(call, c.status());
  if (call.Expired()) return call.TimeLimitError();
  return *std::move(c);
}

plan::SearchOptions RequestSearchOptions(const ApiCall& call) {
  plan::SearchOptions o;
  // A search is what one person at the design page waits for: it uses the cores there are (at
  // most 4), still inside the request's time limit (2,800 layouts of Llama 3 70B on 64 GPUs took
  // 1.2 s on one core of a 2-core machine, past the page's 1 s budget: docs/workbench.md).
  o.threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  auto evaluated = std::make_shared<std::atomic<int64_t>>(0);
  const int64_t most = call.limits.max_search_layouts;
  o.stop = [&call, evaluated, most] {
    return call.Expired() || (most > 0 && evaluated->fetch_add(1) >= most);
  };
  return o;
}

ApiError SearchError(const ApiCall& call, const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return EngineError(call, status);
  ApiError e = call.TimeLimitError();
  // Stopped by the count of layouts (ServerLimits::max_search_layouts) or by the time limit; a
  // search that had ranked a layout that fits answered with it (partial), so none had.
  const std::string limit =
      !call.Expired() && call.limits.max_search_layouts > 0
          ? fmt::format("the server's limit of {} layouts", call.limits.max_search_layouts)
          : fmt::format("the server's time limit of {} ms", call.limits.time_limit.count());
  e.message = fmt::format(
      "the layout search ran past {} ({}) before any layout that fits; name a schedule to "
      "search fewer layouts, give fewer GPUs or a smaller global batch, or run the search on "
      "every core with the CLI (infralens plan)",
      limit, status.message());
  return e;
}

ApiError ReaderError(const ParamReader& p) {
  return ParamFailure(p.error()->parameter, p.error()->message);
}

sim::CostInput ReadCostInput(ParamReader& p) {
  sim::CostInput in;
  in.f = p.Number("f", 1.0, 0, kMaxParamMs);
  in.b = p.OptionalNumber("b", 0, kMaxParamMs);
  in.i = p.OptionalNumber("i", 0, kMaxParamMs);
  in.w = p.OptionalNumber("w", 0, kMaxParamMs);
  in.fb = p.Number("fb", -1.0, -kMaxParamMs, kMaxParamMs);
  in.p2p = p.Number("p2p", 0.0, 0, kMaxParamMs);
  return in;
}

ApiError EngineError(const ApiCall& call, const Status& status) {
  if (status.code() == StatusCode::kResourceExhausted) return call.TimeLimitError();
  return FromStatus(status);
}

}  // namespace infralens::server
