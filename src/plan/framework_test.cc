// Frameworks as data: every built-in file parses and says what its framework's code says (the
// values below are read from the upstream sources named in data/frameworks/*.csv, not from the
// parser's output), malformed files are refused with the line, and a run's precision picks the
// gradient dtype (NeMo's FP8 recipes reduce in BF16).
#include "plan/framework.h"

#include <gtest/gtest.h>

#include <string>

namespace infralens::plan {
namespace {

using K = schedule::ScheduleKind;

TEST(FrameworkDataTest, EveryBuiltInFileParses) {
  for (Framework f : {Framework::kMegatronLm, Framework::kMegatronDeepSpeed, Framework::kDeepSpeed,
                      Framework::kTorchtitan, Framework::kNemo, Framework::kMegaScale}) {
    auto d = ParseFrameworkData(f, BundledFrameworkCsv(f), FrameworkName(f));
    EXPECT_TRUE(d.ok()) << FrameworkName(f) << ": " << d.status().message();
  }
}

TEST(FrameworkDataTest, ValuesFromTheFrameworksCode) {
  // Megatron-LM: --overlap-grad-reduce, --tp-comm-overlap and --sequence-parallel are opt-in;
  // gradients reduced in FP32 under --bf16; DDP buckets by Megatron's rule.
  FrameworkBehaviour m = FrameworkDefaults(Framework::kMegatronLm, 1);
  EXPECT_FALSE(m.overlap_grad_reduce);
  EXPECT_FALSE(m.tp_overlap);
  EXPECT_FALSE(m.sp_with_tp);
  EXPECT_TRUE(m.fp32_grads);
  EXPECT_FALSE(m.eager_elementwise);
  EXPECT_EQ(m.dp_bucket_params, 0);
  // DeepSpeed: overlap_comm only at stage 3, 5e8-element reduce buckets, eager PyTorch, 1F1B.
  EXPECT_FALSE(FrameworkDefaults(Framework::kDeepSpeed, 1).overlap_grad_reduce);
  EXPECT_TRUE(FrameworkDefaults(Framework::kDeepSpeed, 3).overlap_grad_reduce);
  EXPECT_EQ(FrameworkDefaults(Framework::kDeepSpeed, 1).dp_bucket_params, 500'000'000);
  EXPECT_EQ(FrameworkDefaults(Framework::kDeepSpeed, 1).p2p_wait, P2pWait::kBlocking);
  // Megatron-Core blocks only without interleaving (megatron-lm.csv, nemo.csv single_chunk);
  // torch.distributed.pipelining never.
  EXPECT_EQ(FrameworkDefaults(Framework::kMegatronLm, 1).p2p_wait, P2pWait::kBlockingSingleChunk);
  EXPECT_EQ(FrameworkDefaults(Framework::kNemo, 1).p2p_wait, P2pWait::kBlockingSingleChunk);
  EXPECT_EQ(FrameworkDefaults(Framework::kTorchtitan, 1).p2p_wait, P2pWait::kOverlapped);
  // FP8 weights as the parameters: NeMo's FP8 presets (bf16_with_fp8_mixed and Megatron-Bridge's
  // current-scaling and MXFP8 ones set fp8_param_gather), Megatron-LM only when asked.
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1).fp8_param_gather);
  EXPECT_FALSE(FrameworkDefaults(Framework::kMegatronLm, 1).fp8_param_gather);
  EXPECT_FALSE(FrameworkDefaults(Framework::kTorchtitan, 1).fp8_param_gather);
  // One GEMM for q, k and v and one for gate and up in Megatron-Core's layers (Megatron-LM,
  // NeMo, MegaScale) and Megatron-DeepSpeed's; a GEMM each in torchtitan's Llama and in the
  // Hugging Face models DeepSpeed trains.
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kMegaScale,
                      Framework::kMegatronDeepSpeed}) {
    EXPECT_TRUE(FrameworkDefaults(f, 1).fused_projections) << FrameworkName(f);
  }
  EXPECT_FALSE(FrameworkDefaults(Framework::kTorchtitan, 1).fused_projections);
  EXPECT_FALSE(FrameworkDefaults(Framework::kDeepSpeed, 3).fused_projections);
  // Context parallelism: PyTorch's all-gather of K and V (torchtitan, whose repeat_kv widens them
  // to the query heads first); Transformer Engine's ring of the GQA heads elsewhere.
  EXPECT_TRUE(FrameworkDefaults(Framework::kTorchtitan, 3).cp_all_gather);
  EXPECT_TRUE(FrameworkDefaults(Framework::kTorchtitan, 3).cp_kv_repeated);
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kMegaScale,
                      Framework::kMegatronDeepSpeed, Framework::kDeepSpeed}) {
    EXPECT_FALSE(FrameworkDefaults(f, 1).cp_all_gather) << FrameworkName(f);
    EXPECT_FALSE(FrameworkDefaults(f, 1).cp_kv_repeated) << FrameworkName(f);
  }
  EXPECT_EQ(FrameworkSchedules(Framework::kDeepSpeed), (std::vector<K>{K::k1F1B}));
  // Megatron-DeepSpeed pipelines through DeepSpeed's PipelineEngine (GPTModelPipe under
  // --deepspeed): its one schedule, its blocking send/recv.
  EXPECT_EQ(FrameworkSchedules(Framework::kMegatronDeepSpeed), (std::vector<K>{K::k1F1B}));
  EXPECT_EQ(FrameworkDefaults(Framework::kMegatronDeepSpeed, 1).p2p_wait, P2pWait::kBlocking);
  EXPECT_EQ(BuiltinFrameworkData(Framework::kMegatronDeepSpeed).pipeline_chunks, 1);
  // torchtitan: SDPA's FlashAttention-2, SP on with TP, compile off, every schedule.
  FrameworkBehaviour t = FrameworkDefaults(Framework::kTorchtitan, 3);
  EXPECT_TRUE(t.flash_attention_2);
  EXPECT_TRUE(t.sp_with_tp);
  EXPECT_TRUE(t.eager_elementwise);
  EXPECT_TRUE(FrameworkSchedules(Framework::kTorchtitan).empty());
  // Async TP as PyTorch's micro-pipeline pass fuses it: the backward's reduce-scatter stays
  // exposed; Transformer Engine's userbuffers (Megatron-LM, NeMo) overlap it with wgrad.
  EXPECT_FALSE(t.tp_overlap_bwd_reduce_scatter);
  EXPECT_TRUE(m.tp_overlap_bwd_reduce_scatter);
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1).tp_overlap_bwd_reduce_scatter);
  // NeMo: SP with TP, TP overlap; FP32 gradient reduction in BF16 recipes, BF16 in FP8 ones.
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1, Precision::kBf16).fp32_grads);
  EXPECT_FALSE(FrameworkDefaults(Framework::kNemo, 1, Precision::kFp8).fp32_grads);
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1).sp_with_tp);
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1).tp_overlap);
  EXPECT_EQ(FrameworkSchedules(Framework::kNemo), (std::vector<K>{K::k1F1B, K::kInterleaved1F1B}));
  // Pipelines nobody says more about: torchtitan's default 1F1B with as many microbatches as
  // pipeline ranks (e846b69); Megatron-LM leaves the depth and the micro-batch to the user.
  EXPECT_EQ(BuiltinFrameworkData(Framework::kTorchtitan).pipeline_chunks, 1);
  EXPECT_EQ(BuiltinFrameworkData(Framework::kTorchtitan).pipeline_microbatches_per_rank, 1);
  EXPECT_EQ(BuiltinFrameworkData(Framework::kMegatronLm).pipeline_chunks, 0);
  EXPECT_EQ(BuiltinFrameworkData(Framework::kMegatronLm).pipeline_microbatches_per_rank, 0);
  EXPECT_EQ(BuiltinFrameworkData(Framework::kDeepSpeed).pipeline_chunks, 1);
  // FP8: Transformer Engine's delayed scaling in NeMo and Megatron-LM (and where the framework
  // has no recipe of its own), torchao's tensorwise Float8Linear in torchtitan.
  EXPECT_TRUE(FrameworkDefaults(Framework::kNemo, 1, Precision::kFp8).fp8_transformer_engine);
  EXPECT_TRUE(FrameworkDefaults(Framework::kMegatronLm, 1, Precision::kFp8).fp8_transformer_engine);
  EXPECT_TRUE(FrameworkDefaults(Framework::kDeepSpeed, 1, Precision::kFp8).fp8_transformer_engine);
  EXPECT_FALSE(
      FrameworkDefaults(Framework::kTorchtitan, 3, Precision::kFp8).fp8_transformer_engine);
  // Transformer Engine's userbuffers defaults (initialize_ub get_default_config: 16 SMs for the
  // pipeline and bulk methods) under Megatron-LM and NeMo; PyTorch's async TP copies through the
  // copy engines.
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo}) {
    EXPECT_EQ(FrameworkDefaults(f, 1).tp_overlap_rs_sms, 16) << FrameworkName(f);
    EXPECT_EQ(FrameworkDefaults(f, 1).tp_overlap_bulk_sms, 16) << FrameworkName(f);
  }
  EXPECT_EQ(FrameworkDefaults(Framework::kTorchtitan, 3).tp_overlap_rs_sms, 0);
  EXPECT_EQ(FrameworkDefaults(Framework::kTorchtitan, 3).tp_overlap_bulk_sms, 0);
  EXPECT_EQ(FrameworkDefaults(Framework::kOther, 1).tp_overlap_rs_sms, 0);
  // Sequence parallelism's backward: Megatron-Core's re-gather (and what builds on it), DTensor's
  // saved input.
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kMegatronDeepSpeed,
                      Framework::kMegaScale}) {
    EXPECT_TRUE(FrameworkDefaults(f, 1).sp_backward_regather) << FrameworkName(f);
  }
  EXPECT_FALSE(FrameworkDefaults(Framework::kTorchtitan, 3).sp_backward_regather);
  EXPECT_FALSE(FrameworkDefaults(Framework::kDeepSpeed, 1).sp_backward_regather);
  EXPECT_FALSE(FrameworkDefaults(Framework::kOther, 1).sp_backward_regather);
  EXPECT_TRUE(FrameworkDefaults(Framework::kTorchtitan, 3).sp_inputs_gathered);
  EXPECT_TRUE(FrameworkDefaults(Framework::kDeepSpeed, 1).sp_inputs_gathered);
  EXPECT_FALSE(FrameworkDefaults(Framework::kMegatronLm, 1).sp_inputs_gathered);
  EXPECT_FALSE(FrameworkDefaults(Framework::kOther, 1).sp_inputs_gathered);  // shards, in line
  // FSDP under a pipeline: torchtitan gathers once per step (reshard_after_forward off with PP,
  // PyTorch's pipelining defers the reduce-scatter); Megatron FSDP every microbatch.
  EXPECT_TRUE(FrameworkDefaults(Framework::kTorchtitan, 3).fsdp_once_per_step_with_pp);
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kDeepSpeed,
                      Framework::kMegatronDeepSpeed, Framework::kMegaScale, Framework::kOther}) {
    EXPECT_FALSE(FrameworkDefaults(f, 3).fsdp_once_per_step_with_pp) << FrameworkName(f);
  }
  // ZeRO-3's fetch: DeepSpeed's per parameter within stage3_max_live_parameters (1e9); FSDP2 and
  // Megatron FSDP a layer at a time.
  EXPECT_EQ(FrameworkDefaults(Framework::kDeepSpeed, 3).fsdp_max_live_params, 1e9);
  EXPECT_EQ(FrameworkDefaults(Framework::kMegatronDeepSpeed, 3).fsdp_max_live_params, 1e9);
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kTorchtitan,
                      Framework::kMegaScale, Framework::kOther}) {
    EXPECT_EQ(FrameworkDefaults(f, 3).fsdp_max_live_params, 0) << FrameworkName(f);
  }
}

TEST(FrameworkDataTest, ZeroStagesEachFrameworkImplements) {
  using Z = std::vector<int>;
  // Megatron-Core (Megatron-LM, NeMo): DDP, the distributed optimizer, Megatron FSDP's optim_grads
  // and optim_grads_params, with or without a pipeline.
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo}) {
    EXPECT_EQ(FrameworkZeroStages(f, false), (Z{0, 1, 2, 3})) << FrameworkName(f);
    EXPECT_EQ(FrameworkZeroStages(f, true), (Z{0, 1, 2, 3})) << FrameworkName(f);
  }
  // torchtitan: DDP (dp_replicate) or FSDP2 (dp_shard), nothing between.
  EXPECT_EQ(FrameworkZeroStages(Framework::kTorchtitan, false), (Z{0, 3}));
  EXPECT_EQ(FrameworkZeroStages(Framework::kTorchtitan, true), (Z{0, 3}));
  // DeepSpeed's PipelineEngine asserts a stage below 2.
  for (Framework f : {Framework::kDeepSpeed, Framework::kMegatronDeepSpeed}) {
    EXPECT_EQ(FrameworkZeroStages(f, false), (Z{0, 1, 2, 3})) << FrameworkName(f);
    EXPECT_EQ(FrameworkZeroStages(f, true), (Z{0, 1})) << FrameworkName(f);
  }
  EXPECT_EQ(FrameworkZeroStages(Framework::kMegaScale, true), (Z{2}));
  // No framework: what the search always tried.
  EXPECT_EQ(FrameworkZeroStages(Framework::kOther, false), (Z{0, 1, 3}));
  EXPECT_EQ(FrameworkZeroStages(Framework::kOther, true), (Z{0, 1, 3}));
  // The parser: ascending, each once, 0-3 only.
  EXPECT_EQ(*ParseZeroStages(" 3 0  1 "), (Z{0, 1, 3}));
  for (const char* bad : {"", " ", "4", "-1", "1 1", "x", "0,1", "1.0"}) {
    EXPECT_FALSE(ParseZeroStages(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(FrameworkDataTest, WhatAFrameworkCannotRunOfALayout) {
  EXPECT_EQ(FrameworkCannotRun(Framework::kDeepSpeed, K::kZBV, 2, 3, true),
            "deepspeed runs no zbv (its schedules: 1f1b); deepspeed has no ZeRO-3 with pp > 1 "
            "(its stages: 0|1)");
  EXPECT_EQ(FrameworkCannotRun(Framework::kDeepSpeed, K::kZBV, 1, 3, true), "");  // no pipeline
  EXPECT_EQ(FrameworkCannotRun(Framework::kTorchtitan, K::k1F1B, 1, 1, true),
            "torchtitan has no ZeRO-1 (its stages: 0|3)");
  EXPECT_EQ(FrameworkCannotRun(Framework::kTorchtitan, K::k1F1B, 1, 1, false), "");  // dp x cp 1
  EXPECT_EQ(FrameworkCannotRun(Framework::kMegatronLm, K::kInterleaved1F1B, 4, 3, true), "");
  EXPECT_EQ(FrameworkCannotRun(Framework::kMegatronLm, K::kDualPipeV, 4, 1, true),
            "megatron-lm runs no dualpipev (its schedules: 1f1b|interleaved-1f1b)");
  EXPECT_EQ(FrameworkCannotRun(Framework::kOther, K::kDualPipeV, 4, 2, true), "");
}

TEST(FrameworkDataTest, TpOverlapSmsValues) {
  EXPECT_EQ(*ParseTpOverlapSms("16"), (std::pair{16, 16}));
  EXPECT_EQ(*ParseTpOverlapSms("24,4"), (std::pair{24, 4}));
  EXPECT_EQ(*ParseTpOverlapSms(" 0 , 256 "), (std::pair{0, 256}));
  for (const char* bad : {"", "x", "-1", "257", "1,2,3", "16,", ",16", "1.5"}) {
    auto v = ParseTpOverlapSms(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("expected N or RS,BULK, SM counts from 0 to 256"),
              std::string::npos)
        << v.status().message();
  }
}

TEST(FrameworkDataTest, WhichFrameworksTakeARecomputeModuleList) {
  // Megatron-Core's --recompute-modules (Megatron-LM, and NeMo's recipes through it); the planner
  // without a framework models Megatron-Core's selective recompute.
  for (Framework f : {Framework::kMegatronLm, Framework::kNemo, Framework::kOther}) {
    EXPECT_TRUE(FrameworkListsRecomputeModules(f)) << FrameworkName(f);
  }
  // Megatron-DeepSpeed's selective is the attention core alone; DeepSpeed checkpoints what the
  // model wraps; torchtitan's selective is op-level or every n-th layer; MegaScale names none.
  for (Framework f : {Framework::kMegatronDeepSpeed, Framework::kDeepSpeed, Framework::kTorchtitan,
                      Framework::kMegaScale}) {
    EXPECT_FALSE(FrameworkListsRecomputeModules(f)) << FrameworkName(f);
  }
  // By a request's framework name ("" none).
  PlanRequest req;
  EXPECT_TRUE(FrameworkListsRecomputeModules(req));
  req.framework = "torchtitan";
  EXPECT_FALSE(FrameworkListsRecomputeModules(req));
  req.framework = "nemo";
  EXPECT_TRUE(FrameworkListsRecomputeModules(req));
}

TEST(FrameworkDataTest, MalformedFilesNameTheLine) {
  const std::string good = std::string(BundledFrameworkCsv(Framework::kNemo));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return ParseFrameworkData(Framework::kNemo, s, "nemo.csv");
  };
  // A bad value is named with its key, line and what is allowed.
  struct BadValue {
    const char* from;
    const char* to;
    const char* message;
  };
  for (const BadValue& c :
       {BadValue{"tp_overlap,yes,", "tp_overlap,maybe,", "tp_overlap 'maybe': expected yes or no"},
        BadValue{"tp_overlap_backward,all,", "tp_overlap_backward,some,",
                 "tp_overlap_backward 'some': expected all or gather"},
        BadValue{"tp_overlap_rs_sms,16,", "tp_overlap_rs_sms,300,",
                 "tp_overlap_rs_sms '300': expected an SM count from 0 to 256"},
        BadValue{"tp_overlap_rs_splits,4,", "tp_overlap_rs_splits,0,",
                 "tp_overlap_rs_splits '0': expected tp or a count from 1 to 64"},
        BadValue{"tp_overlap_rs_splits,4,", "tp_overlap_rs_splits,65,",
                 "tp_overlap_rs_splits '65': expected tp or a count from 1 to 64"},
        BadValue{"tp_overlap_rs_reduction,in_kernel,", "tp_overlap_rs_reduction,later,",
                 "tp_overlap_rs_reduction 'later': expected in_kernel or after"},
        BadValue{"sp_backward,regather,", "sp_backward,twice,",
                 "sp_backward 'twice': expected regather or saved"},
        BadValue{"pipeline_chunks,1,", "pipeline_chunks,0,",
                 "pipeline_chunks '0': expected a chunk count from 1 to 64, or search"},
        BadValue{"pipeline_microbatches,search,", "pipeline_microbatches,lots,",
                 "pipeline_microbatches 'lots': expected pp"},
        BadValue{"fsdp_with_pp,per_microbatch,", "fsdp_with_pp,sometimes,",
                 "fsdp_with_pp 'sometimes': expected per_microbatch or per_step"},
        BadValue{"fsdp_unit,layer,", "fsdp_unit,tensor,",
                 "fsdp_unit 'tensor': expected block, layer or parameter"},
        BadValue{"fsdp_unit,layer,", "fsdp_unit,parameter,",
                 "fsdp_max_live_params 'none': expected a parameter count >= 1 (fsdp_unit "
                 "parameter)"},
        BadValue{"fsdp_max_live_params,none,", "fsdp_max_live_params,1000,",
                 "fsdp_max_live_params '1000': expected none (fsdp_unit block or layer)"},
        BadValue{"zero_stages,0 1 2 3,", "zero_stages,0 1 4,",
                 "zero_stages '0 1 4': expected ZeRO stages 0-3 separated by spaces, each once"},
        BadValue{"zero_stages_pipelined,0 1 2 3,", "zero_stages_pipelined,1 1,",
                 "zero_stages_pipelined '1 1': expected ZeRO stages 0-3"}}) {
    auto bad = with(c.from, c.to);
    ASSERT_FALSE(bad.ok()) << c.to;
    EXPECT_NE(bad.status().message().find(c.message), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find("nemo.csv line "), std::string::npos);
  }
  auto unknown = with("tp_overlap,", "tp_overlapp,");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'tp_overlapp'"), std::string::npos);
  auto schedule = with("schedules,1f1b interleaved-1f1b,", "schedules,1f1b wavy,");
  EXPECT_FALSE(schedule.ok());
  auto no_source =
      ParseFrameworkData(Framework::kNemo, "key,value,source\nattention,cudnn,\n", "x");
  ASSERT_FALSE(no_source.ok());
  EXPECT_NE(no_source.status().message().find("attention has no source"), std::string::npos);
  auto missing = ParseFrameworkData(Framework::kNemo, "key,value,source\nattention,cudnn,s\n", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no overlap_grad_reduce row"), std::string::npos);
}

// ApplyBehaviour carries what a framework decides into the request: torchtitan's FSDP (ZeRO-3)
// defaults as data/frameworks/torchtitan.csv states them (SDPA's FlashAttention-2, eager
// elementwise ops and loss, DTensor's saved SP inputs over [batch, seq, hidden], FSDP2's copies,
// torchao's tensorwise FP8), and leaves fp32_gradients to the caller.
TEST(FrameworkTest, ApplyBehaviourCarriesTheFrameworksChoices) {
  PlanRequest req;
  ApplyBehaviour(FrameworkDefaults(Framework::kTorchtitan, 3), &req);
  EXPECT_TRUE(req.flash_attention_2);
  EXPECT_TRUE(req.eager_elementwise);
  EXPECT_EQ(req.cross_entropy, CrossEntropyKernels::kEager);
  EXPECT_TRUE(req.sp_inputs_gathered);
  EXPECT_FALSE(req.sp_backward_regather);
  EXPECT_TRUE(req.sp_rechunk_copies);
  EXPECT_TRUE(req.fsdp_copy_out);
  EXPECT_TRUE(req.fsdp_copy_in);
  EXPECT_FALSE(req.fp8_transformer_engine);
  EXPECT_FALSE(req.fp32_gradients);
  EXPECT_EQ(req.tp_overlap_rs_splits, 0);       // tp: one matmul chunk per destination rank
  EXPECT_TRUE(req.tp_overlap_rs_reduce_after);  // torch.sum of the stacked partials
  // Megatron-LM's: Transformer Engine's attention and FP8, the sequence first, the unfused loss.
  ApplyBehaviour(FrameworkDefaults(Framework::kMegatronLm, 1), &req);
  EXPECT_FALSE(req.flash_attention_2);
  EXPECT_FALSE(req.eager_elementwise);
  EXPECT_EQ(req.cross_entropy, CrossEntropyKernels::kUnfused);
  EXPECT_TRUE(req.sp_backward_regather);
  EXPECT_FALSE(req.sp_rechunk_copies);
  EXPECT_TRUE(req.fp8_transformer_engine);
  EXPECT_EQ(req.tp_overlap_rs_splits, 4);        // Transformer Engine's pipeline method
  EXPECT_FALSE(req.tp_overlap_rs_reduce_after);  // userbuffers reduce as they receive
}

}  // namespace
}  // namespace infralens::plan
