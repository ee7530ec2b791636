#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "base/json_writer.h"
#include "io/pytorch_csv.h"
#include "request/engine_requests.h"
#include "request/pipeline_flags.h"
#include "schedule/schedule.h"
#include "server/command_api.h"
#include "server/endpoints.h"
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
const std::vector<std::string_view> kCostParams = {"f", "b", "i", "w", "fb", "p2p"};
const std::vector<std::string_view> kScheduleFormats = {"json",   "columns", "csv",
                                                        "chrome", "svg",     "ascii"};
// The parameters /api/import shares with /api/schedule (read by ReadOutput).
const std::vector<std::string_view> kOutputParams = {"format", "download", "dependencies", "width"};
// The ascii timeline's columns in a request.
constexpr int kMinAsciiWidth = 20, kMaxAsciiWidth = 1000;

// The API's bounds on the pipeline shape and costs (/api/schedule and /api/compare), before the
// engines' own checks.
std::vector<ParamBound> PipelineBounds() {
  return {{"pp", 1, kMaxPp},
          {"vpp", 0, kMaxVpp},
          {"microbatches", 1, kMaxMicrobatches},
          {"f", 0, kMaxParamMs},
          {"b", 0, kMaxParamMs},
          {"i", 0, kMaxParamMs},
          {"w", 0, kMaxParamMs},
          {"fb", -kMaxParamMs, kMaxParamMs},
          {"p2p", 0, kMaxParamMs}};
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
  o.width = p.Int("width", 100, kMinAsciiWidth, kMaxAsciiWidth);
  return o;
}

// The simulated schedule in the requested format, as /api/schedule answers it.
ApiResult Render(const ApiCall& call, const schedule::Schedule& s, const sim::Costs& costs,
                 const sim::SimResult& r, const OutputChoice& out, const std::string& stem) {
  HttpResponse res = TextResponse(request::ScheduleDocumentOf(s, costs, r,
                                                              {.format = out.format,
                                                               .dependencies = out.dependencies,
                                                               .width = out.width,
                                                               .json_indent = 0}),
                                  std::string(ContentTypeOf(out.format)));
  if (call.Expired()) return call.TimeLimitError();
  if (out.download) {
    res.headers.emplace_back("Content-Disposition", fmt::format("attachment; filename=\"{}{}\"",
                                                                stem, FileExtensionOf(out.format)));
  }
  return res;
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
  if (const int64_t limit =
          ActionLimitOf(request::ScheduleCommand().info(), out.format, call.limits.max_actions);
      s.num_actions() > limit) {
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
  std::vector<ParamBound> schedule_bounds = PipelineBounds();
  schedule_bounds.push_back({"width", kMinAsciiWidth, kMaxAsciiWidth});
  RegisterCommand(
      api, request::ScheduleCommand(),
      {.path = "/api/schedule",
       .formats = {kScheduleFormats.begin(), kScheduleFormats.end()},
       .format_help =
           "json (as `infralens schedule --json`), columns (the same without \"actions\", which "
           "come as \"columns\": one array per field, type as codes into \"types\"; with "
           "dependencies=1, \"deps\" flat and \"dep_offsets\"), csv (PyTorch), chrome (Perfetto "
           "trace), svg, ascii",
       .bounds = std::move(schedule_bounds),
       .max_actions = api.limits().max_actions});
  RegisterCommand(api, request::CompareCommand(),
                  {.path = "/api/compare",
                   .formats = {"json", "table", "markdown"},
                   .format_help = "json (as `infralens compare --json`), table or markdown",
                   .bounds = PipelineBounds(),
                   .max_actions = api.limits().max_compare_actions});
  // /api/import simulates a CSV body (its errors show where the schedule breaks): its output
  // parameters are /api/schedule's.
  std::vector<ParamSpec> schedule_params;
  for (const Endpoint& e : api.endpoints()) {
    if (e.path == "/api/schedule") schedule_params = e.params;
  }
  api.Register({"/api/import",
                {"POST"},
                "a PyTorch pipelining CSV (the request body) validated, simulated and rendered "
                "(infralens schedule --load)",
                JoinParams({PickParams(PipelineParams(/*with_schedule=*/false), kCostParams),
                            PickParams(schedule_params, kOutputParams)}),
                true,
                HandleImport});
}

}  // namespace infralens::server
