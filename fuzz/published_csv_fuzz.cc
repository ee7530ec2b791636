// libFuzzer target: any bytes as a published-runs CSV (`infralens validate --published FILE`,
// data/published/README.md). Reading must give runs whose models pass model::Validate and whose
// recompute modules name at least one module, or a one-line error; never a crash, a hang or an
// allocation beyond the input's size times a small factor.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "model/model.h"
#include "plan/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto runs = plan::ReadPublishedRuns(text);
  if (!fuzz::ValueOrOneLineError(runs)) return 0;
  for (const plan::PublishedRun& run : *runs) {
    if (!model::Validate(run.model).ok()) __builtin_trap();
    if (run.behaviour.recompute_modules.bits == 0) __builtin_trap();
  }
  return 0;
}
