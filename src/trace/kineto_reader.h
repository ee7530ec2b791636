// Reader for PyTorch profiler (Kineto) traces in the Chrome trace JSON format, plain or gzip.
//
// Streaming: the file is read (and inflated) in fixed-size chunks; a small scanner finds the
// elements of "traceEvents" and hands batches of complete events to simdjson's On Demand parser,
// which touches only the fields InfraLens keeps (trace/model.h). Memory is the chunk buffer
// (chunk_bytes + max_event_bytes), one batch, and the kept events; it does not grow with the
// file. Both the JSON object form ({"traceEvents": [...], ...}) and the bare array form are read.
//
// Errors are one line naming the input and what is wrong: truncated file, invalid JSON (with the
// event index and byte offset), corrupt or truncated gzip, an element too large to be an event.
// This is the only file that includes simdjson.
#ifndef INFRALENS_TRACE_KINETO_READER_H_
#define INFRALENS_TRACE_KINETO_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/model.h"

namespace infralens::trace {

struct KinetoReadOptions {
  size_t chunk_bytes = size_t{4} << 20;       // JSON bytes read per step
  size_t batch_bytes = size_t{1} << 20;       // events handed to simdjson at once
  size_t max_event_bytes = size_t{64} << 20;  // one traceEvents element (or distributedInfo)
  // Called before each chunk with the bytes of JSON (after gzip) read so far; a status other than
  // OK stops the read with that status. The server uses it for its time limit and to bound what a
  // small gzip file may inflate to. Empty = never stop.
  std::function<Status(uint64_t json_bytes)> progress;
};

// Reads the file at `path` (gzip detected by its magic bytes, not by the name); "-" reads
// standard input (read once: a second "-" finds it at its end).
StatusOr<trace::RankTrace> ReadKinetoTraceFile(const std::string& path,
                                               const KinetoReadOptions& options = {});

// The same from memory; `label` names the input in messages.
StatusOr<trace::RankTrace> ReadKinetoTraceBytes(std::string_view bytes, const std::string& label,
                                                const KinetoReadOptions& options = {});

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_KINETO_READER_H_
