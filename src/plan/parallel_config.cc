#include "plan/parallel_config.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace infralens::plan {

const char* PrecisionName(Precision p) { return p == Precision::kFp8 ? "fp8" : "bf16"; }

StatusOr<Precision> ParsePrecision(std::string_view name) {
  const std::string n = ToLower(Trim(name));
  if (n == "bf16") return Precision::kBf16;
  if (n == "fp8") return Precision::kFp8;
  if (n == "fp16") {
    // Same bytes and tensor-core rate as BF16, but FP16 training adds loss scaling (and its
    // skipped steps), which the model does not count: refused rather than labelled bf16.
    return InvalidArgument(
        "‹precision› fp16: not modelled (FP16 training adds loss scaling); expected bf16 or fp8");
  }
  return InvalidArgument(fmt::format("‹precision› {}: expected bf16 or fp8", name));
}

}  // namespace infralens::plan
