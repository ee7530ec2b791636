#include "io/schedule_output.h"

#include <fmt/format.h>

namespace infralens::io {

using schedule::Action;
using schedule::ActionType;

void WriteScheduleJson(JsonWriter& w, const schedule::Schedule& s, const sim::Costs& costs,
                       const sim::SimResult& r, bool with_actions,
                       const std::vector<std::vector<int64_t>>* deps) {
  w.BeginObject();
  w.Field("schedule", s.name);
  w.Field("pp", s.pp);
  w.Field("vpp", s.vpp);
  w.Field("microbatches", s.microbatches);
  w.Field("stages", s.num_stages());
  w.Field("time_unit", "ms");
  w.Key("costs").BeginObject();
  w.Field("f", costs.uniform.f_ms).Field("b", costs.uniform.b_ms);
  w.Field("i", costs.uniform.i_ms).Field("w", costs.uniform.w_ms);
  w.Field("fb",
          costs.uniform.fb_ms >= 0 ? costs.uniform.fb_ms : costs.uniform.f_ms + costs.uniform.b_ms);
  w.Field("p2p", costs.p2p_ms);
  w.Field("per_stage", !costs.per_stage.empty());
  w.EndObject();
  w.Field("makespan", r.makespan_ms);
  w.Field("bubble_fraction", r.bubble_fraction);
  w.Field("span_bubble_fraction", r.span_bubble_fraction);
  int peak = 0;
  for (const auto& rm : r.ranks) peak = std::max(peak, rm.peak_activations);
  w.Field("peak_activations", peak);
  w.Key("ranks").BeginArray();
  for (const auto& rm : r.ranks) {
    w.BeginObject();
    w.Field("rank", rm.rank);
    w.Field("busy", rm.busy_ms).Field("idle", rm.idle_ms);
    w.Field("span", rm.span_ms).Field("span_idle", rm.span_idle_ms);
    w.Field("first_start", rm.first_start_ms).Field("last_end", rm.last_end_ms);
    w.Field("peak_activations", rm.peak_activations);
    w.Field("actions", rm.actions);
    w.EndObject();
  }
  w.EndArray();
  if (with_actions) {
    w.Key("actions").BeginArray();
    size_t flat = 0;
    for (int rank = 0; rank < s.pp; ++rank) {
      for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
        const Action& a = s.ranks[rank][k];
        w.BeginObject();
        w.Field("rank", rank);
        w.Field("stage", a.stage);
        w.Field("chunk", s.stage_chunk[a.stage]);
        w.Field("type", schedule::ActionTypeLetter(a.type));
        w.Field("microbatch", a.microbatch);
        if (a.type == ActionType::kOverlapFB) {
          w.Field("b_stage", a.b_stage).Field("b_microbatch", a.b_microbatch);
        }
        w.Field("start", r.start_ms[rank][k]).Field("end", r.end_ms[rank][k]);
        if (deps != nullptr && flat < deps->size()) {
          w.Key("deps").BeginArray();
          for (int64_t d : (*deps)[flat]) w.Int(d);
          w.EndArray();
        }
        ++flat;
        w.EndObject();
      }
    }
    w.EndArray();
  }
  w.EndObject();
}

std::string WriteChromeTrace(const schedule::Schedule& s, const sim::SimResult& r) {
  JsonWriter w(0);
  w.BeginObject();
  w.Field("displayTimeUnit", "ms");
  w.Key("traceEvents").BeginArray();
  for (int rank = 0; rank < s.pp; ++rank) {
    w.BeginObject()
        .Field("ph", "M")
        .Field("name", "process_name")
        .Field("pid", rank)
        .Field("tid", 0);
    w.Key("args")
        .BeginObject()
        .Field("name", fmt::format("pp rank {}", rank))
        .EndObject()
        .EndObject();
    w.BeginObject()
        .Field("ph", "M")
        .Field("name", "process_sort_index")
        .Field("pid", rank)
        .Field("tid", 0);
    w.Key("args").BeginObject().Field("sort_index", rank).EndObject().EndObject();
    w.BeginObject()
        .Field("ph", "M")
        .Field("name", "thread_name")
        .Field("pid", rank)
        .Field("tid", 0);
    w.Key("args").BeginObject().Field("name", "compute").EndObject().EndObject();
  }
  for (int rank = 0; rank < s.pp; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      const Action& a = s.ranks[rank][k];
      w.BeginObject();
      w.Field("name", schedule::ToString(a));
      w.Field("cat", schedule::ActionTypeLetter(a.type));
      w.Field("ph", "X");
      w.Field("pid", rank).Field("tid", 0);
      w.Field("ts", r.start_ms[rank][k] * 1000.0);
      w.Field("dur", (r.end_ms[rank][k] - r.start_ms[rank][k]) * 1000.0);
      w.Key("args").BeginObject();
      w.Field("stage", a.stage)
          .Field("chunk", s.stage_chunk[a.stage])
          .Field("microbatch", a.microbatch);
      if (a.type == ActionType::kOverlapFB)
        w.Field("b_stage", a.b_stage).Field("b_microbatch", a.b_microbatch);
      w.EndObject();
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace infralens::io
