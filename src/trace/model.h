// What InfraLens keeps of one rank's PyTorch profiler (Kineto) trace: the GPU activity, the CPU
// launches that correlate with it, the ProfilerStep and pipelining annotations, and the job's
// distributed metadata. Everything else in the file (CPU operators, Python frames, memory events,
// flows) is skipped while parsing, so memory grows with the GPU events, not with the file.
// Times are microseconds as the trace writes them (Chrome trace "ts"/"dur").
#ifndef INFRALENS_TRACE_MODEL_H_
#define INFRALENS_TRACE_MODEL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace infralens::trace {

// Reserves room for `n` elements in `v` at once, so that a vector filled to about n never
// regrows (no copy of what it holds, no second set of page faults), and, for room of 4 MiB or
// more on Linux, asks for transparent huge pages over it (MADV_HUGEPAGE: one fault per 2 MiB
// instead of per 4 KiB; a page fault costs several microseconds in this KVM guest, see
// docs/performance.md). Room never written is never resident, huge pages or not (the tail of
// the last one written at most). A vector already larger keeps its room.
void AdviseHugePages(const void* data, size_t bytes);
template <typename T>
void ReserveLarge(std::vector<T>& v, size_t n) {
  if (n <= v.capacity()) return;
  v.reserve(n);
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
}

// Interned strings: kernel and annotation names repeat thousands of times and are long (C++
// template names), so each distinct name is stored once and events hold a 32-bit id.
class StringTable {
 public:
  StringTable() = default;
  // The index holds views of the stored strings, so a copy rebuilds it; a move keeps them valid.
  StringTable(const StringTable& other) { *this = other; }
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  uint32_t Intern(std::string_view s);
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::deque<std::string> strings_;  // stable addresses for the map's keys
  std::unordered_map<std::string_view, uint32_t, Hash, std::equal_to<>> index_;
};

// Kineto's category of a GPU event (the event's "cat").
enum class GpuCat : uint8_t { kKernel, kMemcpy, kMemset, kOther };

// One event on a GPU stream: any complete event whose args carry "stream" (HTA's definition of a
// GPU event, hta/common/trace_filter.py GPUKernelFilter), minus GPU-side user annotations.
struct GpuEvent {
  double ts_us = 0;
  double dur_us = 0;
  int64_t correlation = -1;  // args.correlation: links to the CPU launch; -1 when absent
  int64_t stream = -1;
  uint32_t name = 0;        // StringTable id
  int32_t collective = -1;  // index into RankTrace::collectives, or -1
  GpuCat cat = GpuCat::kOther;
};

// A CPU event that carries a correlation id (cudaLaunchKernel, cudaMemcpyAsync, ...).
struct Launch {
  int64_t correlation = 0;
  double ts_us = 0;
  // For `trace calibrate`: the launching CPU thread and args "External id", which Kineto sets to
  // the enclosing operator's id when it linked the two (libkineto/src/output_json.cpp,
  // handleActivity: "External id" = linkedActivity()->correlationId()); -1 when absent.
  int64_t tid = 0;
  int64_t external_id = -1;
};

// A CPU operator recorded with shapes (record_shapes=True) whose kernels `trace calibrate` times:
// GEMMs, attention and streaming ops (the names trace/calibrate.h lists; no other operator is
// kept). The args are kept as the raw JSON Kineto wrote (torch/csrc/autograd/profiler_kineto.cpp
// fills "Input Dims", "Input type" and "Concrete Inputs"); each is at most kMaxShapeJsonBytes.
struct ShapedOp {
  uint32_t name = 0;  // StringTable id
  int64_t external_id = -1;
  int64_t tid = 0;
  double ts_us = 0;
  double dur_us = 0;
  std::string input_dims;       // e.g. [[16, 13], [13, 256]]
  std::string input_types;      // e.g. ["c10::BFloat16", "c10::BFloat16"]
  std::string concrete_inputs;  // e.g. ["", "", "", "0.", "True"]; "" when absent
};
inline constexpr size_t kMaxShapeJsonBytes = 4096;

// The CPU operators kept as ShapedOp (trace/calibrate.cc measures each kind): GEMMs, fused
// attention (PyTorch's SDPA backends, at the level that launches the kernel and the level above),
// and the streaming ops whose bytes follow from their shapes.
inline bool IsCalibrationOpName(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "aten::mm",
      "aten::addmm",
      "aten::bmm",
      "aten::baddbmm",
      "aten::linear",
      "aten::_scaled_mm",
      "aten::_scaled_dot_product_flash_attention",
      "aten::_scaled_dot_product_flash_attention_backward",
      "aten::_scaled_dot_product_efficient_attention",
      "aten::_scaled_dot_product_efficient_attention_backward",
      "aten::_scaled_dot_product_cudnn_attention",
      "aten::_scaled_dot_product_cudnn_attention_backward",
      "aten::_flash_attention_forward",
      "aten::_flash_attention_backward",
      "aten::add",
      "aten::add_",
      "aten::mul",
      "aten::mul_",
      "aten::copy_",
  };
  for (std::string_view n : kNames) {
    if (n == name) return true;
  }
  return false;
}

// A CPU operator kept for pipeline recovery (trace/pipeline_detect.h): an autograd backward op
// ("autograd::engine::evaluate_function: MmBackward0", torch/csrc/autograd/function.h), whose
// span holds the launches of that backward's kernels.
struct CpuSpan {
  double ts_us = 0;
  double dur_us = 0;
  int64_t tid = 0;
};

// A send or recv as the CPU records it: a "record_param_comms" operator whose metadata says
// "Collective name" send / recv, with the peer's global rank in "Dst Rank" / "Src Rank"
// (torch/csrc/profiler/util.cpp saveNcclMeta). batch_isend_irecv records one per operation, but
// the batch's one NCCL kernel is launched later, at ncclGroupEnd, outside them, so that kernel
// carries no metadata (pytorch/pytorch#194693); its peers are these.
struct P2pCall {
  double ts_us = 0;
  int64_t tid = 0;
  bool send = false;
  int64_t peer = -1;  // global rank; -1 when the metadata has none
};

// A CPU-side annotation kept for the analysis: ProfilerStep#N or a pipelining action "PP:1F3".
struct Annotation {
  double ts_us = 0;
  double dur_us = 0;
  uint32_t name = 0;  // StringTable id of the full name
  int64_t tid = 0;
  int64_t step = -1;  // ProfilerStep number, -1 when not a step
};

// Collective metadata PyTorch attaches to NCCL kernels and record_param_comms ops
// (torch/csrc/profiler/util.h: "Collective name", "In msg nelems", ...). Absent fields are -1/"".
struct CollectiveMeta {
  std::string name;  // "allreduce", "allgather", "send", ...
  std::string dtype;
  std::string pg_name, pg_desc, pg_ranks;
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t group_size = -1;
  int64_t seq = -1;            // "Seq": the process group's collective sequence number
  int64_t src = -1, dst = -1;  // "Src Rank" / "Dst Rank" for recv / send
};

struct ProcessGroup {
  std::string name, desc;
  int64_t size = -1;
  std::vector<int64_t> ranks;
};

// One element of the trace's root-level "deviceProperties" array, which libkineto writes from
// cudaGetDeviceProperties (libkineto/src/output_json.cpp, devicePropertiesJson): "id", "name",
// "totalGlobalMem" (bytes), "computeMajor", "computeMinor", ... Only these fields are kept.
struct DeviceProperties {
  int64_t id = -1;
  std::string name;                     // "NVIDIA H100 80GB HBM3"; at most kMaxDeviceNameBytes
  int64_t total_global_mem_bytes = -1;  // -1 when absent
  int64_t compute_major = -1, compute_minor = -1;
};
// The reader keeps at most this many deviceProperties entries (a node has 8 or 72 GPUs; the rest
// of a hostile array is ignored) and names of at most this many bytes (longer ones are cut).
inline constexpr size_t kMaxDeviceProperties = 256;
inline constexpr size_t kMaxDeviceNameBytes = 256;

struct RankTrace {
  std::string path;   // as given, for messages
  int64_t rank = -1;  // distributedInfo.rank; -1 when the file has none
  int64_t world_size = -1;
  std::string backend;
  std::vector<ProcessGroup> process_groups;  // distributedInfo.pg_config
  std::vector<DeviceProperties> devices;     // deviceProperties (see DeviceProperties)

  uint64_t file_bytes = 0;   // bytes on disk
  uint64_t json_bytes = 0;   // bytes of JSON parsed (after gzip)
  int64_t events_total = 0;  // elements of traceEvents

  StringTable names;
  std::vector<GpuEvent> gpu;
  std::vector<Launch> launches;
  std::vector<Annotation> steps;  // ProfilerStep#N on the CPU
  std::vector<Annotation> pp;     // names starting with "PP:"
  std::vector<CollectiveMeta> collectives;
  std::vector<CpuSpan> autograd_ops;     // autograd::engine::evaluate_function operators
  std::vector<P2pCall> p2p_calls;        // record_param_comms send / recv operators
  std::vector<ShapedOp> shaped_ops;      // calibration ops that carried "Input Dims"
  int64_t calib_ops_without_shapes = 0;  // calibration ops without "Input Dims"

  // HTA compatibility (see docs/measurement.md): HTA joins a GPU event whose correlation matches no
  // CPU event with the event at index 0 of traceEvents. Its start is kept here when HTA keeps that
  // event (it has "dur" and a "cat" other than "Trace").
  bool first_event_kept = false;
  double first_event_ts_us = 0;
};

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_MODEL_H_
