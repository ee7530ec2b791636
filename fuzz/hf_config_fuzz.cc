// libFuzzer target: any bytes as a config.json. Parsing must return a value or a one-line error,
// never crash, hang or overflow; a parsed model must survive counting and a memory estimate.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_checks.h"
#include "io/hf_config.h"
#include "model/model.h"
#include "plan/memory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = io::ParseHfConfig(text, "fuzz.json");
  if (!fuzz::ValueOrOneLineError(m)) return 0;
  const model::ParamCounts c = model::CountParameters(*m);
  if (c.total <= 0 || c.active > c.total) __builtin_trap();
  (void)model::TrainingFlopsPerStep(*m, m->seq_len, 1, model::Recompute::kFull);
  plan::MemoryConfig cfg;
  cfg.seq_len = 128;
  auto r = plan::EstimateMemory(*m, cfg);
  if (r.ok() && !(r->worst().total_bytes > 0)) __builtin_trap();
  return 0;
}
