#include "plan/framework_recipe.h"

#include <gtest/gtest.h>

#include <string>

#include "base/strings.h"
#include "model/presets.h"
#include "plan/validate.h"

namespace infralens::plan {
namespace {

constexpr const char* kRecipeHeader = "framework,model,gpu,precision,key,value,source\n";

std::string RecipeErrorOf(std::string_view csv) {
  auto r = ParseFrameworkRecipes(std::string(kRecipeHeader) + std::string(csv), "t.csv");
  return r.ok() ? "" : std::string(r.status().message());
}

// Every data row of the built-in file is parsed (counted from the text: lines that are neither
// comments, blank, nor the header), and each names a preset model and GPU (the parser refuses
// any other), so none is a dead row.
TEST(FrameworkRecipeTest, BuiltinFileParsesWhole) {
  auto parsed = ParseFrameworkRecipes(BundledFrameworkRecipes(), "recipes.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  size_t data_rows = 0;
  for (std::string_view line : Split(BundledFrameworkRecipes(), '\n')) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line.substr(0, 10) == "framework,") continue;
    ++data_rows;
  }
  EXPECT_EQ(parsed->size(), data_rows);
  EXPECT_EQ(BuiltinFrameworkRecipes().size(), data_rows);
  EXPECT_GE(data_rows, 2u);
}

// NeMo's DeepSeek-V3 recipes (Megatron-Bridge 0426418): on B200 in MXFP8 the DeepEP flex
// dispatcher with the 1F1B A2A overlap, recomputing MLA's up projections and the dense MLPs
// (DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2); in BF16 HybridEP without the overlap,
// recomputing the up projections only (..._B200_BF16_V2). The framework default is alltoall
// without overlap, and Megatron-Core's recompute module default core_attn.
TEST(FrameworkRecipeTest, NemoDeepSeekRecipeOverTheDefaults) {
  FrameworkBehaviour fp8 = FrameworkDefaults(Framework::kNemo, 1, Precision::kFp8);
  ASSERT_FALSE(fp8.ep_hierarchical_dispatch);
  ASSERT_FALSE(fp8.ep_overlap);
  ASSERT_EQ(fp8.recompute_modules, model::RecomputeModules{});
  const auto rows =
      ApplyFrameworkRecipes(Framework::kNemo, "deepseek-v3", "B200", Precision::kFp8, &fp8);
  const std::string src = RecipeSources(rows);
  EXPECT_EQ(RecipeSettings(rows),
            "ep_dispatcher deepep, ep_overlap yes, recompute_modules mla_up_proj mlp");
  EXPECT_TRUE(fp8.ep_hierarchical_dispatch);
  EXPECT_TRUE(fp8.ep_overlap);
  EXPECT_EQ(fp8.recompute_modules.bits, model::kRecomputeMlaUpProj | model::kRecomputeMlp);
  EXPECT_NE(src.find("DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2"), std::string::npos) << src;

  FrameworkBehaviour bf16 = FrameworkDefaults(Framework::kNemo, 1, Precision::kBf16);
  ApplyFrameworkRecipes(Framework::kNemo, "deepseek-v3", "B200", Precision::kBf16, &bf16);
  EXPECT_TRUE(bf16.ep_hierarchical_dispatch);
  EXPECT_FALSE(bf16.ep_overlap);
  EXPECT_EQ(bf16.recompute_modules.bits, model::kRecomputeMlaUpProj);

  // Another framework, another model, or a model that is not a preset: nothing applies.
  for (auto [f, model] :
       {std::pair{Framework::kMegatronLm, "deepseek-v3"}, std::pair{Framework::kNemo, "llama3-8b"},
        std::pair{Framework::kNemo, "configs/deepseek-v3.json"}}) {
    FrameworkBehaviour b = FrameworkDefaults(f, 1, Precision::kFp8);
    EXPECT_TRUE(ApplyFrameworkRecipes(f, model, "B200", Precision::kFp8, &b).empty()) << model;
    EXPECT_FALSE(b.ep_hierarchical_dispatch) << model;
  }
}

// Matching is on all four of framework, model, GPU and precision: a recipe for H100 leaves a
// B200 plan alone, and two rows for the same key are refused rather than applied in file order.
TEST(FrameworkRecipeTest, MatchesOnlyItsOwnGpuAndPrecision) {
  auto r = ParseFrameworkRecipes(std::string(kRecipeHeader) +
                                     "nemo,qwen3-30b-a3b,H100-SXM,fp8,ep_overlap,yes,s1\n"
                                     "nemo,qwen3-30b-a3b,H100-SXM,fp8,ep_dispatcher,deepep,s2\n",
                                 "t.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  FrameworkBehaviour h100;
  auto rows = ApplyFrameworkRecipes(*r, Framework::kNemo, "qwen3-30b-a3b", "H100-SXM",
                                    Precision::kFp8, &h100);
  EXPECT_EQ(RecipeSources(rows), "s1; s2");
  EXPECT_EQ(RecipeSettings(rows), "ep_overlap yes, ep_dispatcher deepep");
  EXPECT_TRUE(h100.ep_overlap);
  EXPECT_TRUE(h100.ep_hierarchical_dispatch);
  // A flag or a cell that says ep_overlap takes that row out of what is reported.
  DropRecipeKey("ep_overlap", &rows);
  EXPECT_EQ(RecipeSettings(rows), "ep_dispatcher deepep");
  for (auto [gpu, p] : {std::pair{"B200", Precision::kFp8}, {"H100-SXM", Precision::kBf16}}) {
    FrameworkBehaviour other;
    EXPECT_TRUE(
        ApplyFrameworkRecipes(*r, Framework::kNemo, "qwen3-30b-a3b", gpu, p, &other).empty());
    EXPECT_FALSE(other.ep_overlap);
  }
}

TEST(FrameworkRecipeTest, BadRowsNamed) {
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,tp_overlap,yes,s\n")
                .find("t.csv line 2: tp_overlap unknown key 'tp_overlap'"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,ep_overlap,maybe,s\n")
                .find("line 2: ep_overlap 'maybe': expected yes or no"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,tp_overlap_rs_sms,-1,s\n")
                .find("line 2: tp_overlap_rs_sms '-1': expected an SM count from 0 to 256"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,ep_dispatcher,nccl,s\n")
                .find("'nccl': expected alltoall, deepep or hybridep"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("jax,deepseek-v3,B200,fp8,ep_overlap,yes,s\n").find("line 2: framework"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,no-such-model,B200,fp8,ep_overlap,yes,s\n").find("line 2: model"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,Z100,fp8,ep_overlap,yes,s\n").find("line 2: gpu"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp16,ep_overlap,yes,s\n")
                .find("precision 'fp16': expected bf16 or fp8"),
            std::string::npos);
  EXPECT_NE(
      RecipeErrorOf("nemo,deepseek-v3,B200,fp8,ep_overlap,yes,\n").find("ep_overlap has no source"),
      std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,ep_overlap,yes\n").find("6 fields"),
            std::string::npos);
  EXPECT_NE(RecipeErrorOf("nemo,deepseek-v3,B200,fp8,ep_overlap,yes,a\n"
                          "nemo,deepseek-v3,B200,fp8,ep_overlap,no,b\n")
                .find("line 3: ep_overlap for nemo deepseek-v3 B200 fp8 given twice"),
            std::string::npos);
  auto header = ParseFrameworkRecipes("model,gpu\n", "t.csv");
  ASSERT_FALSE(header.ok());
  EXPECT_NE(header.status().message().find("the header must be"), std::string::npos);
}

// A recipe may name its own userbuffers SMs (NeMo's per-model tp_overlap configs); the other
// keys keep the framework file's values.
TEST(FrameworkRecipeTest, TpOverlapSmsFromARecipe) {
  auto r = ParseFrameworkRecipes(
      std::string(kRecipeHeader) + "nemo,llama3-70b,H100-SXM,bf16,tp_overlap_rs_sms,24,s\n",
      "t.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  FrameworkBehaviour b = FrameworkDefaults(Framework::kNemo, 1);
  const auto rows =
      ApplyFrameworkRecipes(*r, Framework::kNemo, "llama3-70b", "H100-SXM", Precision::kBf16, &b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(b.tp_overlap_rs_sms, 24);
  EXPECT_EQ(b.tp_overlap_bulk_sms, 16);
  EXPECT_EQ(RecipeSettings(rows), "tp_overlap_rs_sms 24");
}

// Megatron-Bridge's DeepSeek-V3 on 256 B200s at FP8 as validate rows, one per entry of `cells`:
// the row's last cells, under the columns `columns` at the end of the header.
StatusOr<std::vector<PublishedRun>> DeepSeekOnB200Rows(const std::string& columns,
                                                       const std::vector<std::string>& cells) {
  std::string text =
      "source,model,layers,hidden,heads,ffn_hidden,vocab,seq_len,gpu,cluster,num_gpus,tp,pp,dp,"
      "ep,global_batch,precision,measured_step_time_s,framework,preset," +
      columns + "\n";
  for (const std::string& c : cells) {
    text +=
        "s,DeepSeekV3,61,7168,128,18432,129280,4096,B200,dgx-b200,256,1,8,32,32,4096,fp8,19.69,"
        "nemo,deepseek-v3," +
        c + "\n";
  }
  return ReadPublishedRuns(text);
}

// validate: a row naming a preset, a framework and a GPU gets the recipe where its cells are
// empty, and its own cells where they are not (the explicit choice wins).
TEST(FrameworkRecipeTest, ValidateRowsTakeTheRecipeUnderTheirCells) {
  auto runs = DeepSeekOnB200Rows("ep_dispatcher,ep_overlap", {",", "alltoall,no"});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_TRUE((*runs)[0].behaviour.ep_hierarchical_dispatch);
  EXPECT_TRUE((*runs)[0].behaviour.ep_overlap);
  EXPECT_NE((*runs)[0].recipe.find("B200_FP8_MX_V2"), std::string::npos) << (*runs)[0].recipe;
  EXPECT_FALSE((*runs)[1].behaviour.ep_hierarchical_dispatch);
  EXPECT_FALSE((*runs)[1].behaviour.ep_overlap);
}

// The recompute_modules cell over the recipe's (DeepSeek-V3 on B200 at FP8: mla_up_proj and
// mlp): the cell wins and the recipe's row is not reported; a module Megatron-Core does not have
// is a one-line error naming the line and the column.
TEST(FrameworkRecipeTest, ValidateRowsTakeTheirRecomputeModulesCell) {
  auto runs = DeepSeekOnB200Rows("recompute_modules", {"", "moe_act core_attn"});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ((*runs)[0].behaviour.recompute_modules.bits,
            model::kRecomputeMlaUpProj | model::kRecomputeMlp);
  EXPECT_NE((*runs)[0].recipe.find("recompute_modules"), std::string::npos) << (*runs)[0].recipe;
  EXPECT_EQ((*runs)[1].behaviour.recompute_modules.bits,
            model::kRecomputeMoeAct | model::kRecomputeCoreAttn);
  EXPECT_EQ((*runs)[1].recipe.find("recompute_modules"), std::string::npos) << (*runs)[1].recipe;
  auto bad = DeepSeekOnB200Rows("recompute_modules", {"mlp moe_mlp"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2: recompute_modules mlp moe_mlp: no module moe_mlp"),
            std::string::npos)
      << bad.status().message();
}

// A row without a preset takes the recipe of the preset its columns describe, whatever its name:
// Megatron-Bridge's LLAMA3_70B (80 layers, hidden 8192, 64 heads, 8 KV heads, SwiGLU 28672,
// vocabulary 128256) is Llama 3 70B, whose GB200 FP8 recipe offloads 40 layers' activations; one
// layer fewer is no preset and takes nothing.
TEST(FrameworkRecipeTest, ARowWithoutAPresetTakesTheRecipeOfItsShape) {
  const std::string header =
      "source,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,gpu,cluster,"
      "num_gpus,tp,pp,dp,zero,global_batch,micro_batch,precision,measured_step_time_s,framework\n";
  auto runs = ReadPublishedRuns(
      header +
      "s,Bridge 70B,80,8192,64,8,28672,swiglu,128256,8192,GB200,gb200-nvl72,64,1,1,64,3,256,2,"
      "fp8,7.758,nemo\n"
      "s,Bridge 79L,79,8192,64,8,28672,swiglu,128256,8192,GB200,gb200-nvl72,64,1,1,64,3,256,2,"
      "fp8,7.758,nemo\n");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ((*runs)[0].behaviour.cpu_offload_layers, 40);
  EXPECT_FALSE((*runs)[0].behaviour.cpu_offload_required);
  EXPECT_NE((*runs)[0].recipe.find("GB200_FP8_CS_V2"), std::string::npos) << (*runs)[0].recipe;
  EXPECT_EQ((*runs)[1].behaviour.cpu_offload_layers, 0);
  auto preset = model::FindPreset("llama3-70b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(RecipeModelFor(*preset), "llama3-70b");
  model::Model renamed = *preset;
  renamed.name = "my-config.json";
  EXPECT_EQ(RecipeModelFor(renamed), "llama3-70b");
  renamed.vocab = 32000;
  EXPECT_EQ(RecipeModelFor(renamed), "");
}

}  // namespace
}  // namespace infralens::plan
