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
  int width = 0;  // ascii columns; 0: the terminal's
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
  ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(ctx.given, shape.num_stages(), shape.vpp));
  auto result = sim::SimulateGenerated(shape, costs);
  if (!result.ok()) return InvalidArgument(result.status().message());
  RETURN_IF_ERROR(CheckFinite(*result));
  return io::StreamPytorchCsv(shape, ctx.stream);
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
  ASSIGN_OR_RETURN(out.costs, pf.Costs(ctx.given, s.num_stages(), s.vpp));
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

std::string ScheduleDocument(const SimulatedSchedule& sim, const ScheduleQuery& q,
                             const RunContext& ctx) {
  const schedule::Schedule& s = sim.s;
  const sim::SimResult& r = sim.r;
  if (sim.streamed) return "";
  if (ctx.format == "json") {
    JsonWriter w(ctx.json_indent);
    io::WriteScheduleJson(w, s, sim.costs, r);
    return w.str();
  }
  if (ctx.format == "csv") return io::WritePytorchCsv(s);
  if (ctx.format == "chrome") return io::WriteChromeTrace(s, r);
  if (ctx.format == "svg") return render::RenderSvgTimeline(s, r);
  const auto& c = sim.costs.uniform;
  // The costs were given per rank per microbatch; each chunk action takes 1/v of them.
  std::string data = fmt::format(
      "{}: {} ranks x {} chunk{}, {} microbatches; F={:g} B={:g} I={:g} W={:g} ms per chunk "
      "action{}, p2p {:g} ms{}\n\n",
      s.name, s.pp, s.vpp, s.vpp == 1 ? "" : "s", s.microbatches, c.f_ms, c.b_ms, c.i_ms, c.w_ms,
      s.vpp == 1 ? "" : fmt::format(" (1/{} of the per-rank costs)", s.vpp), sim.costs.p2p_ms,
      sim.costs.per_stage.empty() ? "" : " (per-stage overrides)");
  data += render::RenderAsciiTimeline(s, r, {ctx.color, q.width > 0 ? q.width : ctx.term_width});
  data += "\n" + MetricsText(s, r);
  return data;
}

}  // namespace

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
       .format_help = "ascii, json, csv (PyTorch), chrome (Perfetto trace), svg"},
      [](ScheduleQuery& q, FlagSink& flags) {
        RegisterScheduleOption(flags, &q.name);
        flags.String("--load", &q.load,
                     "read a schedule from PyTorch's pipelining CSV instead (compute-only form)");
        q.pf.Register(flags);
        flags.Int("--width", &q.width,
                  "columns for the ascii timeline, up to 10000; 0 = the terminal's");
      },
      ComputeSchedule,
      [](const SimulatedSchedule& sim, const ScheduleQuery& q,
         const RunContext& ctx) -> StatusOr<std::string> { return ScheduleDocument(sim, q, ctx); });
  return kCommand;
}

}  // namespace infralens::request
