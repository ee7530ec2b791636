// infralens compare: every generated schedule side by side for one P, m and cost set, and the
// bubble against the number of microbatches, all by simulation (sim/compare.h).
#include <fmt/format.h>

#include "base/json_writer.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "io/compare_output.h"
#include "request/pipeline_flags.h"
#include "sim/compare.h"

namespace infralens::cli {

using request::kMaxCompareActions;
using request::PipelineFlags;

Status RunCompare(const std::vector<std::string>& args, CliIO& io) {
  std::string format = "table", output;
  bool json = false;
  PipelineFlags pf;
  Flags flags(
      "compare", "every pipeline schedule side by side for one P, m and cost set",
      "infralens compare [--pp P] [-m M] [--vpp V] [--f F --b B | --i I --w W] [--p2p L] [--json]",
      {"infralens compare --pp 4 -m 8", "infralens compare --pp 8 -m 32 --f 1 --b 2 --p2p 0.05",
       "infralens compare --pp 4 -m 8 --json"});
  pf.Register(flags);
  AddOutputFlags(flags, &format, &json, &output, "table, markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "markdown", "json"}));
  RETURN_IF_ERROR(pf.CheckShape());
  // Every schedule at m and at each sweep point: bound the total before simulating any.
  const int64_t work = sim::CompareWorkBound(pf.pp, pf.vpp, pf.microbatches);
  if (work > kMaxCompareActions) {
    return InvalidArgument(fmt::format(
        "--pp {} --vpp {} -m {}: comparing every schedule (and the bubble sweep) simulates up to "
        "{} "
        "actions; the limit is {} (about 1 GB and 10 s); use fewer ranks or microbatches",
        pf.pp, pf.vpp, pf.microbatches, work, kMaxCompareActions));
  }
  if (!pf.stage_costs_path.empty()) {
    return InvalidArgument(
        "--stage-costs: per-stage costs depend on the chunk count; use `infralens schedule`");
  }
  ASSIGN_OR_RETURN(sim::Costs per_rank, pf.Costs(flags, 1, 1));
  ASSIGN_OR_RETURN(sim::CompareResult result,
                   sim::CompareSchedules(pf.pp, pf.vpp, pf.microbatches, per_rank));
  std::string data;
  if (format == "json") {
    JsonWriter w;
    io::WriteCompareJson(w, result);
    data = w.str();
  } else {
    data = io::RenderCompareText(result, format == "markdown");
  }
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
