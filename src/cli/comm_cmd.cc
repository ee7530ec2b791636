// infralens comm: one collective on one group of a placed job (or the first N ranks): the
// algorithm chosen, predicted time, algbw and busbw (nccl-tests' convention), the link class
// that bounds it and the bytes each GPU puts on every link class.
#include <fmt/format.h>

#include <optional>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/units.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "collective/collective.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"

namespace infralens::cli {

using request::CommJson;
using request::CommQuery;
using request::CommResult;
using request::CommText;
using request::ComputeComm;

Status RunComm(const std::vector<std::string>& args, CliIO& io) {
  CommQuery q;
  std::string output;
  bool json = false;
  Flags flags(
      "comm", "time, algbw and busbw of one collective on a group, and the link that bounds it",
      "infralens comm [--cluster PRESET|FILE.toml] [--nodes N] --collective C --size S "
      "(--group AXIS [degrees] | --ranks N) [--algorithm A] [--bandwidth GBps] [--latency us] "
      "[--json]",
      {"infralens comm --cluster dgx-h100 --nodes 1 --collective all_reduce --size 1GiB --ranks 8",
       "infralens comm --cluster dgx-h100 --nodes 1 --ranks 8 --algorithm ring --bandwidth 450 "
       "--latency 5",
       "infralens comm --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4 --group dp --size 512MiB",
       "infralens comm --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --group pp --collective "
       "send_recv --size 64MiB",
       "infralens comm --cluster dgx-h100 --nodes 2 --ranks 16 --size 8KiB --json",
       "infralens comm --cluster mi300x --tp 2 --dp 4 --group tp --collective all_gather --size "
       "256MB"});
  q.cluster.Register(flags);
  q.Register(flags);
  std::string format = "table";
  AddOutputFlags(flags, &format, &json, &output, "table or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  json = format == "json";
  ASSIGN_OR_RETURN(CommResult r, ComputeComm(q, GivenOf(flags)));
  return WriteOutput(output, json ? CommJson(r) : CommText(r), io);
}

}  // namespace infralens::cli
