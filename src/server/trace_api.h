// Measurement in the web API: POST /api/trace/analyze reads uploaded Kineto traces (the JSON of
// `infralens trace analyze --json`), GET /api/trace/synth generates a multi-rank trace of a
// simulated pipeline schedule (`infralens trace synth`) as an example to analyse.
#ifndef INFRALENS_SERVER_TRACE_API_H_
#define INFRALENS_SERVER_TRACE_API_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/api.h"
#include "trace/kernel_timeline.h"
#include "trace/loader.h"

namespace infralens::server {

// Bytes of JSON (after gzip) all the files of one upload may hold together: bounds what a small
// gzip body may inflate to, and so the memory of the analysis (about 0.15 bytes per JSON byte
// on the generated traces of docs/measurement.md).
inline constexpr uint64_t kMaxUploadJsonBytes = uint64_t{2} << 30;
// Trace files in one upload.
inline constexpr size_t kMaxUploadFiles = 1024;
// Generated traces: actions x steps over all ranks (about 0.6 KB of JSON each).
inline constexpr int64_t kMaxSynthActionSteps = 30'000;

// A form field of an upload that is not a file (the GPU of a calibration): a short word.
inline constexpr size_t kMaxUploadFieldBytes = 100;

void RegisterTraceEndpoints(Api& api);

// Registers a POST endpoint whose body is uploaded trace files (Endpoint::upload: the upload
// limits apply), read by `handler` with UploadedTraces.
void RegisterUpload(Api& api, std::string path, std::string summary, std::vector<ParamSpec> params,
                    std::function<ApiResult(ApiCall&)> handler);

// The trace files of an upload, bounded as /api/trace/analyze bounds them (kMaxUploadFiles
// parts): one multipart part per file (with a filename), or one file as the whole body. Parts
// without a filename named in `field_names` go to `fields` (at most kMaxUploadFieldBytes each);
// any other is refused, the message pointing to the query string (`query_example`). The
// TraceBytes view `call.body`.
std::variant<std::vector<trace::TraceBytes>, ApiError> UploadedTraces(
    ApiCall& call, std::string_view query_example, const std::vector<std::string_view>& field_names,
    std::map<std::string, std::string>* fields);
// The files read within the call's time limit, kMaxUploadJsonBytes of JSON and
// ServerLimits::upload_analysis_bytes of kept events together (a file beyond the budget is reported
// as not usable, an InvalidArgument); `cli` names the command without those limits, for the
// message.
std::variant<trace::LoadedTraces, ApiError> LoadUploadedTraces(
    ApiCall& call, const std::vector<trace::TraceBytes>& inputs, std::string_view cli);

// The analysis of an upload's traces with the trace view's timeline, as /api/trace/analyze
// answers it: stopped at the call's deadline or when its client has gone (the call's 503 then,
// not after all the work); an analysis error lists the files that could not be used.
std::variant<trace::TraceAnalysis, ApiError> AnalyzeUploaded(ApiCall& call,
                                                             const trace::LoadedTraces& loaded,
                                                             trace::AnalysisOptions options,
                                                             trace::KernelTimeline* timeline);

// Measurement calibration: POST /api/trace/calibrate, GET /api/trace/calibrate/sample
// (calibrate_api.cc).
void RegisterCalibrateEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_TRACE_API_H_
