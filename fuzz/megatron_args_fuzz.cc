// libFuzzer target: any bytes as a Megatron-LM launch command. Reading must give a job whose
// model passes model::Validate (vocabulary aside) or a one-line error; never a crash, a hang or
// an allocation beyond the input's size times a small factor (--moe-layer-freq patterns are
// bounded by --num-layers).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "io/megatron_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto job = io::ReadMegatronArgs(text, "fuzz.sh");
  if (!fuzz::ValueOrOneLineError(job)) return 0;
  model::Model m = job->model;
  if (m.vocab == 0) m.vocab = 1;
  if (!model::Validate(m).ok()) __builtin_trap();
  if (job->parallel.tp < 1 || job->parallel.pp < 1 || job->parallel.vpp < 1) __builtin_trap();
  return 0;
}
