// libFuzzer target: any bytes as a --layout string (Megatron's --pipeline-model-parallel-layout,
// also an API parameter). Parsing must give stage counts that add up to the layers, or a
// one-line error; never a crash, a hang or an expansion past kMaxExpandedLayout.
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>

#include "fuzz_checks.h"
#include "plan/layer_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stages = plan::LayerLayoutStages(text);
  auto counts = plan::ParseLayerLayout(text, 61, 16);
  if (!fuzz::ValueOrOneLineError(counts)) return 0;
  if (!stages.ok() || *stages != 16 || counts->size() != 16) __builtin_trap();
  if (std::accumulate(counts->begin(), counts->end(), int64_t{0}) != 61) __builtin_trap();
  return 0;
}
