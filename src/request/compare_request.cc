// infralens compare: every generated schedule side by side for one P, m and cost set, and the
// bubble against the number of microbatches, all by simulation (sim/compare.h).
#include <fmt/format.h>

#include "base/json_writer.h"
#include "io/compare_output.h"
#include "request/engine_requests.h"
#include "request/pipeline_flags.h"
#include "sim/compare.h"

namespace infralens::request {

namespace {

StatusOr<sim::CompareResult> ComputeCompare(const PipelineFlags& pf, const RunContext& ctx) {
  RETURN_IF_ERROR(pf.CheckShape());
  // Every schedule at m and at each sweep point: bound the total before simulating any.
  const int64_t work = sim::CompareWorkBound(pf.pp, pf.vpp, pf.microbatches);
  if (ctx.max_actions > 0 && work > ctx.max_actions) {
    return InvalidArgument(fmt::format(
        "pp={} vpp={} ‹microbatches›={}: comparing every schedule (and the bubble sweep) can "
        "simulate up to {} actions; the server does at most {} per request",
        pf.pp, pf.vpp, pf.microbatches, work, ctx.max_actions));
  }
  if (work > kMaxCompareActions) {
    return InvalidArgument(fmt::format(
        "--pp {} --vpp {} -m {}: comparing every schedule (and the bubble sweep) simulates up to "
        "{} actions; the limit is {} (about 1 GB and 10 s); use fewer ranks or microbatches",
        pf.pp, pf.vpp, pf.microbatches, work, kMaxCompareActions));
  }
  ASSIGN_OR_RETURN(sim::Costs per_rank, pf.Costs(ctx.given, 1, 1));
  return sim::CompareSchedules(pf.pp, pf.vpp, pf.microbatches, per_rank, ctx.stop);
}

}  // namespace

const Command& CompareCommand() {
  static const Command kCommand = MakeCommand<PipelineFlags, sim::CompareResult>(
      {.name = "compare",
       .summary = "every pipeline schedule side by side for one P, m and cost set",
       .usage = "infralens compare [--pp P] [-m M] [--vpp V] [--f F --b B | --i I --w W] [--p2p "
                "L] [--json]",
       .examples = {"infralens compare --pp 4 -m 8",
                    "infralens compare --pp 8 -m 32 --f 1 --b 2 --p2p 0.05",
                    "infralens compare --pp 4 -m 8 --json"},
       .formats = {"table", "markdown", "json"},
       .retired = {{"--stage-costs",
                    "--stage-costs: per-stage costs depend on the chunk count; use `infralens "
                    "schedule`"}}},
      [](PipelineFlags& pf, FlagSink& flags) { pf.Register(flags, /*stage_costs=*/false); },
      ComputeCompare,
      [](const sim::CompareResult& r, const PipelineFlags&,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format != "json") return io::RenderCompareText(r, ctx.format == "markdown");
        JsonWriter w(ctx.json_indent);
        io::WriteCompareJson(w, r);
        return w.str();
      });
  return kCommand;
}

}  // namespace infralens::request
