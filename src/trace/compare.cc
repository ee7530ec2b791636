#include "trace/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "base/table.h"
#include "trace/report.h"

namespace infralens::trace {

namespace {

using nlohmann::json;

std::optional<double> Num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

double UnitToUs(const std::string& unit) {
  if (unit == "s") return 1e6;
  if (unit == "us") return 1;
  if (unit == "ns") return 1e-3;
  return 1e3;  // "ms", the schedule engine's default
}

StatusOr<Prediction> ReadScheduleJson(const json& j, const std::string& label) {
  Prediction p;
  p.format = "schedule";
  p.name = j.value("schedule", std::string("schedule"));
  const double scale = UnitToUs(j.value("time_unit", std::string("ms")));
  const double makespan = *Num(j, "makespan");
  p.step_time_us = makespan * scale;
  p.bubble_fraction = Num(j, "bubble_fraction");
  const json& ranks = j["ranks"];
  for (const json& r : ranks) {
    if (!r.is_object())
      return InvalidArgument(fmt::format("{}: \"ranks\" holds a non-object", label));
    auto idle = Num(r, "idle");
    p.rank_bubble_fraction.push_back(idle && makespan > 0 ? *idle / makespan : 0);
  }
  auto it = j.find("actions");
  if (it != j.end() && it->is_array()) {
    struct Timed {
      double start;
      size_t order;
      schedule::Action a;
    };
    std::vector<std::vector<Timed>> per_rank(p.rank_bubble_fraction.size());
    size_t n = 0;
    for (const json& a : *it) {
      if (!a.is_object())
        return InvalidArgument(fmt::format("{}: \"actions\" holds a non-object", label));
      auto rank = Num(a, "rank"), stage = Num(a, "stage"), mb = Num(a, "microbatch"),
           start = Num(a, "start");
      const std::string type = a.value("type", std::string());
      if (!rank || !stage || !mb || !start || *rank < 0 ||
          *rank >= static_cast<double>(per_rank.size())) {
        return InvalidArgument(
            fmt::format("{}: actions[{}] lacks rank, stage, type, microbatch or start", label, n));
      }
      schedule::Action act;
      if (type == "F")
        act = schedule::Action::F(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "B")
        act = schedule::Action::B(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "I")
        act = schedule::Action::I(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "W")
        act = schedule::Action::W(static_cast<int>(*stage), static_cast<int>(*mb));
      else if (type == "FB") {
        auto bs = Num(a, "b_stage"), bm = Num(a, "b_microbatch");
        if (!bs || !bm)
          return InvalidArgument(
              fmt::format("{}: actions[{}]: an FB pair needs b_stage, b_microbatch", label, n));
        act = schedule::Action::FB(static_cast<int>(*stage), static_cast<int>(*mb),
                                   static_cast<int>(*bs), static_cast<int>(*bm));
      } else {
        return InvalidArgument(fmt::format("{}: actions[{}]: unknown type '{}'", label, n, type));
      }
      per_rank[static_cast<size_t>(*rank)].push_back({*start, n, act});
      ++n;
    }
    for (auto& list : per_rank) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Timed& x, const Timed& y) { return x.start < y.start; });
      std::vector<schedule::Action> order;
      for (const Timed& t : list) order.push_back(t.a);
      p.actions.push_back(std::move(order));
    }
  }
  return p;
}

// The planner's format (`infralens plan --json`, src/cli/plan_output.cc): step_time_s (or _ms,
// _us), bubble_fraction and exposed_comm_s (or _ms, _us): {"dp": 0.012, "tp": 0.004, "pp": 0.001}.
StatusOr<Prediction> ReadPlanJson(const json& j, const std::string& label) {
  Prediction p;
  p.format = "plan";
  p.name = j.value("name", std::string("plan"));
  for (auto [key, scale] :
       {std::pair{"step_time_s", 1e6}, {"step_time_ms", 1e3}, {"step_time_us", 1.0}}) {
    if (auto v = Num(j, key)) p.step_time_us = *v * scale;
  }
  p.bubble_fraction = Num(j, "bubble_fraction");
  for (auto [key, scale] :
       {std::pair{"exposed_comm_s", 1e6}, {"exposed_comm_ms", 1e3}, {"exposed_comm_us", 1.0}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_object())
      return InvalidArgument(fmt::format("{}: \"{}\" must be an object of axis: time", label, key));
    for (auto& [axis, v] : it->items()) {
      if (!v.is_number())
        return InvalidArgument(fmt::format("{}: {}.{} is not a number", label, key, axis));
      p.exposed_comm_us[axis] = v.get<double>() * scale;
    }
  }
  return p;
}

std::string Value(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  // Values that round to zero print as 0, never as "-0.00".
  const double x = std::abs(*v) < (unit == "%" ? 5e-3 : 5e-4) ? 0.0 : *v;
  return unit == "%" ? fmt::format("{:.2f}", x) : fmt::format("{:.3f}", x);
}

}  // namespace

StatusOr<Prediction> ReadPrediction(std::string_view text, const std::string& label) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(fmt::format("{}: not valid JSON", label));
  if (!j.is_object()) return InvalidArgument(fmt::format("{}: expected a JSON object", label));
  if (Num(j, "makespan") && j.contains("ranks") && j["ranks"].is_array())
    return ReadScheduleJson(j, label);
  if (j.contains("step_time_s") || j.contains("step_time_ms") || j.contains("step_time_us"))
    return ReadPlanJson(j, label);
  // `infralens plan --json`: one evaluated layout under "plan", or a search's ranked "plans"
  // (the first, the planner's pick).
  if (j.contains("plan") && j["plan"].is_object()) return ReadPlanJson(j["plan"], label);
  if (j.contains("plans") && j["plans"].is_array() && !j["plans"].empty() && j["plans"][0].is_object())
    return ReadPlanJson(j["plans"][0], label);
  return InvalidArgument(
      fmt::format("{}: neither a schedule prediction (makespan, bubble_fraction, ranks: `infralens "
                  "schedule --json`) nor a plan "
                  "(step_time_s, bubble_fraction, exposed_comm_s)",
                  label));
}

Comparison Compare(const Prediction& p, const TraceAnalysis& a) {
  Comparison c;
  c.prediction = p;
  const PipelineResult& pl = a.pipeline;
  std::optional<double> step_ms;
  if (pl.windows > 0) step_ms = pl.step_time_us / 1000.0;
  c.rows.push_back({"step time", "ms",
                    p.step_time_us ? std::optional<double>(*p.step_time_us / 1000.0) : std::nullopt,
                    step_ms});
  c.rows.push_back(
      {"bubble", "%",
       p.bubble_fraction ? std::optional<double>(100 * *p.bubble_fraction) : std::nullopt,
       std::optional<double>(100 * pl.bubble_fraction)});
  // Per pipeline rank: the recovered mapping when there is one, else the loaded ranks in order.
  std::vector<size_t> result_of_pp;
  if (pl.recovered) {
    for (int64_t global : pl.pp_rank_of) {
      for (size_t i = 0; i < a.ranks.size(); ++i) {
        if (a.ranks[i].rank == global) result_of_pp.push_back(i);
      }
    }
  } else {
    for (size_t i = 0; i < a.ranks.size(); ++i) result_of_pp.push_back(i);
  }
  const size_t n = std::max(p.rank_bubble_fraction.size(), result_of_pp.size());
  for (size_t k = 0; k < n; ++k) {
    std::optional<double> pred, meas;
    if (k < p.rank_bubble_fraction.size()) pred = 100 * p.rank_bubble_fraction[k];
    if (k < result_of_pp.size()) meas = a.ranks[result_of_pp[k]].bubble_pct;
    std::string label = fmt::format("bubble, pipeline rank {}", k);
    if (k < result_of_pp.size()) label += fmt::format(" (rank {})", a.ranks[result_of_pp[k]].rank);
    c.rows.push_back({label, "%", pred, meas});
  }
  if (p.rank_bubble_fraction.size() != result_of_pp.size() && !p.rank_bubble_fraction.empty()) {
    c.notes.push_back(fmt::format("the prediction has {} pipeline ranks, the traces {}",
                                  p.rank_bubble_fraction.size(), result_of_pp.size()));
  }
  // Exposed communication per axis, mean over ranks.
  std::map<std::string, double> measured_axis;
  const double per =
      static_cast<double>(a.ranks.size()) * static_cast<double>(std::max<int64_t>(1, pl.windows));
  for (const RankResult& r : a.ranks) {
    for (const auto& [axis, us] : r.exposed_comm_us) measured_axis[axis] += us / per;
  }
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> axes;
  for (const auto& [axis, us] : p.exposed_comm_us) axes[axis].first = us / 1000.0;
  for (const auto& [axis, us] : measured_axis) axes[axis].second = us / 1000.0;
  for (const auto& [axis, pm] : axes) {
    c.rows.push_back({fmt::format("exposed communication, {} (per step, mean of ranks)", axis),
                      "ms", pm.first, pm.second});
  }
  // Action order.
  if (!p.actions.empty()) {
    if (!pl.recovered) {
      c.notes.push_back(pl.recover_note.empty()
                            ? "the traces carry no PP: annotations: action order not compared"
                            : "action order not compared: " + pl.recover_note);
    } else {
      for (size_t k = 0; k < std::max(p.actions.size(), pl.schedule.ranks.size()); ++k) {
        OrderCheck oc;
        oc.pp_rank = static_cast<int>(k);
        oc.rank = k < pl.pp_rank_of.size() ? pl.pp_rank_of[k] : -1;
        static const std::vector<schedule::Action> kEmpty;
        const auto& want = k < p.actions.size() ? p.actions[k] : kEmpty;
        const auto& got = k < pl.schedule.ranks.size() ? pl.schedule.ranks[k] : kEmpty;
        oc.same = want == got;
        if (!oc.same) {
          size_t i = 0;
          while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
          oc.first_difference = static_cast<int64_t>(i);
          oc.predicted_action = i < want.size() ? schedule::ToString(want[i]) : "";
          oc.measured_action = i < got.size() ? schedule::ToString(got[i]) : "";
        }
        c.order.push_back(oc);
      }
    }
  }
  if (p.format == "schedule") {
    c.notes.push_back(
        "the schedule's times are in its cost units: pass measured per-action costs (--f, --b, "
        "...) in "
        "ms to compare step time");
  }
  return c;
}

std::string ComparisonText(const Comparison& c) {
  std::string out =
      fmt::format("predicted ({} \"{}\") vs measured\n", c.prediction.format, c.prediction.name);
  TextTable t({"metric", "predicted", "measured", "measured - predicted", "unit"});
  t.SetAlign(4, TextTable::Align::kLeft);
  for (const CompareRow& r : c.rows) {
    std::string diff = r.predicted && r.measured ? Value(*r.measured - *r.predicted, r.unit) : "-";
    t.AddRow({r.metric, Value(r.predicted, r.unit), Value(r.measured, r.unit), diff, r.unit});
  }
  out += t.Render();
  if (!c.order.empty()) {
    out += "\naction order, predicted vs recovered from PP: annotations\n";
    for (const OrderCheck& o : c.order) {
      if (o.same) {
        out += fmt::format("  pipeline rank {} (rank {}): same\n", o.pp_rank, o.rank);
      } else {
        out += fmt::format(
            "  pipeline rank {} (rank {}): differs at action #{}: predicted {}, ran {}\n",
            o.pp_rank, o.rank, o.first_difference,
            o.predicted_action.empty() ? "(end)" : o.predicted_action,
            o.measured_action.empty() ? "(end)" : o.measured_action);
      }
    }
  }
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  return out;
}

void WriteComparisonJson(JsonWriter& w, const Comparison& c) {
  w.BeginObject();
  w.Key("prediction")
      .BeginObject()
      .Field("format", c.prediction.format)
      .Field("name", c.prediction.name)
      .EndObject();
  w.Key("rows").BeginArray();
  for (const CompareRow& r : c.rows) {
    w.BeginObject();
    w.Field("metric", r.metric);
    w.Field("unit", r.unit);
    w.Key("predicted");
    r.predicted ? w.Number(*r.predicted) : w.Null();
    w.Key("measured");
    r.measured ? w.Number(*r.measured) : w.Null();
    w.EndObject();
  }
  w.EndArray();
  w.Key("order").BeginArray();
  for (const OrderCheck& o : c.order) {
    w.BeginObject();
    w.Field("pp_rank", o.pp_rank).Field("rank", o.rank).Field("same", o.same);
    if (!o.same) {
      w.Field("first_difference", o.first_difference);
      w.Field("predicted", o.predicted_action).Field("measured", o.measured_action);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("notes").BeginArray();
  for (const std::string& n : c.notes) w.String(n);
  w.EndArray();
  w.EndObject();
}

}  // namespace infralens::trace
