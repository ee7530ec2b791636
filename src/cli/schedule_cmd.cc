// infralens schedule: one pipeline schedule, generated or loaded from PyTorch's CSV, validated,
// simulated and rendered.
#include <fmt/format.h>

#include <cmath>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "io/pytorch_csv.h"
#include "io/schedule_output.h"
#include "render/timeline.h"
#include "request/pipeline_flags.h"
#include "schedule/rank_actions.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"
#include "sim/stream_simulator.h"

namespace infralens::cli {

using request::kMaxDocumentActions;
using request::kMaxStreamedActions;
using request::PipelineFlags;
using request::RegisterScheduleOption;

namespace {

// Widest ascii timeline, in columns: each rank's line is this long.
constexpr int kMaxWidth = 10'000;

std::string Percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

std::string MetricsText(const schedule::Schedule& s, const sim::Costs& c, const sim::SimResult& r) {
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
// is written) and printed rank by rank as the generators yield the actions, never listed whole
// (sim/stream_simulator.h, io::StreamPytorchCsv); with -o, through a temporary renamed at the end.
Status StreamGeneratedCsv(schedule::ScheduleKind kind, const request::PipelineFlags& pf,
                          const Flags& flags, const std::string& output, CliIO& io) {
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
  ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(flags, shape.num_stages(), shape.vpp));
  auto result = sim::SimulateGenerated(shape, costs);
  if (!result.ok()) return InvalidArgument(result.status().message());
  RETURN_IF_ERROR(CheckFinite(*result));
  if (output.empty() || output == "-") {
    return io::StreamPytorchCsv(shape, [&io](std::string_view piece) {
      io.out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
      return Status::Ok();
    });
  }
  AtomicFile file;
  auto with_flag = [](const Status& st) {
    return st.ok() ? st : Status(st.code(), "-o " + st.message());
  };
  RETURN_IF_ERROR(with_flag(file.Open(output)));
  RETURN_IF_ERROR(with_flag(
      io::StreamPytorchCsv(shape, [&file](std::string_view piece) { return file.Write(piece); })));
  return with_flag(file.Commit());
}

}  // namespace

Status RunSchedule(const std::vector<std::string>& args, CliIO& io) {
  std::string name = "1f1b", format = "ascii", output, load;
  bool json = false;
  int width = 0;
  PipelineFlags pf;
  Flags flags("schedule", "generate, validate, simulate and draw one pipeline schedule",
              "infralens schedule [--schedule NAME | --load FILE.csv] [--pp P] [--vpp V] [-m M] "
              "[costs] [--format F]",
              {"infralens schedule --schedule 1f1b --pp 4 -m 8",
               "infralens schedule --schedule interleaved-1f1b --pp 4 --vpp 2 -m 8 --f 1 --b 2",
               "infralens schedule --schedule zb-h1 --pp 4 -m 8 --f 1 --i 1 --w 1 --json",
               "infralens schedule --schedule dualpipev --pp 4 -m 16 --format svg -o dualpipev.svg",
               "infralens schedule --schedule zbv --pp 4 -m 8 --format csv > zbv.csv",
               "infralens schedule --load zbv.csv --format chrome -o zbv.trace.json"});
  RegisterScheduleOption(flags, &name);
  flags.String("--load", &load,
               "read a schedule from PyTorch's pipelining CSV instead (compute-only form)");
  pf.Register(flags);
  AddOutputFlags(flags, &format, &json, &output,
                 "ascii, json, csv (PyTorch), chrome (Perfetto trace), svg");
  flags.Int("--width", &width, "columns for the ascii timeline, up to 10000; 0 = the terminal's");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"ascii", "json", "csv", "chrome", "svg"}));
  if (width < 0 || width > kMaxWidth) {
    return InvalidArgument(fmt::format("--width {}: must be 0..{} columns", width, kMaxWidth));
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

  schedule::Schedule s;
  if (!load.empty()) {
    if (flags.Given("--schedule"))
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
    ASSIGN_OR_RETURN(schedule::ScheduleKind kind, schedule::ParseScheduleKind(name));
    if (format == "csv") return StreamGeneratedCsv(kind, pf, flags, output, io);
    const schedule::ScheduleParams params{pf.pp, pf.vpp, pf.microbatches};
    RETURN_IF_ERROR(check_document(
        schedule::ActionUpperBound(kind, params),
        fmt::format("--pp {} --vpp {} -m {} makes", pf.pp, pf.vpp, pf.microbatches)));
    ASSIGN_OR_RETURN(s, schedule::Generate(kind, params));
    RETURN_IF_ERROR(schedule::ValidateStructure(s));
  }
  ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(flags, s.num_stages(), s.vpp));
  auto result = sim::Simulate(s, costs);
  if (!result.ok()) {
    // A loaded schedule that deadlocks is a bad input file: a failure (exit 1, docs/cli.md).
    if (!load.empty())
      return FailedPrecondition(fmt::format("{}: {}", load, result.status().message()));
    return InvalidArgument(result.status().message());
  }
  const sim::SimResult& r = *result;
  RETURN_IF_ERROR(CheckFinite(r));

  std::string data;
  if (format == "json") {
    JsonWriter w;
    io::WriteScheduleJson(w, s, costs, r);
    data = w.str();
  } else if (format == "csv") {
    data = io::WritePytorchCsv(s);
  } else if (format == "chrome") {
    data = io::WriteChromeTrace(s, r);
  } else if (format == "svg") {
    data = render::RenderSvgTimeline(s, r);
  } else {
    const auto& c = costs.uniform;
    // The costs were given per rank per microbatch; each chunk action takes 1/v of them.
    data = fmt::format(
        "{}: {} ranks x {} chunk{}, {} microbatches; F={:g} B={:g} I={:g} W={:g} ms per chunk "
        "action{}, p2p {:g} ms{}\n\n",
        s.name, s.pp, s.vpp, s.vpp == 1 ? "" : "s", s.microbatches, c.f_ms, c.b_ms, c.i_ms, c.w_ms,
        s.vpp == 1 ? "" : fmt::format(" (1/{} of the per-rank costs)", s.vpp), costs.p2p_ms,
        costs.per_stage.empty() ? "" : " (per-stage overrides)");
    bool color = io.color && (output.empty() || output == "-");
    data += render::RenderAsciiTimeline(s, r, {color, width > 0 ? width : io.term_width});
    data += "\n" + MetricsText(s, costs, r);
  }
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
