// infralens schedule: one pipeline schedule, generated or loaded from PyTorch's CSV, validated,
// simulated and rendered.
#include <fmt/format.h>

#include <cmath>

#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/table.h"
#include "io/pytorch_csv.h"
#include "io/schedule_output.h"
#include "render/timeline.h"
#include "request/engine_requests.h"
#include "request/pipeline_flags.h"
#include "schedule/rank_actions.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"
#include "sim/stream_simulator.h"

namespace infralens::request {

namespace {

// Widest ascii timeline, in columns: each rank's line is this long.
constexpr int kMaxTimelineWidth = 10'000;

struct ScheduleQuery {
  std::string name = "1f1b";
  std::string load;  // a PyTorch pipelining CSV instead of a generated schedule
  PipelineFlags pf;
  int width = 0;              // ascii columns; 0: the terminal's
  bool dependencies = false;  // the API's: JSON actions list what they wait for
};

struct SimulatedSchedule {
  schedule::Schedule s;
  sim::Costs costs;
  sim::SimResult r;
  bool streamed = false;  // the document went to RunContext::stream as it was made
};

std::string Percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

std::string MetricsText(const schedule::Schedule& s, const sim::SimResult& r) {
  std::string out;
  double total_idle = 0;
  for (const auto& rm : r.ranks) total_idle += rm.idle_ms;
  out += fmt::format(
      "makespan {:g} ms; bubble {} (idle {:g} of P x makespan = {:g} ms); {} idle inside rank "
      "spans\n",
      r.makespan_ms, Percent(r.bubble_fraction), total_idle, s.pp * r.makespan_ms,
      Percent(r.span_bubble_fraction));
  TextTable t(
      {"rank", "busy ms", "idle ms", "span ms", "idle in span ms", "peak activations (chunks)"});
  for (const auto& rm : r.ranks) {
    t.AddRow({std::to_string(rm.rank), fmt::format("{:g}", rm.busy_ms),
              fmt::format("{:g}", rm.idle_ms), fmt::format("{:g}", rm.span_ms),
              fmt::format("{:g}", rm.span_idle_ms), std::to_string(rm.peak_activations)});
  }
  return out + t.Render();
}

// A simulated result is printed only when finite (bounded costs keep it so: sim::kMaxCostMs).
Status CheckFinite(const sim::SimResult& r) {
  if (std::isfinite(r.makespan_ms) && std::isfinite(r.bubble_fraction) &&
      std::isfinite(r.span_bubble_fraction)) {
    return Status::Ok();
  }
  return FailedPrecondition(fmt::format(
      "the simulation gave a makespan of {} ms and a bubble of {}: not finite; use smaller costs",
      r.makespan_ms, r.bubble_fraction));
}

// --format csv of a generated schedule: simulated (deadlocks and costs are checked before anything
// is written) and written to ctx.stream rank by rank as the generators yield the actions, never
// listed whole (sim/stream_simulator.h, io::StreamPytorchCsv).
Status StreamGeneratedCsv(schedule::ScheduleKind kind, const PipelineFlags& pf,
                          const RunContext& ctx) {
  const schedule::ScheduleParams params{pf.pp, pf.vpp, pf.microbatches};
  const int64_t upper = schedule::ActionUpperBound(kind, params);
  if (upper > kMaxStreamedActions) {
    return InvalidArgument(
        fmt::format("--format csv: --pp {} --vpp {} -m {} makes up to {} actions; a streamed csv "
                    "holds at most {} (about "
                    "5 CPU-s and 610 MB of text); use fewer microbatches",
                    pf.pp, pf.vpp, pf.microbatches,
                    upper == INT64_MAX ? std::string("more than 9e18") : std::to_string(upper),
                    kMaxStreamedActions));
  }
  ASSIGN_OR_RETURN(schedule::Schedule shape,
                   schedule::GenerateShape(kind, params, kMaxStreamedActions));
  ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(ctx.given, shape.num_stages(), shape.vpp, &ctx));
  auto result = sim::SimulateGenerated(shape, costs);
  if (!result.ok()) return InvalidArgument(result.status().message());
  RETURN_IF_ERROR(CheckFinite(*result));
  return io::StreamPytorchCsv(shape, ctx.stream);
}

// The server's bound on the actions of one run (RunContext::max_actions, already scaled for the
// format), checked before anything is generated.
Status CheckServerActions(schedule::ScheduleKind kind, const PipelineFlags& pf,
                          const RunContext& ctx) {
  const int64_t upper = schedule::ActionUpperBound(kind, {pf.pp, pf.vpp, pf.microbatches});
  if (ctx.max_actions <= 0 || upper <= ctx.max_actions) return Status::Ok();
  return InvalidArgument(fmt::format(
      "‹microbatches› {}: with ‹pp› {} and ‹vpp› {} the schedule makes up to {} actions; the "
      "server simulates at most {} per request in format={} (the CLI goes to {} in a document, "
      "and streams {} as CSV: infralens schedule --format csv)",
      pf.microbatches, pf.pp, pf.vpp == 0 ? schedule::Info(kind).default_vpp : pf.vpp, upper,
      ctx.max_actions, ctx.format, kMaxDocumentActions, kMaxStreamedActions));
}

StatusOr<SimulatedSchedule> ComputeSchedule(const ScheduleQuery& q, const RunContext& ctx) {
  const PipelineFlags& pf = q.pf;
  const std::string& format = ctx.format;
  const std::string& load = q.load;
  if (q.width < 0 || q.width > kMaxTimelineWidth) {
    return InvalidArgument(
        fmt::format("--width {}: must be 0..{} columns", q.width, kMaxTimelineWidth));
  }
  // Documents built whole in memory get a lower action limit than text (pipeline_flags.h); the
  // ascii timeline needs every action's times (schedule::kMaxActions); a generated schedule's csv
  // streams (kMaxStreamedActions, checked by GenerateShape).
  const bool document = format == "json" || format == "chrome" || format == "svg";
  auto check_document = [&](int64_t actions, const std::string& what) -> Status {
    if (document && actions > kMaxDocumentActions) {
      return InvalidArgument(fmt::format(
          "--format {}: {} up to {} actions; a {} document holds at most {} (about 150 MB on disk, "
          "0.5 GiB of memory to build); use --format ascii or csv, or fewer microbatches",
          format, what, actions, format, kMaxDocumentActions));
    }
    if (format == "ascii" && actions > schedule::kMaxActions) {
      return InvalidArgument(
          fmt::format("--format ascii: {} up to {} actions; the ascii timeline holds every "
                      "action's times and takes at most "
                      "{} (about 500 MB); --format csv streams up to {}",
                      what, actions, schedule::kMaxActions, kMaxStreamedActions));
    }
    return Status::Ok();
  };

  SimulatedSchedule out;
  schedule::Schedule& s = out.s;
  if (!load.empty()) {
    if (ctx.given("--schedule"))
      return InvalidArgument("--schedule and --load: give one or the other");
    // The file's content is a failure (exit 1), not a usage error (base/read_file.h).
    auto text = ReadFileLimited(load, io::kMaxCsvBytes);
    if (!text.ok()) return AsFileFailure(text.status());
    auto parsed = io::ReadPytorchCsv(*text);
    if (!parsed.ok())
      return FailedPrecondition(fmt::format("{}: {}", load, parsed.status().message()));
    s = std::move(parsed).value();
    Status st = schedule::ValidateStructure(s);
    if (!st.ok()) return FailedPrecondition(fmt::format("{}: {}", load, st.message()));
    RETURN_IF_ERROR(check_document(s.num_actions(), load + " has"));
  } else {
    RETURN_IF_ERROR(pf.CheckShape());
    ASSIGN_OR_RETURN(schedule::ScheduleKind kind, schedule::ParseScheduleKind(q.name));
    RETURN_IF_ERROR(CheckServerActions(kind, pf, ctx));
    if (format == "csv" && ctx.stream) {
      RETURN_IF_ERROR(StreamGeneratedCsv(kind, pf, ctx));
      out.streamed = true;
      return out;
    }
    const schedule::ScheduleParams params{pf.pp, pf.vpp, pf.microbatches};
    RETURN_IF_ERROR(check_document(
        schedule::ActionUpperBound(kind, params),
        fmt::format("--pp {} --vpp {} -m {} makes", pf.pp, pf.vpp, pf.microbatches)));
    ASSIGN_OR_RETURN(s, schedule::Generate(kind, params));
    RETURN_IF_ERROR(schedule::ValidateStructure(s));
  }
  ASSIGN_OR_RETURN(out.costs, pf.Costs(ctx.given, s.num_stages(), s.vpp, &ctx));
  auto result = sim::Simulate(s, out.costs);
  if (!result.ok()) {
    // A loaded schedule that deadlocks is a bad input file: a failure (exit 1, docs/cli.md).
    if (!load.empty())
      return FailedPrecondition(fmt::format("{}: {}", load, result.status().message()));
    return InvalidArgument(result.status().message());
  }
  out.r = std::move(result).value();
  RETURN_IF_ERROR(CheckFinite(out.r));
  return out;
}

// The type codes of format=columns, in the order of its "types" (the enum's order).
constexpr schedule::ActionType kTypeCodes[] = {
    schedule::ActionType::kForward, schedule::ActionType::kBackward,
    schedule::ActionType::kBackwardInput, schedule::ActionType::kBackwardWeight,
    schedule::ActionType::kOverlapFB};

// "columns": every action's fields as one array per field, rank by rank and in each rank's order
// (the flat index of format=json); "b_stage"/"b_microbatch" are -1 except for FB. With `deps`,
// action k waits for deps[dep_offsets[k] .. dep_offsets[k + 1]).
void WriteColumns(JsonWriter& w, const schedule::Schedule& s, const sim::SimResult& r,
                  const std::vector<std::vector<int64_t>>* deps) {
  auto each = [&s](auto&& fn) {
    for (int rank = 0; rank < s.pp; ++rank) {
      for (size_t k = 0; k < s.ranks[rank].size(); ++k) fn(rank, k, s.ranks[rank][k]);
    }
  };
  auto ints = [&](std::string_view key, auto&& get) {
    w.Key(key).BeginArray();
    each([&](int rank, size_t, const schedule::Action& a) { w.Int(get(rank, a)); });
    w.EndArray();
  };
  w.Key("types").BeginArray();
  for (schedule::ActionType t : kTypeCodes) w.String(schedule::ActionTypeLetter(t));
  w.EndArray();
  w.Key("columns").BeginObject();
  ints("rank", [](int rank, const schedule::Action&) { return int64_t{rank}; });
  ints("stage", [](int, const schedule::Action& a) { return int64_t{a.stage}; });
  ints("chunk", [&s](int, const schedule::Action& a) { return int64_t{s.stage_chunk[a.stage]}; });
  ints("type", [](int, const schedule::Action& a) { return static_cast<int64_t>(a.type); });
  ints("microbatch", [](int, const schedule::Action& a) { return int64_t{a.microbatch}; });
  ints("b_stage", [](int, const schedule::Action& a) { return int64_t{a.b_stage}; });
  ints("b_microbatch", [](int, const schedule::Action& a) { return int64_t{a.b_microbatch}; });
  w.Key("start").BeginArray();
  each([&](int rank, size_t k, const schedule::Action&) { w.Number(r.start_ms[rank][k]); });
  w.EndArray();
  w.Key("end").BeginArray();
  each([&](int rank, size_t k, const schedule::Action&) { w.Number(r.end_ms[rank][k]); });
  w.EndArray();
  w.EndObject();
  if (deps == nullptr) return;
  w.Key("dep_offsets").BeginArray();
  int64_t at = 0;
  w.Int(at);
  for (const auto& list : *deps) w.Int(at += static_cast<int64_t>(list.size()));
  w.EndArray();
  w.Key("deps").BeginArray();
  for (const auto& list : *deps) {
    for (int64_t j : list) w.Int(j);
  }
  w.EndArray();
}

// The JSON document (format json or columns), with the dependencies when asked for.
std::string ScheduleJson(const schedule::Schedule& s, const sim::Costs& costs,
                         const sim::SimResult& r, bool columns, bool dependencies, int indent) {
  // The pages draw at most kMaxDependencyActions blocks with their arrows: above that the
  // dependencies are megabytes nobody draws (12.7 MB for 128,000 actions), so they are left out
  // of format=json (format=columns, which the canvas draws, keeps them).
  const bool omit = dependencies && !columns && s.num_actions() > kMaxDependencyActions;
  std::vector<std::vector<int64_t>> deps;
  if (dependencies && !omit) deps = sim::ActionDependencies(s);
  const auto* with_deps = dependencies && !omit ? &deps : nullptr;
  JsonWriter w(indent);
  io::WriteScheduleJson(w, s, costs, r, !columns, columns ? nullptr : with_deps);
  std::string doc = w.str();
  // The extra keys go before the document's own closing brace (a newline may follow it).
  const size_t end = doc.rfind('}');
  if (end == std::string::npos) return doc;
  if (columns) {
    JsonWriter c(0);
    c.BeginObject();
    WriteColumns(c, s, r, with_deps);
    c.EndObject();
    const std::string inside = c.str().substr(1, c.str().rfind('}') - 1);
    doc.insert(end, "," + inside);
  } else if (dependencies) {
    doc.insert(end, omit ? ",\"dependencies_omitted\":true" : ",\"dependencies_omitted\":false");
  }
  return doc;
}

std::string ScheduleDocument(const SimulatedSchedule& sim, const ScheduleQuery& q,
                             const RunContext& ctx) {
  if (sim.streamed) return "";
  return ScheduleDocumentOf(sim.s, sim.costs, sim.r,
                            {.format = ctx.format,
                             .dependencies = q.dependencies,
                             .width = q.width > 0 ? q.width : ctx.term_width,
                             .color = ctx.color,
                             .json_indent = ctx.json_indent});
}

}  // namespace

std::string ScheduleDocumentOf(const schedule::Schedule& s, const sim::Costs& costs,
                               const sim::SimResult& r, const ScheduleDocumentOptions& o) {
  if (o.format == "json" || o.format == "columns") {
    return ScheduleJson(s, costs, r, o.format == "columns", o.dependencies, o.json_indent);
  }
  if (o.format == "csv") return io::WritePytorchCsv(s);
  if (o.format == "chrome") return io::WriteChromeTrace(s, r);
  if (o.format == "svg") return render::RenderSvgTimeline(s, r);
  const auto& c = costs.uniform;
  // The costs were given per rank per microbatch; each chunk action takes 1/v of them.
  std::string data = fmt::format(
      "{}: {} ranks x {} chunk{}, {} microbatches; F={:g} B={:g} I={:g} W={:g} ms per chunk "
      "action{}, p2p {:g} ms{}\n\n",
      s.name, s.pp, s.vpp, s.vpp == 1 ? "" : "s", s.microbatches, c.f_ms, c.b_ms, c.i_ms, c.w_ms,
      s.vpp == 1 ? "" : fmt::format(" (1/{} of the per-rank costs)", s.vpp), costs.p2p_ms,
      costs.per_stage.empty() ? "" : " (per-stage overrides)");
  data += render::RenderAsciiTimeline(s, r, {o.color, o.width});
  data += "\n" + MetricsText(s, r);
  return data;
}

const Command& ScheduleCommand() {
  static const Command kCommand = MakeCommand<ScheduleQuery, SimulatedSchedule>(
      {.name = "schedule",
       .summary = "generate, validate, simulate and draw one pipeline schedule",
       .usage = "infralens schedule [--schedule NAME | --load FILE.csv] [--pp P] [--vpp V] [-m M] "
                "[costs] [--format F]",
       .examples = {"infralens schedule --schedule 1f1b --pp 4 -m 8",
                    "infralens schedule --schedule interleaved-1f1b --pp 4 --vpp 2 -m 8 --f 1 "
                    "--b 2",
                    "infralens schedule --schedule zb-h1 --pp 4 -m 8 --f 1 --i 1 --w 1 --json",
                    "infralens schedule --schedule dualpipev --pp 4 -m 16 --format svg -o "
                    "dualpipev.svg",
                    "infralens schedule --schedule zbv --pp 4 -m 8 --format csv > zbv.csv",
                    "infralens schedule --load zbv.csv --format chrome -o zbv.trace.json"},
       .formats = {"ascii", "json", "csv", "chrome", "svg"},
       .format_help = "ascii, json, csv (PyTorch), chrome (Perfetto trace), svg",
       // A request reads no file (/api/import takes a CSV body).
       .cli_only = {"--load"},
       // The pipeline page draws from format=columns and the dependencies.
       .api_formats = {"columns"},
       .api_only = {"--dependencies"},
       // About 40 bytes an action against 100 for format=json (plus deps): 5/2 of the server's
       // max_actions (500,000 at the default: P = 64, m = 1,000 interleaved is 384,000).
       .action_scale = {{.format = "columns", .numerator = 5, .denominator = 2}}},
      [](ScheduleQuery& q, FlagSink& flags) {
        RegisterScheduleOption(flags, &q.name);
        flags.String("--load", &q.load,
                     "read a schedule from PyTorch's pipelining CSV instead (compute-only form)");
        q.pf.Register(flags);
        flags.Int("--width", &q.width,
                  "columns for the ascii timeline, up to 10000; 0 = the terminal's");
        flags.Bool("--dependencies,--deps", &q.dependencies,
                   fmt::format("1: each JSON action also lists \"deps\", the indexes of the "
                               "actions it waits for, up to {} actions (what a page draws); "
                               "above, none, and \"dependencies_omitted\": true says so "
                               "(format=columns: \"deps\" flat and \"dep_offsets\", always)",
                               kMaxDependencyActions));
      },
      ComputeSchedule,
      [](const SimulatedSchedule& sim, const ScheduleQuery& q,
         const RunContext& ctx) -> StatusOr<std::string> { return ScheduleDocument(sim, q, ctx); },
      // name_pp4_m8
      [](const SimulatedSchedule& sim, const ScheduleQuery& q) {
        if (sim.streamed) return fmt::format("{}_pp{}_m{}", q.name, q.pf.pp, q.pf.microbatches);
        return fmt::format("{}_pp{}_m{}", sim.s.name, sim.s.pp, sim.s.microbatches);
      });
  return kCommand;
}

}  // namespace infralens::request
