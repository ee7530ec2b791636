#include "server/command_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "base/strings.h"
#include "cluster/cluster.h"
#include "plan/layer_layout.h"
#include "request/engine_requests.h"
#include "request/pipeline_flags.h"
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
    {"stage_costs", request::kMaxStageCostsBytes},
};
constexpr size_t kMaxNameBytes = 100;  // presets, schedules, orders, sizes

// The options a command declares as the API reads them: less those of the CLI alone
// (CommandInfo::cli_only), whose fields keep their defaults; a positional argument is the body
// (CommandRoute::body) or else the parameter named after it (NAME: name).
class ApiOptions : public request::OptionFilter {
 public:
  ApiOptions(request::FlagSink& inner, const request::CommandInfo& info, bool body)
      : OptionFilter(inner, info.cli_only), body_(body) {}
  void Positionals(const std::string& name, std::vector<std::string>* out,
                   const std::string& help) override {
    if (body_) {
      inner().Positionals(name, out, help);
      return;
    }
    std::string flag = "--", value;
    flag += ToLower(name);
    inner().String(flag, &value, help);
    if (!value.empty()) out->assign(1, value);
  }

 private:
  bool body_;
};

// The answers of a cacheable command's route (CommandInfo::cacheable), by query; see
// command_api.h. The computations run one at a time (a cacheable command bounds its own work
// and may use every core).
class AnswerCache {
 public:
  struct Answer {
    std::string document;
    std::string stem;  // CommandRun::FileStem
  };
  using Future = std::shared_future<StatusOr<Answer>>;

  ~AnswerCache() {
    // The computations hold no reference to the cache; wait for any still running.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, answer] : answers_) answer.wait();
  }

  // The computation of `key`'s answer, started as `run` under `ctx` when it was not; nullopt
  // when the cache is full.
  std::optional<Future> Start(const std::string& key, std::unique_ptr<request::CommandRun>& run,
                              request::RunContext ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    // Failures are not kept: an unknown name asked for costs nothing once answered.
    std::erase_if(answers_, [](const auto& entry) {
      return entry.second.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
             !entry.second.get().ok();
    });
    if (auto it = answers_.find(key); it != answers_.end()) return it->second;
    if (answers_.size() >= kMaxCachedAnswers) return std::nullopt;
    std::shared_ptr<request::CommandRun> shared = std::move(run);
    auto compute = [shared, ctx = std::move(ctx), computing = computing_]() -> StatusOr<Answer> {
      std::lock_guard<std::mutex> one_at_a_time(*computing);
      ASSIGN_OR_RETURN(std::string document, shared->Document(ctx));
      return Answer{std::move(document), shared->FileStem()};
    };
    return answers_.emplace(key, std::async(std::launch::async, std::move(compute)).share())
        .first->second;
  }

 private:
  std::mutex mu_;  // guards answers_
  std::shared_ptr<std::mutex> computing_ = std::make_shared<std::mutex>();
  std::map<std::string, Future> answers_;  // at most kMaxCachedAnswers
};

// The parameters given, by the flag the command asks about (RunContext::given), for a run that
// outlives its request.
request::GivenFn GivenSnapshot(const ParamReader& p) {
  std::set<std::string> names;
  for (const auto& [name, value] : p.values()) names.insert(name);
  return [names = std::move(names)](const std::string& flag) {
    return names.contains(ParamNameOf(flag));
  };
}

}  // namespace

std::string_view ContentTypeOf(std::string_view format) {
  if (format == "json" || format == "chrome" || format == "columns") return "application/json";
  if (format == "markdown") return "text/markdown; charset=utf-8";
  if (format == "svg") return "image/svg+xml";
  if (format == "csv") return "text/csv; charset=utf-8";
  return "text/plain; charset=utf-8";
}

std::string_view FileExtensionOf(std::string_view format) {
  if (format == "json" || format == "columns") return ".json";
  if (format == "chrome") return ".trace.json";
  if (format == "markdown") return ".md";
  if (format == "svg") return ".svg";
  if (format == "csv") return ".csv";
  return ".txt";
}

int64_t ActionLimitOf(const request::CommandInfo& info, std::string_view format,
                      int64_t max_actions) {
  for (const request::FormatActionScale& a : info.action_scale) {
    if (a.format == format) return max_actions * a.numerator / a.denominator;
  }
  return max_actions;
}

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
  Record(name, std::to_string(*out));
}

void ParamSink::OptionalInt(const std::string& names, int* out, const std::string& help) {
  Int(names, out, help);
}

void ParamSink::Double(const std::string& names, double* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  constexpr double kMax = std::numeric_limits<double>::max();
  const ParamBound b = BoundOf(name, -kMax, kMax);
  *out = p_.Number(name, *out, b.min, b.max);
  Record(name, fmt::format("{}", *out));
}

void ParamSink::String(const std::string& names, std::string* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  size_t max_bytes = kMaxNameBytes;
  for (const TextBound& t : kLongText) {
    if (t.name == name) max_bytes = t.max_bytes;
  }
  std::string v = p_.Text(name, *out);
  if (v.size() > max_bytes) {
    p_.Fail(name, fmt::format("{}: at most {} characters ({} given)", name, max_bytes, v.size()));
    return;
  }
  *out = std::move(v);
  Record(name, *out);
}

void ParamSink::Bool(const std::string& names, bool* out, const std::string&) {
  const std::string name = ParamNameOf(names);
  if (p_.Given(name)) *out = p_.Flag(name);
  Record(name, *out ? "1" : "0");
}

void ParamSink::Positionals(const std::string&, std::vector<std::string>* out, const std::string&) {
  if (!body_.empty()) out->assign(1, std::string(body_));
  Record("body", std::string(body_));
}

void ParamSink::Record(const std::string& name, const std::string& value) {
  // Given or not: a command may read an option's absence (RunContext::given).
  if (record_ != nullptr) *record_ += name + (p_.Given(name) ? "=" : "~") + value + "\n";
}

bool ParamSink::Given(const std::string& name) const { return p_.Given(ParamNameOf(name)); }

void RegisterCommand(Api& api, const request::Command& command, CommandRoute route) {
  const request::CommandInfo& info = command.info();
  for (const std::string& f : route.formats) {
    // A programming error: every format an endpoint answers is declared.
    if (std::ranges::find(info.formats, f) == info.formats.end() &&
        std::ranges::find(info.api_formats, f) == info.api_formats.end()) {
      std::abort();
    }
  }
  if (route.body) route.methods = {"POST"};
  auto declare_api = [&command, body = route.body](request::FlagSink& f) {
    ApiOptions options(f, command.info(), body);
    return command.Declare(options);
  };
  std::vector<ParamSpec> params = ParamSpecsOf([&](request::FlagSink& f) { declare_api(f); });
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
  if (command.downloadable()) {
    params.push_back({"download", {}, "1: send as a file (Content-Disposition: attachment)", "0"});
  }
  // What every run of the route is given beside its options.
  auto context_of = [&info, max_actions = route.max_actions](const std::string& format) {
    request::RunContext ctx;
    ctx.format = format;
    ctx.files_allowed = false;
    ctx.json_indent = 0;
    ctx.api = true;
    ctx.max_actions = ActionLimitOf(info, format, max_actions);
    return ctx;
  };
  std::shared_ptr<AnswerCache> cache;
  if (info.cacheable) cache = std::make_shared<AnswerCache>();
  if (cache && api.limits().warm_caches) {
    const ParamList none;
    ParamReader defaults(none, params);
    ParamSink sink(defaults);
    std::string key;
    sink.RecordInto(&key);
    std::unique_ptr<request::CommandRun> run = declare_api(sink);
    key += "format=" + route.formats[0];
    request::RunContext ctx = context_of(route.formats[0]);
    ctx.given = GivenSnapshot(defaults);
    ctx.stop = [] { return false; };
    (void)cache->Start(key, run, std::move(ctx));
  }
  std::string summary = fmt::format("{} (infralens {} --json)", info.summary, info.name);
  auto handler = [&command, route, declare_api, cache, context_of](ApiCall& call) -> ApiResult {
    ParamReader& p = call.params;
    ParamSink sink(p, route.bounds, route.body ? call.body : std::string_view());
    std::string key;  // the query as read (canonical values), for the cache
    if (cache) sink.RecordInto(&key);
    std::unique_ptr<request::CommandRun> run = declare_api(sink);
    std::string format = route.formats[0];
    if (route.formats.size() > 1) {
      std::vector<std::string_view> allowed(route.formats.begin(), route.formats.end());
      format = p.Choice("format", route.formats[0], allowed);
    }
    const bool download = command.downloadable() && p.Flag("download");
    if (p.error()) return ReaderError(p);
    request::RunContext ctx = context_of(format);
    std::optional<AnswerCache::Future> cached;
    if (cache) {
      key += "format=" + format;
      if (key.size() <= kMaxCacheKeyBytes) {
        request::RunContext own = ctx;
        own.given = GivenSnapshot(p);
        own.stop = [] { return false; };  // to its end, for every later request
        cached = cache->Start(key, run, std::move(own));
      }
    }
    std::string document, stem;
    if (cached) {
      // The answer is fixed work bounded by the command, not by the request: waiting for it
      // costs a worker thread and no CPU, so a request may wait ServerLimits::cached_wait beyond
      // its compute limit.
      const auto until =
          std::max(call.deadline(), std::chrono::steady_clock::now() + call.limits.cached_wait);
      if (cached->wait_until(until) != std::future_status::ready) {
        ApiError e = call.TimeLimitError();
        e.message = fmt::format(
            "this answer (infralens {}) is still being computed, once per server (a few seconds "
            "at most); ask again in a moment",
            command.info().name);
        return e;
      }
      const StatusOr<AnswerCache::Answer>& answer = cached->get();
      if (!answer.ok()) return EngineError(call, answer.status());
      document = answer->document;
      stem = answer->stem;
    } else {
      // Not cacheable, or the cache is full or the query too long: this request's own run.
      ctx.given = GivenOf(p);
      ctx.stop = [&call] { return call.Expired(); };
      if (route.search) {
        const plan::SearchOptions search = RequestSearchOptions(call);
        ctx.stop = search.stop;
        ctx.threads = search.threads;
        ctx.keep_partial = true;
        ctx.max_gpus = call.limits.max_plan_gpus;
      }
      auto done = run->Document(ctx);
      if (!done.ok()) {
        return route.search ? SearchError(call, done.status()) : EngineError(call, done.status());
      }
      if (call.Expired() && !route.search) return call.TimeLimitError();
      document = *std::move(done);
      stem = run->FileStem();
    }
    HttpResponse res = TextResponse(std::move(document), std::string(ContentTypeOf(format)));
    if (download) {
      res.headers.emplace_back("Content-Disposition", fmt::format("attachment; filename=\"{}{}\"",
                                                                  stem, FileExtensionOf(format)));
    }
    return res;
  };
  api.Register({route.path, route.methods, std::move(summary), std::move(params), route.body,
                std::move(handler), /*upload=*/false, route.light});
}

}  // namespace infralens::server
