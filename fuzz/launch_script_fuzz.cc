// libFuzzer target: any bytes as a bash launch script. Expanding must give a command or a
// one-line error naming the input; never a crash, a hang or an allocation beyond a bounded
// multiple of the input (every expansion is capped at 4 MiB).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "io/launch_script.h"
#include "io/megatron_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = io::ExpandLaunchScript(text, "fuzz.sh");
  if (!fuzz::ValueOrOneLineError(e)) return 0;
  if (e->command.empty()) __builtin_trap();
  (void)io::ReadMegatronArgs(e->command, "fuzz.sh");
  return 0;
}
