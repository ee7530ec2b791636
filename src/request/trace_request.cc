// `infralens trace analyze`, `summarize`, `compare` and `calibrate` as declared commands: what
// each reads, computes and writes. (`trace merge` and `trace synth` write files of their own and
// stay functions of the CLI: src/cli/trace_cmd.cc.)
#include <fmt/format.h>

#include <optional>

#include "base/json_writer.h"
#include "base/read_file.h"
#include "hw/gpu.h"
#include "request/engine_requests.h"
#include "request/recalibrate.h"
#include "request/trace_flags.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/compare.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/summary.h"

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
       .formats = {"table", "json"},
       .format_help = "table or json"},
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
       .formats = {"table", "json"},
       .format_help = "table or json"},
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

}  // namespace infralens::request
