// Rebuilding a plan from its JSON to recalibrate it (`trace compare`): the JSON is the user's
// file, so its names are looked up as presets only, never opened as paths.
#include "request/recalibrate.h"

#include <gtest/gtest.h>

#include <string>

namespace infralens::request {
namespace {

trace::Prediction PlanNaming(const std::string& model) {
  trace::Prediction p;
  p.format = "plan";
  p.step_time_us = 1e6;
  p.rebuild.model = model;
  p.rebuild.cluster = "dgx-h100";
  p.rebuild.has_fp32_gradients = true;
  return p;
}

TEST(RecalibrateTest, AModelNameIsAPresetNeverAPathOrStandardInput) {
  // "-" would be a config.json on standard input to io::ResolveModel, a path a file to read.
  for (const std::string name : {"-", "/etc/hostname", "no-such-model"}) {
    auto r = RecalibratePlan(PlanNaming(name), "");
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << name;
    EXPECT_NE(r.status().message().find("model '" + name + "' is not a preset"),
              std::string::npos)
        << r.status().message();
  }
  // A name of several lines is cut to one in the message.
  auto r = RecalibratePlan(PlanNaming("a\nb"), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace infralens::request
