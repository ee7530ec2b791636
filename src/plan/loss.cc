#include "plan/loss.h"

#include <string>

#include "base/enum_names.h"

namespace infralens::plan {

namespace {

constexpr EnumName<CrossEntropyKernels> kCrossEntropyNames[] = {
    {CrossEntropyKernels::kFused, "fused"},
    {CrossEntropyKernels::kUnfused, "unfused"},
    {CrossEntropyKernels::kEager, "eager"},
};

}  // namespace

StatusOr<CrossEntropyKernels> ParseCrossEntropyKernels(std::string_view name) {
  if (auto k = ValueIn(kCrossEntropyNames, name)) return *k;
  return InvalidArgument("cross_entropy '" + std::string(name) +
                         "': expected fused, unfused or eager");
}

const char* CrossEntropyKernelsName(CrossEntropyKernels k) { return NameIn(kCrossEntropyNames, k); }

LogitBytes CrossEntropyBytesPerLogit(CrossEntropyKernels k) {
  // The passes of each implementation, as loss.h derives them.
  switch (k) {
    case CrossEntropyKernels::kFused:
      return {.forward = (2 + 4) + (4 + 4) + (4 + 4), .backward = 4 + 2 + 4};
    case CrossEntropyKernels::kUnfused:
      return {.forward = (2 + 4) + 4 + (4 + 4) + (4 + 4) + 4 + (4 + 4),
              .backward = (4 + 4) + (4 + 2)};
    case CrossEntropyKernels::kEager:
      return {.forward = (2 + 4) + (12 + 4), .backward = 4 + (12 + 4) + (4 + 2)};
  }
  return {};
}

}  // namespace infralens::plan
