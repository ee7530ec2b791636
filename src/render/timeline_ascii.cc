#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

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

// 256-colour backgrounds nearest to the Okabe-Ito colours named in timeline.h.
const char* AnsiColor(ActionType t) {
  switch (t) {
    case ActionType::kForward: return "\x1b[48;5;25;97m";
    case ActionType::kBackward: return "\x1b[48;5;166;97m";
    case ActionType::kBackwardInput: return "\x1b[48;5;74;30m";
    case ActionType::kBackwardWeight: return "\x1b[48;5;36;30m";
    case ActionType::kOverlapFB: return "\x1b[48;5;175;30m";
  }
  return "";
}
constexpr const char* kReset = "\x1b[0m";
constexpr const char* kDim = "\x1b[2m";

}  // namespace

std::string RenderAsciiTimeline(const schedule::Schedule& s, const sim::SimResult& r, const AsciiOptions& opt) {
  // Slot mode: the shortest positive duration as the unit, if every start and end is a multiple
  // of it. Each slot gets a label-wide cell plus a separator, as the old script drew it.
  double unit = 0;
  size_t label_width = 2;
  for (int rank = 0; rank < s.pp; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      double d = r.end_ms[rank][k] - r.start_ms[rank][k];
      if (d > 0 && (unit == 0 || d < unit)) unit = d;
      if (s.ranks[rank][k].type != ActionType::kOverlapFB) {
        label_width = std::max(label_width, CellLabel(s, s.ranks[rank][k]).size());
      }
    }
  }
  if (unit == 0) unit = 1;
  bool slots = true;
  auto near_int = [](double x) { return std::fabs(x - std::round(x)) < 1e-6; };
  for (int rank = 0; rank < s.pp && slots; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size() && slots; ++k) {
      slots = near_int(r.start_ms[rank][k] / unit) && near_int(r.end_ms[rank][k] / unit);
    }
  }
  const std::string prefix_fmt = fmt::format("rank {{:>{}}} |", std::to_string(s.pp - 1).size());
  const int prefix_len = static_cast<int>(fmt::format(fmt::runtime(prefix_fmt), 0).size());
  const int avail = std::max(20, opt.width - prefix_len - 1);
  const int cell = static_cast<int>(label_width) + 1;
  // Slot mode wraps into bands of whole slots; past 12 bands the picture stops being useful and
  // time is scaled to one band instead.
  const double slot_cols = r.makespan_ms / unit * cell;
  if (slots && slot_cols > 12.0 * avail) slots = false;
  const double cols_per_ms = slots ? cell / unit : avail / std::max(r.makespan_ms, 1e-9);
  const int total_cols = static_cast<int>(std::lround(r.makespan_ms * cols_per_ms));
  const int band_cols = slots ? std::max(cell, avail / cell * cell) : std::max(total_cols, 1);

  // Characters and action type (for colour) of every column of every rank.
  std::vector<std::string> lines(s.pp, std::string(total_cols, '.'));
  std::vector<std::vector<int>> types(s.pp, std::vector<int>(total_cols, -1));
  for (int rank = 0; rank < s.pp; ++rank) {
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      const Action& a = s.ranks[rank][k];
      int c0 = static_cast<int>(std::lround(r.start_ms[rank][k] * cols_per_ms));
      int c1 = std::min(static_cast<int>(std::lround(r.end_ms[rank][k] * cols_per_ms)), total_cols);
      if (c1 <= c0) continue;
      std::string label = CellLabel(s, a);
      int w = c1 - c0;
      // Keep the block's last column as a separator when the label still fits.
      int room = w > static_cast<int>(label.size()) ? w - 1 : w;
      if (static_cast<int>(label.size()) > room) label = label.substr(0, room);
      for (int c = c0; c < c1; ++c) {
        lines[rank][c] = c - c0 < static_cast<int>(label.size()) ? label[c - c0] : ' ';
        types[rank][c] = static_cast<int>(a.type);
      }
    }
  }

  std::string out;
  for (int b0 = 0; b0 < total_cols || b0 == 0; b0 += band_cols) {
    const int b1 = std::min(total_cols, b0 + band_cols);
    if (b0 > 0) out += "\n";
    for (int rank = 0; rank < s.pp; ++rank) {
      out += fmt::format(fmt::runtime(prefix_fmt), rank);
      if (!opt.color) {
        out += lines[rank].substr(b0, b1 - b0);
      } else {
        int prev = -2;
        for (int c = b0; c < b1; ++c) {
          if (types[rank][c] != prev) {
            out += kReset;
            out += types[rank][c] < 0 ? kDim : AnsiColor(static_cast<ActionType>(types[rank][c]));
            prev = types[rank][c];
          }
          out += lines[rank][c];
        }
        out += kReset;
      }
      out += "|\n";
    }
    // Time axis under the band: a label about every ten columns, in ms.
    double step_ms;
    if (slots) {
      step_ms = unit * std::max(1.0, std::ceil(10.0 / cell));
    } else {
      double raw = 10.0 / cols_per_ms;
      double mag = std::pow(10.0, std::floor(std::log10(raw)));
      step_ms = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    }
    std::string axis(prefix_len + (b1 - b0) + 12, ' ');
    const double t0 = b0 / cols_per_ms, t1 = b1 / cols_per_ms;
    for (double t = std::ceil(t0 / step_ms - 1e-9) * step_ms + 0.0; t <= t1 + 1e-9; t += step_ms) {
      std::string label = fmt::format("{:g}", t);
      size_t col = prefix_len + static_cast<size_t>(std::lround(t * cols_per_ms)) - b0;
      if (col + label.size() < axis.size()) axis.replace(col, label.size(), label);
    }
    while (!axis.empty() && axis.back() == ' ') axis.pop_back();
    out += axis + "  (ms)\n";
  }
  std::string legend = "F forward  B backward  I input-grad  W weight-grad  FB overlapped pair  . idle";
  if (s.vpp > 1) legend += "  lowercase: the rank's later chunk";
  out += legend + "\n";
  return out;
}

}  // namespace infralens::render
