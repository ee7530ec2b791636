// infralens compare: every generated schedule side by side for one P, m and cost set, and the
// bubble against the number of microbatches, all by simulation.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/json_writer.h"
#include "base/table.h"
#include "cli/commands.h"
#include "cli/pipeline_flags.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::cli {

namespace {

struct Row {
  const schedule::ScheduleInfo* info;
  int vpp = 0;
  Status status;
  sim::SimResult result;
  int peak_chunks = 0;
};

// Costs are per rank per microbatch; a schedule with v chunks per rank runs each chunk in 1/v of
// that, so every schedule does the same total work and the comparison is fair.
sim::Costs ChunkCosts(const sim::Costs& per_rank, int v) {
  sim::Costs c = per_rank;
  sim::StageCosts& u = c.uniform;
  u.f_ms /= v;
  u.b_ms /= v;
  u.i_ms /= v;
  u.w_ms /= v;
  if (u.fb_ms >= 0) u.fb_ms /= v;
  return c;
}

Row Evaluate(const schedule::ScheduleInfo& info, int pp, int vpp_flag, int m, const sim::Costs& per_rank) {
  Row row{&info};
  // --vpp applies to the schedules that take any chunk count; V schedules always use 2.
  int vpp = info.default_vpp;
  if (vpp_flag > 0 && (info.kind == schedule::ScheduleKind::kInterleaved1F1B ||
                       info.kind == schedule::ScheduleKind::kLoopedBFS)) {
    vpp = vpp_flag;
  }
  row.vpp = vpp;
  auto s = schedule::Generate(info.kind, {pp, vpp, m});
  if (!s.ok()) {
    row.status = s.status();
    return row;
  }
  auto r = sim::Simulate(*s, ChunkCosts(per_rank, vpp));
  if (!r.ok()) {
    row.status = r.status();
    return row;
  }
  row.result = std::move(r).value();
  for (const auto& rm : row.result.ranks) row.peak_chunks = std::max(row.peak_chunks, rm.peak_activations);
  return row;
}

}  // namespace

Status RunCompare(const std::vector<std::string>& args, CliIO& io) {
  std::string format = "table", output;
  bool json = false;
  PipelineFlags pf;
  Flags flags("compare", "every pipeline schedule side by side for one P, m and cost set",
              "infralens compare [--pp P] [-m M] [--vpp V] [--f F --b B | --i I --w W] [--p2p L] [--json]",
              {"infralens compare --pp 4 -m 8", "infralens compare --pp 8 -m 32 --f 1 --b 2 --p2p 0.05",
               "infralens compare --pp 4 -m 8 --json"});
  pf.Register(flags, /*per_chunk=*/false);
  flags.String("--format", &format, "table, markdown or json");
  flags.Bool("--json", &json, "same as --format json");
  flags.String("-o,--output", &output, "write to this file instead of stdout");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (json) format = "json";
  if (format != "table" && format != "markdown" && format != "json") {
    return InvalidArgument(fmt::format("--format {}: expected table, markdown or json", format));
  }
  if (pf.pp < 1) return InvalidArgument(fmt::format("--pp {}: must be at least 1", pf.pp));
  if (pf.microbatches < 1) return InvalidArgument(fmt::format("-m {}: must be at least 1", pf.microbatches));
  if (pf.vpp < 0) return InvalidArgument(fmt::format("--vpp {}: must be at least 1 (0 = default)", pf.vpp));
  if (!pf.stage_costs_path.empty()) {
    return InvalidArgument("--stage-costs: per-stage costs depend on the chunk count; use `infralens schedule`");
  }
  ASSIGN_OR_RETURN(sim::Costs per_rank, pf.Costs(flags, 1));

  std::vector<Row> rows;
  for (const auto& info : schedule::AllSchedules()) {
    rows.push_back(Evaluate(info, pf.pp, pf.vpp, pf.microbatches, per_rank));
  }
  std::set<int> ms = {1, 2, 4, 8, 16, 32, 64, pf.microbatches};
  // bubble[m][schedule index], NaN when the schedule cannot run with m microbatches.
  std::vector<std::pair<int, std::vector<double>>> sweep;
  for (int m : ms) {
    std::vector<double> line;
    for (const auto& info : schedule::AllSchedules()) {
      Row r = Evaluate(info, pf.pp, pf.vpp, m, per_rank);
      line.push_back(r.status.ok() ? r.result.bubble_fraction : std::nan(""));
    }
    sweep.emplace_back(m, std::move(line));
  }

  const auto& u = per_rank.uniform;
  std::string data;
  if (format == "json") {
    JsonWriter w;
    w.BeginObject();
    w.Field("pp", pf.pp).Field("microbatches", pf.microbatches).Field("time_unit", "ms");
    w.Key("costs_per_rank").BeginObject();
    w.Field("f", u.f_ms).Field("b", u.b_ms).Field("i", u.i_ms).Field("w", u.w_ms).Field("p2p", per_rank.p2p_ms);
    w.EndObject();
    w.Key("schedules").BeginArray();
    for (const Row& r : rows) {
      w.BeginObject();
      w.Field("schedule", r.info->name).Field("vpp", r.vpp);
      if (!r.status.ok()) {
        w.Field("error", r.status.message());
      } else {
        w.Field("makespan", r.result.makespan_ms);
        w.Field("bubble_fraction", r.result.bubble_fraction);
        w.Field("span_bubble_fraction", r.result.span_bubble_fraction);
        w.Field("peak_activations", r.peak_chunks);
        w.Field("peak_activations_stage_equivalent", static_cast<double>(r.peak_chunks) / r.vpp);
      }
      w.EndObject();
    }
    w.EndArray();
    w.Key("bubble_vs_microbatches").BeginArray();
    for (const auto& [m, line] : sweep) {
      w.BeginObject().Field("microbatches", m).Key("bubble_fraction").BeginObject();
      for (size_t k = 0; k < line.size(); ++k) w.Field(schedule::AllSchedules()[k].name, line[k]);
      w.EndObject().EndObject();
    }
    w.EndArray();
    w.EndObject();
    data = w.str();
  } else {
    data += fmt::format(
        "Pipeline schedules, P={} ranks, m={} microbatches; per rank per microbatch F={:g} B={:g} (I={:g} W={:g}) ms, "
        "p2p {:g} ms.\nA schedule with v chunks per rank runs each chunk action in 1/v of that time. Bubble = idle / "
        "(P x makespan); in spans = idle between a rank's first and last action (the zero-bubble papers' measure). "
        "Peak activations count chunk activations; x stage divides by v.\n\n",
        pf.pp, pf.microbatches, u.f_ms, u.b_ms, u.i_ms, u.w_ms, per_rank.p2p_ms);
    TextTable t({"schedule", "v", "makespan ms", "bubble", "in spans", "peak act", "x stage", "note"});
    t.SetAlign(7, TextTable::Align::kLeft);
    std::string notes;
    for (const Row& r : rows) {
      if (!r.status.ok()) {
        t.AddRow({std::string(r.info->name), std::to_string(r.vpp), "-", "-", "-", "-", "-", r.status.message()});
        continue;
      }
      t.AddRow({std::string(r.info->name), std::to_string(r.vpp), fmt::format("{:g}", r.result.makespan_ms),
                fmt::format("{:.2f}%", 100 * r.result.bubble_fraction),
                fmt::format("{:.2f}%", 100 * r.result.span_bubble_fraction), std::to_string(r.peak_chunks),
                fmt::format("{:g}", static_cast<double>(r.peak_chunks) / r.vpp), ""});
      notes += fmt::format("  {:<17} {}\n", r.info->name, r.info->summary);
    }
    std::vector<std::string> header = {"m"};
    for (const auto& info : schedule::AllSchedules()) header.emplace_back(info.name);
    TextTable sw(header);
    for (const auto& [m, line] : sweep) {
      std::vector<std::string> cells = {std::to_string(m)};
      for (double b : line) cells.push_back(std::isnan(b) ? "-" : fmt::format("{:.1f}%", 100 * b));
      sw.AddRow(cells);
    }
    bool md = format == "markdown";
    data += md ? t.RenderMarkdown() : t.Render();
    data += "\n" + notes;
    data += fmt::format("\nBubble against microbatches (simulated, P={}; '-' = the schedule does not run at that m):\n\n",
                        pf.pp);
    data += md ? sw.RenderMarkdown() : sw.Render();
  }
  return WriteOutput(output, data, io);
}

}  // namespace infralens::cli
