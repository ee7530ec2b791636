// libFuzzer target for the PyTorch schedule CSV reader, the validator and the simulator behind it.
// Any input must yield a schedule or an error value, never a crash, hang or runaway allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/pytorch_csv.h"
#include "sim/simulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = infralens::io::ReadPytorchCsv(text);
  if (!s.ok()) return 0;
  if (!infralens::schedule::ValidateStructure(*s).ok()) return 0;
  auto r = infralens::sim::Simulate(*s, infralens::sim::Costs{});
  if (r.ok()) {
    // Round trip: what we write, we read back identically.
    auto back = infralens::io::ReadPytorchCsv(infralens::io::WritePytorchCsv(*s));
    if (!back.ok() || back->ranks != s->ranks) __builtin_trap();
  }
  return 0;
}
