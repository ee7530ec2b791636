// `infralens trace analyze`, `summarize`, `compare`, `calibrate`, `merge` and `synth` as declared
// commands: what each reads, computes and writes. (`merge` streams its trace as its document;
// `synth` writes a folder its own -o names, and its document reports what it wrote.)
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "base/atomic_file.h"
#include "base/json_writer.h"
#include "base/read_file.h"
#include "hw/gpu.h"
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

namespace infralens::request {

StatusOr<trace::LoadedTraces> LoadSomeTraces(const std::vector<std::string>& paths,
                                             const TraceMemoryFlag& memory) {
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

void ReportSkippedTraces(const std::vector<trace::FileError>& errors, size_t used,
                         std::string_view command, const RunContext& ctx) {
  if (errors.empty()) return;
  if (ctx.note_after) {
    for (const auto& e : errors)
      ctx.note_after(fmt::format("infralens trace {}: skipped: {}\n", command, e.status.message()));
  }
  // Files that cannot be used are a failure (exit 1), malformed or missing alike (docs/cli.md).
  if (ctx.fail_after) {
    ctx.fail_after(FailedPrecondition(fmt::format(
        "{} of {} trace files could not be used (see above); results cover the other {}",
        errors.size(), errors.size() + used, used)));
  }
}

namespace {

struct TraceAnalyzeQuery {
  std::vector<std::string> paths;
  TraceReadFlags read;
  TraceMemoryFlag memory;
  bool summaries = false;
};

// `trace analyze --summaries`: the summaries named (files, or folders of *.json), read whole (each
// at most trace::kMaxSummaryBytes), merged. The reading options are the summaries'.
StatusOr<trace::TraceAnalysis> MergeSummaries(const TraceAnalyzeQuery& q, const GivenFn& given) {
  if (q.paths.empty())
    return InvalidArgument("no summary given: name summary files or folders of them");
  for (const char* flag :
       {"--hta-compat", "--include-last-step", "--comm-kernels", "--memory-kernels"}) {
    if (given(flag)) {
      return InvalidArgument(fmt::format(
          "{}: with --summaries the reading options are the summaries' (give it to `trace "
          "summarize`)",
          flag));
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> files, trace::ExpandTracePaths(q.paths));
  std::vector<trace::SummaryText> summaries;
  summaries.reserve(files.size());
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(std::string text, ReadFileLimited(f, trace::kMaxSummaryBytes));
    summaries.push_back({f, std::move(text)});
  }
  return trace::AnalyzeSummaries(summaries, q.read.align_clocks);
}

template <class Writer, class T>
std::string JsonOf(Writer write, const T& value) {
  JsonWriter w;
  write(w, value);
  return w.str();
}

struct TraceSummarizeQuery {
  std::vector<std::string> paths;
  TraceReadFlags read;
  TraceMemoryFlag memory;
};

struct TraceCompareQuery {
  std::vector<std::string> positionals;  // the prediction, then traces
  TraceReadFlags read;
  TraceMemoryFlag memory;
};

struct TraceCalibrateQuery {
  std::vector<std::string> paths;
  std::string gpu;
  trace::CalibrationOptions options;
  ClusterFlags cluster;
  TraceMemoryFlag memory;
};

// A plan is predicted again with the constants these traces give (when they carry shapes).
trace::Comparison::Recalibration Recalibrate(const trace::Prediction& pred,
                                             const trace::LoadedTraces& loaded) {
  trace::Comparison::Recalibration recal;
  if (pred.format != "plan" || loaded.traces.empty()) return recal;
  trace::CalibrationOptions co;
  StatusOr<trace::Calibration> cal = InvalidArgument("the plan names no GPU");
  if (auto gpu = hw::FindGpu(pred.rebuild.gpu); gpu.ok()) {
    co.gpu = *gpu;
    cal = trace::Calibrate(loaded.traces, co);
  }
  if (!cal.ok()) {
    recal.why_not = cal.status().message();
    return recal;
  }
  auto r = RecalibratePlan(pred, trace::CalibrationCsv(*cal));
  if (r.ok()) {
    recal = {true, 1e3 * r->step_time_s, 1e3 * r->new_step_time_s, r->mfu, r->new_mfu, ""};
  } else {
    recal.why_not = r.status().message();
  }
  return recal;
}

}  // namespace

const Command& TraceAnalyzeCommand() {
  static const Command kCommand = MakeCommand<TraceAnalyzeQuery, trace::TraceAnalysis>(
      {.name = "trace analyze",
       .summary = "what each rank's GPUs did: breakdown, overlap, idle, collectives, pipeline "
                  "bubble",
       .usage = "infralens trace analyze PATH... [--json] [--hta-compat] [--include-last-step]",
       .examples = {"infralens trace analyze traces/                 # a folder with one file per "
                    "rank",
                    "infralens trace analyze rank0.json.gz rank1.json.gz --json",
                    "infralens trace analyze traces/ --hta-compat     # HTA's definitions and "
                    "numbers",
                    "infralens trace analyze --summaries summaries/   # merged `trace summarize` "
                    "output"},
       .formats = {"table", "json"}},
      [](TraceAnalyzeQuery& q, FlagSink& flags) {
        flags.Positionals("paths", &q.paths, "trace files (.json, .json.gz) or folders of them");
        q.read.Register(flags);
        q.memory.Register(flags);
        flags.Bool("--summaries", &q.summaries,
                   "the paths are summaries (`trace summarize`, one per rank file, or folders of "
                   "them): merged, they give the analysis of the files (docs/scale-out.md)");
      },
      [](const TraceAnalyzeQuery& q, const RunContext& ctx) -> StatusOr<trace::TraceAnalysis> {
        if (q.summaries) return MergeSummaries(q, ctx.given);
        ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSomeTraces(q.paths, q.memory));
        return trace::AnalyzeLoaded(std::move(loaded), q.read.Options());
      },
      [](const trace::TraceAnalysis& a, const TraceAnalyzeQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        ReportSkippedTraces(a.errors, a.ranks.size(), "analyze", ctx);
        if (ctx.format == "json") return JsonOf(trace::WriteAnalysisJson, a);
        return trace::AnalysisText(a);
      });
  return kCommand;
}

const Command& TraceSummarizeCommand() {
  static const Command kCommand = MakeCommand<TraceSummarizeQuery, std::string>(
      {.name = "trace summarize",
       .summary = "one rank's trace file reduced to a summary (JSON) that `trace analyze "
                  "--summaries` merges with the others into the analysis of all the files",
       .usage = "infralens trace summarize FILE [-o SUMMARY.json] [--hta-compat] "
                "[--include-last-step]",
       .examples = {"infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth",
                    "infralens trace summarize synth/rank0.json -o rank0.summary.json",
                    "infralens trace analyze --summaries rank0.summary.json"},
       .formats = {"json"}},
      [](TraceSummarizeQuery& q, FlagSink& flags) {
        flags.Positionals("file", &q.paths, "one trace file (.json, .json.gz)");
        q.read.Register(flags);
        q.memory.Register(flags);
      },
      [](const TraceSummarizeQuery& q, const RunContext& ctx) -> StatusOr<std::string> {
        if (q.paths.size() != 1) {
          return InvalidArgument(
              fmt::format("trace summarize: give exactly one trace file ({} given); summarise "
                          "each rank's file on its own",
                          q.paths.size()));
        }
        if (ctx.given("--align-clocks")) {
          return InvalidArgument(
              "--align-clocks: give it to `trace analyze --summaries`; a summary does not "
              "depend on it");
        }
        ASSIGN_OR_RETURN(const uint64_t limit, q.memory.Bytes());
        trace::KinetoReadOptions options;
        options.budget_limit_bytes = limit;
        StatusOr<trace::RankTrace> read = trace::ReadKinetoTraceFile(q.paths[0], options);
        const Status read_status = read.status();
        ASSIGN_OR_RETURN(std::string summary,
                         trace::SummarizeRankTrace(q.paths[0], std::move(read), q.read.Options()));
        // A file that could not be read still has its summary, which records the error for the
        // merge to list (as `trace analyze` lists the files it could not use); the command
        // fails as well, once the summary is written.
        if (!read_status.ok() && ctx.fail_after) {
          ctx.fail_after(Status(read_status.code(),
                                read_status.message() +
                                    " (the summary records it; `trace analyze --summaries` lists "
                                    "it among the files not used)"));
        }
        return summary;
      },
      [](const std::string& summary, const TraceSummarizeQuery&,
         const RunContext&) -> StatusOr<std::string> { return summary; });
  return kCommand;
}

const Command& TraceCompareCommand() {
  static const Command kCommand = MakeCommand<TraceCompareQuery, trace::Comparison>(
      {.name = "trace compare",
       .summary = "predicted vs measured: step time, bubble, exposed communication, schedule "
                  "order",
       .usage = "infralens trace compare PREDICTION.json PATH... [--json]",
       .examples = {"infralens schedule --schedule 1f1b --pp 4 -m 8 --json > predicted.json",
                    "infralens trace compare predicted.json traces/"},
       .formats = {"table", "json"}},
      [](TraceCompareQuery& q, FlagSink& flags) {
        flags.Positionals(
            "prediction-and-paths", &q.positionals,
            "the prediction (JSON from `infralens schedule --json`, or a plan), then traces");
        q.read.Register(flags);
        q.memory.Register(flags);
      },
      [](const TraceCompareQuery& q, const RunContext& ctx) -> StatusOr<trace::Comparison> {
        ASSIGN_OR_RETURN(const uint64_t limit, q.memory.Bytes());
        if (q.positionals.size() < 2) {
          return InvalidArgument(
              "trace compare: give the prediction JSON and at least one trace (see --help)");
        }
        // The prediction file's content is a failure (exit 1), not a usage error.
        ASSIGN_OR_RETURN(const std::string text,
                         ctx.ReadInput(q.positionals[0], "prediction", trace::kMaxPredictionBytes));
        auto read = trace::ReadPrediction(text, q.positionals[0]);
        if (!read.ok()) return AsFileFailure(read.status());
        trace::Prediction pred = *std::move(read);
        std::vector<std::string> paths(q.positionals.begin() + 1, q.positionals.end());
        ASSIGN_OR_RETURN(std::vector<std::string> files, trace::ExpandTracePaths(paths));
        trace::KinetoReadOptions options;
        options.budget_limit_bytes = limit;
        trace::LoadedTraces loaded = trace::LoadTraces(files, options);
        const trace::Comparison::Recalibration recal = Recalibrate(pred, loaded);
        ASSIGN_OR_RETURN(trace::TraceAnalysis a,
                         trace::AnalyzeLoaded(std::move(loaded), q.read.Options()));
        ReportSkippedTraces(a.errors, a.ranks.size(), "compare", ctx);
        trace::Comparison c = trace::Compare(pred, a);
        c.recalibration = recal;
        return c;
      },
      [](const trace::Comparison& c, const TraceCompareQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "json") return JsonOf(trace::WriteComparisonJson, c);
        return trace::ComparisonText(c);
      });
  return kCommand;
}

// stdout is data: the fitted constants as an efficiency file (data/hw/efficiency.csv's form; -o
// writes it to a file, whole or not at all), or the fit as a table or JSON with --format. The
// fit table also goes to stderr when the data is the file, so a person sees what was fitted.
// Without --gpu the GPU is the one the traces' deviceProperties name (trace::GpuFromTraces).
const Command& TraceCalibrateCommand() {
  static const Command kCommand = MakeCommand<TraceCalibrateQuery, trace::Calibration>(
      {.name = "trace calibrate",
       .summary = "fit the planner's efficiency constants from traces recorded with "
                  "record_shapes=True (the GPU from the traces' deviceProperties unless --gpu "
                  "names it; the link rows need the cluster: --cluster, whose default counts only "
                  "for traces of its own GPU)",
       .usage = "infralens trace calibrate PATH... [--gpu GPU] [--cluster C] [-o efficiency.csv] "
                "[--format F]",
       .examples = {"infralens trace synth --record-shapes --tp 2 -o synth-shapes",
                    "infralens trace calibrate synth-shapes --gpu H100-SXM -o efficiency.csv",
                    "infralens trace calibrate synth-shapes --gpu H100-SXM --cluster dgx-h100 -o "
                    "efficiency.csv   # the links too (synthetic traces name no GPU)",
                    "infralens plan --model llama3-8b --cluster dgx-h100 --gpus 8 --global-batch "
                    "32 --efficiency efficiency.csv"},
       .formats = {"csv", "table", "json"},
       .format_help = "csv (the efficiency file), table (the fit) or json (the fit and every "
                      "sample)"},
      [](TraceCalibrateQuery& q, FlagSink& flags) {
        flags.Positionals("paths", &q.paths, "trace files (.json, .json.gz) or folders of them");
        RegisterCalibrateFlags(flags, &q.gpu, &q.options.min_samples);
        q.cluster.RegisterCluster(flags);
        q.memory.Register(flags);
      },
      [](const TraceCalibrateQuery& q, const RunContext& ctx) -> StatusOr<trace::Calibration> {
        std::optional<hw::Gpu> named_gpu;
        if (!q.gpu.empty()) {
          ASSIGN_OR_RETURN(named_gpu, hw::FindGpu(q.gpu));
        }
        // The cluster named, or the default (read once: --cluster may name a topology file); a
        // named one that cannot be read fails before the traces are read.
        const bool cluster_named = ctx.given("--cluster");
        const StatusOr<cluster::Cluster> cl =
            q.cluster.Load([](const std::string&) { return false; });
        if (cluster_named) RETURN_IF_ERROR(cl.status());
        ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSomeTraces(q.paths, q.memory));
        auto target = ResolveCalibrationTarget(loaded.traces, named_gpu, cl, cluster_named,
                                               q.cluster.cluster, "--gpu", "--cluster");
        if (!target.ok()) {
          // A GPU the traces cannot name is a usage error (exit 2); traces without shapes a
          // failure.
          if (target.status().code() != StatusCode::kInvalidArgument) return target.status();
          return InvalidArgument("trace calibrate: " + target.status().message());
        }
        trace::CalibrationOptions co = q.options;
        co.gpu = target->gpu;
        if (target->cluster) {
          co.cluster = &*target->cluster;
        } else {
          co.no_cluster_note = target->no_cluster_note;
        }
        ASSIGN_OR_RETURN(trace::Calibration cal, trace::Calibrate(loaded.traces, co));
        cal.notes.insert(cal.notes.begin(), target->notes.begin(), target->notes.end());
        ReportSkippedTraces(loaded.errors, loaded.traces.size(), "calibrate", ctx);
        return cal;
      },
      [](const trace::Calibration& cal, const TraceCalibrateQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "json") return JsonOf(trace::WriteCalibrationJson, cal);
        if (ctx.format == "table") return trace::CalibrationText(cal);
        if (ctx.note) ctx.note(trace::CalibrationText(cal));
        if (ctx.note_after && !ctx.output.empty() && ctx.output != "-")
          ctx.note_after(fmt::format("wrote {} (use: --efficiency {})\n", ctx.output, ctx.output));
        return trace::CalibrationCsv(cal);
      });
  return kCommand;
}

namespace {

struct TraceMergeQuery {
  std::vector<std::string> paths;
  TraceReadFlags read;
  TraceMemoryFlag memory;
};

struct MergeResult {
  trace::MergeSummary summary;
  std::vector<trace::FileError> errors;
  size_t used = 0;
  std::string document;  // the trace, when there is no stream to write it to
};

// These commands write files (a folder, a stream to -o); the API serves neither.
Status RequireFiles(std::string_view command, const RunContext& ctx) {
  if (ctx.files_allowed) return Status::Ok();
  return InvalidArgument(fmt::format("trace {} writes files: run it from the CLI", command));
}

struct TraceSynthQuery {
  std::string schedule = "1f1b";
  PipelineFlags pipeline;
  trace::SynthOptions synth;
  std::string style = "pytorch";
  std::string output_dir;
  ShapesSynthFlags shapes;
};

// `trace synth --record-shapes`: one rank file, DIR/rank0.json, written whole.
StatusOr<std::string> WriteShapesSynth(const ShapesSynthFlags& flags, bool force,
                                       const std::string& dir) {
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
  return fmt::format("wrote {}: {} bytes, {} x {} token counts of {} at tp {} on {}\n", path,
                     json.size(), o.repeats, o.tokens.size(), o.model.name, o.tp, o.gpu.name);
}

}  // namespace

const Command& TraceMergeCommand() {
  static const Command kCommand = MakeCommand<TraceMergeQuery, MergeResult>(
      {.name = "trace merge",
       .summary = "one Chrome trace with every rank as its own process, clocks aligned on "
                  "collectives",
       .usage = "infralens trace merge PATH... [-o all.json]",
       .examples = {"infralens trace merge traces/ -o all.json    # then open all.json in "
                    "ui.perfetto.dev"},
       .formats = {"json"}},
      [](TraceMergeQuery& q, FlagSink& flags) {
        flags.Positionals("paths", &q.paths, "trace files or folders");
        q.read.Register(flags);
        q.memory.Register(flags);
      },
      [](const TraceMergeQuery& q, const RunContext& ctx) -> StatusOr<MergeResult> {
        RETURN_IF_ERROR(RequireFiles("merge", ctx));
        ASSIGN_OR_RETURN(trace::LoadedTraces loaded, LoadSomeTraces(q.paths, q.memory));
        trace::AnalysisOptions opt = q.read.Options();
        opt.include_last_step = true;  // a merged timeline shows everything
        MergeResult r;
        // Streamed as it is made (a merged trace is about as large as its inputs); held whole
        // only where the front end gives no stream.
        auto keep = [&r](std::string_view piece) {
          r.document.append(piece);
          return Status::Ok();
        };
        ASSIGN_OR_RETURN(r.summary,
                         trace::MergeTraces(loaded.traces, opt, ctx.stream ? ctx.stream : keep));
        r.errors = std::move(loaded.errors);
        r.used = loaded.traces.size();
        return r;
      },
      [](const MergeResult& r, const TraceMergeQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        const trace::MergeSummary& m = r.summary;
        if (ctx.note_after && !ctx.output.empty() && ctx.output != "-") {
          ctx.note_after(fmt::format(
              "wrote {}: {} ranks, {} events; clocks {}\n", ctx.output, m.ranks, m.events,
              m.aligned ? fmt::format("aligned on {} matched collectives", m.matched)
                        : "as recorded (" + m.note + ")"));
        }
        ReportSkippedTraces(r.errors, r.used, "merge", ctx);
        return r.document;
      });
  return kCommand;
}

const Command& TraceSynthCommand() {
  static const Command kCommand = MakeCommand<TraceSynthQuery, std::string>(
      {.name = "trace synth",
       .summary = "write a multi-rank Kineto trace of a simulated pipeline schedule (for tests, "
                  "benchmarks)",
       .usage = "infralens trace synth --schedule NAME [--pp P] [-m M] [costs] [--steps N] -o DIR",
       .examples = {"infralens trace synth --schedule 1f1b --pp 4 -m 8 -o synth",
                    "infralens trace synth --schedule zbv --pp 4 -m 16 --f 1 --i 1 --w 1 --p2p "
                    "0.05 --gzip -o zbv",
                    "infralens trace synth --schedule interleaved-1f1b --pp 4 --vpp 2 -m 8 "
                    "--style megatron -o meg",
                    "infralens trace analyze synth/   # recovers the schedule and its bubble"},
       .own_output = true},
      [](TraceSynthQuery& q, FlagSink& flags) {
        RegisterScheduleOption(flags, &q.schedule);
        q.pipeline.Register(flags);
        RegisterSynthSteps(flags, &q.synth.steps);
        flags.Int("--kernels-per-action", &q.synth.kernels_per_action,
                  "compute kernels per action (split evenly)");
        flags.Int("--cpu-ops-per-kernel", &q.synth.cpu_ops_per_kernel,
                  "extra CPU operator events per kernel (file size)");
        flags.Double("--step-gap", &q.synth.step_gap_ms, "idle time between steps (ms)");
        flags.Bool("--gzip", &q.synth.gzip, "write .json.gz files");
        flags.Bool("--no-metadata", &q.synth.no_metadata,
                   "leave out collective metadata (older PyTorch)");
        flags.String("--style", &q.style,
                     "pytorch: PyTorch pipelining, with PP: annotations; megatron: Megatron-LM / "
                     "NeMo, no PP: annotations, backward on the autograd thread, "
                     "batch_isend_irecv send/recv");
        flags.String("-o,--output-dir", &q.output_dir,
                     "the folder for one rank<N>.json[.gz] file per rank (created; must be "
                     "empty)");
        flags.Bool("--force", &q.synth.force,
                   "write into a non-empty folder: replace the rank files of an earlier synth "
                   "(and remove those this run does not write); other files are kept");
        q.shapes.Register(flags);
      },
      [](const TraceSynthQuery& q, const RunContext& ctx) -> StatusOr<std::string> {
        RETURN_IF_ERROR(RequireFiles("synth", ctx));
        if (q.output_dir.empty())
          return InvalidArgument("trace synth: -o DIR (--output-dir) is required");
        if (q.output_dir == "-") {
          return InvalidArgument(
              "-o -: synth writes a folder of rank files, not one stream; name a folder");
        }
        if (q.style != "pytorch" && q.style != "megatron") {
          return InvalidArgument(fmt::format("--style {}: must be pytorch or megatron", q.style));
        }
        trace::SynthOptions so = q.synth;
        so.megatron = q.style == "megatron";
        if (q.shapes.record_shapes) return WriteShapesSynth(q.shapes, so.force, q.output_dir);
        ASSIGN_OR_RETURN(schedule::ScheduleKind kind, schedule::ParseScheduleKind(q.schedule));
        const PipelineFlags& pf = q.pipeline;
        ASSIGN_OR_RETURN(schedule::Schedule s,
                         schedule::Generate(kind, {pf.pp, pf.vpp, pf.microbatches}));
        RETURN_IF_ERROR(schedule::ValidateStructure(s));
        ASSIGN_OR_RETURN(sim::Costs costs, pf.Costs(ctx.given, s.num_stages(), s.vpp));
        ASSIGN_OR_RETURN(trace::SynthSummary summary,
                         trace::WriteSynthTrace(s, costs, so, q.output_dir));
        return fmt::format(
            "wrote {} rank files to {}: {} steps, {} GPU kernels, {} MB; makespan {:g} ms, "
            "bubble {:.2f}%\n",
            s.pp, q.output_dir, so.steps, summary.kernels, summary.bytes / 1000000,
            summary.makespan_ms, 100 * summary.bubble_fraction);
      },
      [](const std::string& report, const TraceSynthQuery&,
         const RunContext&) -> StatusOr<std::string> { return report; });
  return kCommand;
}

}  // namespace infralens::request
