// The colours of an action type in the pictures of a schedule, one row per type: the Okabe-Ito
// fill of its SVG block (Okabe & Ito 2008, "Color Universal Design"; timeline.h) and the nearest
// 256-colour terminal background with a text colour readable on it (97 white, 30 black).
#ifndef INFRALENS_RENDER_PALETTE_H_
#define INFRALENS_RENDER_PALETTE_H_

#include "schedule/action.h"

namespace infralens::render {

struct ActionColors {
  schedule::ActionType type;
  const char* svg_fill;  // "#RRGGBB"
  const char* ansi;      // an SGR sequence: background and text colour
};

inline constexpr ActionColors kActionColors[] = {
    {schedule::ActionType::kForward, "#0072B2", "\x1b[48;5;25;97m"},
    {schedule::ActionType::kBackward, "#D55E00", "\x1b[48;5;166;97m"},
    {schedule::ActionType::kBackwardInput, "#56B4E9", "\x1b[48;5;74;30m"},
    {schedule::ActionType::kBackwardWeight, "#009E73", "\x1b[48;5;36;30m"},
    {schedule::ActionType::kOverlapFB, "#CC79A7", "\x1b[48;5;175;30m"},
};

// The row of `t`; a type without one is grey and uncoloured on a terminal (a test lists every
// type).
inline ActionColors ColorsOf(schedule::ActionType t) {
  for (const ActionColors& c : kActionColors) {
    if (c.type == t) return c;
  }
  return {t, "#999999", ""};
}

}  // namespace infralens::render

#endif  // INFRALENS_RENDER_PALETTE_H_
