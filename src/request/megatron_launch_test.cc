// plan --from-megatron's mapping: upstream's DeepSeek-V3 script (tests/data/
// megatron_deepseek_v3_fsdp.sh) becomes the request and layout the planner evaluates.
#include "request/megatron_launch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "golden_test_util.h"
#include "plan/planner.h"

namespace infralens::request {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream f(testing::SourcePath("tests/data/" + name));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(MegatronLaunchTest, DeepSeekV3ScriptBecomesTheEvaluatedLayout) {
  RequestFlags rf;
  rf.cf.gpus = 256;  // the script leaves the node count to sbatch
  auto user = [](const std::string& f) { return f == "--gpus"; };
  auto launch = ApplyMegatronLaunch(Fixture("megatron_deepseek_v3_fsdp.sh"), "dsv3.sh", user, &rf);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  // No --vocab-size: the deepseek-v3 preset's 129280, said in a note.
  EXPECT_EQ(rf.tf.model_given->vocab, 129280);
  auto given = [&](const std::string& f) { return user(f) || launch->given.count(f) > 0; };
  auto req = rf.Request(given);
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_EQ(req->global_batch, 2048);
  auto lay = rf.Layout(given, *req);
  ASSERT_TRUE(lay.ok() && lay->has_value());
  const plan::Layout& l = **lay;
  EXPECT_EQ(l.parallel.tp, 1);
  EXPECT_EQ(l.parallel.ep, 8);
  EXPECT_EQ(l.parallel.dp, 256);  // 256 GPUs / (tp 1 x pp 1 x cp 1)
  EXPECT_EQ(l.parallel.zero_stage, 3);
  EXPECT_EQ(l.micro_batch, 4);
  EXPECT_EQ(l.recompute, model::Recompute::kSelective);
  // 2048 = 4 x 256 x 2: two microbatches per rank.
  auto r = plan::EvaluateMemory(*req, l);
  EXPECT_TRUE(r.ok()) << r.status().message();
  bool unknown_listed = false;
  for (const auto& n : launch->notes)
    unknown_listed = unknown_listed || n.find("--mtp-num-layers") != std::string::npos;
  EXPECT_TRUE(unknown_listed);
  // Its --recompute-modules mlp moe mla_up_proj layernorm is more than the plan's selective.
  bool recompute_noted = false;
  for (const auto& n : launch->notes)
    recompute_noted = recompute_noted || n.find("upper bound") != std::string::npos;
  EXPECT_TRUE(recompute_noted);
}

TEST(MegatronLaunchTest, ScriptAndFlagsMayNotBothGiveTheLayout) {
  RequestFlags rf;
  auto launch = ApplyMegatronLaunch(
      Fixture("megatron_llama3_8b_fp8.sh"), "l.sh",
      [](const std::string& f) { return f == "--tp"; }, &rf);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.status().message().find("--tp"), std::string::npos);
}

// The script's --use-precision-aware-optimizer keeps the master weights as BF16 remainders, unless
// the user's own --master-weights says otherwise.
TEST(MegatronLaunchTest, PrecisionAwareOptimizerKeepsRemaindersUnlessTheUserSaysOtherwise) {
  const std::string script =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
      "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
      "--micro-batch-size 1 --global-batch-size 8 --vocab-size 256 --use-distributed-optimizer "
      "--use-precision-aware-optimizer";
  for (const bool user_says_fp32 : {false, true}) {
    RequestFlags rf;
    if (user_says_fp32) rf.master_weights = "fp32";
    auto user = [&](const std::string& f) { return user_says_fp32 && f == "--master-weights"; };
    auto launch = ApplyMegatronLaunch(script, "s.sh", user, &rf);
    ASSERT_TRUE(launch.ok()) << launch.status().message();
    auto given = [&](const std::string& f) { return user(f) || launch->given.count(f) > 0; };
    auto req = rf.Request(given);
    ASSERT_TRUE(req.ok()) << req.status().message();
    EXPECT_EQ(req->master_weight_remainders, !user_says_fp32);
  }
}

}  // namespace
}  // namespace infralens::request
