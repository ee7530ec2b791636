// Measurement in the web API: POST /api/trace/analyze reads uploaded Kineto traces (the JSON of
// `infralens trace analyze --json`), GET /api/trace/synth generates a multi-rank trace of a
// simulated pipeline schedule (`infralens trace synth`) as an example to analyse.
#ifndef INFRALENS_SERVER_TRACE_API_H_
#define INFRALENS_SERVER_TRACE_API_H_

#include <cstdint>

#include "server/api.h"

namespace infralens::server {

// Bytes of JSON (after gzip) all the files of one upload may hold together: bounds what a small
// gzip body may inflate to, and so the memory of the analysis (about 0.15 bytes per JSON byte
// on the generated traces of docs/measurement.md).
inline constexpr uint64_t kMaxUploadJsonBytes = uint64_t{2} << 30;
// Trace files in one upload.
inline constexpr size_t kMaxUploadFiles = 1024;
// Generated traces: actions x steps over all ranks (about 0.6 KB of JSON each).
inline constexpr int64_t kMaxSynthActionSteps = 30'000;

void RegisterTraceEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_TRACE_API_H_
