// The launch-script expander on hand cases (bash's own rules for each form, checked by hand) and
// on upstream's two example scripts (tests/data/megatron_*.sh, NVIDIA/Megatron-LM d98e8a6), read
// through to the Megatron job they launch.
#include "io/launch_script.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "golden_test_util.h"
#include "io/megatron_args.h"

namespace infralens::io {
namespace {

std::string Fixture(const std::string& name) { return testing::ReadSource("tests/data/" + name); }

std::string Command(std::string_view script) {
  auto r = ExpandLaunchScript(script, "t.sh");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->command : "";
}

TEST(LaunchScriptTest, VariablesDefaultsAndQuoting) {
  // ${X:-d} takes d when X is unset or empty; ${X-d} only when unset; '...' is literal.
  EXPECT_EQ(Command("A=2\nB=\npython x.py --a $A --b ${B:-3} --c ${B-4} --d '$A' --e \"${A}0\""),
            "'python' 'x.py' '--a' '2' '--b' '3' '--c' '--d' '$A' '--e' '20'");
  // Line continuations, comments, export, and positional parameters (empty: defaults apply).
  EXPECT_EQ(Command("export TP=${1:-8} # tensor\ntorchrun \\\n  train.py \\\n  --tp $TP"),
            "'torchrun' 'train.py' '--tp' '8'");
}

TEST(LaunchScriptTest, ArraysSplitUnquotedAndKeepQuotedElements) {
  // ${A[@]} unquoted splits each element on spaces; "${A[@]}" keeps one word per element.
  EXPECT_EQ(Command("A=(\"--x 1\" --y)\nA+=(--z)\npython p.py ${A[@]}"),
            "'python' 'p.py' '--x' '1' '--y' '--z'");
  EXPECT_EQ(Command("A=(\"--x 1\" --y)\npython p.py \"${A[@]}\""), "'python' 'p.py' '--x 1' '--y'");
  // An array redefined from itself, and a command held in a variable (run elsewhere).
  EXPECT_EQ(Command("A=(--a)\nA=(\"${A[@]}\" --b 2)\nCMD=\"python p.py ${A[@]}\"\nsbatch <<EOF\n"
                    "$CMD\nEOF\n"),
            "python p.py --a --b 2");
}

TEST(LaunchScriptTest, ConditionsPickTheirBranch) {
  const char* script =
      "D=fp8\nX=()\n"
      "if [[ \"$D\" == \"fp8\" ]]; then\n  X+=(--fp8)\nelif [ \"$D\" = bf16 ]; then\n  X+=(--bf)\n"
      "else\n  X+=(--none)\nfi\n"
      "if [ -z \"$U\" ] && [ 3 -gt 2 ]; then X+=(--yes); fi\n"
      "if [ \"$D\" != fp8 ] || [ ! -n \"$D\" ]; then X+=(--no); fi\n"
      "python p.py ${X[@]}\n";
  auto r = ExpandLaunchScript(script, "t.sh");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->command, "'python' 'p.py' '--fp8' '--yes'");
  // $U was not set: said so.
  bool noted = false;
  for (const auto& n : r->notes) noted = noted || n.find("$U is not set") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(LaunchScriptTest, BadScriptsAreOneLineErrors) {
  for (const char* bad : {"python p.py '--a", "A=(--a\npython p.py",
                          "if [ 1 ]; then\npython p.py --a", "echo hi", "python p.py \"--a"}) {
    auto r = ExpandLaunchScript(bad, "t.sh");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    EXPECT_EQ(r.status().message().rfind("t.sh: ", 0), 0u) << r.status().message();
  }
}

TEST(LaunchScriptTest, UpstreamLlama3Fp8ScriptReadsAsItsJob) {
  auto e = ExpandLaunchScript(Fixture("megatron_llama3_8b_fp8.sh"), "llama.sh");
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto job = ReadMegatronArgs(e->command, "llama.sh");
  ASSERT_TRUE(job.ok()) << job.status().message();
  // The script's values (TP_SIZE=1, MICRO_BATCH_SIZE=1, GLOBAL_BATCH_SIZE=128, NUM_LAYERS=32,
  // SEQ_LENGTH=8192, DTYPE=fp8 adding --fp8-format hybrid; the MOCK branch's --vocab-size).
  EXPECT_EQ(job->model.num_layers, 32);
  EXPECT_EQ(job->model.hidden, 4096);
  EXPECT_EQ(job->model.ffn_hidden, 14336);
  EXPECT_EQ(job->model.num_kv_heads, 8);
  EXPECT_EQ(job->model.vocab, 128256);
  EXPECT_EQ(job->model.rope_theta, 1e6);
  EXPECT_EQ(job->parallel.tp, 1);
  EXPECT_EQ(job->parallel.zero_stage, 1);  // --use-distributed-optimizer
  EXPECT_EQ(job->micro_batch, 1);
  EXPECT_EQ(job->global_batch, 128);
  EXPECT_EQ(job->seq_len, 8192);
  EXPECT_EQ(job->precision, plan::Precision::kFp8);
  EXPECT_FALSE(job->fp32_gradients);  // --grad-reduce-in-bf16
  EXPECT_EQ(job->nodes, 1);
  EXPECT_EQ(job->gpus_per_node, 8);
}

TEST(LaunchScriptTest, UpstreamDeepSeekV3FsdpScriptReadsAsItsJob) {
  auto e = ExpandLaunchScript(Fixture("megatron_deepseek_v3_fsdp.sh"), "dsv3.sh");
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto job = ReadMegatronArgs(e->command, "dsv3.sh");
  ASSERT_TRUE(job.ok()) << job.status().message();
  const model::Model& m = job->model;
  EXPECT_EQ(m.num_layers, 61);
  EXPECT_EQ(m.num_experts, 256);
  EXPECT_EQ(m.first_dense_layers, 3);  // [0]*3+[1]*58
  EXPECT_EQ(m.kv_lora_rank, 512);
  EXPECT_TRUE(m.router_sigmoid);
  EXPECT_TRUE(m.router_bias);
  EXPECT_EQ(m.router_scale, 2.5);
  EXPECT_EQ(m.router_groups, 8);
  EXPECT_EQ(m.router_group_topk, 4);
  EXPECT_EQ(m.norm_eps, 1e-6);
  EXPECT_EQ(m.vocab, 0);           // the tokenizer's
  EXPECT_EQ(job->parallel.tp, 1);  // TP=${TP:-1}
  EXPECT_EQ(job->parallel.ep, 8);  // EP=${EP:-8}
  // USE_MEGATRON_FSDP=1 adds --use-megatron-fsdp with optim_grads_params: ZeRO-3.
  EXPECT_EQ(job->parallel.zero_stage, 3);
  EXPECT_EQ(job->micro_batch, 4);
  EXPECT_EQ(job->global_batch, 2048);
  EXPECT_EQ(job->seq_len, 4096);
  EXPECT_EQ(job->recompute, model::Recompute::kSelective);
  EXPECT_EQ(job->precision, plan::Precision::kBf16);
}

}  // namespace
}  // namespace infralens::io
