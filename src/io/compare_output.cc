#include "io/compare_output.h"

#include <fmt/format.h>

#include <cmath>

#include "base/table.h"

namespace infralens::io {

void WriteCompareJson(JsonWriter& w, const sim::CompareResult& c) {
  const auto& u = c.per_rank.uniform;
  w.BeginObject();
  w.Field("pp", c.pp).Field("microbatches", c.microbatches).Field("time_unit", "ms");
  w.Key("costs_per_rank").BeginObject();
  w.Field("f", u.f_ms)
      .Field("b", u.b_ms)
      .Field("i", u.i_ms)
      .Field("w", u.w_ms)
      .Field("p2p", c.per_rank.p2p_ms);
  w.EndObject();
  w.Key("schedules").BeginArray();
  for (const sim::CompareRow& r : c.rows) {
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
  for (const auto& [m, line] : c.sweep) {
    w.BeginObject().Field("microbatches", m).Key("bubble_fraction").BeginObject();
    for (size_t k = 0; k < line.size(); ++k) w.Field(schedule::AllSchedules()[k].name, line[k]);
    w.EndObject().EndObject();
  }
  w.EndArray();
  w.EndObject();
}

std::string RenderCompareText(const sim::CompareResult& c, bool markdown) {
  const auto& u = c.per_rank.uniform;
  std::string data = fmt::format(
      "Pipeline schedules, P={} ranks, m={} microbatches; per rank per microbatch F={:g} B={:g} "
      "(I={:g} W={:g}) ms, "
      "p2p {:g} ms.\nA schedule with v chunks per rank runs each chunk action in 1/v of that time. "
      "Bubble = idle / "
      "(P x makespan); in spans = idle between a rank's first and last action (the zero-bubble "
      "papers' measure). "
      "Peak activations count chunk activations; x stage divides by v.\n\n",
      c.pp, c.microbatches, u.f_ms, u.b_ms, u.i_ms, u.w_ms, c.per_rank.p2p_ms);
  TextTable t(
      {"schedule", "v", "makespan ms", "bubble", "in spans", "peak act", "x stage", "note"});
  t.SetAlign(7, TextTable::Align::kLeft);
  std::string notes;
  for (const sim::CompareRow& r : c.rows) {
    if (!r.status.ok()) {
      t.AddRow({std::string(r.info->name), std::to_string(r.vpp), "-", "-", "-", "-", "-",
                r.status.message()});
      continue;
    }
    t.AddRow({std::string(r.info->name), std::to_string(r.vpp),
              fmt::format("{:g}", r.result.makespan_ms),
              fmt::format("{:.2f}%", 100 * r.result.bubble_fraction),
              fmt::format("{:.2f}%", 100 * r.result.span_bubble_fraction),
              std::to_string(r.peak_chunks),
              fmt::format("{:g}", static_cast<double>(r.peak_chunks) / r.vpp), ""});
    notes += fmt::format("  {:<17} {}\n", r.info->name, r.info->summary);
  }
  std::vector<std::string> header = {"m"};
  for (const auto& info : schedule::AllSchedules()) header.emplace_back(info.name);
  TextTable sw(header);
  for (const auto& [m, line] : c.sweep) {
    std::vector<std::string> cells = {std::to_string(m)};
    for (double b : line) cells.push_back(std::isnan(b) ? "-" : fmt::format("{:.1f}%", 100 * b));
    sw.AddRow(cells);
  }
  data += markdown ? t.RenderMarkdown() : t.Render();
  data += "\n" + notes;
  data += fmt::format(
      "\nBubble against microbatches (simulated, P={}; '-' = the schedule does not run at that "
      "m):\n\n",
      c.pp);
  data += markdown ? sw.RenderMarkdown() : sw.Render();
  return data;
}

}  // namespace infralens::io
