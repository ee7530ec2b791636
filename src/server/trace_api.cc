#include "server/trace_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <variant>

#include "base/json_writer.h"
#include "base/strings.h"
#include "base/units.h"
#include "request/pipeline_flags.h"
#include "request/trace_flags.h"
#include "schedule/schedule.h"
#include "server/engine_params.h"
#include "server/multipart.h"
#include "sim/compare.h"
#include "sim/simulator.h"
#include "trace/analysis.h"
#include "trace/kernel_timeline.h"
#include "trace/kineto_reader.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/synth.h"

namespace infralens::server {

namespace {

// What a file is called in messages and in the JSON: the name the client sent, without any
// folder (browsers send none; some clients send a path), or "file N" when it has none.
std::string FileLabel(std::string_view filename, size_t index) {
  const size_t slash = filename.find_last_of("/\\");
  if (slash != std::string_view::npos) filename = filename.substr(slash + 1);
  if (filename.empty()) return fmt::format("file {}", index + 1);
  return std::string(filename);
}

// `object` (a JSON object, as JsonWriter writes it) with "key": `value` added as its last member.
std::string WithKey(std::string object, std::string_view key, std::string value) {
  while (!value.empty() && value.back() == '\n') value.pop_back();
  const size_t close = object.find_last_of('}');
  if (close == std::string::npos) return object;
  const bool empty = object.find_last_not_of(" \n", close - 1) == object.find('{');
  object.insert(close, fmt::format("{}{}:{}", empty ? "" : ",", JsonWriter::Escape(key), value));
  return object;
}

}  // namespace

std::variant<std::vector<trace::TraceBytes>, ApiError> UploadedTraces(
    ApiCall& call, std::string_view query_example, const std::vector<std::string_view>& field_names,
    std::map<std::string, std::string>* fields) {
  std::vector<trace::TraceBytes> inputs;
  if (IsMultipartContentType(call.content_type)) {
    MultipartLimits limits;
    limits.max_parts = kMaxUploadFiles;
    auto parts = ParseMultipart(call.body, call.content_type, limits);
    if (!parts.ok()) return ParamFailure("body", parts.status().message());
    for (size_t k = 0; k < parts->size(); ++k) {
      const MultipartPart& part = (*parts)[k];
      if (!part.has_filename) {
        const bool field =
            std::find(field_names.begin(), field_names.end(), part.name) != field_names.end();
        // A form field (the GPU of a calibration) is a short word, never a file's bytes.
        if (field && fields != nullptr && part.body.size() <= kMaxUploadFieldBytes) {
          (*fields)[part.name] = std::string(part.body);
          continue;
        }
        return ParamFailure(
            "body",
            fmt::format("multipart body: part {} (name \"{}\") is not a file; every part must be "
                        "a trace file (with a filename){}; options go in the query string {}",
                        k + 1, Excerpt(part.name),
                        field_names.empty()
                            ? ""
                            : fmt::format(" or one of the fields {} (at most {} bytes)",
                                          Join(std::vector<std::string>(field_names.begin(),
                                                                        field_names.end()),
                                               ", "),
                                          kMaxUploadFieldBytes),
                        query_example));
      }
      inputs.push_back({FileLabel(part.filename, k), part.body});
    }
  } else {
    inputs.push_back({"request body", call.body});
  }
  return inputs;
}

std::variant<trace::LoadedTraces, ApiError> LoadUploadedTraces(
    ApiCall& call, const std::vector<trace::TraceBytes>& inputs, std::string_view cli) {
  // Every read is bounded by the time limit and, over all files together, by the JSON bytes it
  // may inflate to. The reader reports progress with 0 before the first chunk of each file.
  uint64_t finished_bytes = 0, current_bytes = 0;
  size_t current = 0;
  bool first = true, out_of_time = false;
  trace::KinetoReadOptions read_options;
  read_options.progress = [&](uint64_t json_bytes) -> Status {
    if (json_bytes == 0) {
      if (!first) ++current;
      first = false;
      finished_bytes += current_bytes;
    }
    current_bytes = json_bytes;
    if (call.Expired()) {
      out_of_time = true;
      return ResourceExhausted("out of time");
    }
    if (finished_bytes + current_bytes > kMaxUploadJsonBytes) {
      return InvalidArgument(fmt::format(
          "{}: the files of one upload may hold at most {} bytes of JSON (after gzip) together; "
          "this file goes beyond that (the CLI has no such limit: {})",
          current < inputs.size() ? inputs[current].label : "?", kMaxUploadJsonBytes, cli));
    }
    return Status::Ok();
  };
  read_options.budget_limit_bytes = call.limits.upload_analysis_bytes;
  trace::LoadedTraces loaded = trace::LoadTraceBytes(inputs, read_options);
  if (out_of_time || call.Expired()) return call.TimeLimitError();
  // Beyond the memory budget: too large for the server (400, as beyond the JSON bound), not a
  // 503 to retry.
  for (trace::FileError& e : loaded.errors) {
    if (e.status.code() == StatusCode::kResourceExhausted) {
      e.status = InvalidArgument(fmt::format(
          "{} (the CLI's budget is {}: {})", e.status.message(),
          FormatBytes(static_cast<int64_t>(trace::kDefaultTraceMemoryBudgetBytes)), cli));
    }
  }
  return loaded;
}

std::variant<trace::TraceAnalysis, ApiError> AnalyzeUploaded(ApiCall& call,
                                                             const trace::LoadedTraces& loaded,
                                                             trace::AnalysisOptions options,
                                                             trace::KernelTimeline* timeline) {
  // The analysis stops at the deadline (or when the client has gone), not after all its work.
  options.stop = [&call] { return call.Expired(); };
  auto analysis = trace::AnalyzeLoadedWithTimeline(loaded, options, {}, timeline);
  if (call.Expired()) return call.TimeLimitError();
  if (!analysis.ok()) {
    ApiError e = FromStatus(analysis.status(), "body");
    if (!loaded.errors.empty()) {
      e.details = [file_errors = loaded.errors](JsonWriter& w) {
        w.Key("errors").BeginArray();
        for (const trace::FileError& f : file_errors) {
          w.BeginObject().Field("file", f.path).Field("message", f.status.message()).EndObject();
        }
        w.EndArray();
      };
    }
    return e;
  }
  return std::move(*analysis);
}

namespace {

ApiResult HandleAnalyze(ApiCall& call) {
  ParamReader& p = call.params;
  trace::AnalysisOptions options;
  options.hta_compat = p.Flag("hta_compat");
  options.include_last_step = p.Flag("include_last_step");
  options.align_clocks = p.Flag("align_clocks");
  if (p.error()) return ParamErrorOf(call);
  if (call.body.empty()) {
    return ParamFailure("body",
                        "the request body is empty; POST Kineto trace files (.json or .json.gz) as "
                        "multipart/form-data, one part per file (curl -F trace=@rank0.json -F "
                        "trace=@rank1.json URL), or one file as the whole body");
  }

  auto uploaded = UploadedTraces(call, "(?hta_compat=1&include_last_step=1)", {}, nullptr);
  if (auto* e = std::get_if<ApiError>(&uploaded)) return *e;
  const std::vector<trace::TraceBytes>& inputs = std::get<0>(uploaded);
  auto read = LoadUploadedTraces(call, inputs, "infralens trace analyze");
  if (auto* e = std::get_if<ApiError>(&read)) return *e;
  // The answer carries the trace view's timeline (trace/kernel_timeline.h), taken from the same
  // events in the same pass: the server keeps nothing between requests, so a separate endpoint
  // would need the files uploaded and parsed again. It is bounded (KernelTimelineOptions).
  trace::KernelTimeline timeline;
  auto analysis = AnalyzeUploaded(call, std::get<trace::LoadedTraces>(read), options, &timeline);
  if (auto* e = std::get_if<ApiError>(&analysis)) return *e;
  JsonWriter w(0);
  trace::WriteAnalysisJson(w, std::get<trace::TraceAnalysis>(analysis));
  JsonWriter tw(0);
  trace::WriteKernelTimelineJson(tw, timeline);
  return JsonResponse(WithKey(w.str(), "timeline", tw.str()));
}

ApiResult HandleSynth(ApiCall& call) {
  ParamReader& p = call.params;
  const std::string name = p.Text("schedule", "1f1b");
  const int pp = p.Int("pp", request::PipelineFlags{}.pp, 1, 256);  // one file per rank
  const int vpp = p.Int("vpp", 0, 0, 64);
  const int m = p.Int("microbatches", request::PipelineFlags{}.microbatches, 1, 10'000);
  const int steps = p.Int("steps", trace::SynthOptions().steps, 1, 10);
  const std::string format = p.Choice("format", "multipart", {"multipart", "json"});
  const sim::CostInput in = ReadCostInput(p);
  if (p.error()) return ParamErrorOf(call);
  auto kind = schedule::ParseScheduleKind(name);
  if (!kind.ok()) return FromStatus(kind.status(), "schedule");
  const int v = vpp == 0 ? schedule::Info(*kind).default_vpp : vpp;
  // 3 actions per stage and microbatch at most (F, I, W), before anything is generated.
  const int64_t bound = int64_t{3} * pp * v * m * steps;
  const int64_t most = std::min(kMaxSynthActionSteps, call.limits.max_actions);
  if (bound > most) {
    return ParamFailure(
        "microbatches",
        fmt::format("pp={} x vpp={} x microbatches={} x steps={} can make up to {} actions; the "
                    "server generates at most {} (the CLI has no limit: infralens trace synth)",
                    pp, v, m, steps, bound, most));
  }
  auto s = schedule::Generate(*kind, {pp, vpp, m});
  if (!s.ok()) return FromStatus(s.status());
  if (Status st = schedule::ValidateStructure(*s); !st.ok()) return FromStatus(st);
  auto costs = sim::ResolveCosts(in);
  if (!costs.ok()) return FromStatus(costs.status());
  if (Status st = sim::ValidateCosts(*costs, s->num_stages()); !st.ok()) return FromStatus(st);
  *costs = sim::ChunkCosts(*costs, s->vpp);  // per rank per microbatch, as the CLI reads them
  if (call.Expired()) return call.TimeLimitError();
  trace::SynthOptions options;
  options.steps = steps;
  std::vector<trace::SynthFile> files;
  auto summary = trace::SynthTraceFiles(*s, *costs, options, &files);
  if (!summary.ok()) return FromStatus(summary.status());
  if (call.Expired()) return call.TimeLimitError();

  if (format == "json") {
    JsonWriter w(0);
    w.BeginObject();
    w.Field("schedule", s->name).Field("pp", s->pp).Field("vpp", s->vpp);
    w.Field("microbatches", s->microbatches).Field("steps", steps);
    w.Field("makespan_ms", summary->makespan_ms);
    w.Field("bubble_fraction", summary->bubble_fraction);
    w.Key("files").BeginArray();
    for (const trace::SynthFile& f : files) {
      w.BeginObject().Field("name", f.name).Field("content", f.content).EndObject();
    }
    w.EndArray();
    w.EndObject();
    return JsonResponse(w.str());
  }
  std::vector<MultipartFile> parts;
  for (const trace::SynthFile& f : files)
    parts.push_back({"trace", f.name, "application/json", f.content});
  HttpResponse res;
  res.body = WriteMultipart(parts, &res.content_type);
  return res;
}

}  // namespace

void RegisterUpload(Api& api, std::string path, std::string summary, std::vector<ParamSpec> params,
                    std::function<ApiResult(ApiCall&)> handler) {
  Endpoint e{std::move(path),       {"POST"},          std::move(summary), std::move(params),
             /*body_is_data=*/true, std::move(handler)};
  e.upload = true;
  api.Register(std::move(e));
}

void RegisterTraceEndpoints(Api& api) {
  RegisterUpload(
      api, "/api/trace/analyze",
      "uploaded PyTorch profiler (Kineto) traces, one per rank, analysed: breakdown, overlap, "
      "collectives, pipeline bubble (infralens trace analyze --json). Body: multipart/form-data, "
      "one part per file (.json or .json.gz), or one file as the whole body",
      ParamSpecsOf([](request::FlagSink& f) { request::TraceReadFlags().Register(f, false); }),
      HandleAnalyze);
  api.Register(
      {"/api/trace/synth",
       {"GET"},
       "a multi-rank Kineto trace of a simulated pipeline schedule (infralens trace synth): "
       "multipart/form-data with one file per rank, ready to POST to /api/trace/analyze, or JSON",
       JoinParams(
           {PickParams(PipelineParams(/*with_schedule=*/true),
                       {"schedule", "pp", "vpp", "microbatches", "f", "b", "i", "w", "fb", "p2p"}),
            ParamSpecsOf([](request::FlagSink& f) {
              int steps = trace::SynthOptions().steps;
              request::RegisterSynthSteps(f, &steps);
            }),
            {{"format",
              {},
              "multipart (form-data, one part per rank file) or json ({files: [{name, content}], "
              "...})",
              "multipart"}}}),
       false,
       HandleSynth});
}

}  // namespace infralens::server
