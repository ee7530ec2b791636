// libFuzzer target for the Kineto trace reader and the analyses behind it. Any input must yield
// a trace or an error value, never a crash, hang or runaway allocation; and how the input is cut
// into chunks and batches, or whether the batches are parsed on a second thread, must not change
// the result. The CPU operators kept for
// `trace calibrate` (shapes) go through the calibration too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/json_writer.h"
#include "trace/analysis.h"
#include "trace/calibrate.h"
#include "trace/kineto_reader.h"
#include "trace/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  trace::KinetoReadOptions small;
  small.chunk_bytes = 1 + size % 97;  // cuts events, strings and escapes at every place
  small.batch_bytes = 1 + size % 251;
  small.max_event_bytes = 1 << 16;
  trace::KinetoReadOptions large = small;
  large.chunk_bytes = 1 << 20;
  large.batch_bytes = 1 << 20;
  // The small cuts again with the events parsed on a second thread: the same result or error.
  trace::KinetoReadOptions two = small;
  two.parse_on_second_thread = true;
  auto a = trace::ReadKinetoTraceBytes(bytes, "fuzz", small);
  auto b = trace::ReadKinetoTraceBytes(bytes, "fuzz", large);
  auto c = trace::ReadKinetoTraceBytes(bytes, "fuzz", two);
  if (a.ok() != b.ok() || a.ok() != c.ok()) __builtin_trap();
  if (!a.ok() && a.status().message() != c.status().message()) __builtin_trap();
  if (a.ok() && (a->gpu.size() != c->gpu.size() || a->events_total != c->events_total ||
                 a->launches.size() != c->launches.size()))
    __builtin_trap();
  if (!a.ok()) return 0;
  if (a->gpu.size() != b->gpu.size() || a->events_total != b->events_total ||
      a->launches.size() != b->launches.size() || a->rank != b->rank ||
      a->shaped_ops.size() != b->shaped_ops.size() ||
      a->calib_ops_without_shapes != b->calib_ops_without_shapes) {
    __builtin_trap();
  }
  // trace calibrate: shapes and args of any form give samples or an error value.
  {
    trace::CalibrationOptions co;
    co.gpu = *hw::FindGpu("H100-SXM");
    co.min_samples = 1;
    auto c = trace::Calibrate({*a}, co);
    if (c.ok() && (trace::CalibrationText(*c).empty() || trace::CalibrationCsv(*c).empty()))
      __builtin_trap();
  }
  if (a->gpu.empty()) return 0;
  for (bool hta : {false, true}) {
    trace::AnalysisOptions o;
    o.hta_compat = hta;
    auto r = trace::Analyze({*a}, o);
    if (!r.ok()) continue;
    infralens::JsonWriter w;
    trace::WriteAnalysisJson(w, *r);
    std::string text = trace::AnalysisText(*r);
    if (w.str().empty() || text.empty()) __builtin_trap();
  }
  return 0;
}
