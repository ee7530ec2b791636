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
#include "trace/kineto_reader.h"
#include "request/cluster_flags.h"
#include "request/pipeline_flags.h"
#include "request/recalibrate.h"
#include "request/trace_flags.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/compare.h"
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

// The traces of `paths` within --memory-limit, at least one of them usable: the reason
// otherwise (the only file's, or the first of several). Files that could not be used are in
// `errors`.
StatusOr<trace::LoadedTraces> LoadSome(const std::vector<std::string>& paths,
                                       const request::TraceMemoryFlag& memory) {
  if (paths.empty())
    return InvalidArgument("no trace given: name one or more trace files or folders");
  ASSIGN_OR_RETURN(const uint64_t limit, memory.Bytes());
  ASSIGN_OR_RETURN(std::vector<std::string> files, trace::ExpandTracePaths(paths));
  trace::KinetoReadOptions options;
  options.budget_limit_bytes = limit;
  trace::LoadedTraces loaded = trace::LoadTraces(files, options);
  // No usable trace among the files: a failure of the input files (exit 1, docs/cli.md).
  if (Status st = trace::RequireATrace(loaded); !st.ok()) return AsFileFailure(st);
  return loaded;
}

// Loads and analyses; per-file errors are kept in the result. Fails only when nothing is usable.
StatusOr<trace::TraceAnalysis> LoadAndAnalyze(const std::vector<std::string>& paths,
                                              const TraceReadFlags& rf,
                                              const request::TraceMemoryFlag& memory) {
  ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSome(paths, memory));
  return trace::AnalyzeLoaded(std::move(loaded), rf.Options());
}

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

// `trace analyze --summaries`: the summaries named (files, or folders of *.json), read whole (each
// at most trace::kMaxSummaryBytes), merged. The reading options are the summaries'.
StatusOr<trace::TraceAnalysis> MergeSummaries(const std::vector<std::string>& paths,
                                              const TraceReadFlags& rf, const Flags& flags) {
  if (paths.empty())
    return InvalidArgument("no summary given: name summary files or folders of them");
  for (const char* flag :
       {"--hta-compat", "--include-last-step", "--comm-kernels", "--memory-kernels"}) {
    if (flags.Given(flag)) {
      return InvalidArgument(fmt::format(
          "{}: with --summaries the reading options are the summaries' (give it to `trace "
          "summarize`)",
          flag));
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> files, trace::ExpandTracePaths(paths));
  std::vector<trace::SummaryText> summaries;
  summaries.reserve(files.size());
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(std::string text, ReadFileLimited(f, trace::kMaxSummaryBytes));
    summaries.push_back({f, std::move(text)});
  }
  return trace::AnalyzeSummaries(summaries, rf.align_clocks);
}

Status RunAnalyze(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> paths;
  bool json = false, summaries = false;
  std::string output;
  TraceReadFlags rf;
  Flags flags(
      "trace analyze",
      "what each rank's GPUs did: breakdown, overlap, idle, collectives, pipeline bubble",
      "infralens trace analyze PATH... [--json] [--hta-compat] [--include-last-step]",
      {"infralens trace analyze traces/                 # a folder with one file per rank",
       "infralens trace analyze rank0.json.gz rank1.json.gz --json",
       "infralens trace analyze traces/ --hta-compat     # HTA's definitions and numbers",
       "infralens trace analyze --summaries summaries/   # merged `trace summarize` output"});
  flags.Positionals("paths", &paths, "trace files (.json, .json.gz) or folders of them");
  std::string format = "table";
  AddOutputFlags(flags, &format, &json, &output, "table or json");
  rf.Register(flags);
  request::TraceMemoryFlag memory;
  memory.Register(flags);
  flags.Bool("--summaries", &summaries,
             "the paths are summaries (`trace summarize`, one per rank file, or folders of them): "
             "merged, they give the analysis of the files (docs/scale-out.md)");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  json = format == "json";
  ASSIGN_OR_RETURN(trace::TraceAnalysis a, summaries ? MergeSummaries(paths, rf, flags)
                                                     : LoadAndAnalyze(paths, rf, memory));
  std::string data;
  if (json) {
    JsonWriter w;
    trace::WriteAnalysisJson(w, a);
    data = w.str();
  } else {
    data = trace::AnalysisText(a);
  }
  RETURN_IF_ERROR(WriteOutput(output, data, io));
  return ReportFileErrors(a, "analyze", io);
}

// One rank's file as a summary (trace/summary.h), for `trace analyze --summaries`.
Status RunSummarize(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> paths;
  std::string output;
  TraceReadFlags rf;
  Flags flags("trace summarize",
              "one rank's trace file reduced to a summary (JSON) that `trace analyze "
              "--summaries` merges with the others into the analysis of all the files",
              "infralens trace summarize FILE [-o SUMMARY.json] [--hta-compat] "
              "[--include-last-step]",
              {"infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth",
               "infralens trace summarize synth/rank0.json -o rank0.summary.json",
               "infralens trace analyze --summaries rank0.summary.json"});
  flags.Positionals("file", &paths, "one trace file (.json, .json.gz)");
  AddOutputFile(flags, &output);
  rf.Register(flags);
  request::TraceMemoryFlag memory;
  memory.Register(flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (paths.size() != 1) {
    return InvalidArgument(fmt::format(
        "trace summarize: give exactly one trace file ({} given); summarise each rank's file on "
        "its own",
        paths.size()));
  }
  if (flags.Given("--align-clocks")) {
    return InvalidArgument(
        "--align-clocks: give it to `trace analyze --summaries`; a summary does not depend on it");
  }
  ASSIGN_OR_RETURN(const uint64_t limit, memory.Bytes());
  trace::KinetoReadOptions options;
  options.budget_limit_bytes = limit;
  StatusOr<trace::RankTrace> read = trace::ReadKinetoTraceFile(paths[0], options);
  const Status read_status = read.status();
  ASSIGN_OR_RETURN(std::string summary,
                   trace::SummarizeRankTrace(paths[0], std::move(read), rf.Options()));
  RETURN_IF_ERROR(WriteOutput(output, summary, io));
  // A file that could not be read still has its summary, which records the error for the merge
  // to list (as `trace analyze` lists the files it could not use); the command fails as well.
  if (!read_status.ok()) {
    return Status(read_status.code(), read_status.message() +
                                          " (the summary records it; `trace analyze "
                                          "--summaries` lists it among the files not used)");
  }
  return Status::Ok();
}

Status RunCompareTraces(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> positionals;
  bool json = false;
  std::string output;
  TraceReadFlags rf;
  Flags flags("trace compare",
              "predicted vs measured: step time, bubble, exposed communication, schedule order",
              "infralens trace compare PREDICTION.json PATH... [--json]",
              {"infralens schedule --schedule 1f1b --pp 4 -m 8 --json > predicted.json",
               "infralens trace compare predicted.json traces/"});
  flags.Positionals(
      "prediction-and-paths", &positionals,
      "the prediction (JSON from `infralens schedule --json`, or a plan), then traces");
  std::string format = "table";
  AddOutputFlags(flags, &format, &json, &output, "table or json");
  rf.Register(flags);
  request::TraceMemoryFlag memory;
  memory.Register(flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  json = format == "json";
  ASSIGN_OR_RETURN(const uint64_t limit, memory.Bytes());
  if (positionals.size() < 2) {
    return InvalidArgument(
        "trace compare: give the prediction JSON and at least one trace (see --help)");
  }
  // The prediction file's content is a failure (exit 1), not a usage error (base/read_file.h).
  auto text = ReadFileLimited(positionals[0], trace::kMaxPredictionBytes);
  if (!text.ok()) return AsFileFailure(text.status());
  auto read = trace::ReadPrediction(*text, positionals[0]);
  if (!read.ok()) return AsFileFailure(read.status());
  trace::Prediction pred = *std::move(read);
  std::vector<std::string> paths(positionals.begin() + 1, positionals.end());
  ASSIGN_OR_RETURN(std::vector<std::string> files, trace::ExpandTracePaths(paths));
  trace::KinetoReadOptions options;
  options.budget_limit_bytes = limit;
  trace::LoadedTraces loaded = trace::LoadTraces(files, options);
  // A plan is predicted again with the constants these traces give (when they carry shapes).
  trace::Comparison::Recalibration recal;
  if (pred.format == "plan" && !loaded.traces.empty()) {
    trace::CalibrationOptions co;
    StatusOr<trace::Calibration> cal = InvalidArgument("the plan names no GPU");
    if (auto gpu = hw::FindGpu(pred.rebuild.gpu); gpu.ok()) {
      co.gpu = *gpu;
      cal = trace::Calibrate(loaded.traces, co);
    }
    if (!cal.ok()) {
      recal.why_not = cal.status().message();
    } else {
      auto r = request::RecalibratePlan(pred, trace::CalibrationCsv(*cal));
      if (r.ok()) {
        recal = {true, 1e3 * r->step_time_s, 1e3 * r->new_step_time_s, r->mfu, r->new_mfu, ""};
      } else {
        recal.why_not = r.status().message();
      }
    }
  }
  ASSIGN_OR_RETURN(trace::TraceAnalysis a, trace::AnalyzeLoaded(std::move(loaded), rf.Options()));
  trace::Comparison c = trace::Compare(pred, a);
  c.recalibration = recal;
  std::string data;
  if (json) {
    JsonWriter w;
    trace::WriteComparisonJson(w, c);
    data = w.str();
  } else {
    data = trace::ComparisonText(c);
  }
  RETURN_IF_ERROR(WriteOutput(output, data, io));
  return ReportFileErrors(a, "compare", io);
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
  ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSome(paths, memory));
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

// stdout is data: the fitted constants as an efficiency file (data/hw/efficiency.csv's form; -o
// writes it to a file, whole or not at all), or the fit as a table or JSON with --format. The
// fit table also goes to stderr when the data is the file, so a person sees what was fitted.
// Without --gpu the GPU is the one the traces' deviceProperties name (trace::GpuFromTraces).
Status RunCalibrate(const std::vector<std::string>& args, CliIO& io) {
  std::vector<std::string> paths;
  std::string gpu_name, output, format = "csv";
  bool json = false;
  trace::CalibrationOptions co;
  request::ClusterFlags cf;
  Flags flags(
      "trace calibrate",
      "fit the planner's efficiency constants from traces recorded with record_shapes=True (the "
      "GPU from the traces' deviceProperties unless --gpu names it; the link rows need the "
      "cluster: --cluster, whose default counts only for traces of its own GPU)",
      "infralens trace calibrate PATH... [--gpu GPU] [--cluster C] [-o efficiency.csv] "
      "[--format F]",
      {"infralens trace synth --record-shapes --tp 2 -o synth-shapes",
       "infralens trace calibrate synth-shapes --gpu H100-SXM -o efficiency.csv",
       "infralens trace calibrate synth-shapes --gpu H100-SXM --cluster dgx-h100 -o "
       "efficiency.csv   # the links too (synthetic traces name no GPU)",
       "infralens plan --model llama3-8b --cluster dgx-h100 --gpus 8 --global-batch 32 "
       "--efficiency efficiency.csv"});
  flags.Positionals("paths", &paths, "trace files (.json, .json.gz) or folders of them");
  request::RegisterCalibrateFlags(flags, &gpu_name, &co.min_samples);
  cf.RegisterCluster(flags);
  AddOutputFlags(flags, &format, &json, &output,
                 "csv (the efficiency file), table (the fit) or json (the fit and every sample)");
  request::TraceMemoryFlag memory;
  memory.Register(flags);
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"csv", "table", "json"}));
  std::optional<hw::Gpu> named_gpu;
  if (!gpu_name.empty()) {
    ASSIGN_OR_RETURN(named_gpu, hw::FindGpu(gpu_name));
  }
  // The cluster named, or the default (read once: --cluster may name a topology file); a named
  // one that cannot be read fails before the traces are read.
  const bool cluster_named = flags.Given("--cluster");
  const StatusOr<cluster::Cluster> cl = cf.Load([](const std::string&) { return false; });
  if (cluster_named) RETURN_IF_ERROR(cl.status());
  ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSome(paths, memory));
  auto target = request::ResolveCalibrationTarget(loaded.traces, named_gpu, cl, cluster_named,
                                                  cf.cluster, "--gpu", "--cluster");
  if (!target.ok()) {
    // A GPU the traces cannot name is a usage error (exit 2); traces without shapes a failure.
    if (target.status().code() != StatusCode::kInvalidArgument) return target.status();
    return InvalidArgument("trace calibrate: " + target.status().message());
  }
  co.gpu = target->gpu;
  if (target->cluster) {
    co.cluster = &*target->cluster;
  } else {
    co.no_cluster_note = target->no_cluster_note;
  }
  const std::vector<std::string>& notes = target->notes;
  ASSIGN_OR_RETURN(trace::Calibration cal, trace::Calibrate(loaded.traces, co));
  cal.notes.insert(cal.notes.begin(), notes.begin(), notes.end());
  std::string data;
  if (format == "json") {
    JsonWriter w;
    trace::WriteCalibrationJson(w, cal);
    data = w.str();
  } else if (format == "table") {
    data = trace::CalibrationText(cal);
  } else {
    data = trace::CalibrationCsv(cal);
    io.err << trace::CalibrationText(cal);
  }
  RETURN_IF_ERROR(WriteOutput(output, data, io));
  if (!output.empty() && format == "csv")
    io.err << fmt::format("wrote {} (use: --efficiency {})\n", output, output);
  trace::TraceAnalysis shell;
  shell.errors = loaded.errors;
  shell.ranks.resize(loaded.traces.size());
  return ReportFileErrors(shell, "calibrate", io);
}

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kSubs = {
      {"analyze",
       "what each rank's GPUs did: breakdown, overlap, idle, collectives, pipeline bubble",
       RunAnalyze},
      {"summarize", "one rank's file as a summary that `analyze --summaries` merges", RunSummarize},
      {"compare", "predicted (schedule or plan JSON) vs measured", RunCompareTraces},
      {"merge", "one Chrome trace of all ranks, clocks aligned, for Perfetto", RunMerge},
      {"synth", "write a multi-rank Kineto trace of a simulated pipeline schedule", RunSynth},
      {"calibrate", "fit the planner's efficiency constants from traces with shapes", RunCalibrate},
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
    if (args[0] == s.name) return s.run(rest, io);
  }
  std::vector<std::string> names;
  for (const auto& s : Subcommands()) names.emplace_back(s.name);
  std::string hint = ClosestMatch(args[0], names);
  return InvalidArgument(fmt::format("unknown subcommand '{}'{} (subcommands: {})", args[0],
                                     hint.empty() ? "" : "; did you mean '" + hint + "'?",
                                     Join(names, ", ")));
}

}  // namespace infralens::cli
