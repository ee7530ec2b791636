#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "render/palette.h"
#include "render/timeline.h"

namespace infralens::render {

using schedule::Action;
using schedule::ActionType;

std::string CellLabel(const schedule::Schedule& s, const Action& a) {
  auto one = [&](ActionType t, int stage, int mb) {
    std::string letter(schedule::ActionTypeLetter(t));
    if (s.stage_chunk[stage] > 0) letter[0] = static_cast<char>(std::tolower(letter[0]));
    return letter + std::to_string(mb);
  };
  if (a.type == ActionType::kOverlapFB) {
    return one(ActionType::kForward, a.stage, a.microbatch) + "+" +
           one(ActionType::kBackward, a.b_stage, a.b_microbatch);
  }
  return one(a.type, a.stage, a.microbatch);
}

namespace {

constexpr const char* kReset = "\x1b[0m";
constexpr const char* kDim = "\x1b[2m";

// Slot mode: the shortest positive duration as the unit, if every start and end is a multiple
// of it. Each slot gets a label-wide cell plus a separator, as the old script drew it.
struct AsciiSlots {
  double unit = 0;  // ms
  size_t label_width = 2;
  bool slots = true;
};

AsciiSlots FindAsciiSlots(const schedule::Schedule& s, const sim::SimResult& r) {
  AsciiSlots g;
  for (int rank = 0; rank < s.pp; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      double d = r.end_ms[rank][k] - r.start_ms[rank][k];
      if (d > 0 && (g.unit == 0 || d < g.unit)) g.unit = d;
      if (s.ranks[rank][k].type != ActionType::kOverlapFB) {
        g.label_width = std::max(g.label_width, CellLabel(s, s.ranks[rank][k]).size());
      }
    }
  }
  if (g.unit == 0) g.unit = 1;
  auto near_int = [](double x) { return std::fabs(x - std::round(x)) < 1e-6; };
  for (int rank = 0; rank < s.pp && g.slots; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size() && g.slots; ++k) {
      g.slots = near_int(r.start_ms[rank][k] / g.unit) && near_int(r.end_ms[rank][k] / g.unit);
    }
  }
  return g;
}

// How time maps to columns, and the bands the picture wraps into.
struct AsciiLayout {
  AsciiSlots grid;
  int cell = 0;  // columns of a slot
  double cols_per_ms = 0;
  int total_cols = 0;
  int band_cols = 0;
  std::string prefix_fmt;  // "rank {:>N} |"
  int prefix_len = 0;
};

AsciiLayout LayOutAscii(const schedule::Schedule& s, const sim::SimResult& r,
                        const AsciiOptions& opt) {
  AsciiLayout l;
  l.grid = FindAsciiSlots(s, r);
  l.prefix_fmt = fmt::format("rank {{:>{}}} |", std::to_string(s.pp - 1).size());
  l.prefix_len = static_cast<int>(fmt::format(fmt::runtime(l.prefix_fmt), 0).size());
  const int avail = std::max(20, opt.width - l.prefix_len - 1);
  l.cell = static_cast<int>(l.grid.label_width) + 1;
  // Slot mode wraps into bands of whole slots; past 12 bands the picture stops being useful and
  // time is scaled to one band instead.
  const double slot_cols = r.makespan_ms / l.grid.unit * l.cell;
  if (l.grid.slots && slot_cols > 12.0 * avail) l.grid.slots = false;
  l.cols_per_ms = l.grid.slots ? l.cell / l.grid.unit : avail / std::max(r.makespan_ms, 1e-9);
  l.total_cols = static_cast<int>(std::lround(r.makespan_ms * l.cols_per_ms));
  l.band_cols =
      l.grid.slots ? std::max(l.cell, avail / l.cell * l.cell) : std::max(l.total_cols, 1);
  return l;
}

// Characters and action type (for colour, -1 idle) of every column of every rank.
struct AsciiCanvas {
  std::vector<std::string> lines;
  std::vector<std::vector<int>> types;
};

AsciiCanvas PaintAscii(const schedule::Schedule& s, const sim::SimResult& r, const AsciiLayout& l) {
  AsciiCanvas canvas{std::vector<std::string>(s.pp, std::string(l.total_cols, '.')),
                     std::vector<std::vector<int>>(s.pp, std::vector<int>(l.total_cols, -1))};
  for (int rank = 0; rank < s.pp; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      const Action& a = s.ranks[rank][k];
      int c0 = static_cast<int>(std::lround(r.start_ms[rank][k] * l.cols_per_ms));
      int c1 =
          std::min(static_cast<int>(std::lround(r.end_ms[rank][k] * l.cols_per_ms)), l.total_cols);
      if (c1 <= c0) continue;
      std::string label = CellLabel(s, a);
      int w = c1 - c0;
      // Keep the block's last column as a separator when the label still fits.
      int room = w > static_cast<int>(label.size()) ? w - 1 : w;
      if (static_cast<int>(label.size()) > room) label = label.substr(0, room);
      for (int c = c0; c < c1; ++c) {
        canvas.lines[rank][c] = c - c0 < static_cast<int>(label.size()) ? label[c - c0] : ' ';
        canvas.types[rank][c] = static_cast<int>(a.type);
      }
    }
  }
  return canvas;
}

// Columns [b0, b1) of every rank, coloured by action type when asked.
void AppendAsciiBand(const AsciiCanvas& canvas, const AsciiLayout& l, int b0, int b1, bool color,
                     std::string* out) {
  for (int rank = 0; rank < static_cast<int>(canvas.lines.size()); ++rank) {
    *out += fmt::format(fmt::runtime(l.prefix_fmt), rank);
    if (!color) {
      *out += canvas.lines[rank].substr(b0, b1 - b0);
    } else {
      int prev = -2;
      for (int c = b0; c < b1; ++c) {
        if (canvas.types[rank][c] != prev) {
          *out += kReset;
          *out += canvas.types[rank][c] < 0
                      ? kDim
                      : ColorsOf(static_cast<ActionType>(canvas.types[rank][c])).ansi;
          prev = canvas.types[rank][c];
        }
        *out += canvas.lines[rank][c];
      }
      *out += kReset;
    }
    *out += "|\n";
  }
}

// Time axis under the band [b0, b1): a label about every ten columns, in ms.
std::string AsciiAxis(const AsciiLayout& l, int b0, int b1) {
  double step_ms;
  if (l.grid.slots) {
    step_ms = l.grid.unit * std::max(1.0, std::ceil(10.0 / l.cell));
  } else {
    double raw = 10.0 / l.cols_per_ms;
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    step_ms = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
  }
  std::string axis(l.prefix_len + (b1 - b0) + 12, ' ');
  const double t0 = b0 / l.cols_per_ms, t1 = b1 / l.cols_per_ms;
  for (double t = std::ceil(t0 / step_ms - 1e-9) * step_ms + 0.0; t <= t1 + 1e-9; t += step_ms) {
    std::string label = fmt::format("{:g}", t);
    size_t col = l.prefix_len + static_cast<size_t>(std::lround(t * l.cols_per_ms)) - b0;
    if (col + label.size() < axis.size()) axis.replace(col, label.size(), label);
  }
  while (!axis.empty() && axis.back() == ' ') axis.pop_back();
  return axis + "  (ms)\n";
}

}  // namespace

std::string RenderAsciiTimeline(const schedule::Schedule& s, const sim::SimResult& r,
                                const AsciiOptions& opt) {
  const AsciiLayout layout = LayOutAscii(s, r, opt);
  const AsciiCanvas canvas = PaintAscii(s, r, layout);
  std::string out;
  for (int b0 = 0; b0 < layout.total_cols || b0 == 0; b0 += layout.band_cols) {
    const int b1 = std::min(layout.total_cols, b0 + layout.band_cols);
    if (b0 > 0) out += "\n";
    AppendAsciiBand(canvas, layout, b0, b1, opt.color, &out);
    out += AsciiAxis(layout, b0, b1);
  }
  std::string legend =
      "F forward  B backward  I input-grad  W weight-grad  FB overlapped pair  . idle";
  if (s.vpp > 1) legend += "  lowercase: the rank's later chunk";
  out += legend + "\n";
  return out;
}

}  // namespace infralens::render
