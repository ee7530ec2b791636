#include <gtest/gtest.h>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

TEST(CommPlanGoldenTest, Llama70bOnEightDgxH100) {
  ExpectCliGolden({"comm-plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--nodes", "8",
                   "--tp", "8", "--pp", "2", "--dp", "4", "--sp", "--distributed-optimizer",
                   "--recompute", "selective", "--global-batch", "256"},
                  "comm_plan_llama3_70b.txt");
}

TEST(CommPlanGoldenTest, MixtralJson) {
  ExpectCliGolden({"comm-plan",   "--model",   "mixtral-8x7b",
                   "--cluster",   "dgx-h100",  "--nodes",
                   "8",           "--tp",      "2",
                   "--pp",        "4",         "--dp",
                   "8",           "--ep",      "8",
                   "--sp",        "--zero",    "1",
                   "--recompute", "selective", "--global-batch",
                   "256",         "--json"},
                  "comm_plan_mixtral.json");
}

TEST(CommPlanGoldenTest, BadLayoutIsOneLineExitTwo) {
  auto run = RunCliCapture({"comm-plan", "--model", "llama3-70b", "--cluster", "dgx-h100",
                            "--nodes", "8", "--tp", "16", "--pp", "2"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

}  // namespace
}  // namespace infralens::testing
