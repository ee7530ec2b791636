// libFuzzer target: any bytes as the prediction `trace compare` reads (`infralens plan --json` or
// `infralens schedule --format json`, trace/compare.h ReadPrediction). Reading must give a
// prediction or a one-line error; a plan's layout fields must parse as the recalibration parses
// them or be refused in one line; and a small plan (a few nodes, a small batch) is rebuilt and
// predicted again as `trace compare` does (request/recalibrate.h), to a value or a one-line error.
// Never a crash, a hang or an allocation beyond the input's size times a small factor.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "model/model.h"
#include "request/recalibrate.h"
#include "schedule/schedule.h"
#include "trace/compare.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = trace::ReadPrediction(text, "plan.json");
  if (!fuzz::ValueOrOneLineError(p)) return 0;
  const trace::Prediction::Rebuild& rb = p->rebuild;
  fuzz::ValueOrOneLineError(model::ParseRecompute(rb.recompute));
  if (!rb.recompute_modules.empty()) {
    fuzz::ValueOrOneLineError(model::ParseRecomputeModules(rb.recompute_modules));
  }
  fuzz::ValueOrOneLineError(schedule::ParseScheduleKind(rb.schedule));
  // The planner's own cost grows with the job (docs/performance.md); the fuzzer is after the
  // reader, so only jobs that predict in milliseconds are rebuilt.
  if (rb.nodes <= 4 && rb.global_batch <= 256 && rb.micro_batch <= 8) {
    fuzz::ValueOrOneLineError(request::RecalibratePlan(*p, ""));
  }
  return 0;
}
