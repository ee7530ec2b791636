// infralens comm-plan: every collective a training step issues, per axis, with its link and time.
#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/units.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "plan/comm_plan.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"
#include "request/training_flags.h"

namespace infralens::cli {

using request::ClusterFlags;
using request::CommPlanJson;
using request::CommPlanQuery;
using request::CommPlanResult;
using request::CommPlanText;
using request::ComputeCommPlan;
using request::TrainingFlags;

Status RunCommPlan(const std::vector<std::string>& args, CliIO& io) {
  ClusterFlags cf;
  TrainingFlags tf;
  std::string format = "table", output;
  bool json = false;
  Flags flags(
      "comm-plan",
      "every collective a training step issues: group, frequency, size, link, time, overlap",
      "infralens comm-plan --model NAME --cluster C --nodes N --tp T --pp P [--dp D --cp C --ep E] "
      "[--sp] [--zero Z] [--micro-batch b --global-batch B --seq S] [--json]",
      {"infralens comm-plan --model llama3-70b --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4 "
       "--sp "
       "--distributed-optimizer --recompute selective --global-batch 256",
       "infralens comm-plan --model mixtral-8x7b --cluster dgx-h100 --nodes 8 --tp 2 --pp 4 --dp 8 "
       "--ep 8 "
       "--sp --zero 1 --global-batch 512 --json",
       "infralens comm-plan --model llama2-7b --cluster dgx-a100 --nodes 2 --dp 16 --fsdp "
       "--global-batch 256"});
  cf.Register(flags);
  tf.Register(flags, /*layout=*/true);
  AddOutputFlags(flags, &format, &json, &output, "table, markdown or json");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "markdown", "json"}));
  CommPlanQuery q;
  q.cluster = cf;
  q.training = tf;
  ASSIGN_OR_RETURN(CommPlanResult r, ComputeCommPlan(q, GivenOf(flags)));
  const std::string data =
      format == "json" ? CommPlanJson(r) : CommPlanText(r, format == "markdown");
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
