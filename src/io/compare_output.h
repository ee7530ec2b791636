// Renderings of a schedule comparison (sim::CompareResult): JSON, a plain-text table and markdown.
#ifndef INFRALENS_IO_COMPARE_OUTPUT_H_
#define INFRALENS_IO_COMPARE_OUTPUT_H_

#include <string>

#include "base/json_writer.h"
#include "sim/compare.h"

namespace infralens::io {

// Stable keys: pp, microbatches, time_unit, costs_per_rank (f, b, i, w, p2p), schedules (schedule,
// vpp, and makespan, bubble_fraction, span_bubble_fraction, peak_activations,
// peak_activations_stage_equivalent, or error) and bubble_vs_microbatches (microbatches,
// bubble_fraction: {schedule: fraction or null}).
void WriteCompareJson(JsonWriter& w, const sim::CompareResult& c);

// The table `infralens compare` prints, with the schedule notes and the bubble sweep.
std::string RenderCompareText(const sim::CompareResult& c, bool markdown);

}  // namespace infralens::io

#endif  // INFRALENS_IO_COMPARE_OUTPUT_H_
