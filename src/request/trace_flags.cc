#include "request/trace_flags.h"

#include <fmt/format.h>

namespace infralens::request {

void TraceReadFlags::Register(FlagSink& flags, bool patterns) {
  flags.Bool("--hta-compat", &hta_compat,
             "use Holistic Trace Analysis' exact definitions (numbers match HTA's)");
  flags.Bool("--include-last-step", &include_last_step,
             "keep the last ProfilerStep (HTA drops it by default)");
  flags.Bool("--align-clocks", &align_clocks,
             "shift each rank's clock by the offset estimated from matched collectives");
  if (!patterns) return;
  flags.String(
      "--comm-kernels", &comm_kernels,
      fmt::format("regex for communication kernels (replaces '{}')", trace::kDefaultCommPattern));
  flags.String(
      "--memory-kernels", &memory_kernels,
      fmt::format("regex for memory kernels (replaces '{}')", trace::kDefaultMemoryPattern));
}

trace::AnalysisOptions TraceReadFlags::Options() const {
  trace::AnalysisOptions o;
  o.hta_compat = hta_compat;
  o.include_last_step = include_last_step;
  o.align_clocks = align_clocks;
  o.comm_pattern = comm_kernels;
  o.memory_pattern = memory_kernels;
  return o;
}

void RegisterSynthSteps(FlagSink& flags, int* steps) {
  flags.Int("--steps", steps,
            "profiled steps (iterations); analysis drops the last unless --include-last-step");
}

}  // namespace infralens::request
