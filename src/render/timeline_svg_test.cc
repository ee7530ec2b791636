// The SVG timeline's colours: every label readable on its block (WCAG 2.x AA), and a rank's later
// chunks told apart by a band, not by a lighter shade that reads as another action type.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "render/palette.h"
#include "render/timeline.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace infralens::render {
namespace {

// WCAG 2.x relative luminance of "#RRGGBB" and the contrast ratio (L1 + 0.05) / (L2 + 0.05).
double Luminance(const std::string& hex) {
  double c[3];
  for (int i = 0; i < 3; ++i) {
    const double v = std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16) / 255.0;
    c[i] = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  }
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
double Contrast(const std::string& a, const std::string& b) {
  const double la = Luminance(a), lb = Luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

std::string Render(const char* name, int pp, int m) {
  auto kind = schedule::ParseScheduleKind(name);
  EXPECT_TRUE(kind.ok()) << name;
  auto s = schedule::Generate(*kind, {pp, 0, m});
  EXPECT_TRUE(s.ok()) << s.status().message();
  sim::Costs costs;
  auto r = sim::Simulate(*s, costs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return RenderSvgTimeline(*s, *r);
}

TEST(TimelineSvgTest, ContrastFormulaByHand) {
  EXPECT_NEAR(Contrast("#000000", "#ffffff"), 21.0, 1e-9);
  EXPECT_NEAR(Contrast("#777777", "#ffffff"), 4.48, 0.01);  // the usual "just below AA" grey
}

TEST(TimelineSvgTest, EveryBlockLabelMeetsAA) {
  for (const char* name : {"interleaved-1f1b", "zb-h1", "dualpipev"}) {
    const std::string svg = Render(name, 4, 8);
    // A block is its rect (fill) and, where it is wide enough, the text right after it.
    // clang-format off
    static const std::regex block(
        "<rect [^>]*fill=\"(#[0-9A-Fa-f]{6})\"[^>]*/>"
        "(?:<rect [^>]*url\\(#chunk\\)\"/>)?"
        "<text [^>]*fill=\"(#[0-9A-Fa-f]{6})\"");
    // clang-format on
    int labels = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), block);
         it != std::sregex_iterator(); ++it) {
      ++labels;
      EXPECT_GE(Contrast((*it)[1], (*it)[2]), 4.5)
          << name << ": " << (*it)[2] << " on " << (*it)[1];
    }
    EXPECT_GT(labels, 16) << name;
  }
}

TEST(TimelineSvgTest, LaterChunksKeepTheirColourAndCarryABand) {
  const std::string svg = Render("interleaved-1f1b", 2, 4);  // v = 2: half the blocks are chunk 1
  EXPECT_EQ(svg.find("fill-opacity"), std::string::npos);
  size_t bands = 0;
  for (size_t at = svg.find("url(#chunk)"); at != std::string::npos;
       at = svg.find("url(#chunk)", at + 1))
    ++bands;
  // 2 ranks x 4 microbatches x (F + B) on the later chunk.
  EXPECT_EQ(bands, 16u);
  EXPECT_NE(svg.find("striped band: the rank's later chunk"), std::string::npos);
}

// The arrows' end points, in drawing order.
struct Arrow {
  double x1, y1, x2, y2;
};
std::vector<Arrow> Arrows(const std::string& svg) {
  static const std::regex line(
      "<line class=\"dep\" x1=\"([0-9.]+)\" y1=\"([0-9.]+)\" x2=\"([0-9.]+)\" y2=\"([0-9.]+)\"/>");
  std::vector<Arrow> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator();
       ++it) {
    out.push_back(
        {std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  }
  return out;
}

TEST(TimelineSvgTest, DependencyArrowsAreTheSendsBetweenStages) {
  // One stage per rank: each microbatch's forward crosses P - 1 rank boundaries, and so does its
  // backward: 2 (P - 1) m arrows, whatever the order on each rank.
  EXPECT_EQ(Arrows(Render("1f1b", 4, 8)).size(), 2u * 3 * 8);
  EXPECT_EQ(Arrows(Render("gpipe", 4, 8)).size(), 2u * 3 * 8);
  // Interleaved, P = 2, v = 2: stages 0..3 on ranks 0, 1, 0, 1, so all three hops of the forward
  // and of the backward change rank: 6 per microbatch.
  EXPECT_EQ(Arrows(Render("interleaved-1f1b", 2, 4)).size(), 6u * 4);
  // ZBV, P = 2: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2 (the V). Forward 0->1 and 2->3
  // change rank, 1->2 does not; the input gradients the same way back; W waits for its own I on
  // its own rank. 4 per microbatch.
  EXPECT_EQ(Arrows(Render("zbv", 2, 4)).size(), 4u * 4);
}

TEST(TimelineSvgTest, ArrowsRunForwardInTimeBetweenDifferentLanes) {
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-h1", "dualpipev"}) {
    const std::vector<Arrow> arrows = Arrows(Render(name, 4, 8));
    ASSERT_FALSE(arrows.empty()) << name;
    for (const Arrow& a : arrows) {
      EXPECT_LE(a.x1, a.x2 + 1e-6) << name;  // what waits starts after what it waits for ends
      EXPECT_NE(a.y1, a.y2) << name;         // never on one rank
    }
  }
}

TEST(TimelineSvgTest, LargeSchedulesLeaveTheArrowsOutAndSaySo) {
  const std::string small = Render("1f1b", 4, 64);  // 2 x 4 x 64 = 512 actions: drawn
  EXPECT_EQ(Arrows(small).size(), 2u * 3 * 64);
  const std::string large = Render("1f1b", 4, 65);  // 520 actions
  EXPECT_TRUE(Arrows(large).empty());
  EXPECT_NE(large.find("dependency arrows left out: 520 actions (drawn up to 512)"),
            std::string::npos);
}

// Every action type has its row in the palette: five types (schedule/action.h), five distinct
// fills, each a terminal colour too.
TEST(PaletteTest, EveryActionTypeHasItsOwnColours) {
  using schedule::ActionType;
  const ActionType all[] = {ActionType::kForward, ActionType::kBackward, ActionType::kBackwardInput,
                            ActionType::kBackwardWeight, ActionType::kOverlapFB};
  std::vector<std::string> fills;
  for (ActionType t : all) {
    const ActionColors c = ColorsOf(t);
    EXPECT_EQ(c.type, t);
    EXPECT_NE(std::string(c.svg_fill), "#999999");
    EXPECT_NE(std::string(c.ansi), "");
    for (const std::string& f : fills) EXPECT_NE(f, c.svg_fill);
    fills.emplace_back(c.svg_fill);
  }
  EXPECT_EQ(std::size(kActionColors), std::size(all));
}

}  // namespace
}  // namespace infralens::render
