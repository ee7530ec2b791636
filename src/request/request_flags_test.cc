// RequestFlags' behaviour: the framework's defaults, its recipe for the model and GPU
// (data/frameworks/recipes.csv), then the flags, and what the plan reports as applied.
#include "request/request_flags.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

namespace infralens::request {
namespace {

// Whether an option was given: those in `flags`.
GivenFn GivenIn(std::set<std::string> flags) {
  return [flags = std::move(flags)](const std::string& flag) { return flags.count(flag) > 0; };
}

// NeMo in FP8: `model` on `gpus` GPUs of `cluster`, `global_batch` sequences, the flags `set`
// gives.
StatusOr<plan::PlanRequest> NemoFp8(const std::string& model, const std::string& cluster, int gpus,
                                    int global_batch,
                                    const std::function<void(RequestFlags&)>& set) {
  RequestFlags f;
  f.tf.model_name = model;
  f.tf.precision = "fp8";
  f.tf.global_batch = global_batch;
  f.cf.cluster = cluster;
  f.cf.gpus = gpus;
  f.framework = "nemo";
  set(f);
  return f.Request(
      GivenIn({"--model", "--precision", "--global-batch", "--cluster", "--gpus", "--framework"}));
}

StatusOr<plan::PlanRequest> DeepSeekOnB200(const std::string& ep_overlap) {
  return NemoFp8("deepseek-v3", "dgx-b200", 256, 4096,
                 [&](RequestFlags& f) { f.ep_overlap = ep_overlap; });
}

// NeMo runs FP8 with FP8 parameters (its FP8 mixed-precision presets); --fp8-param-gather no
// says otherwise, and the Megatron-LM export carries --fp8-param-gather only where they are.
TEST(RequestFlagsTest, Fp8ParametersFromTheFrameworkOrTheFlag) {
  auto request = [](const std::string& framework, const std::string& flag) {
    RequestFlags f;
    f.tf.model_name = "llama3-8b";
    f.tf.precision = "fp8";
    f.tf.global_batch = 64;
    f.cf.gpus = 8;
    f.framework = framework;
    f.fp8_param_gather = flag;
    return f.Request(GivenIn({"--model", "--precision", "--global-batch", "--gpus"}));
  };
  for (const auto& [framework, flag, want] :
       {std::tuple{"nemo", "", true}, std::tuple{"nemo", "no", false},
        std::tuple{"megatron-lm", "", false}, std::tuple{"megatron-lm", "yes", true},
        std::tuple{"", "", false}}) {
    auto req = request(framework, flag);
    ASSERT_TRUE(req.ok()) << req.status().message();
    EXPECT_EQ(req->fp8_param_gather, want) << framework << " " << flag;
  }
}

// Llama 3 8B on 8 GPUs, global batch 64, under `framework` ("": none).
RequestFlags Llama3On8(const std::string& framework) {
  RequestFlags f;
  f.tf.model_name = "llama3-8b";
  f.tf.global_batch = 64;
  f.cf.gpus = 8;
  f.framework = framework;
  return f;
}

// torchtitan's and DeepSpeed's models run q, k and v (and gate and up) as GEMMs of their own,
// Megatron-Core's fused; --fused-projections says otherwise either way, and without a framework
// they are fused.
TEST(RequestFlagsTest, FusedProjectionsFromTheFrameworkOrTheFlag) {
  auto request = [](const std::string& framework, const std::string& flag) {
    RequestFlags f = Llama3On8(framework);
    f.fused_projections = flag;
    return f.Request(GivenIn({"--model", "--global-batch", "--gpus"}));
  };
  for (const auto& [framework, flag, want] :
       {std::tuple{"torchtitan", "", false}, std::tuple{"torchtitan", "yes", true},
        std::tuple{"deepspeed", "", false}, std::tuple{"megatron-lm", "", true},
        std::tuple{"megatron-lm", "no", false}, std::tuple{"", "", true}}) {
    auto req = request(framework, flag);
    ASSERT_TRUE(req.ok()) << req.status().message();
    EXPECT_EQ(req->fused_projections, want) << framework << " " << flag;
  }
  EXPECT_FALSE(request("", "maybe").ok());
}

// torchtitan runs PyTorch's context_parallel (K and V all-gathered, repeated to every query head
// first: data/frameworks/torchtitan.csv), the others Transformer Engine's ring over the GQA
// heads; --cp-exchange and --cp-kv-heads say otherwise either way.
TEST(RequestFlagsTest, ContextParallelExchangeFromTheFrameworkOrTheFlags) {
  auto request = [](const std::string& framework, const std::string& exchange,
                    const std::string& heads) {
    RequestFlags f = Llama3On8(framework);
    f.cp_exchange = exchange;
    f.cp_kv_heads = heads;
    return f.Request(GivenIn({"--model", "--global-batch", "--gpus"}));
  };
  for (const auto& [framework, exchange, heads, all_gather, repeated] :
       {std::tuple{"torchtitan", "", "", true, true},
        std::tuple{"torchtitan", "ring", "kv", false, false},
        std::tuple{"megatron-lm", "", "", false, false},
        std::tuple{"megatron-lm", "all_gather", "", true, false},
        std::tuple{"nemo", "", "query", false, true}, std::tuple{"", "", "", false, false}}) {
    auto req = request(framework, exchange, heads);
    ASSERT_TRUE(req.ok()) << req.status().message();
    EXPECT_EQ(req->cp_all_gather, all_gather) << framework << " " << exchange;
    EXPECT_EQ(req->cp_kv_repeated, repeated) << framework << " " << heads;
  }
  EXPECT_FALSE(request("", "allgather", "").ok());
  EXPECT_FALSE(request("", "", "q").ok());
}

// NeMo's Llama 3 70B on GB200 in FP8 offloads 40 layers' activations (recipes.csv, from
// LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2) where the layout allows it; --cpu-offload-layers
// replaces the recipe, and makes it the user's requirement (layouts Megatron-Core refuses with it
// are refused).
TEST(RequestFlagsTest, CpuOffloadFromTheRecipeOrTheFlag) {
  auto request = [](const std::string& flag) {
    return NemoFp8("llama3-70b", "gb200-nvl72", 72, 288,
                   [&](RequestFlags& f) { f.cpu_offload_layers = flag; });
  };
  auto recipe = request("");
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_EQ(recipe->cpu_offload_layers, 40);
  EXPECT_FALSE(recipe->cpu_offload_required);
  EXPECT_NE(recipe->framework_recipe_settings.find("cpu_offload_layers 40"), std::string::npos)
      << recipe->framework_recipe_settings;
  auto flag = request("10");
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  EXPECT_EQ(flag->cpu_offload_layers, 10);
  EXPECT_TRUE(flag->cpu_offload_required);
  EXPECT_EQ(flag->framework_recipe_settings.find("cpu_offload_layers"), std::string::npos);
}

// NeMo's DeepSeek-V3 on B200 in FP8 (DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2): DeepEP and the
// A2A overlap, which NeMo's own defaults (alltoall, no overlap) do not say; --ep-overlap no wins
// over the recipe and its row is no longer reported.
TEST(RequestFlagsTest, FrameworkRecipeBetweenDefaultsAndFlags) {
  auto recipe = DeepSeekOnB200("");
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_TRUE(recipe->ep_hierarchical_dispatch);
  EXPECT_TRUE(recipe->ep_overlap);
  EXPECT_EQ(recipe->framework_recipe_settings,
            "ep_dispatcher deepep, ep_overlap yes, recompute_modules mla_up_proj mlp");
  EXPECT_NE(recipe->framework_recipe.find("DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2"),
            std::string::npos);
  auto flag = DeepSeekOnB200("no");
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  EXPECT_TRUE(flag->ep_hierarchical_dispatch);
  EXPECT_FALSE(flag->ep_overlap);
  EXPECT_EQ(flag->framework_recipe_settings,
            "ep_dispatcher deepep, recompute_modules mla_up_proj mlp");
}

// The recipe's recompute modules (DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2: mla_up_proj, mlp)
// under the user's --recompute-modules, whose value wins and whose recipe row is not reported; a
// misspelt module is a one-line error naming it.
TEST(RequestFlagsTest, RecomputeModulesFromTheRecipeOrTheFlag) {
  auto request = [](const std::string& flag) {
    return NemoFp8("deepseek-v3", "dgx-b200", 256, 4096,
                   [&](RequestFlags& f) { f.recompute_modules = flag; });
  };
  auto recipe = request("");
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_EQ(recipe->recompute_modules.bits, model::kRecomputeMlaUpProj | model::kRecomputeMlp);
  auto flag = request("core_attn,moe_act");
  ASSERT_TRUE(flag.ok()) << flag.status().message();
  EXPECT_EQ(flag->recompute_modules.bits, model::kRecomputeCoreAttn | model::kRecomputeMoeAct);
  EXPECT_EQ(flag->framework_recipe_settings.find("recompute_modules"), std::string::npos);
  auto bad = request("core_attn,mpl");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--recompute-modules"), std::string::npos);
  EXPECT_NE(bad.status().message().find("no module mpl"), std::string::npos);
}

// Llama 3 70B, 64 sequences on 64 H100s under `framework` ("" none): the flags before the rest.
RequestFlags Llama70bFlags(const std::string& framework) {
  RequestFlags f;
  f.tf.model_name = "llama3-70b";
  f.tf.global_batch = 64;
  f.cf.cluster = "dgx-h100";
  f.cf.gpus = 64;
  f.framework = framework;
  return f;
}

StatusOr<plan::PlanRequest> Llama70bOn(const std::string& framework, const std::string& sms,
                                       const std::string& sp_backward = "",
                                       const std::string& fsdp_with_pp = "",
                                       const std::string& fsdp_max_live = "") {
  RequestFlags f = Llama70bFlags(framework);
  f.sp_backward = sp_backward;
  f.fsdp_with_pp = fsdp_with_pp;
  f.fsdp_max_live_params = fsdp_max_live;
  f.tp_overlap_sms = sms;
  return f.Request(GivenIn({"--model", "--global-batch", "--cluster", "--gpus", "--framework"}));
}

// The userbuffers SMs: Transformer Engine's 16 and 16 under Megatron-LM, none under torchtitan's
// async TP, and --tp-overlap-sms over either; SP's backward, Megatron-Core's re-gather or DTensor's
// saved input, and --sp-backward over either; a bad value is named.
TEST(RequestFlagsTest, TpOverlapSmsFromTheFrameworkThenTheFlag) {
  struct Case {
    const char* framework;
    const char* flag;
    int rs, bulk;
  };
  for (const Case& c :
       {Case{"megatron-lm", "", 16, 16}, Case{"nemo", "", 16, 16}, Case{"torchtitan", "", 0, 0},
        Case{"megatron-lm", "24,4", 24, 4}, Case{"torchtitan", "8", 8, 8}}) {
    auto r = Llama70bOn(c.framework, c.flag);
    ASSERT_TRUE(r.ok()) << c.framework << " " << c.flag << ": " << r.status().message();
    EXPECT_EQ(r->tp_overlap_rs_sms, c.rs) << c.framework << " " << c.flag;
    EXPECT_EQ(r->tp_overlap_bulk_sms, c.bulk) << c.framework << " " << c.flag;
  }
  EXPECT_TRUE(Llama70bOn("megatron-lm", "")->sp_backward_regather);
  EXPECT_FALSE(Llama70bOn("torchtitan", "")->sp_backward_regather);
  EXPECT_FALSE(Llama70bOn("megatron-lm", "", "saved")->sp_backward_regather);
  EXPECT_TRUE(Llama70bOn("megatron-lm", "", "saved")->sp_inputs_gathered);
  EXPECT_FALSE(Llama70bOn("torchtitan", "", "regather")->sp_inputs_gathered);
  EXPECT_TRUE(Llama70bOn("torchtitan", "", "regather")->sp_backward_regather);
  auto bad_sp = Llama70bOn("megatron-lm", "", "twice");
  ASSERT_FALSE(bad_sp.ok());
  EXPECT_NE(bad_sp.status().message().find("--sp-backward 'twice': expected regather or saved"),
            std::string::npos);
  // FSDP under a pipeline: torchtitan's once per step, Megatron FSDP's every microbatch, and
  // --fsdp-with-pp over either.
  EXPECT_TRUE(Llama70bOn("torchtitan", "")->fsdp_once_per_step_with_pp);
  EXPECT_FALSE(Llama70bOn("megatron-lm", "")->fsdp_once_per_step_with_pp);
  EXPECT_TRUE(Llama70bOn("megatron-lm", "", "", "per_step")->fsdp_once_per_step_with_pp);
  EXPECT_FALSE(Llama70bOn("torchtitan", "", "", "per_microbatch")->fsdp_once_per_step_with_pp);
  // ZeRO-3's fetch: DeepSpeed's per parameter within 1e9 live, --fsdp-max-live-params over it
  // (0: a layer at a time) or over any other framework.
  EXPECT_EQ(Llama70bOn("deepspeed", "")->fsdp_max_live_params, 1e9);
  EXPECT_EQ(Llama70bOn("deepspeed", "", "", "", "0")->fsdp_max_live_params, 0);
  EXPECT_EQ(Llama70bOn("torchtitan", "")->fsdp_max_live_params, 0);
  EXPECT_EQ(Llama70bOn("torchtitan", "", "", "", "5e8")->fsdp_max_live_params, 5e8);
  auto bad_live = Llama70bOn("deepspeed", "", "", "", "lots");
  ASSERT_FALSE(bad_live.ok());
  EXPECT_NE(bad_live.status().message().find("--fsdp-max-live-params 'lots': expected a parameter"),
            std::string::npos)
      << bad_live.status().message();
  auto bad_fsdp = Llama70bOn("torchtitan", "", "", "daily");
  ASSERT_FALSE(bad_fsdp.ok());
  EXPECT_NE(bad_fsdp.status().message().find(
                "--fsdp-with-pp 'daily': expected per_step or per_microbatch"),
            std::string::npos)
      << bad_fsdp.status().message();
  auto bad = Llama70bOn("megatron-lm", "lots");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--tp-overlap-sms 'lots': expected N or RS,BULK"),
            std::string::npos)
      << bad.status().message();
}

// A user's layout with tp > 1 and no --sp runs sequence parallelism when the framework always does
// with TP (data/frameworks/nemo.csv and torchtitan.csv: sequence_parallel always), not when it is
// optional (megatron-lm.csv) or with no framework; --sp turns it on whatever the framework.
TEST(RequestFlagsTest, UsersLayoutTakesTheFrameworksSequenceParallelism) {
  // sp_flag: "" (neither flag), "--sp" or "--no-sp".
  const auto sp_of = [](const std::string& framework, int tp, const std::string& sp_flag) {
    RequestFlags f;
    f.tf.model_name = "llama3-70b";
    f.tf.global_batch = 64;
    f.cf.cluster = "dgx-h100";
    f.cf.gpus = 64;
    f.cf.tp = tp;
    f.cf.pp = 1;
    f.framework = framework;
    f.tf.par.sequence_parallel = sp_flag == "--sp";
    f.tf.no_sp = sp_flag == "--no-sp";
    std::set<std::string> given = {"--model", "--global-batch", "--cluster",
                                   "--gpus",  "--tp",           "--pp"};
    if (!framework.empty()) given.insert("--framework");
    if (!sp_flag.empty()) given.insert(sp_flag);
    const GivenFn is_given = GivenIn(given);
    auto req = f.Request(is_given);
    EXPECT_TRUE(req.ok()) << req.status().message();
    if (!req.ok()) return false;
    auto lay = f.Layout(is_given, *req);
    EXPECT_TRUE(lay.ok() && lay->has_value()) << lay.status().message();
    return lay.ok() && lay->has_value() && (*lay)->parallel.sequence_parallel;
  };
  EXPECT_TRUE(sp_of("nemo", 8, ""));
  EXPECT_TRUE(sp_of("torchtitan", 8, ""));
  EXPECT_FALSE(sp_of("megatron-lm", 8, ""));
  EXPECT_FALSE(sp_of("", 8, ""));
  EXPECT_FALSE(sp_of("nemo", 1, ""));  // no TP: nothing to shard
  EXPECT_TRUE(sp_of("megatron-lm", 8, "--sp"));
  EXPECT_TRUE(sp_of("", 8, "--sp"));
  // The user's explicit choice wins over the framework's.
  EXPECT_FALSE(sp_of("nemo", 8, "--no-sp"));
  EXPECT_FALSE(sp_of("torchtitan", 8, "--no-sp"));
}

TEST(RequestFlagsTest, NoSpFixesTheSearchAndConflictsWithSp) {
  RequestFlags f;
  f.tf.model_name = "llama3-70b";
  f.tf.global_batch = 64;
  f.cf.cluster = "dgx-h100";
  f.cf.gpus = 64;
  f.framework = "torchtitan";
  f.tf.no_sp = true;
  std::set<std::string> given = {"--model", "--global-batch", "--cluster",
                                 "--gpus",  "--framework",    "--no-sp"};
  auto req = f.Request(GivenIn(given));
  ASSERT_TRUE(req.ok()) << req.status().message();
  plan::SearchOptions opt;
  ASSERT_TRUE(f.RestrictSearch(GivenIn(given), *req, &opt).ok());
  EXPECT_EQ(opt.fix_sp, 0);

  f.tf.par.sequence_parallel = true;
  given.insert("--sp");
  const Status both = f.RestrictSearch(GivenIn(given), *req, &opt);
  EXPECT_FALSE(both.ok());
  EXPECT_NE(both.message().find("--sp and --no-sp"), std::string::npos) << both.message();
}

// The search tries heavier selective module lists only where nobody fixed the list: not under
// the user's --recompute-modules, not under a framework whose selective recompute takes none
// (torchtitan's, by --framework or by its export).
TEST(RequestFlagsTest, RecomputeListsSearchedUnlessTheListIsFixed) {
  const auto fixed = [](const std::string& framework, const std::string& modules,
                        const std::string& export_format) {
    RequestFlags f = Llama70bFlags(framework);
    f.recompute_modules = modules;
    f.export_format = export_format;
    std::set<std::string> given = {"--model", "--global-batch", "--cluster", "--gpus"};
    if (!framework.empty()) given.insert("--framework");
    if (!modules.empty()) given.insert("--recompute-modules");
    if (!export_format.empty()) given.insert("--export");
    auto req = f.Request(GivenIn(given));
    EXPECT_TRUE(req.ok()) << req.status().message();
    plan::SearchOptions opt;
    if (req.ok()) {
      EXPECT_TRUE(f.RestrictSearch(GivenIn(given), *req, &opt).ok());
    }
    return opt.fix_recompute_modules;
  };
  EXPECT_FALSE(fixed("", "", ""));
  // The user's list is said among what the search was restricted to.
  plan::SearchOptions opt;
  opt.fixed_recompute_modules = "core_attn mlp";
  const std::vector<std::string> c = opt.Constraints();
  EXPECT_NE(std::find(c.begin(), c.end(), "recompute modules core_attn mlp"), c.end());
  EXPECT_FALSE(fixed("megatron-lm", "", ""));
  EXPECT_FALSE(fixed("nemo", "", ""));
  EXPECT_FALSE(fixed("", "", "megatron"));
  EXPECT_TRUE(fixed("megatron-lm", "core_attn,mlp", ""));
  EXPECT_TRUE(fixed("", "mlp", ""));
  EXPECT_TRUE(fixed("torchtitan", "", ""));
  EXPECT_TRUE(fixed("", "", "torchtitan"));
  EXPECT_TRUE(fixed("deepspeed", "", ""));
}

// A torchtitan export searches only what torchtitan v0.2.2 runs: pp 1 for Qwen3 (its TrainSpec
// has no pipelining_fn), any pp for Llama 3.
TEST(RequestFlagsTest, TorchtitanExportSearchesPipelinesOnlyWhereTheModelHasThem) {
  const auto fixed_pp = [](const std::string& model) {
    RequestFlags f;
    f.tf.model_name = model;
    f.tf.global_batch = 1024;
    f.tf.seq = 4096;
    f.cf.cluster = "dgx-h100";
    f.cf.gpus = 16;
    f.export_format = "torchtitan";
    const GivenFn is_given =
        GivenIn({"--model", "--global-batch", "--seq", "--cluster", "--gpus", "--export"});
    auto req = f.Request(is_given);
    EXPECT_TRUE(req.ok()) << req.status().message();
    plan::SearchOptions opt;
    if (req.ok()) {
      EXPECT_TRUE(f.RestrictSearch(is_given, *req, &opt).ok());
    }
    EXPECT_TRUE(opt.seq_over_2_tp_cp);  // ParallelDims.seq_len_divisor, for every model
    return opt.fix_pp;
  };
  EXPECT_EQ(fixed_pp("qwen3-30b-a3b"), 1);
  EXPECT_EQ(fixed_pp("llama3-8b"), plan::SearchOptions{}.fix_pp);
}

}  // namespace
}  // namespace infralens::request
