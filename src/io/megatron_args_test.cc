// The Megatron-LM reader: exports read back into the model and layout they were made from (the
// round trip), Megatron's own defaults for a command that omits flags (arguments.py), and every
// flag an export emits checked against the flags of a pinned upstream arguments.py
// (tests/data/megatron_arguments_flags.txt, made by tools/megatron_flags.py).
#include "io/megatron_args.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cluster/cluster.h"
#include "golden_test_util.h"
#include "hw/gpu.h"
#include "io/export_megatron.h"
#include "model/presets.h"
#include "plan/testing.h"

namespace infralens::io {
namespace {

using plan::testing::PresetRequest;

plan::Layout Lay(int tp, int pp, int dp, int ep, int zero, int vpp, int64_t mb,
                 model::Recompute rc) {
  return plan::LayoutOf(
      tp, pp, dp, /*cp=*/1, ep, zero, vpp, mb,
      vpp > 1 ? schedule::ScheduleKind::kInterleaved1F1B : schedule::ScheduleKind::k1F1B, rc);
}

// Every architectural fact the planner uses, compared field by field (the vocabulary is the
// tokenizer's, outside Megatron's arguments: the reader leaves it 0, the test puts it back).
void ExpectSameModel(const model::Model& want, model::Model got) {
  const std::string n = want.name;
  got.vocab = want.vocab;
  EXPECT_EQ(got.num_layers, want.num_layers) << n;
  EXPECT_EQ(got.hidden, want.hidden) << n;
  EXPECT_EQ(got.num_heads, want.num_heads) << n;
  if (!want.is_mla()) {
    EXPECT_EQ(got.num_kv_heads, want.num_kv_heads) << n;
    EXPECT_EQ(got.head_dim, want.head_dim > 0 ? want.head_dim : want.hidden / want.num_heads) << n;
  }
  if (model::NumMoeLayers(want) < want.num_layers) {
    EXPECT_EQ(got.ffn_hidden, want.ffn_hidden) << n;
  }
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings) << n;
  EXPECT_EQ(got.gated_mlp, want.gated_mlp) << n;
  EXPECT_EQ(got.layernorm, want.layernorm) << n;
  EXPECT_EQ(got.learned_positions > 0, want.learned_positions > 0) << n;
  EXPECT_EQ(got.qkv_bias, want.qkv_bias) << n;
  EXPECT_EQ(got.out_bias, want.out_bias) << n;
  EXPECT_EQ(got.mlp_bias, want.mlp_bias) << n;
  EXPECT_EQ(got.rope_theta, want.rope_theta) << n;
  EXPECT_EQ(got.attention_dropout, want.attention_dropout) << n;
  EXPECT_EQ(got.hidden_dropout, want.hidden_dropout) << n;
  EXPECT_EQ(got.num_experts, want.num_experts) << n;
  EXPECT_EQ(got.top_k, want.top_k) << n;
  EXPECT_EQ(got.expert_ffn_hidden, want.expert_ffn_hidden) << n;
  EXPECT_EQ(got.num_shared_experts * got.shared_expert_ffn_hidden,
            want.num_shared_experts * want.shared_expert_ffn_hidden)
      << n;
  EXPECT_EQ(got.router_bias, want.router_bias) << n;
  // What else changes the model trained (issue 22): norms, RoPE scaling, routing.
  EXPECT_EQ(got.norm_eps, want.norm_eps) << n;
  EXPECT_EQ(got.qk_norm, want.qk_norm) << n;
  EXPECT_EQ(got.rope_scaling, want.rope_scaling) << n;
  EXPECT_EQ(got.rope_factor, want.rope_factor) << n;
  EXPECT_EQ(got.router_sigmoid, want.router_sigmoid) << n;
  EXPECT_EQ(got.router_scale, want.router_scale) << n;
  EXPECT_EQ(got.router_groups, want.router_groups) << n;
  EXPECT_EQ(got.router_group_topk, want.router_group_topk) << n;
  EXPECT_EQ(got.sliding_window, want.sliding_window) << n;
  EXPECT_EQ(got.sliding_window_full_every, want.sliding_window_full_every) << n;
  for (int64_t i = 0; i < want.num_layers; ++i) {
    EXPECT_EQ(model::IsMoeLayer(got, i), model::IsMoeLayer(want, i)) << n << " layer " << i;
  }
  EXPECT_EQ(got.q_lora_rank, want.q_lora_rank) << n;
  EXPECT_EQ(got.kv_lora_rank, want.kv_lora_rank) << n;
  if (want.is_mla()) {
    EXPECT_EQ(got.qk_nope_head_dim, want.qk_nope_head_dim) << n;
    EXPECT_EQ(got.qk_rope_head_dim, want.qk_rope_head_dim) << n;
    EXPECT_EQ(got.v_head_dim, want.v_head_dim) << n;
  }
  // The sum of it all: the same parameters, total and active per token.
  if (want.learned_positions == 0 || want.learned_positions == got.learned_positions) {
    const model::ParamCounts a = model::CountParameters(want), b = model::CountParameters(got);
    EXPECT_EQ(a.total, b.total) << n;
    EXPECT_EQ(a.active, b.active) << n;
  }
}

// What a Megatron-LM export of `lay` reads back as: the export's error, the reader's, or the job.
StatusOr<MegatronJob> ExportedJob(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(const ExportedConfig out, ExportMegatron(req, lay));
  return ReadMegatronArgs(out.text, "export");
}

void ExpectSameLayout(const plan::Layout& want, const MegatronJob& got, const std::string& n) {
  const plan::ParallelConfig& w = want.parallel;
  const plan::ParallelConfig& g = got.parallel;
  EXPECT_EQ(g.tp, w.tp) << n;
  EXPECT_EQ(g.pp, w.pp) << n;
  EXPECT_EQ(g.vpp, w.vpp > 0 ? w.vpp : 1) << n;
  EXPECT_EQ(g.dp, w.dp) << n;
  EXPECT_EQ(g.cp, w.cp) << n;
  EXPECT_EQ(g.ep, w.ep) << n;
  EXPECT_EQ(g.zero_stage, w.zero_stage) << n;
  EXPECT_EQ(g.sequence_parallel, w.sequence_parallel) << n;
  EXPECT_EQ(g.first_stage_layers, w.first_stage_layers) << n;
  EXPECT_EQ(g.last_stage_layers, w.last_stage_layers) << n;
  EXPECT_EQ(g.embedding_in_split, w.embedding_in_split) << n;
  EXPECT_EQ(g.loss_in_split, w.loss_in_split) << n;
  EXPECT_EQ(g.layout, w.layout) << n;
  EXPECT_EQ(got.recompute, want.recompute) << n;
  EXPECT_EQ(got.micro_batch, want.micro_batch) << n;
}

TEST(MegatronArgsTest, EveryPresetRoundTripsThroughTheExport) {
  int checked = 0;
  for (const model::ModelPreset& preset : model::ModelPresets()) {
    const model::Model& m = preset.model;
    // One node of plain data parallelism with the distributed optimizer, and two nodes of
    // TP 2 x (PP 2 where the layers split) under Megatron FSDP with full recompute.
    const bool pp2 = m.num_layers % 2 == 0;
    struct Case {
      int nodes;
      plan::Layout lay;
    };
    std::vector<Case> cases = {
        {1, Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective)},
        {2, Lay(2, pp2 ? 2 : 1, pp2 ? 4 : 8, 1, 3, 1, 2, model::Recompute::kFull)},
    };
    if (m.is_moe()) cases.push_back({1, Lay(1, 1, 8, 8, 1, 1, 1, model::Recompute::kNone)});
    for (const Case& c : cases) {
      const plan::PlanRequest req = PresetRequest(m, c.nodes, 64, 0);
      auto out = ExportMegatron(req, c.lay);
      if (!out.ok()) continue;  // a layout this model's heads or batch refuse
      auto job = ReadMegatronArgs(out->text, "export");
      ASSERT_TRUE(job.ok()) << m.name << ": " << job.status().message() << "\n" << out->text;
      ExpectSameModel(m, job->model);
      ExpectSameLayout(c.lay, *job, m.name + " " + c.lay.ToString());
      EXPECT_EQ(job->global_batch, 64);
      EXPECT_EQ(job->nodes, c.nodes);
      EXPECT_EQ(job->gpus_per_node, 8);
      EXPECT_TRUE(job->ignored.empty()) << m.name << ": " << job->ignored.front();
      ++checked;
    }
  }
  // Every preset at least once (each has a layout above that its heads and layers allow).
  EXPECT_GE(checked, static_cast<int>(model::ModelPresets().size()));
}

// FP8 parameters round-trip through the export's --fp8-param-gather (Megatron-LM 000c4ac's flag,
// tests/data/megatron_arguments_flags.txt); BF16, or torchao's recipe, never writes it.
TEST(MegatronArgsTest, Fp8ParametersRoundTrip) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 64, 0);
  const plan::Layout lay = Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective);
  req.precision = plan::Precision::kFp8;
  for (const bool fp8_params : {true, false}) {
    req.fp8_param_gather = fp8_params;
    auto job = ExportedJob(req, lay);
    ASSERT_TRUE(job.ok()) << job.status().message();
    EXPECT_EQ(job->precision, plan::Precision::kFp8);
    EXPECT_EQ(job->fp8_param_gather, fp8_params);
  }
  req.fp8_param_gather = true;
  req.fp8_transformer_engine = false;
  auto torchao = ExportMegatron(req, lay);
  ASSERT_TRUE(torchao.ok()) << torchao.status().message();
  EXPECT_EQ(torchao->text.find("--fp8-param-gather"), std::string::npos);
}

// Master weights as BF16 remainders round-trip through --use-precision-aware-optimizer (with the
// distributed optimizer); FP16 main params (--main-params-dtype fp16) are not remainders.
TEST(MegatronArgsTest, MasterWeightRemaindersRoundTrip) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 64, 0);
  const plan::Layout lay = Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective);
  for (const bool remainders : {true, false}) {
    req.master_weight_remainders = remainders;
    auto job = ExportedJob(req, lay);
    ASSERT_TRUE(job.ok()) << job.status().message();
    EXPECT_EQ(job->master_weight_remainders, remainders);
  }
  auto fp16 = ReadMegatronArgs(
      "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
      "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
      "--use-distributed-optimizer --use-precision-aware-optimizer --main-params-dtype fp16",
      "script");
  ASSERT_TRUE(fp16.ok()) << fp16.status().message();
  EXPECT_FALSE(fp16->master_weight_remainders);
}

// Activation offloading (Megatron's --cpu-offloading-num-layers; validate_args turns
// cpu_offloading on from it): exported where the layout offloads, read back as the job's. A
// recipe's offloading on a layout with recomputation does not run (Megatron-Core refuses the
// two together), so the flag is left out.
TEST(MegatronArgsTest, CpuOffloadRoundTrip) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 64, 0);
  req.cpu_offload_layers = 12;
  const plan::Layout none = Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kNone);
  auto out = ExportMegatron(req, none);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->text.find("--cpu-offloading-num-layers 12"), std::string::npos) << out->text;
  auto job = ReadMegatronArgs(out->text, "export");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->cpu_offload_layers, 12);
  EXPECT_EQ(job->recompute, model::Recompute::kNone);
  auto selective = ExportMegatron(req, Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective));
  ASSERT_TRUE(selective.ok()) << selective.status().message();
  EXPECT_EQ(selective->text.find("--cpu-offloading"), std::string::npos);
}

// Selective recompute's modules (Megatron-Core's --recompute-modules, nargs='*'): written as
// separate words in Megatron's order only where they are not its default core_attn, read back as
// the same set; a module Megatron-Core does not know is a one-line error naming it.
TEST(MegatronArgsTest, RecomputeModulesRoundTrip) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 64, 0);
  req.recompute_modules = {model::kRecomputeMlp | model::kRecomputeCoreAttn};
  const plan::Layout lay = Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective);
  auto out = ExportMegatron(req, lay);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->text.find("--recompute-modules core_attn mlp"), std::string::npos) << out->text;
  auto job = ReadMegatronArgs(out->text, "export");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->recompute, model::Recompute::kSelective);
  EXPECT_EQ(job->recompute_modules, req.recompute_modules);

  // A layout's own list (a search's heavier one) over the request's.
  plan::Layout own = lay;
  own.recompute_modules = model::RecomputeModules{model::kRecomputeLayernorm};
  auto layouts = ExportMegatron(req, own);
  ASSERT_TRUE(layouts.ok()) << layouts.status().message();
  EXPECT_NE(layouts->text.find("--recompute-modules layernorm"), std::string::npos)
      << layouts->text;
  EXPECT_EQ(layouts->text.find("core_attn"), std::string::npos) << layouts->text;

  req.recompute_modules = {};
  auto plain = ExportMegatron(req, lay);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->text.find("--recompute-modules"), std::string::npos);
  auto back = ReadMegatronArgs(plain->text, "export");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->recompute_modules, model::RecomputeModules{});

  const auto selective = [](const std::string& modules) {
    return ReadMegatronArgs(
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--max-position-embeddings 128 --recompute-granularity selective --recompute-modules " +
            modules,
        "run.sh");
  };
  // The flag with no value is an empty list: selective recompute of nothing.
  auto empty = selective("--micro-batch-size 2");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->recompute, model::Recompute::kNone);
  EXPECT_EQ(empty->micro_batch, 2);
  auto bad = selective("core_attn moe_mlp");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("run.sh: --recompute-modules"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("no module moe_mlp"), std::string::npos);
}

TEST(MegatronArgsTest, UnevenStagesAndInterleavingRoundTrip) {
  // Llama 3.1 405B (126 layers): Meta's pp 16 with 7-layer end stages (7 + 14 x 8 + 7 = 126,
  // Dubey et al. 2024 sec. 3.3.2), and Megatron's recipe pp 8 x vpp 8 with the embedding and the
  // loss counted as layers ((126 + 2) / 8 = 16 per rank).
  const model::Model m = *model::FindPreset("llama3-405b");
  plan::Layout meta = Lay(8, 16, 16, 1, 1, 1, 1, model::Recompute::kNone);
  meta.parallel.first_stage_layers = 7;
  meta.parallel.last_stage_layers = 7;
  plan::Layout recipe = Lay(8, 8, 32, 1, 1, 8, 1, model::Recompute::kNone);
  recipe.parallel.embedding_in_split = true;
  recipe.parallel.loss_in_split = true;
  for (const plan::Layout& lay : {meta, recipe}) {
    auto job = ExportedJob(PresetRequest(m, 256, 2048, 8192), lay);
    ASSERT_TRUE(job.ok()) << job.status().message();
    ExpectSameLayout(lay, *job, lay.ToString());
    EXPECT_EQ(job->seq_len, 8192);
  }
}

TEST(MegatronArgsTest, GeneralLayoutRoundTrips) {
  // DeepSeek-V3's 61 layers over pp 8 x vpp 2 as Megatron-Core's layout string: exported as
  // --pipeline-model-parallel-layout (no vpp flag: the layout implies it), read back with
  // vpp = 16 stages / pp 8 = 2.
  const model::Model m = *model::FindPreset("deepseek-v3");
  plan::Layout lay = Lay(1, 8, 32, 32, 1, 2, 1, model::Recompute::kFull);
  lay.parallel.layout = "Ett|(tttt|)*14tttL";
  auto out = ExportMegatron(PresetRequest(m, 32, 4096, 4096), lay);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->text.find("--pipeline-model-parallel-layout 'Ett|(tttt|)*14tttL'"),
            std::string::npos)
      << out->text;
  EXPECT_EQ(out->text.find("virtual"), std::string::npos) << out->text;
  auto job = ReadMegatronArgs(out->text, "export");
  ASSERT_TRUE(job.ok()) << job.status().message();
  ExpectSameLayout(lay, *job, "deepseek-v3 layout");
  EXPECT_EQ(job->parallel.layout, lay.parallel.layout);
  // A layout whose stages are not a multiple of pp is refused, naming the flag.
  auto bad = ReadMegatronArgs(
      "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 8 "
      "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et|t|ttL'",
      "run.sh");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("3 stages, not a multiple of pp = 2"), std::string::npos)
      << bad.status().message();
}

TEST(MegatronArgsTest, AbsentFlagsTakeMegatronsDefaults) {
  // A GPT-2-style command written by hand: nothing but the shape. arguments.py's defaults are
  // learned absolute positions, LayerNorm, GeLU (4h), biases, dropout 0.1, tied embeddings,
  // multi-head attention, no recompute, and tp = pp = cp = 1.
  const std::string cmd =
      "#!/bin/bash\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1  # a comment\n"
      "torchrun --nproc_per_node=4 --nnodes 2 pretrain_gpt.py \\\n"
      "  --num-layers 12 --hidden-size 768 \\\n"
      "  --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024 \\\n"
      "  --lr 6e-4 --data-path \"my data\" other --vocab-size 50257\n"
      "echo done\n";
  auto job = ReadMegatronArgs(cmd, "gpt2.sh");
  ASSERT_TRUE(job.ok()) << job.status().message();
  const model::Model& m = job->model;
  EXPECT_EQ(m.ffn_hidden, 4 * 768);
  EXPECT_EQ(m.num_kv_heads, 12);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.learned_positions, 1024);
  EXPECT_EQ(m.rope_theta, 0);
  EXPECT_TRUE(m.layernorm);
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_TRUE(m.qkv_bias && m.out_bias && m.mlp_bias);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.attention_dropout, 0.1);
  EXPECT_EQ(m.hidden_dropout, 0.1);
  EXPECT_EQ(m.vocab, 50257);
  // GPT-2 small: 124M parameters with its 50,257-token vocabulary (Radford et al. 2019 report
  // 117M with an older count; 12 layers x 12 h^2 + 13 h + (50257 + 1024) h + 2 h = 124,439,808).
  EXPECT_EQ(model::CountParameters(m).total, 124'439'808);
  EXPECT_EQ(job->parallel.dp, 8);  // 2 nodes x 4 GPUs, tp = pp = cp = 1
  EXPECT_EQ(job->recompute, model::Recompute::kNone);
  EXPECT_TRUE(job->fp32_gradients);
  EXPECT_FALSE(job->overlap_grad_reduce);
  // Flags outside the model and layout are listed, not refused.
  EXPECT_EQ(job->ignored, (std::vector<std::string>{"--data-path", "--lr"}));
}

TEST(MegatronArgsTest, BareArgumentsOnSeveralLines) {
  // A file of arguments only (no launcher, no script), one or more per line, --flag=value too.
  auto job = ReadMegatronArgs(
      "--num-layers=4\n--hidden-size 256 --num-attention-heads 8\n\n--seq-length 512\n"
      "--tensor-model-parallel-size 2 --sequence-parallel\n",
      "args.txt");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->model.num_layers, 4);
  EXPECT_EQ(job->parallel.tp, 2);
  EXPECT_TRUE(job->parallel.sequence_parallel);
  EXPECT_EQ(job->parallel.dp, 0);  // no launcher: the GPU count is not said
}

TEST(MegatronArgsTest, MoeLayerFrequencyForms) {
  const std::string base =
      "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --num-experts 4 "
      "--moe-router-topk 2 --moe-ffn-hidden-size 32 ";
  struct Case {
    std::string freq;
    std::vector<int> moe;  // expected per layer
  };
  const std::vector<Case> cases = {
      {"", {1, 1, 1, 1, 1, 1, 1, 1}},                    // default 1: every layer
      {"--moe-layer-freq 2", {1, 0, 1, 0, 1, 0, 1, 0}},  // i % 2 == 0
      {"--moe-layer-freq '([0]*2+[1]*6)'", {0, 0, 1, 1, 1, 1, 1, 1}},
      {"--moe-layer-freq '([0]+[1]*1)*4'", {0, 1, 0, 1, 0, 1, 0, 1}},
      {"--moe-layer-freq=[0,0,0,1,0,1,0,1]", {0, 0, 0, 1, 0, 1, 0, 1}},
  };
  for (const Case& c : cases) {
    auto job = ReadMegatronArgs(base + c.freq, "moe");
    ASSERT_TRUE(job.ok()) << c.freq << ": " << job.status().message();
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(model::IsMoeLayer(job->model, i), c.moe[i] == 1) << c.freq << " layer " << i;
    }
  }
  // A window on every layer but each second (gpt-oss): 1-based layers 2, 4, 6, 8 full.
  auto oss = ReadMegatronArgs(base + "--window-size '(128,0)' --window-attn-skip-freq 2", "oss");
  ASSERT_TRUE(oss.ok()) << oss.status().message();
  EXPECT_EQ(oss->model.sliding_window, 128);
  EXPECT_EQ(oss->model.sliding_window_full_every, 2);
  EXPECT_EQ(model::WindowedLayers(oss->model), 4);
  // Three MoE layers then a dense one, repeated: not "every k-th after the dense ones".
  auto odd = ReadMegatronArgs(base + "--moe-layer-freq '([1]*3+[0])*2'", "moe");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("--moe-layer-freq"), std::string::npos);
}

TEST(MegatronArgsTest, BadInputIsAOneLineErrorNamingTheFlag) {
  const std::string shape =
      " --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 8";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--hidden-size 64 --num-attention-heads 4 --seq-length 8", "no --num-layers"},
      {"--num-layers 2 --hidden-size 64 --num-attention-heads 4", "no --seq-length"},
      {"--num-layers 2 --hidden-size 64 --num-attention-heads 5 --seq-length 8",
       "--hidden-size 64 is not a multiple of --num-attention-heads 5"},
      {"--tensor-model-parallel-size x" + shape, "--tensor-model-parallel-size 'x'"},
      {"--tensor-model-parallel-size 0" + shape, "--tensor-model-parallel-size '0'"},
      {"--hidden-dropout 2" + shape, "--hidden-dropout '2'"},
      {"--normalization BatchNorm" + shape, "--normalization 'BatchNorm'"},
      {"--recompute-granularity most" + shape, "--recompute-granularity 'most'"},
      {"--num-experts 4 --moe-layer-freq '[1]*'" + shape, "--moe-layer-freq"},
      {"--num-experts 4 --moe-layer-freq '(((((' " + shape, "--moe-layer-freq"},
      {"--data-path 'unterminated" + shape, "unterminated single quote"},
      {"torchrun --nnodes 3 --nproc_per_node 1 x.py --tensor-model-parallel-size 2" + shape,
       "not a multiple of tp x pp x cp = 2"},
      {"stray" + shape, "'stray' is not a flag"},
      {"--window-size '(64,0)' --window-attn-skip-freq '([0]+[1])*1'" + shape,
       "--window-attn-skip-freq '([0]+[1])*1': expected an integer from 1 to the 2 layers"},
      {"--window-size '(64,0)' --window-attn-skip-freq 3" + shape,
       "--window-attn-skip-freq '3': expected an integer from 1 to the 2 layers"},
  };
  for (const auto& [text, want] : cases) {
    auto job = ReadMegatronArgs(text, "run.sh");
    ASSERT_FALSE(job.ok()) << text;
    const std::string msg(job.status().message());
    EXPECT_NE(msg.find(want), std::string::npos) << text << " -> " << msg;
    EXPECT_EQ(msg.rfind("run.sh: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// The flags of a pinned upstream arguments.py (tests/data/megatron_arguments_flags.txt).
std::set<std::string> UpstreamFlags() {
  std::ifstream f(testing::SourcePath("tests/data/megatron_arguments_flags.txt"));
  std::set<std::string> flags;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] != '#') flags.insert(line);
  }
  return flags;
}

TEST(MegatronArgsTest, EveryExportedFlagExistsInUpstreamArguments) {
  const std::set<std::string> upstream = UpstreamFlags();
  ASSERT_GT(upstream.size(), 500u);  // the pinned file defines about 590
  // Spot checks of the list itself against arguments.py as read: flags the export relies on.
  for (const char* f : {"--tensor-model-parallel-size", "--decoder-first-pipeline-num-layers",
                        "--account-for-loss-in-pipeline-split", "--rotary-base", "--swiglu",
                        "--use-megatron-fsdp", "--no-rl-partial-rollouts", "--recompute-modules"}) {
    EXPECT_EQ(upstream.count(f), 1u) << f;
  }
  EXPECT_EQ(upstream.count("--pipeline-parallel-size"), 0u);  // torchtitan's spelling, not this
  std::set<std::string> seen;
  for (const model::ModelPreset& preset : model::ModelPresets()) {
    const model::Model& m = preset.model;
    std::vector<std::pair<int, plan::Layout>> cases = {
        {1, Lay(1, 1, 8, 1, 1, 1, 1, model::Recompute::kSelective)},
        {2, Lay(2, 2, 4, 1, 3, 1, 2, model::Recompute::kFull)},
        {4, Lay(2, 4, 4, 1, 1, 2, 1, model::Recompute::kSelective)},
    };
    if (m.is_moe()) cases.push_back({1, Lay(1, 1, 8, 8, 1, 1, 1, model::Recompute::kNone)});
    for (auto& [nodes, lay] : cases) {
      for (plan::Precision prec : {plan::Precision::kBf16, plan::Precision::kFp8}) {
        plan::PlanRequest req = PresetRequest(m, nodes, 64, 0);
        req.precision = prec;
        auto out = ExportMegatron(req, lay);
        if (!out.ok()) continue;
        auto job = ReadMegatronArgs(out->text, "export");
        ASSERT_TRUE(job.ok()) << job.status().message();
        std::istringstream in(out->text.substr(out->text.find("pretrain_gpt.py")));
        std::string tok;
        while (in >> tok) {
          if (tok.rfind("--", 0) != 0) continue;
          seen.insert(tok);
          EXPECT_EQ(upstream.count(tok), 1u) << tok << " (" << m.name << ")";
        }
      }
    }
  }
  EXPECT_GE(seen.size(), 40u);  // the sweep reached most of what the exporter can say
}

}  // namespace
}  // namespace infralens::io
