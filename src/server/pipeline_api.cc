#include "server/endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "base/json_writer.h"
#include "base/strings.h"
#include "io/pytorch_csv.h"
#include "io/schedule_output.h"
#include "render/timeline.h"
#include "request/pipeline_flags.h"
#include "schedule/schedule.h"
#include "server/command_api.h"
#include "server/engine_params.h"
#include "sim/compare.h"
#include "sim/simulator.h"

namespace infralens::server {

namespace {

// Bounds on the shape parameters, before the action-count bound. The CLI's own checks (Generate)
// still apply and give the same messages.
constexpr int kMaxPp = 1024;
constexpr int kMaxVpp = 64;
constexpr int kMaxMicrobatches = 100'000;
// Actions whose dependencies a JSON answer lists: the pipeline page draws at most this many blocks
// (web/js/timeline.js MAX_DRAWN).
constexpr int64_t kMaxDependencyActions = 20'000;

const std::vector<std::string_view> kShapeParams = {"pp", "vpp", "microbatches"};
const std::vector<std::string_view> kCostParams = {"f", "b", "i", "w", "fb", "p2p"};

std::vector<ParamSpec> Concat(std::vector<std::vector<ParamSpec>> parts) {
  std::vector<ParamSpec> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<std::string_view> kScheduleFormats = {"json",   "columns", "csv",
                                                        "chrome", "svg",     "ascii"};

// format=columns, the compact JSON the canvas timeline reads (web/js/timeline.js): about 40 bytes
// an action against 100 for format=json (plus deps), so it may hold this many times the server's
// max_actions (500,000 at the default: P = 64, m = 1,000 interleaved is a bound of 384,000).
constexpr int64_t kColumnsActionFactorNum = 5;
constexpr int64_t kColumnsActionFactorDen = 2;
int64_t ActionLimit(const ApiCall& call, const std::string& format) {
  return format == "columns"
             ? call.limits.max_actions * kColumnsActionFactorNum / kColumnsActionFactorDen
             : call.limits.max_actions;
}

std::vector<ParamSpec> OutputParams() {
  return {
      {"format",
       {},
       "json (as `infralens schedule --json`), columns (the same without \"actions\", which "
       "come as \"columns\": one array per field, type as codes into \"types\"; with "
       "dependencies=1, \"deps\" flat and \"dep_offsets\"), csv (PyTorch), chrome (Perfetto "
       "trace), svg, ascii",
       "json"},
      {"download", {}, "1: send as a file (Content-Disposition: attachment)", "0"},
      {"dependencies",
       {"deps"},
       fmt::format("1: each JSON action also lists \"deps\", the indexes of the actions it waits "
                   "for, up to {} actions (what a page draws); above, none, and "
                   "\"dependencies_omitted\": true says so",
                   kMaxDependencyActions),
       "0"},
      {"width", {}, "columns of the ascii timeline", "100"},
  };
}

// Costs as `infralens schedule` resolves them (B = I + W), plus per-stage costs from text.
// Per rank per microbatch, as the CLI reads them: a chunk action takes 1/`chunks_per_rank`.
StatusOr<sim::Costs> ReadCosts(ParamReader& p, int num_stages, int chunks_per_rank,
                               bool allow_stage_costs, std::string* bad_param) {
  const sim::CostInput in = ReadCostInput(p);
  if (p.error()) return InvalidArgument("");  // the caller reports p.error()
  auto c = sim::ResolveCosts(in);
  if (!c.ok()) return c.status();
  if (Status st = sim::ValidateCosts(*c, num_stages); !st.ok()) return st;
  *c = sim::ChunkCosts(*c, std::max(1, chunks_per_rank));
  if (allow_stage_costs && p.Given("stage_costs")) {
    Status st = request::ReadStageCosts(p.Text("stage_costs", ""), c->uniform, num_stages, *c);
    if (!st.ok()) {
      *bad_param = "stage_costs";
      return InvalidArgument(fmt::format("stage_costs: {}", st.message()));
    }
    st = sim::ValidateCosts(*c, num_stages);
    if (!st.ok()) {
      *bad_param = "stage_costs";
      return st;
    }
  }
  return c;
}

struct OutputChoice {
  std::string format;
  bool download = false;
  bool dependencies = false;
  int width = 100;
};

OutputChoice ReadOutput(ParamReader& p) {
  OutputChoice o;
  o.format = p.Choice("format", "json", kScheduleFormats);
  o.download = p.Flag("download");
  o.dependencies = p.Flag("dependencies");
  o.width = p.Int("width", 100, 20, 1000);
  return o;
}

// The type codes of format=columns, in the order of its "types".
constexpr schedule::ActionType kTypeCodes[] = {
    schedule::ActionType::kForward, schedule::ActionType::kBackward,
    schedule::ActionType::kBackwardInput, schedule::ActionType::kBackwardWeight,
    schedule::ActionType::kOverlapFB};

// "columns": every action's fields as one array per field, rank by rank and in each rank's order
// (the flat index of format=json); "b_stage"/"b_microbatch" are -1 except for FB. With `deps`,
// action k waits for deps[dep_offsets[k] .. dep_offsets[k + 1]).
void WriteColumns(JsonWriter& w, const schedule::Schedule& s, const sim::SimResult& r, bool deps) {
  auto each = [&s](auto&& fn) {
    for (int rank = 0; rank < s.pp; ++rank) {
      for (size_t k = 0; k < s.ranks[rank].size(); ++k) fn(rank, k, s.ranks[rank][k]);
    }
  };
  auto ints = [&](std::string_view key, auto&& get) {
    w.Key(key).BeginArray();
    each([&](int rank, size_t k, const schedule::Action& a) { w.Int(get(rank, k, a)); });
    w.EndArray();
  };
  w.Key("columns").BeginObject();
  ints("rank", [](int rank, size_t, const schedule::Action&) { return int64_t{rank}; });
  ints("stage", [](int, size_t, const schedule::Action& a) { return int64_t{a.stage}; });
  ints("chunk",
       [&s](int, size_t, const schedule::Action& a) { return int64_t{s.stage_chunk[a.stage]}; });
  ints("type", [](int, size_t, const schedule::Action& a) {
    return static_cast<int64_t>(a.type);  // kTypeCodes is the enum's order
  });
  ints("microbatch", [](int, size_t, const schedule::Action& a) { return int64_t{a.microbatch}; });
  ints("b_stage", [](int, size_t, const schedule::Action& a) { return int64_t{a.b_stage}; });
  ints("b_microbatch",
       [](int, size_t, const schedule::Action& a) { return int64_t{a.b_microbatch}; });
  w.Key("start").BeginArray();
  each([&](int rank, size_t k, const schedule::Action&) { w.Number(r.start_ms[rank][k]); });
  w.EndArray();
  w.Key("end").BeginArray();
  each([&](int rank, size_t k, const schedule::Action&) { w.Number(r.end_ms[rank][k]); });
  w.EndArray();
  w.EndObject();
  if (deps) {
    const std::vector<std::vector<int64_t>> d = sim::ActionDependencies(s);
    w.Key("dep_offsets").BeginArray();
    int64_t at = 0;
    w.Int(at);
    for (const auto& list : d) w.Int(at += static_cast<int64_t>(list.size()));
    w.EndArray();
    w.Key("deps").BeginArray();
    for (const auto& list : d) {
      for (int64_t j : list) w.Int(j);
    }
    w.EndArray();
  }
}

// The simulated schedule in the requested format, as `infralens schedule --format F` writes it.
ApiResult Render(const ApiCall& call, const schedule::Schedule& s, const sim::Costs& costs,
                 const sim::SimResult& r, const OutputChoice& out, const std::string& stem) {
  HttpResponse res;
  std::string ext;
  if (out.format == "columns") {
    // The document without "actions", then "columns" before its closing brace.
    JsonWriter w(0);
    io::WriteScheduleJson(w, s, costs, r, false, nullptr);
    res.body = w.str();
    const size_t end = res.body.rfind('}');
    JsonWriter c(0);
    c.BeginObject();
    c.Key("types").BeginArray();
    for (schedule::ActionType t : kTypeCodes) c.String(schedule::ActionTypeLetter(t));
    c.EndArray();
    WriteColumns(c, s, r, out.dependencies);
    c.EndObject();
    std::string cols = c.str();
    // cols is {"types":...,"columns":...}: its inside goes into the document.
    cols = cols.substr(1, cols.rfind('}') - 1);
    res.body.insert(end, "," + cols);
    res.content_type = "application/json";
    ext = ".json";
  } else if (out.format == "json") {
    JsonWriter w(0);
    std::vector<std::vector<int64_t>> deps;
    // The pages draw at most kMaxDependencyActions blocks with their arrows: above that the
    // dependencies are megabytes nobody draws (12.7 MB for 128,000 actions), so they are left out.
    const bool omit = out.dependencies && s.num_actions() > kMaxDependencyActions;
    const bool with_deps = out.dependencies && !omit;
    if (with_deps) deps = sim::ActionDependencies(s);
    io::WriteScheduleJson(w, s, costs, r, true, with_deps ? &deps : nullptr);
    res.body = w.str();
    // The document's own closing brace (a newline may follow it) gets the flag before it.
    if (const size_t end = res.body.rfind('}'); out.dependencies && end != std::string::npos) {
      res.body.insert(end,
                      omit ? ",\"dependencies_omitted\":true" : ",\"dependencies_omitted\":false");
    }
    res.content_type = "application/json";
    ext = ".json";
  } else if (out.format == "csv") {
    res.body = io::WritePytorchCsv(s);
    res.content_type = "text/csv; charset=utf-8";
    ext = ".csv";
  } else if (out.format == "chrome") {
    res.body = io::WriteChromeTrace(s, r);
    res.content_type = "application/json";
    ext = ".trace.json";
  } else if (out.format == "svg") {
    res.body = render::RenderSvgTimeline(s, r);
    res.content_type = "image/svg+xml";
    ext = ".svg";
  } else {
    res.body = render::RenderAsciiTimeline(s, r, {false, out.width});
    res.content_type = "text/plain; charset=utf-8";
    ext = ".txt";
  }
  if (call.Expired()) return call.TimeLimitError();
  if (out.download) {
    res.headers.emplace_back("Content-Disposition",
                             fmt::format("attachment; filename=\"{}{}\"", stem, ext));
  }
  return res;
}

ApiResult HandleSchedule(ApiCall& call) {
  ParamReader& p = call.params;
  const std::string name = p.Text("schedule", "1f1b");
  const int pp = p.Int("pp", request::PipelineFlags{}.pp, 1, kMaxPp);
  const int vpp = p.Int("vpp", request::PipelineFlags{}.vpp, 0, kMaxVpp);
  const int m = p.Int("microbatches", request::PipelineFlags{}.microbatches, 1, kMaxMicrobatches);
  const OutputChoice out = ReadOutput(p);
  if (p.error()) return ParamErrorOf(call);
  auto kind = schedule::ParseScheduleKind(name);
  if (!kind.ok()) return FromStatus(kind.status(), "schedule");
  const schedule::ScheduleInfo& info = schedule::Info(*kind);
  const int v = vpp == 0 ? info.default_vpp : vpp;
  const int64_t bound = int64_t{3} * pp * v * m;
  if (const int64_t limit = ActionLimit(call, out.format); bound > limit) {
    return ParamFailure(
        "microbatches",
        fmt::format(
            "pp={} x vpp={} x microbatches={} can make up to {} actions; the server "
            "simulates at most {} per request in format={} (the CLI goes to 10 million, and to 64 "
            "million as CSV: infralens schedule --format csv)",
            pp, v, m, bound, limit, out.format));
  }
  auto s = schedule::Generate(*kind, {pp, vpp, m});
  if (!s.ok()) return FromStatus(s.status());
  if (Status st = schedule::ValidateStructure(*s); !st.ok()) return FromStatus(st);
  std::string bad;
  auto costs = ReadCosts(p, s->num_stages(), s->vpp, true, &bad);
  if (p.error()) return ParamErrorOf(call);
  if (!costs.ok()) return FromStatus(costs.status(), bad);
  if (call.Expired()) return call.TimeLimitError();
  auto r = sim::Simulate(*s, *costs);
  if (!r.ok()) return FromStatus(r.status());
  if (call.Expired()) return call.TimeLimitError();
  return Render(call, *s, *costs, *r, out, fmt::format("{}_pp{}_m{}", s->name, pp, m));
}

// The action order per rank, for a page to draw a schedule that could not be simulated.
void WriteRankLists(JsonWriter& w, const schedule::Schedule& s) {
  w.Key("ranks").BeginArray();
  for (const auto& row : s.ranks) {
    w.BeginArray();
    for (const auto& a : row) w.String(schedule::ToString(a));
    w.EndArray();
  }
  w.EndArray();
}

ApiResult HandleImport(ApiCall& call) {
  ParamReader& p = call.params;
  const OutputChoice out = ReadOutput(p);
  if (p.error()) return ParamErrorOf(call);
  if (call.body.empty()) {
    return ParamFailure(
        "body",
        "the request body is empty; POST the text of a PyTorch pipelining CSV (one row per "
        "rank, cells like 0F0, 1B0, 2I3, 2W3)");
  }
  io::CsvErrorLocation where;
  auto parsed = io::ReadPytorchCsv(call.body, &where);
  if (!parsed.ok()) {
    ApiError e = ParamFailure("body", parsed.status().message());
    if (where.line > 0) {
      e.details = [where](JsonWriter& w) {
        w.Field("line", static_cast<int64_t>(where.line)).Field("column", where.column);
      };
    }
    return e;
  }
  schedule::Schedule s = std::move(parsed).value();
  if (const int64_t limit = ActionLimit(call, out.format); s.num_actions() > limit) {
    return ParamFailure(
        "body", fmt::format("the CSV holds {} actions; the server simulates at most {} per request "
                            "in format={} (the CLI goes to 10 million: infralens schedule --load "
                            "FILE)",
                            s.num_actions(), limit, out.format));
  }
  if (Status st = schedule::ValidateStructure(s); !st.ok()) return FromStatus(st, "body");
  std::string bad;
  auto costs = ReadCosts(p, s.num_stages(), s.vpp, false, &bad);
  if (p.error()) return ParamErrorOf(call);
  if (!costs.ok()) return FromStatus(costs.status(), bad);
  if (call.Expired()) return call.TimeLimitError();
  sim::DeadlockReport deadlock;
  auto r = sim::Simulate(s, *costs, &deadlock);
  if (!r.ok()) {
    ApiError e = FromStatus(r.status(), "body");
    if (!deadlock.chain.empty()) {
      auto shared = std::make_shared<schedule::Schedule>(std::move(s));
      e.details = [shared, deadlock](JsonWriter& w) {
        const schedule::Schedule& sc = *shared;
        w.Key("deadlock").BeginArray();
        for (const sim::DeadlockWait& d : deadlock.chain) {
          w.BeginObject();
          w.Field("rank", d.rank).Field("index", d.index);
          w.Field("action", schedule::ToString(sc.ranks[d.rank][d.index]));
          w.Key("waits_for").BeginObject();
          w.Field("stage", d.waits_stage).Field("type", d.waits_forward ? "F" : "B/I");
          w.Field("microbatch", d.waits_microbatch).Field("rank", d.producer_rank);
          if (d.producer_index >= 0) {
            w.Field("index", d.producer_index);
            w.Field("action", schedule::ToString(sc.ranks[d.producer_rank][d.producer_index]));
          }
          w.EndObject();
          w.EndObject();
        }
        w.EndArray();
        w.Field("pp", sc.pp).Field("vpp", sc.vpp).Field("microbatches", sc.microbatches);
        WriteRankLists(w, sc);
      };
    }
    return e;
  }
  if (call.Expired()) return call.TimeLimitError();
  return Render(call, s, *costs, *r, out, fmt::format("imported_pp{}_m{}", s.pp, s.microbatches));
}

}  // namespace

void RegisterPipelineEndpoints(Api& api) {
  api.Register(
      {"/api/schedule",
       {"GET", "POST"},
       "one pipeline schedule generated, validated, simulated and rendered (infralens schedule)",
       Concat({PipelineParams(/*with_schedule=*/true), OutputParams()}),
       false,
       HandleSchedule});
  RegisterCommand(api, request::CompareCommand(),
                  {.path = "/api/compare",
                   .formats = {"json", "table", "markdown"},
                   .format_help = "json (as `infralens compare --json`), table or markdown",
                   .bounds = {{"pp", 1, kMaxPp},
                              {"vpp", 0, kMaxVpp},
                              {"microbatches", 1, kMaxMicrobatches},
                              {"f", 0, kMaxParamMs},
                              {"b", 0, kMaxParamMs},
                              {"i", 0, kMaxParamMs},
                              {"w", 0, kMaxParamMs},
                              {"fb", -kMaxParamMs, kMaxParamMs},
                              {"p2p", 0, kMaxParamMs}},
                   .max_actions = api.limits().max_compare_actions});
  api.Register(
      {"/api/import",
       {"POST"},
       "a PyTorch pipelining CSV (the request body) validated, simulated and rendered "
       "(infralens schedule --load)",
       Concat({PickParams(PipelineParams(/*with_schedule=*/false), kCostParams), OutputParams()}),
       true,
       HandleImport});
}

}  // namespace infralens::server
