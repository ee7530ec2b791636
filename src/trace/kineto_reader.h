// Reader for PyTorch profiler (Kineto) traces in the Chrome trace JSON format, plain or gzip.
//
// Streaming: the file is read (and inflated) in fixed-size chunks; a small scanner finds the
// elements of "traceEvents" and hands batches of complete events to simdjson's On Demand parser,
// which touches only the fields InfraLens keeps (trace/model.h). Memory is the chunk buffer
// (chunk_bytes + max_event_bytes), one batch (three when they are parsed on a second thread), and
// the kept events, within a memory budget (TraceMemoryBudget); it does not grow with the file.
// Both the JSON object form ({"traceEvents": [...], ...}) and the bare array form are read.
//
// Errors are one line naming the input and what is wrong: truncated file, invalid JSON (with the
// event index and byte offset), corrupt or truncated gzip, an element too large to be an event.
// This is the only file that includes simdjson.
#ifndef INFRALENS_TRACE_KINETO_READER_H_
#define INFRALENS_TRACE_KINETO_READER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/model.h"

namespace infralens::trace {

// The memory budget of reading and analysing traces (issue 26): what the kept events of a job
// will cost once analysed, estimated as they are read, is charged here, and the read that goes
// beyond the limit stops with a one-line ResourceExhausted error naming the size and the limit,
// instead of running out of memory later. The files of one job share one budget (LoadTraces
// reads several at once; Charge is thread-safe).
//
// The costs per kept event: the reader keeps a trace::GpuEvent (48 bytes) and a trace::Launch
// (32); the analysis adds its own event (48), merged spans (16 per event in the worst case, no
// overlap), pointers to the events of each step (16), the pipeline view's items (32), and 4 bytes
// per launch for the join: 176 per GPU event and 36 per launch at most at once. Measured peak
// RSS of `infralens trace analyze` on bench/large_trace.py's traces (a kernel and its launch
// each), minus that of a tiny trace: 185 bytes per kernel with its launch at 1 million kernels
// (docs/performance.md, "Memory of trace analyze"). The figures below are rounded up from both.
inline constexpr uint64_t kAnalysisBytesPerGpuEvent = 168;
inline constexpr uint64_t kAnalysisBytesPerLaunch = 40;
// The default limit: peak RSS stays under 1 GB (10^9 bytes) with the process' own 10-40 MB
// (binary, chunk buffers of two reading threads, allocator slack) on top. About 4.3 million
// kernels with their launches.
inline constexpr uint64_t kDefaultTraceMemoryBudgetBytes = uint64_t{860} << 20;

class TraceMemoryBudget {
 public:
  explicit TraceMemoryBudget(uint64_t limit_bytes = kDefaultTraceMemoryBudgetBytes)
      : limit_(limit_bytes) {}
  TraceMemoryBudget(const TraceMemoryBudget&) = delete;
  TraceMemoryBudget& operator=(const TraceMemoryBudget&) = delete;
  // Adds `bytes` to what is charged; false when the total is then beyond the limit.
  bool Charge(uint64_t bytes) {
    return used_.fetch_add(bytes, std::memory_order_relaxed) + bytes <= limit_;
  }
  // Gives back bytes charged earlier (a read whose trace is not kept).
  void Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit_bytes() const { return limit_; }

 private:
  std::atomic<uint64_t> used_{0};
  uint64_t limit_;
};

struct KinetoReadOptions {
  size_t chunk_bytes = size_t{4} << 20;       // JSON bytes read per step
  size_t batch_bytes = size_t{1} << 20;       // events handed to simdjson at once
  size_t max_event_bytes = size_t{64} << 20;  // one traceEvents element (or distributedInfo)
  // Called before each chunk with the bytes of JSON (after gzip) read so far; a status other than
  // OK stops the read with that status. The server uses it for its time limit and to bound what a
  // small gzip file may inflate to. Empty = never stop.
  std::function<Status(uint64_t json_bytes)> progress;
  // Parse the events on a second thread while this one inflates and scans the next chunk (one
  // large file on two cores). The result, and every error, is the same either way.
  bool parse_on_second_thread = false;
  // Where the kept events are charged (see TraceMemoryBudget). Null: a budget of
  // budget_limit_bytes for this read alone (LoadTraces and LoadTraceBytes: one for all their
  // files).
  TraceMemoryBudget* budget = nullptr;
  // The limit of the budget made when `budget` is null (the CLI's --memory-limit, the server's
  // upload_analysis_bytes).
  uint64_t budget_limit_bytes = kDefaultTraceMemoryBudgetBytes;
};

// The GPU events, and as many CPU launches, the reader reserves room for before it reads a trace of
// about `json_bytes` of JSON (trace::ReserveLarge: the event vectors are allocated once instead of
// doubling as they fill): one per kJsonBytesPerReservedEvent bytes, but never more than what
// `budget` has left would let a read keep (kAnalysisBytesPerGpuEvent + kAnalysisBytesPerLaunch
// each), so a file that states a false size (a gzip trailer says what it likes) cannot make a
// large allocation. Room reserved and not used is address space only, never resident. A Kineto
// kernel event is 400-600 bytes of JSON and its launch about 250 (`trace synth` writes 846 bytes
// per kernel with its launch, bench/large_trace.py 475), so 256 reserves at least what such a
// trace keeps; a trace with more, smaller kept events grows its vectors from there.
inline constexpr uint64_t kJsonBytesPerReservedEvent = 256;
size_t EventsToReserve(uint64_t json_bytes, const TraceMemoryBudget& budget);

// Reads the file at `path` (gzip detected by its magic bytes, not by the name); "-" reads
// standard input (read once: a second "-" finds it at its end).
StatusOr<trace::RankTrace> ReadKinetoTraceFile(const std::string& path,
                                               const KinetoReadOptions& options = {});

// The same from memory; `label` names the input in messages.
StatusOr<trace::RankTrace> ReadKinetoTraceBytes(std::string_view bytes, const std::string& label,
                                                const KinetoReadOptions& options = {});

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_KINETO_READER_H_
