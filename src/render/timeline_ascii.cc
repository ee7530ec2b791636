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
  // Slot mode: the shortest positive duration as the unit, if every duration is a multiple of it.
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
  const int prefix_len = static_cast<int>(fmt::format(fmt::runtime(prefix_fmt), 0).size()) + 1;
  const int avail = std::max(20, opt.width - prefix_len);
  double cols_per_ms;
  const double cell = static_cast<double>(label_width) + 1;  // a label and a separator per slot
  if (slots && r.makespan_ms / unit * cell <= avail) {
    cols_per_ms = cell / unit;
  } else {
    slots = false;
    cols_per_ms = avail / std::max(r.makespan_ms, 1e-9);
  }
  const int total_cols = static_cast<int>(std::lround(r.makespan_ms * cols_per_ms));

  std::string out;
  for (int rank = 0; rank < s.pp; ++rank) {
    // Characters and the type (for colour) of every column.
    std::string line(total_cols, '.');
    std::vector<int> type_of(total_cols, -1);
    for (size_t k = 0; k < s.ranks[rank].size(); ++k) {
      const Action& a = s.ranks[rank][k];
      int c0 = static_cast<int>(std::lround(r.start_ms[rank][k] * cols_per_ms));
      int c1 = static_cast<int>(std::lround(r.end_ms[rank][k] * cols_per_ms));
      c1 = std::min(c1, total_cols);
      if (c1 <= c0) continue;
      std::string label = CellLabel(s, a);
      int w = c1 - c0;
      // Leave the last column of a block as a separator when it is wide enough.
      int room = w > 2 ? w - 1 : w;
      if (static_cast<int>(label.size()) > room) label = label.substr(0, room);
      for (int c = c0; c < c1; ++c) {
        int i = c - c0;
        line[c] = i < static_cast<int>(label.size()) ? label[i] : ' ';
        type_of[c] = static_cast<int>(a.type);
      }
    }
    out += fmt::format(fmt::runtime(prefix_fmt), rank);
    if (!opt.color) {
      out += line;
    } else {
      int prev = -2;
      for (int c = 0; c < total_cols; ++c) {
        if (type_of[c] != prev) {
          out += kReset;
          out += type_of[c] < 0 ? kDim : AnsiColor(static_cast<ActionType>(type_of[c]));
          prev = type_of[c];
        }
        out += line[c];
      }
      out += kReset;
    }
    out += "|\n";
  }
  // Time axis: a tick label every ~10 columns, in ms.
  std::string axis(prefix_len - 1, ' ');
  axis += "0";
  std::string ticks = axis;
  double step_ms = slots ? unit * std::max(1.0, std::ceil(10.0 / cell)) : 0;
  if (!slots) {
    double raw = 10.0 / cols_per_ms;
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    step_ms = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
  }
  std::string tick_line(prefix_len - 1 + total_cols + 12, ' ');
  for (double t = 0; t <= r.makespan_ms + 1e-9; t += step_ms) {
    std::string label = fmt::format("{:g}", t);
    int col = prefix_len - 1 + static_cast<int>(std::lround(t * cols_per_ms));
    if (col + label.size() < tick_line.size()) tick_line.replace(col, label.size(), label);
  }
  while (!tick_line.empty() && tick_line.back() == ' ') tick_line.pop_back();
  out += tick_line + "  (ms)\n";
  std::string legend = "F forward  B backward  I input-grad  W weight-grad  FB overlapped pair  . idle";
  if (s.vpp > 1) legend += "  lowercase: the rank's later chunk";
  out += legend + "\n";
  return out;
}

}  // namespace infralens::render
