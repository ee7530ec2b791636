// libFuzzer target: any bytes as an --efficiency file. Parsing must return a table or a one-line
// error, never crash or hang; a parsed table overlaid on the built-in one must give every GPU
// efficiencies in range.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "hw/gpu.h"
#include "plan/efficiency.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = plan::EfficiencyTable::Parse(text, "fuzz.csv");
  if (!fuzz::ValueOrOneLineError(t)) return 0;
  plan::EfficiencyTable all = plan::EfficiencyTable::Builtin();
  all.Overlay(*t);
  for (const hw::Gpu& gpu : hw::GpuPresets()) {
    const plan::DeviceEfficiency e = all.For(gpu, plan::Precision::kBf16);
    if (!(e.gemm > 0 && e.gemm <= 1 && e.attention > 0 && e.attention <= 1 && e.attention_fa2 > 0 &&
          e.attention_fa2 <= 1 && e.hbm > 0 && e.hbm <= 1 && e.gemm_half_dim > 0)) {
      __builtin_trap();
    }
  }
  return 0;
}
