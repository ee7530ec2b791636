// Pictures of a simulated schedule: a terminal timeline and an SVG for slides.
// Colours are the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), distinguishable
// with the common colour-vision deficiencies: F blue, B vermillion, I sky blue, W bluish green,
// FB reddish purple; idle time is hatched grey.
#ifndef INFRALENS_RENDER_TIMELINE_H_
#define INFRALENS_RENDER_TIMELINE_H_

#include <string>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::render {

// Label of an action in a timeline cell: type letter and microbatch ("F3"); a rank's later chunks
// (stage >= P) use lowercase ("f3") so the two halves of a V or the rounds of an interleaved
// schedule can be told apart; an FB pair is "F3+b1".
std::string CellLabel(const schedule::Schedule& s, const schedule::Action& a);

struct AsciiOptions {
  bool color = false;
  int width = 100;  // columns available
};

// One row per rank, time running right. When every duration is a whole multiple of the shortest
// one, each such slot gets a fixed cell (the old script's picture); otherwise time is scaled to
// fit. Idle time is drawn as '.'.
std::string RenderAsciiTimeline(const schedule::Schedule& s, const sim::SimResult& r,
                                const AsciiOptions& opt);

// Schedules of at most this many actions get their cross-rank dependency arrows in the SVG; a
// larger one says in a line that they are left out (thousands of arrows hide the blocks).
inline constexpr int64_t kMaxSvgDependencyActions = 512;

// A self-contained SVG: title and metrics, one lane per rank, blocks labelled with their
// microbatch, hatched idle time, an arrow from the end of each action to the start of each action
// on another rank that waits for it (sim::ActionDependencies: the sends between stages; the order
// on one rank needs none), a time axis in ms and a legend. `r` must carry per-action times
// (sim::Simulate, not SimulateSummary).
std::string RenderSvgTimeline(const schedule::Schedule& s, const sim::SimResult& r);

}  // namespace infralens::render

#endif  // INFRALENS_RENDER_TIMELINE_H_
