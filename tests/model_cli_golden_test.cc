// Golden tests of what `model`, `memory` and `presets` print, plus checks of key numbers in the
// output against hand counts, and of the usage errors (exit 2, one line naming value and rule).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "golden_test_util.h"

namespace infralens::testing {
namespace {

TEST(ModelCliGoldenTest, Presets) {
  ExpectCliGolden({"presets"}, "presets.txt");
  ExpectCliGolden({"presets", "--json"}, "presets.json");
  auto gpus = RunCliCapture({"presets", "--kind", "gpus"});
  ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
  EXPECT_EQ(gpus.out.find("models:"), std::string::npos);
  EXPECT_NE(gpus.out.find("H100-SXM          989.4       1978.9       80      3.35"),
            std::string::npos)
      << gpus.out;
}

TEST(ModelCliGoldenTest, ModelText) {
  auto run = ExpectCliGolden({"model", "--model", "llama2-7b"}, "model_llama2-7b.txt");
  EXPECT_NE(run.out.find("6,738,415,616"), std::string::npos);  // model_test.cc's hand count
  auto moe = RunCliCapture({"model", "mixtral-8x7b"});          // positional form
  ASSERT_EQ(moe.exit_code, 0) << moe.err;
  ExpectGolden("model_mixtral-8x7b.txt", moe.out);
  EXPECT_NE(moe.out.find("12,879,925,248"), std::string::npos);
  // gpt-oss-120b: 18 of its 36 layers see a 128-token window. Per token and layer attention costs
  // 2 a (d + d) = 2 x 64 x 128 = 16,384 FLOPs per key; a full layer's 4096 / 2 = 2048 keys give
  // 33,554,432 (x 18 = 603,979,776), a windowed layer's 128 - 128^2 / 8192 = 126 keys 2,064,384
  // (x 18 = 37,158,912): 641,138,688 per token.
  auto oss = RunCliCapture({"model", "gpt-oss-120b"});
  ASSERT_EQ(oss.exit_code, 0) << oss.err;
  ExpectGolden("model_gpt-oss-120b.txt", oss.out);
  EXPECT_NE(oss.out.find("sliding window 128 in 18 of 36 layers"), std::string::npos) << oss.out;
  auto oss_json = RunCliCapture({"model", "gpt-oss-120b", "--json"});
  ASSERT_EQ(oss_json.exit_code, 0) << oss_json.err;
  EXPECT_NE(oss_json.out.find("\"attention_flops_per_token\": 641138688,"), std::string::npos)
      << oss_json.out;
  EXPECT_NE(oss_json.out.find("\"windowed_layers\": 18"), std::string::npos) << oss_json.out;
}

TEST(ModelCliGoldenTest, ModelJson) {
  auto run = ExpectCliGolden({"model", "--model", "deepseek-v3", "--json", "--global-batch", "16"},
                             "model_deepseek-v3.json");
  for (const char* key : {"\"parameters\": 671026419200,", "\"parameters_per_layer\": 11507286272,",
                          "\"embedding_parameters\": 926679040,",
                          "\"active_parameters\": 37552297472,", "\"flops_per_token\": "}) {
    EXPECT_NE(run.out.find(key), std::string::npos) << key;
  }
  // Llama-2 7B forward FLOPs per token at s = 4096 (model_test.cc): 14,287,896,576 with the
  // causal half of attention; training 3x.
  auto llama = RunCliCapture({"model", "--model", "llama2-7b", "--json"});
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  EXPECT_NE(llama.out.find("\"forward_flops_per_token\": 14287896576,"), std::string::npos);
  EXPECT_NE(llama.out.find("\"flops_per_token\": 42863689728,"), std::string::npos);
}

TEST(ModelCliGoldenTest, ModelFromConfigFile) {
  auto run =
      RunCliCapture({"model", "--model", SourcePath("fuzz/corpus/hf_config/gpt2.json"), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"parameters\": 124439808,"), std::string::npos)
      << run.out;  // GPT-2 small
}

TEST(ModelCliGoldenTest, MemoryText) {
  ExpectCliGolden({"memory", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--tp", "8", "--pp",
                   "8", "--dp", "8", "--sp", "--recompute", "selective", "--global-batch", "512"},
                  "memory_gpt3-175b_tp8_pp8_dp8.txt");
  ExpectCliGolden({"memory", "--model", "tiny", "--pp", "2", "--dp", "1", "--schedule", "gpipe",
                   "--global-batch", "6", "--recompute", "selective"},
                  "memory_tiny_gpipe.txt");
  // Master weights as BF16 remainders: the header says so, and Llama 2 7B on dp 8 under ZeRO-1
  // holds 10 x 6,738,415,616 / 8 bytes of optimizer state, 7.84 GiB (12 bytes: 9.41 GiB).
  auto run = RunCliCapture({"memory", "--model", "llama2-7b", "--gpus", "8", "--zero", "1",
                            "--master-weights", "bf16_remainders"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("bf16, master weights as BF16 remainders\n"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(" 7.84 "), std::string::npos) << run.out;
}

TEST(ModelCliGoldenTest, MemoryJson) {
  auto run = ExpectCliGolden(With(With({"memory", "--model", "llama3-70b", "--cluster", "dgx-h100"},
                                       Tp8Pp4Vpp5Interleaved()),
                                  {"--dp", "4", "--distributed-optimizer", "--sp", "--recompute",
                                   "selective", "--global-batch", "64", "--json"}),
                             "memory_llama3-70b_interleaved.json");
  for (const char* key :
       {"\"weights_bytes\":", "\"gradients_bytes\":", "\"optimizer_bytes\":",
        "\"activations_bytes\":", "\"total_bytes\":", "\"fits\": true", "\"ranks\": ["}) {
    EXPECT_NE(run.out.find(key), std::string::npos) << key;
  }
  // Megatron's interleaved penalty: rank 0 holds p v + p - 1 = 23 chunks.
  EXPECT_NE(run.out.find("\"peak_in_flight_chunks\": 23,"), std::string::npos);
  // ZeRO's example through the CLI: SC21 7.5B GPT (7,467,786,240 parameters) on 64 GPUs, stage 3:
  // 16 bytes x parameters / 64 = 1,866,946,560 bytes of model states.
  auto zero = RunCliCapture({"memory", "--model", "gpt-7.5b", "--dp", "64", "--fsdp", "--json"});
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_NE(zero.out.find("\"weights_bytes\": 233368320,"), std::string::npos) << zero.out;
  EXPECT_NE(zero.out.find("\"optimizer_bytes\": 1400209920,"), std::string::npos) << zero.out;
}

// FP8 memory by whose FP8 it is: Llama 2 7B (6,738,415,616 parameters, 32 layers of 202,383,360)
// unsharded on 8 GPUs. Transformer Engine's (delayed, the default) adds an FP8 copy and an FP8
// transpose of every layer weight, 2 x 6,476,267,520 bytes, to the 13,476,831,232 of BF16
// weights, and stores less activation than BF16; torchao's (tensorwise) neither: its weights and
// activations are BF16's.
TEST(ModelCliGoldenTest, MemoryFp8ByRecipe) {
  auto field = [](const std::string& json, const std::string& key) {
    const size_t at = json.find("\"" + key + "\": ");
    EXPECT_NE(at, std::string::npos) << key;
    return at == std::string::npos ? -1.0 : std::stod(json.substr(at + key.size() + 4));
  };
  const std::vector<std::string> base = {"memory",   "--model", "llama2-7b", "--cluster",
                                         "dgx-h100", "--dp",    "8",         "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = RunCliCapture(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  };
  const std::string bf16 = with({}), te = with({"--precision", "fp8"}),
                    torchao = with({"--precision", "fp8", "--fp8-recipe", "tensorwise"});
  EXPECT_EQ(field(bf16, "weights_bytes"), 13476831232.0);
  EXPECT_EQ(field(te, "weights_bytes"), 13476831232.0 + 2 * 6476267520.0);
  EXPECT_EQ(field(torchao, "weights_bytes"), 13476831232.0);
  EXPECT_EQ(field(torchao, "activations_bytes"), field(bf16, "activations_bytes"));
  EXPECT_LT(field(te, "activations_bytes"), field(bf16, "activations_bytes"));
  EXPECT_NE(te.find("\"fp8_recipe\": \"delayed\""), std::string::npos);
  EXPECT_NE(torchao.find("\"fp8_recipe\": \"tensorwise\""), std::string::npos);
}

TEST(ModelCliGoldenTest, Help) {
  for (const char* cmd : {"model", "memory", "presets"}) {
    auto run = RunCliCapture({cmd, "--help"});
    ASSERT_EQ(run.exit_code, 0) << cmd;
    ExpectGolden(std::string(cmd) + "_help.txt", run.out);
  }
}

TEST(ModelCliGoldenTest, UsageErrorsExitTwoWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"model", "--model", "llama2-7"}, "did you mean 'llama2-7b'?"},
      {{"memory", "--model", "llama2-7b", "--tp", "64"},
       "--tp 64: larger than the 32 attention heads of llama2-7b"},
      {{"memory", "--model", "llama2-7b", "--tp", "3"},
       "--tp 3: does not divide the 32 attention heads"},
      {{"memory", "--model", "llama2-7b", "--pp", "3"},
       "do not split evenly into pp*vpp = 3 chunks"},
      {{"memory", "--model", "llama2-7b", "--cluster", "dgx-h10"}, "did you mean dgx-h100?"},
      {{"memory", "--model", "llama2-7b", "--gpu", "H100-SXM"},
       "--gpu: memory takes the cluster's GPU"},
      // dp is derived from the GPU count (one node when none is given), as plan derives it.
      {{"memory", "--model", "llama2-7b", "--tp", "4", "--pp", "4"},
       "multiply to 16, which does not divide the cluster's 8 GPUs"},
      {{"memory", "--model", "tiny", "--zero", "4"}, "--zero 4: must be between 0 and 3"},
      {{"memory", "--model", "tiny", "--recompute", "some"},
       "--recompute some: expected none, selective, full or op-sac"},
      {{"memory", "--model", SourcePath("fuzz/corpus/hf_config/bad_type.json")},
       "hidden_size is \"64\""},
      {{"memory"}, "--model: required"},
      {{"memory", "--model", "tiny", "--fp8-recipe", "mxfp4"},
       "--fp8-recipe 'mxfp4': expected delayed or tensorwise"},
      {{"memory", "--model", "tiny", "--fp8-param-gather", "maybe"},
       "--fp8-param-gather 'maybe': expected yes or no"},
      {{"plan", "--model", "tiny", "--global-batch", "8", "--fp8-param-gather", "1"},
       "--fp8-param-gather '1': expected yes or no"},
      {{"plan", "--model", "tiny", "--global-batch", "8", "--fused-projections", "fused"},
       "--fused-projections 'fused': expected yes or no"},
      {{"plan", "--model", "tiny", "--global-batch", "8", "--cp-exchange", "allgather"},
       "--cp-exchange 'allgather': expected ring or all_gather"},
      {{"plan", "--model", "tiny", "--global-batch", "8", "--cp-kv-heads", "gqa"},
       "--cp-kv-heads 'gqa': expected kv or query"},
      {{"memory", "--model", "tiny", "--master-weights", "bf16"},
       "--master-weights 'bf16': expected fp32 or bf16_remainders"},
      {{"memory", "--model", "tiny", "--cpu-offload-layers", "-1"},
       "--cpu-offload-layers '-1': expected a layer count from 0 to 100000"},
      {{"memory", "--model", "llama2-7b", "--recompute", "none", "--cpu-offload-layers", "32"},
       "--cpu-offload-layers 32: expected 0 to 31"},
      {{"memory", "--model", "llama2-7b", "--pp", "2", "--recompute", "none",
        "--cpu-offload-layers", "8"},
       "--cpu-offload-layers 8: Megatron-Core offloads activations only without pipeline"},
      {{"plan", "--model", "llama2-7b", "--global-batch", "8", "--recompute", "full",
        "--cpu-offload-layers", "8"},
       "--cpu-offload-layers 8: Megatron-Core refuses activation offloading with recomputation"},
      {{"presets", "--kind", "clusterz"}, "--kind clusterz: expected all, models, gpus"},
  };
  for (const auto& [args, needle] : cases) {
    auto run = RunCliCapture(args);
    // A malformed config.json is a failure of the file (1), the rest usage errors (docs/cli.md).
    const bool file = args.size() > 2 && args[2].find("bad_type.json") != std::string::npos;
    EXPECT_EQ(run.exit_code, file ? 1 : 2) << args[0] << " " << needle << ": " << run.err;
    EXPECT_NE(run.err.find(needle), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
    EXPECT_TRUE(run.out.empty());
  }
  // A config.json missing a field is a usage error too; a missing file is a failure (exit 1).
  auto missing = RunCliCapture({"model", "--model", "/nonexistent/config.json"});
  EXPECT_EQ(missing.exit_code, 1);
}

}  // namespace
}  // namespace infralens::testing
