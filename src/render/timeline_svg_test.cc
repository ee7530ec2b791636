// The SVG timeline's colours: every label readable on its block (WCAG 2.x AA), and a rank's later
// chunks told apart by a band, not by a lighter shade that reads as another action type.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

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

}  // namespace
}  // namespace infralens::render
