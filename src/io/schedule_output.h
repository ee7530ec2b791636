// Machine-readable renderings of a simulated schedule: InfraLens JSON and a Chrome trace.
#ifndef INFRALENS_IO_SCHEDULE_OUTPUT_H_
#define INFRALENS_IO_SCHEDULE_OUTPUT_H_

#include <string>

#include "base/json_writer.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::io {

// Writes the schedule's JSON object. Stable keys: schedule, pp, vpp, microbatches, time_unit,
// costs, makespan, bubble_fraction, span_bubble_fraction, ranks (rank, busy, idle, span, span_idle,
// first_start, last_end, peak_activations, actions) and, when with_actions, actions (rank, stage,
// chunk, type, microbatch, start, end; an FB pair adds b_stage and b_microbatch). With `deps`
// (from sim::ActionDependencies) each action also gets "deps": the indexes in "actions" of the
// actions it waits for.
void WriteScheduleJson(JsonWriter& w, const schedule::Schedule& s, const sim::Costs& costs,
                       const sim::SimResult& r, bool with_actions = true,
                       const std::vector<std::vector<int64_t>>* deps = nullptr);

// Chrome trace event format (the "JSON Object Format" of the Trace Event Format document, read by
// ui.perfetto.dev and chrome://tracing): one process per rank, complete ("X") events in
// microseconds, one millisecond of simulated time = 1000 us.
std::string WriteChromeTrace(const schedule::Schedule& s, const sim::SimResult& r);

}  // namespace infralens::io

#endif  // INFRALENS_IO_SCHEDULE_OUTPUT_H_
