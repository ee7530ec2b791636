#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/strings.h"
#include "render/palette.h"
#include "render/timeline.h"

namespace infralens::render {

using schedule::Action;
using schedule::ActionType;

namespace {

// WCAG 2.x contrast of the label on its block, at least 4.5:1 (AA): white on #0072B2 is 5.1:1;
// on #D55E00 white is only 3.9:1, black 5.4:1; black on the three light fills is above 7:1.
const char* TextColor(ActionType t) { return t == ActionType::kForward ? "#ffffff" : "#000000"; }

double NiceStep(double raw) {
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  return raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
}

// Draws one schedule: the geometry every part shares, and the document being written.
class SvgTimelineWriter {
 public:
  SvgTimelineWriter(const schedule::Schedule& s, const sim::SimResult& r)
      : s_(s), r_(r), scale_(kPlotW / std::max(r.makespan_ms, 1e-9)) {}

  std::string Render() && {
    Heading();
    for (int rank = 0; rank < s_.pp; ++rank) Lane(rank);
    // Cross-rank dependencies, drawn over the blocks: the end of what is waited for to the start
    // of the action that waits. On one rank the order is the dependency, so no arrow is drawn
    // there.
    int64_t actions = 0;
    for (const auto& rank_actions : s_.ranks) actions += static_cast<int64_t>(rank_actions.size());
    const bool deps_left_out = actions > kMaxSvgDependencyActions;
    if (!deps_left_out) DependencyArrows(actions);
    const double axis_y = TimeAxis();
    Legend(axis_y + 40, deps_left_out, actions);
    o_ += "</svg>\n";
    return std::move(o_);
  }

 private:
  static constexpr double kLeft = 78, kRight = 24, kTop = 64, kLane = 30, kGap = 6;
  static constexpr double kPlotW = 1000;

  double LaneY(int rank) const { return kTop + rank * (kLane + kGap); }
  double X(double ms) const { return kLeft + ms * scale_; }

  // The document's head: size, patterns, background, title and the metrics line.
  void Heading() {
    const double width = kLeft + kPlotW + kRight;
    const double lanes_h = s_.pp * (kLane + kGap);
    const double height = kTop + lanes_h + 90;
    o_ += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:g}\" height=\"{:g}\" viewBox=\"0 0 "
        "{:g} {:g}\" "
        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" role=\"img\">\n",
        width, height, width, height);
    o_ +=
        "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c8c8c8\" "
        "stroke-width=\"2\"/></pattern>"
        // A rank's later chunks keep their type's colour (a lighter F read as an I block) and
        // carry a striped band along the bottom, as the workbench draws them.
        "<pattern id=\"chunk\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" "
        "stroke=\"#000000\" stroke-opacity=\"0.6\" stroke-width=\"2\"/></pattern></defs>\n";
    o_ += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    o_ += fmt::format("<title>{} schedule, P={}, v={}, m={}</title>\n", XmlEscape(s_.name), s_.pp,
                      s_.vpp, s_.microbatches);
    o_ += fmt::format(
        "<text x=\"{:g}\" y=\"26\" font-size=\"18\" font-weight=\"bold\">{} — {} ranks, {} chunk{} "
        "per "
        "rank, {} microbatches</text>\n",
        kLeft, XmlEscape(s_.name), s_.pp, s_.vpp, s_.vpp == 1 ? "" : "s", s_.microbatches);
    int peak = 0;
    for (const auto& rm : r_.ranks) peak = std::max(peak, rm.peak_activations);
    o_ += fmt::format(
        "<text x=\"{:g}\" y=\"48\" font-size=\"13\" fill=\"#333\">makespan {:g} ms · bubble "
        "{:.1f}% of "
        "P×makespan · {:.1f}% inside rank spans · peak {} chunk activations</text>\n",
        kLeft, r_.makespan_ms, 100 * r_.bubble_fraction, 100 * r_.span_bubble_fraction, peak);
  }

  // A rank's label, its hatched lane and its actions' blocks.
  void Lane(int rank) {
    const double y = LaneY(rank);
    o_ += fmt::format(
        "<text x=\"{:g}\" y=\"{:g}\" font-size=\"13\" text-anchor=\"end\">rank {}</text>\n",
        kLeft - 8, y + kLane / 2 + 4.5, rank);
    // The whole lane is hatched; actions cover it, so what shows through is idle time.
    o_ += fmt::format(
        "<rect x=\"{:g}\" y=\"{:g}\" width=\"{:g}\" height=\"{:g}\" fill=\"url(#idle)\"/>\n", kLeft,
        y, kPlotW, kLane);
    for (size_t k = 0; k < s_.ranks[rank].size(); ++k) Block(rank, k, y);
  }

  // One action: its block (striped when on a later chunk), with its label where it fits.
  void Block(int rank, size_t k, double y) {
    const Action& a = s_.ranks[rank][k];
    double x0 = X(r_.start_ms[rank][k]);
    double w = (r_.end_ms[rank][k] - r_.start_ms[rank][k]) * scale_;
    if (w <= 0) return;
    bool later_chunk = s_.stage_chunk[a.stage] > 0;
    std::string label = CellLabel(s_, a);
    o_ += fmt::format("<g><title>rank {} · {} · stage {} · {:g}–{:g} ms</title>", rank,
                      schedule::ToString(a), a.stage, r_.start_ms[rank][k], r_.end_ms[rank][k]);
    o_ += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:g}\" width=\"{:.2f}\" height=\"{:g}\" fill=\"{}\" "
        "stroke=\"#ffffff\" stroke-width=\"1\"/>",
        x0, y, w, kLane, ColorsOf(a.type).svg_fill);
    if (later_chunk) {
      o_ += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:g}\" width=\"{:.2f}\" height=\"{:g}\" "
          "fill=\"url(#chunk)\"/>",
          x0, y + kLane * 0.65, w, kLane * 0.35);
    }
    double text_w = 7.0 * label.size();
    if (w >= text_w + 2) {
      o_ += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:g}\" font-size=\"11\" text-anchor=\"middle\" "
          "fill=\"{}\">{}</text>",
          x0 + w / 2, y + kLane / 2 + 4, TextColor(a.type), XmlEscape(label));
    } else if (w >= 9) {
      o_ += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:g}\" font-size=\"10\" text-anchor=\"middle\" "
          "fill=\"{}\">{}</text>",
          x0 + w / 2, y + kLane / 2 + 4, TextColor(a.type),
          a.type == ActionType::kOverlapFB ? a.microbatch : a.microbatch);
    }
    o_ += "</g>\n";
  }

  // An arrow from the end of each action to the start of each action on another rank that waits
  // for it, in a group with its marker.
  void DependencyArrows(int64_t actions) {
    std::vector<std::pair<int, size_t>> where;  // flattened position -> (rank, index)
    where.reserve(static_cast<size_t>(actions));
    for (int rank = 0; rank < s_.pp; ++rank) {
      for (size_t k = 0; k < s_.ranks[rank].size(); ++k) where.emplace_back(rank, k);
    }
    const std::vector<std::vector<int64_t>> deps = sim::ActionDependencies(s_);
    std::string arrows;
    for (size_t to = 0; to < deps.size() && to < where.size(); ++to) {
      const auto [to_rank, to_k] = where[to];
      for (int64_t from : deps[to]) {
        if (from < 0 || static_cast<size_t>(from) >= where.size()) continue;
        const auto [from_rank, from_k] = where[static_cast<size_t>(from)];
        if (from_rank == to_rank) continue;
        const double x1 = X(r_.end_ms[from_rank][from_k]);
        const double x2 = X(r_.start_ms[to_rank][to_k]);
        const double y1 = LaneY(from_rank) + kLane / 2;
        const double y2 = LaneY(to_rank) + kLane / 2;
        arrows += fmt::format(
            "<line class=\"dep\" x1=\"{:.2f}\" y1=\"{:g}\" x2=\"{:.2f}\" y2=\"{:g}\"/>\n", x1, y1,
            x2, y2);
      }
    }
    o_ +=
        "<defs><marker id=\"dep-head\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" "
        "fill=\"#000000\"/></marker></defs>\n";
    o_ +=
        "<g stroke=\"#000000\" stroke-opacity=\"0.55\" stroke-width=\"1\" "
        "marker-end=\"url(#dep-head)\"><title>a dependency between ranks: the end of what is "
        "waited for to the start of the action that waits</title>\n" +
        arrows + "</g>\n";
  }

  // The time axis under the lanes, ticks at a round step; returns its y.
  double TimeAxis() {
    const double lanes_h = s_.pp * (kLane + kGap);
    double axis_y = kTop + lanes_h + 4;
    o_ += fmt::format("<line x1=\"{:g}\" y1=\"{:g}\" x2=\"{:g}\" y2=\"{:g}\" stroke=\"#333\"/>\n",
                      kLeft, axis_y, kLeft + kPlotW, axis_y);
    double step = NiceStep(std::max(r_.makespan_ms, 1e-9) / 10);
    for (double t = 0; t <= r_.makespan_ms + 1e-9; t += step) {
      double x = X(t);
      o_ += fmt::format(
          "<line x1=\"{:.2f}\" y1=\"{:g}\" x2=\"{:.2f}\" y2=\"{:g}\" stroke=\"#333\"/>"
          "<text x=\"{:.2f}\" y=\"{:g}\" font-size=\"11\" text-anchor=\"middle\">{:g}</text>\n",
          x, axis_y, x, axis_y + 5, x, axis_y + 17, t);
    }
    o_ += fmt::format(
        "<text x=\"{:g}\" y=\"{:g}\" font-size=\"11\" text-anchor=\"end\">time (ms)</text>\n",
        kLeft + kPlotW, axis_y + 32);
    return axis_y;
  }

  // The colours and the hatch on one line at `ly`; under it, what the later chunks' marks and
  // the arrows mean.
  void Legend(double ly, bool deps_left_out, int64_t actions) {
    double lx = kLeft;
    const std::pair<ActionType, const char*> items[] = {
        {ActionType::kForward, "F forward"},
        {ActionType::kBackward, "B backward"},
        {ActionType::kBackwardInput, "I input grad"},
        {ActionType::kBackwardWeight, "W weight grad"},
        {ActionType::kOverlapFB, "F+B overlapped"}};
    for (const auto& [t, text] : items) {
      o_ += fmt::format(
          "<rect x=\"{:g}\" y=\"{:g}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
          "<text x=\"{:g}\" y=\"{:g}\" font-size=\"12\">{}</text>\n",
          lx, ly - 11, ColorsOf(t).svg_fill, lx + 19, ly, text);
      lx += 130;
    }
    o_ += fmt::format(
        "<rect x=\"{:g}\" y=\"{:g}\" width=\"14\" height=\"14\" fill=\"url(#idle)\" "
        "stroke=\"#ccc\"/>"
        "<text x=\"{:g}\" y=\"{:g}\" font-size=\"12\">idle (bubble)</text>\n",
        lx, ly - 11, lx + 19, ly);
    std::string notes = s_.vpp > 1 ? "lowercase, striped band: the rank's later chunk · " : "";
    notes += deps_left_out ? fmt::format("dependency arrows left out: {} actions (drawn up to {})",
                                         actions, kMaxSvgDependencyActions)
                           : "arrows: an action waits for the end of another on another rank";
    o_ += fmt::format("<text x=\"{:g}\" y=\"{:g}\" font-size=\"12\" fill=\"#333\">{}</text>\n",
                      kLeft, ly + 20, notes);
  }

  const schedule::Schedule& s_;
  const sim::SimResult& r_;
  const double scale_;  // SVG units per ms
  std::string o_;
};

}  // namespace

std::string RenderSvgTimeline(const schedule::Schedule& s, const sim::SimResult& r) {
  return SvgTimelineWriter(s, r).Render();
}

}  // namespace infralens::render
