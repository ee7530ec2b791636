// infralens trace: read what a job ran (PyTorch profiler / Kineto traces) and put it next to what
// was predicted. Subcommands: analyze, compare, merge, synth, calibrate.
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/run_declared.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"
#include "request/pipeline_flags.h"
#include "request/recalibrate.h"
#include "request/trace_flags.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/compare.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/merge.h"
#include "trace/report.h"
#include "trace/summary.h"
#include "trace/synth.h"

namespace infralens::cli {

using request::RegisterSynthSteps;
using request::TraceReadFlags;

using request::PipelineFlags;
using request::RegisterScheduleOption;

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  Status (*run)(const std::vector<std::string>& args, CliIO& io);
};

// After the results are out: one line per unusable file, and a status that says how many.
Status ReportFileErrors(const trace::TraceAnalysis& a, const std::string& cmd, CliIO& io) {
  if (a.errors.empty()) return Status::Ok();
  for (const auto& e : a.errors)
    io.err << "infralens trace " << cmd << ": skipped: " << e.status.message() << "\n";
  // Files that cannot be used are a failure (exit 1), malformed or missing alike (docs/cli.md).
  return FailedPrecondition(
      fmt::format("{} of {} trace files could not be used (see above); results cover the other {}",
                  a.errors.size(), a.errors.size() + a.ranks.size(), a.ranks.size()));
}

Status RunMerge(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> paths;
  std::string output;
  TraceReadFlags rf;
  Flags flags(
      "trace merge",
      "one Chrome trace with every rank as its own process, clocks aligned on collectives",
      "infralens trace merge PATH... [-o all.json]",
      {"infralens trace merge traces/ -o all.json    # then open all.json in ui.perfetto.dev"});
  flags.Positionals("paths", &paths, "trace files or folders");
  AddOutputFile(flags, &output);
  rf.Register(flags);
  request::TraceMemoryFlag memory;
  memory.Register(flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (output.empty())
    output.push_back('-');  // stdout; push_back: GCC 12's -Wrestrict misfires on = "-"
  ASSIGN_OR_RETURN(trace::LoadedTraces loaded, request::LoadSomeTraces(paths, memory));
  trace::AnalysisOptions opt = rf.Options();
  opt.include_last_step = true;  // a merged timeline shows everything
  ASSIGN_OR_RETURN(trace::MergeSummary summary,
                   trace::MergeTraces(loaded.traces, opt, output, io.out));
  if (output != "-") {
    io.out << fmt::format(
        "wrote {}: {} ranks, {} events; clocks {}\n", output, summary.ranks, summary.events,
        summary.aligned ? fmt::format("aligned on {} matched collectives", summary.matched)
                        : "as recorded (" + summary.note + ")");
  }
  trace::TraceAnalysis shell;
  shell.errors = loaded.errors;
  shell.ranks.resize(loaded.traces.size());
  return ReportFileErrors(shell, "merge", io);
}

// `trace synth --record-shapes`: one rank file, DIR/rank0.json, written whole.
Status WriteShapesSynth(const request::ShapesSynthFlags& flags, bool force, const std::string& dir,
                        CliIO& io) {
  ASSIGN_OR_RETURN(trace::ShapesSynthOptions o, flags.Options());
  ASSIGN_OR_RETURN(std::string json, trace::ShapesTraceJson(o));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(fmt::format("{}: cannot create the folder ({})", dir, ec.message()));
  const std::string path = dir + "/rank0.json";
  if (!force && std::filesystem::exists(path, ec)) {
    return FailedPrecondition(
        fmt::format("{} exists: remove it or pass --force to replace it", path));
  }
  RETURN_IF_ERROR(WriteFileAtomically(path, json));
  io.out << fmt::format("wrote {}: {} bytes, {} x {} token counts of {} at tp {} on {}\n", path,
                        json.size(), o.repeats, o.tokens.size(), o.model.name, o.tp, o.gpu.name);
  return Status::Ok();
}

Status RunSynth(const std::vector<std::string>& args, CliIO& io) {
  std::string name = "1f1b", output;
  PipelineFlags pf;
  trace::SynthOptions so;
  Flags flags(
      "trace synth",
      "write a multi-rank Kineto trace of a simulated pipeline schedule (for tests, benchmarks)",
      "infralens trace synth --schedule NAME [--pp P] [-m M] [costs] [--steps N] -o DIR",
      {"infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth",
       "infralens trace synth --schedule zbv --pp 4 -m 16 --f 1 --i 1 --w 1 --p2p 0.05 --gzip -o "
       "zbv",
       "infralens trace synth --schedule interleaved-1f1b --pp 4 --vpp 2 -m 8 --style megatron "
       "-o meg",
       "infralens trace analyze synth/   # recovers the schedule and its bubble"});
  RegisterScheduleOption(flags, &name);
  pf.Register(flags);
  RegisterSynthSteps(flags, &so.steps);
  flags.Int("--kernels-per-action", &so.kernels_per_action,
            "compute kernels per action (split evenly)");
  flags.Int("--cpu-ops-per-kernel", &so.cpu_ops_per_kernel,
            "extra CPU operator events per kernel (file size)");
  flags.Double("--step-gap", &so.step_gap_ms, "idle time between steps (ms)");
  flags.Bool("--gzip", &so.gzip, "write .json.gz files");
  flags.Bool("--no-metadata", &so.no_metadata, "leave out collective metadata (older PyTorch)");
  std::string style = "pytorch";
  flags.String("--style", &style,
               "pytorch: PyTorch pipelining, with PP: annotations; megatron: Megatron-LM / NeMo, "
               "no PP: annotations, backward on the autograd thread, batch_isend_irecv send/recv");
  flags.String("-o,--output-dir", &output,
               "the folder for one rank<N>.json[.gz] file per rank (created; must be empty)");
  flags.Bool("--force", &so.force,
             "write into a non-empty folder: replace the rank files of an earlier synth (and "
             "remove those this run does not write); other files are kept");
  request::ShapesSynthFlags shapes;
  shapes.Register(flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (output.empty()) return InvalidArgument("trace synth: -o DIR (--output-dir) is required");
  if (output == "-") {
    return InvalidArgument(
        "-o -: synth writes a folder of rank files, not one stream; name a folder");
  }
  if (style != "pytorch" && style != "megatron") {
    return InvalidArgument(fmt::format("--style {}: must be pytorch or megatron", style));
  }
  so.megatron = style == "megatron";
  if (shapes.record_shapes) return WriteShapesSynth(shapes, so.force, output, io);
  ASSIGN_OR_RETURN(schedule::ScheduleKind kind, schedule::ParseScheduleKind(name));
  ASSIGN_OR_RETURN(schedule::Schedule s,
                   schedule::Generate(kind, {pf.pp, pf.vpp, pf.microbatches}));
  RETURN_IF_ERROR(schedule::ValidateStructure(s));
  ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(flags, s.num_stages(), s.vpp));
  ASSIGN_OR_RETURN(trace::SynthSummary summary, trace::WriteSynthTrace(s, costs, so, output));
  io.out << fmt::format(
      "wrote {} rank files to {}: {} steps, {} GPU kernels, {} MB; makespan {:g} ms, bubble "
      "{:.2f}%\n",
      s.pp, output, so.steps, summary.kernels, summary.bytes / 1000000, summary.makespan_ms,
      100 * summary.bubble_fraction);
  return Status::Ok();
}

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kSubs = {
      {"analyze",
       "what each rank's GPUs did: breakdown, overlap, idle, collectives, pipeline bubble",
       nullptr},
      {"summarize", "one rank's file as a summary that `analyze --summaries` merges", nullptr},
      {"compare", "predicted (schedule or plan JSON) vs measured", nullptr},
      {"merge", "one Chrome trace of all ranks, clocks aligned, for Perfetto", RunMerge},
      {"synth", "write a multi-rank Kineto trace of a simulated pipeline schedule", RunSynth},
      {"calibrate", "fit the planner's efficiency constants from traces with shapes", nullptr},
  };
  return kSubs;
}

std::string TraceHelp() {
  std::string out =
      "infralens trace: read PyTorch profiler (Kineto) traces and measure what ran\n\n"
      "usage: infralens trace <subcommand> [options]     infralens trace <subcommand> "
      "--help\n\nsubcommands:\n";
  for (const auto& s : Subcommands()) out += fmt::format("  {:<9}  {}\n", s.name, s.summary);
  out +=
      "\nexamples:\n"
      "  infralens trace analyze traces/ --json\n"
      "  infralens trace summarize traces/rank0.json -o rank0.summary.json\n"
      "  infralens trace analyze --summaries rank0.summary.json\n"
      "  infralens trace compare predicted.json traces/\n"
      "  infralens trace merge traces/ -o all.json\n"
      "  infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth\n"
      "  infralens trace synth --record-shapes --tp 2 -o synth-shapes\n"
      "  infralens trace calibrate synth-shapes --gpu H100-SXM -o efficiency.csv\n"
      "\nDefinitions and sources: docs/measurement.md\n";
  return out;
}

}  // namespace

Status RunTrace(const std::vector<std::string>& args, CliIO& io) {
  if (args.empty()) {
    // A usage error, as `infralens` alone: the help on stderr, stdout empty, exit 2.
    io.err << TraceHelp();
    std::vector<std::string> names;
    for (const auto& s : Subcommands()) names.emplace_back(s.name);
    return InvalidArgument(fmt::format("a subcommand is required ({})", Join(names, ", ")));
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    io.out << TraceHelp();
    return Status::Ok();
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& s : Subcommands()) {
    if (args[0] != s.name) continue;
    // The declared ones (request/command.h): RunCli finds them first; here for completeness.
    if (s.run == nullptr) {
      const request::Command* c = request::FindCommand(std::string("trace ") + s.name);
      return c != nullptr ? RunDeclared(*c, rest, io) : Status(StatusCode::kInternal, s.name);
    }
    return s.run(rest, io);
  }
  std::vector<std::string> names;
  for (const auto& s : Subcommands()) names.emplace_back(s.name);
  std::string hint = ClosestMatch(args[0], names);
  return InvalidArgument(fmt::format("unknown subcommand '{}'{} (subcommands: {})", args[0],
                                     hint.empty() ? "" : "; did you mean '" + hint + "'?",
                                     Join(names, ", ")));
}

}  // namespace infralens::cli
