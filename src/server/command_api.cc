#include "server/command_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "cluster/cluster.h"
#include "plan/layer_layout.h"
#include "request/engine_requests.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

constexpr double kMaxParamGpus = static_cast<double>(cluster::kMaxGpus);

// The API's bounds on the options several commands share (a name has one meaning in every
// command: tests/flag_consistency_test.cc), checked before any work; the engines check the rest
// and give the CLI's messages.
constexpr ParamBound kSharedBounds[] = {
    // request::ClusterFlags
    {"gpus", 1, kMaxParamGpus},
    {"nodes", 1, kMaxParamGpus},
    {"tp", 1, kMaxParamGpus},
    {"cp", 1, kMaxParamGpus},
    {"ep", 1, kMaxParamGpus},
    {"dp", 0, kMaxParamGpus},
    {"pp", 1, kMaxParamGpus},
    // request::TrainingFlags
    {"vpp", 0, 1024},
    {"zero", 0, 3},
    {"micro_batch", 1, 65536},
    {"first_stage_layers", 1, 1 << 20},
    {"last_stage_layers", 1, 1 << 20},
    {"global_batch", 0, kMaxApiGlobalBatch},
    {"seq", 0, 1 << 21},
    // request::MemoryQuery, PlanQuery
    {"reserve_gib", 0, 1e6},
    {"search_seconds", 0, request::kMaxSearchSeconds},
};

// Text options longer than a name: what the CLI reads from a file comes as text here.
struct TextBound {
  std::string_view name;
  size_t max_bytes;
};
constexpr TextBound kLongText[] = {
    {"layout", plan::kMaxLayoutChars},
    {"efficiency", kMaxApiEfficiencyBytes},
};
constexpr size_t kMaxNameBytes = 100;  // presets, schedules, orders, sizes

// The options a command declares, less those of the CLI alone (CommandInfo::cli_only): the API
// neither lists nor reads them, and their fields keep their defaults.
class ApiOptions : public request::FlagSink {
 public:
  ApiOptions(request::FlagSink& inner, const std::vector<std::string>& cli_only)
      : inner_(inner), cli_only_(cli_only) {}
  void Int(const std::string& names, int* out, const std::string& help) override {
    if (Api(names)) inner_.Int(names, out, help);
  }
  void OptionalInt(const std::string& names, int* out, const std::string& help) override {
    if (Api(names)) inner_.OptionalInt(names, out, help);
  }
  void Double(const std::string& names, double* out, const std::string& help) override {
    if (Api(names)) inner_.Double(names, out, help);
  }
  void String(const std::string& names, std::string* out, const std::string& help) override {
    if (Api(names)) inner_.String(names, out, help);
  }
  void Bool(const std::string& names, bool* out, const std::string& help) override {
    if (Api(names)) inner_.Bool(names, out, help);
  }
  void Positionals(const std::string& name, std::vector<std::string>* out,
                   const std::string& help) override {
    inner_.Positionals(name, out, help);
  }
  bool Given(const std::string& name) const override { return inner_.Given(name); }

 private:
  bool Api(const std::string& names) const {
    for (const std::string& c : cli_only_) {
      if (names == c || names.ends_with("," + c) || names.starts_with(c + ",")) return false;
    }
    return true;
  }
  request::FlagSink& inner_;
  const std::vector<std::string>& cli_only_;
};
// The media type of a document format.
std::string_view ContentTypeOf(std::string_view format) {
  if (format == "json" || format == "chrome") return "application/json";
  if (format == "markdown") return "text/markdown; charset=utf-8";
  if (format == "svg") return "image/svg+xml";
  if (format == "csv") return "text/csv; charset=utf-8";
  return "text/plain; charset=utf-8";
}

}  // namespace

std::string ParamNameOf(const std::string& names) { return ParamSpecOfFlag(names, "", "").name; }

ParamBound ParamSink::BoundOf(std::string_view name, double min, double max) const {
  for (const ParamBound& b : overrides_) {
    if (b.name == name) return b;
  }
  for (const ParamBound& b : kSharedBounds) {
    if (b.name == name) return b;
  }
  return {name, min, max};
}

void ParamSink::Int(const std::string& names, int* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  constexpr int kMax = std::numeric_limits<int>::max();
  const ParamBound b = BoundOf(name, -kMax, kMax);
  *out = p_.Int(name, *out, static_cast<int>(b.min), static_cast<int>(b.max));
}

void ParamSink::OptionalInt(const std::string& names, int* out, const std::string& help) {
  Int(names, out, help);
}

void ParamSink::Double(const std::string& names, double* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  constexpr double kMax = std::numeric_limits<double>::max();
  const ParamBound b = BoundOf(name, -kMax, kMax);
  *out = p_.Number(name, *out, b.min, b.max);
}

void ParamSink::String(const std::string& names, std::string* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  size_t max_bytes = kMaxNameBytes;
  for (const TextBound& t : kLongText) {
    if (t.name == name) max_bytes = t.max_bytes;
  }
  std::string v = p_.Text(name, *out);
  if (v.size() > max_bytes) {
    p_.Fail(name, fmt::format("{}: at most {} characters", name, max_bytes));
    return;
  }
  *out = std::move(v);
}

void ParamSink::Bool(const std::string& names, bool* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  if (p_.Given(name)) *out = p_.Flag(name);
}

void ParamSink::Positionals(const std::string&, std::vector<std::string>* out, const std::string&) {
  if (!body_.empty()) out->assign(1, std::string(body_));
}

bool ParamSink::Given(const std::string& name) const { return p_.Given(ParamNameOf(name)); }

void RegisterCommand(Api& api, const request::Command& command, CommandRoute route) {
  const request::CommandInfo& info = command.info();
  std::vector<ParamSpec> params = ParamSpecsOf([&](request::FlagSink& f) {
    ApiOptions options(f, info.cli_only);
    command.Declare(options);
  });
  ApiHelp(params);
  if (route.search) {
    // The server's GPU bound on a search, read as the parameter's (nodes are checked once the
    // cluster is known: ComputePlan).
    route.bounds.push_back(
        {"gpus", 1,
         static_cast<double>(std::min<int64_t>(api.limits().max_plan_gpus, cluster::kMaxGpus))});
  }
  if (route.formats.size() > 1) {
    params.push_back({"format",
                      {},
                      route.format_help.empty()
                          ? fmt::format("{}", fmt::join(route.formats, " or "))
                          : route.format_help,
                      route.formats[0]});
  }
  std::string summary = fmt::format("{} (infralens {} --json)", info.summary, info.name);
  auto handler = [&command, route](ApiCall& call) -> ApiResult {
    ParamReader& p = call.params;
    ParamSink sink(p, route.bounds, route.body ? call.body : std::string_view());
    ApiOptions options(sink, command.info().cli_only);
    std::unique_ptr<request::CommandRun> run = command.Declare(options);
    request::RunContext ctx;
    ctx.format = route.formats[0];
    if (route.formats.size() > 1) {
      std::vector<std::string_view> allowed(route.formats.begin(), route.formats.end());
      ctx.format = p.Choice("format", route.formats[0], allowed);
    }
    if (p.error()) return ReaderError(p);
    ctx.given = GivenOf(p);
    ctx.stop = [&call] { return call.Expired(); };
    ctx.files_allowed = false;
    ctx.json_indent = 0;
    ctx.api = true;
    ctx.max_actions = route.max_actions;
    if (route.search) {
      const plan::SearchOptions search = RequestSearchOptions(call);
      ctx.stop = search.stop;
      ctx.threads = search.threads;
      ctx.keep_partial = true;
      ctx.max_gpus = call.limits.max_plan_gpus;
    }
    auto document = run->Document(ctx);
    if (!document.ok()) {
      return route.search ? SearchError(call, document.status())
                          : EngineError(call, document.status());
    }
    if (call.Expired() && !route.search) return call.TimeLimitError();
    return TextResponse(*std::move(document), std::string(ContentTypeOf(ctx.format)));
  };
  if (route.body) route.methods = {"POST"};
  api.Register({route.path, route.methods, std::move(summary), std::move(params), route.body,
                std::move(handler), /*upload=*/false, route.light});
}

}  // namespace infralens::server
