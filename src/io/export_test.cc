// Exports checked against identities derived independently of the exporters: Megatron's
// arguments parsed back into degrees and batch (the round trip), DeepSpeed's batch identity
// (train = micro x accumulation x data-parallel size, deepspeed/runtime/config.py), torchtitan's
// replicate x shard = dp, and the CSV read back by the CSV reader.
#include "io/export.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <regex>
#include <sstream>

#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "io/export_deepspeed.h"
#include "io/export_megatron.h"
#include "io/export_torchtitan.h"
#include "io/pytorch_csv.h"
#include "model/presets.h"
#include "plan/testing.h"

namespace infralens::io {
namespace {

using plan::testing::PresetRequest;

plan::Layout Lay(int tp, int pp, int dp, int cp, int ep, int zero, int vpp, int64_t mb,
                 schedule::ScheduleKind k, model::Recompute rc = model::Recompute::kSelective) {
  return plan::LayoutOf(tp, pp, dp, cp, ep, zero, vpp, mb, k, rc);
}

// The arguments after pretrain_gpt.py, as flag -> value ("" for switches).
std::map<std::string, std::string> MegatronArgs(const std::string& text) {
  std::map<std::string, std::string> args;
  const size_t start = text.find("pretrain_gpt.py");
  EXPECT_NE(start, std::string::npos);
  std::istringstream in(text.substr(start + 15));
  std::string tok, flag;
  while (in >> tok) {
    if (tok == "\\") continue;
    if (tok.rfind("--", 0) == 0) {
      flag = tok;
      args[flag] = "";
    } else {
      args[flag] = tok;
    }
  }
  return args;
}

int Int(const std::map<std::string, std::string>& a, const std::string& k, int def = 1) {
  auto it = a.find(k);
  return it == a.end() ? def : std::stoi(it->second);
}

TEST(ExportMegatronTest, ArgumentsRoundTripToTheLayout) {
  struct Case {
    std::string model;
    int nodes;
    int64_t batch, seq;
    plan::Layout lay;
  };
  const std::vector<Case> cases = {
      {"llama3-70b", 8, 512, 8192,
       Lay(8, 4, 2, 1, 1, 1, 5, 1, schedule::ScheduleKind::kInterleaved1F1B)},
      {"llama3-8b", 2, 64, 131072, Lay(8, 1, 1, 2, 1, 1, 0, 1, schedule::ScheduleKind::k1F1B)},
      {"mixtral-8x7b", 8, 256, 4096,
       Lay(2, 4, 8, 1, 8, 1, 0, 2, schedule::ScheduleKind::k1F1B, model::Recompute::kFull)},
      {"gpt3-175b", 16, 1536, 2048,
       Lay(8, 16, 1, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B, model::Recompute::kNone)},
  };
  for (const Case& c : cases) {
    const plan::PlanRequest req = PresetRequest(c.model, c.nodes, c.batch, c.seq);
    auto out = ExportMegatron(req, c.lay);
    ASSERT_TRUE(out.ok()) << c.model << ": " << out.status().message();
    const auto a = MegatronArgs(out->text);
    const int tp = Int(a, "--tensor-model-parallel-size"),
              pp = Int(a, "--pipeline-model-parallel-size");
    const int cp = Int(a, "--context-parallel-size"), ep = Int(a, "--expert-model-parallel-size");
    EXPECT_EQ(tp, c.lay.parallel.tp) << c.model;
    EXPECT_EQ(pp, c.lay.parallel.pp);
    EXPECT_EQ(cp, c.lay.parallel.cp);
    EXPECT_EQ(ep, c.lay.parallel.ep);
    // Megatron derives dp = world / (tp pp cp) (validate_args).
    EXPECT_EQ(req.gpus() / (tp * pp * cp), c.lay.parallel.dp) << c.model;
    // Virtual stages: layers per pipeline rank / layers per virtual stage.
    const int layers = Int(a, "--num-layers");
    EXPECT_EQ(layers, req.model.num_layers);
    const int vpp = a.count("--num-layers-per-virtual-pipeline-stage")
                        ? layers / pp / Int(a, "--num-layers-per-virtual-pipeline-stage")
                        : 1;
    EXPECT_EQ(vpp, c.lay.parallel.vpp > 0 ? c.lay.parallel.vpp : 1) << c.model;
    EXPECT_EQ(a.count("--sequence-parallel") == 1, c.lay.parallel.sequence_parallel);
    int zero = 0;
    if (a.count("--use-distributed-optimizer")) zero = 1;
    if (a.count("--data-parallel-sharding-strategy")) {
      zero = a.at("--data-parallel-sharding-strategy") == "optim_grads_params" ? 3 : 2;
    }
    EXPECT_EQ(zero, c.lay.parallel.zero_stage) << c.model;
    const std::string gran =
        a.count("--recompute-granularity") ? a.at("--recompute-granularity") : "none";
    EXPECT_EQ(gran, model::RecomputeName(c.lay.recompute));
    if (gran == "full") {
      EXPECT_EQ(a.at("--recompute-method"), "uniform");
      EXPECT_EQ(Int(a, "--recompute-num-layers"), 1);
    } else {
      EXPECT_EQ(a.count("--recompute-method"),
                0u);  // validate_args refuses a method with selective
    }
    EXPECT_EQ(Int(a, "--micro-batch-size"), c.lay.micro_batch);
    EXPECT_EQ(Int(a, "--global-batch-size"), c.batch);
    EXPECT_EQ(Int(a, "--seq-length"), c.seq);
    EXPECT_GE(Int(a, "--max-position-embeddings"), c.seq);
    EXPECT_EQ(Int(a, "--hidden-size"), req.model.hidden);
    EXPECT_EQ(Int(a, "--num-attention-heads"), req.model.num_heads);
    if (req.model.num_kv_heads < req.model.num_heads) {
      EXPECT_EQ(a.count("--group-query-attention"), 1u);
      EXPECT_EQ(Int(a, "--num-query-groups"), req.model.num_kv_heads);
    }
    if (req.model.is_moe()) {
      EXPECT_EQ(Int(a, "--num-experts"), req.model.num_experts);
      EXPECT_EQ(Int(a, "--moe-router-topk"), req.model.top_k);
    }
  }
}

TEST(ExportMegatronTest, ModelSpellingsFollowTheArchitecture) {
  // Llama: SwiGLU, RMSNorm, rotary, untied, no biases. GPT-3: GeLU, LayerNorm, learned positions,
  // tied, biases: Megatron's defaults, so none of those flags.
  auto llama = ExportMegatron(PresetRequest("llama3-8b", 1, 8),
                              Lay(8, 1, 1, 1, 1, 0, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(llama.ok());
  // Megatron's defaults are --rotary-base 10000 and dropout 0.1 (arguments.py): Llama 3 says
  // 500000 (its config.json rope_theta) and 0.
  for (const char* f : {"--swiglu", "--normalization RMSNorm", "--position-embedding-type rope",
                        "--untie-embeddings-and-output-weights", "--disable-bias-linear",
                        "--rotary-base 500000", "--attention-dropout 0", "--hidden-dropout 0"}) {
    EXPECT_NE(llama->text.find(f), std::string::npos) << f;
  }
  EXPECT_EQ(llama->text.find("dropout 0."), std::string::npos);  // 0, not Megatron's 0.1
  auto gpt = ExportMegatron(PresetRequest("gpt3-175b", 8, 64),
                            Lay(8, 8, 1, 1, 1, 1, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(gpt.ok());
  for (const char* f : {"--swiglu", "RMSNorm", "rope", "--untie", "--disable-bias-linear",
                        "--group-query-attention"}) {
    EXPECT_EQ(gpt->text.find(f), std::string::npos) << f;
  }
  EXPECT_NE(gpt->text.find("--attention-dropout 0.1"), std::string::npos);
  // TP needs CUDA_DEVICE_MAX_CONNECTIONS=1 on Hopper (validate_args).
  EXPECT_NE(gpt->text.find("export CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos);
}

TEST(ExportMegatronTest, DeepSeekDenseLayersBecomeAMoeLayerPattern) {
  // DeepSeek-V3: first_k_dense_replace = 3 of 61 layers (its config.json), MLA.
  auto out = ExportMegatron(PresetRequest("deepseek-v3", 32, 256, 4096),
                            Lay(8, 1, 32, 1, 32, 1, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->text.find("--moe-layer-freq '([0]*3+[1]*58)'"), std::string::npos) << out->text;
  EXPECT_NE(out->text.find("--multi-latent-attention"), std::string::npos);
  EXPECT_NE(out->text.find("--kv-lora-rank 512"), std::string::npos);
  EXPECT_NE(out->text.find("--q-lora-rank 1536"), std::string::npos);
}

TEST(ExportMegatronTest, ScheduleMegatronCannotRunIsNoted) {
  auto out = ExportMegatron(PresetRequest("llama3-8b", 1, 16),
                            Lay(2, 4, 1, 1, 1, 0, 0, 1, schedule::ScheduleKind::kZBV));
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->text.find("# note: the plan's schedule zbv has no Megatron-LM argument"),
            std::string::npos);
}

// The three numbers of a DeepSpeed config.
std::array<int64_t, 3> DeepSpeedBatch(const std::string& json) {
  std::array<int64_t, 3> v{};
  const char* keys[] = {"train_batch_size", "train_micro_batch_size_per_gpu",
                        "gradient_accumulation_steps"};
  for (int i = 0; i < 3; ++i) {
    std::smatch m;
    const std::regex re(std::string("\"") + keys[i] + "\": ([0-9]+)");
    EXPECT_TRUE(std::regex_search(json, m, re)) << keys[i];
    v[i] = std::stoll(m[1]);
  }
  return v;
}

TEST(ExportDeepSpeedTest, BatchIdentityHolds) {
  struct Case {
    int nodes;
    int64_t batch;
    plan::Layout lay;
  };
  for (const Case& c :
       std::vector<Case>{{8, 512, Lay(8, 4, 2, 1, 1, 1, 0, 1, schedule::ScheduleKind::k1F1B)},
                         {8, 512, Lay(1, 1, 64, 1, 1, 3, 0, 2, schedule::ScheduleKind::k1F1B)},
                         {4, 96, Lay(4, 2, 4, 1, 1, 0, 0, 3, schedule::ScheduleKind::k1F1B)}}) {
    const plan::PlanRequest req = PresetRequest("llama3-8b", c.nodes, c.batch);
    auto out = ExportDeepSpeed(req, c.lay);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const auto [train, micro, gas] = DeepSpeedBatch(out->text);
    EXPECT_EQ(train, c.batch);
    EXPECT_EQ(micro, c.lay.micro_batch);
    // DeepSpeedConfig._batch_assertion with world_size = the data-parallel size.
    EXPECT_EQ(train, micro * gas * c.lay.parallel.dp);
    EXPECT_NE(out->text.find(fmt::format("\"stage\": {}", c.lay.parallel.zero_stage)),
              std::string::npos);
    EXPECT_NE(out->text.find("\"bf16\": {\n    \"enabled\": true"), std::string::npos);
  }
}

TEST(ExportDeepSpeedTest, PipelineWithZero3IsFlagged) {
  auto out = ExportDeepSpeed(PresetRequest("llama3-8b", 2, 64),
                             Lay(2, 2, 4, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(out.ok());
  bool flagged = false;
  for (const auto& n : out->notes)
    flagged = flagged || n.find("incompatible with pipeline parallelism") != std::string::npos;
  EXPECT_TRUE(flagged);
}

// key = value pairs of a TOML section (this exporter writes no nested tables; the rows of
// module_fqns_per_model_part's multi-line array are skipped).
std::map<std::string, std::string> TomlSection(const std::string& text,
                                               const std::string& section) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line, cur;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      cur = line.substr(1, line.find(']') - 1);
      continue;
    }
    if (cur != section) continue;
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;  // a row of a multi-line array
    std::string v = line.substr(eq + 3);
    if (const size_t hash = v.find("  #"); hash != std::string::npos) v = v.substr(0, hash);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    out[line.substr(0, eq)] = v;
  }
  return out;
}

TEST(ExportTorchtitanTest, DegreesAndBatchFollowTheLayout) {
  // FSDP: shard = dp, replicate = 1; plain DP: replicate = dp, shard = 1.
  const plan::PlanRequest req = PresetRequest("llama3-70b", 8, 512, 8192);
  auto fsdp = ExportTorchtitan(req, Lay(8, 1, 8, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(fsdp.ok());
  auto p = TomlSection(fsdp->text, "parallelism");
  EXPECT_EQ(p["data_parallel_shard_degree"], "8");
  EXPECT_EQ(p["data_parallel_replicate_degree"], "1");
  EXPECT_EQ(p["tensor_parallel_degree"], "8");
  EXPECT_EQ(p.count("pipeline_parallel_schedule"), 0u);  // no pipeline
  auto t = TomlSection(fsdp->text, "training");
  // Without PP torchtitan accumulates global / (local x dp) steps: 512 / (1 x 8) = 64.
  EXPECT_EQ(t["local_batch_size"], "1");
  EXPECT_EQ(t["global_batch_size"], "512");
  EXPECT_EQ(t["seq_len"], "8192");
  EXPECT_EQ(TomlSection(fsdp->text, "model")["flavor"], "70B");

  auto ddp = ExportTorchtitan(req, Lay(8, 4, 2, 1, 1, 0, 0, 2, schedule::ScheduleKind::kZBV));
  ASSERT_TRUE(ddp.ok());
  p = TomlSection(ddp->text, "parallelism");
  EXPECT_EQ(p["data_parallel_replicate_degree"], "2");
  EXPECT_EQ(p["data_parallel_shard_degree"], "1");
  EXPECT_EQ(p["pipeline_parallel_degree"], "4");
  EXPECT_EQ(p["pipeline_parallel_schedule"], "ZBVZeroBubble");  // PyTorch's get_schedule_class name
  EXPECT_EQ(p["pipeline_parallel_microbatch_size"], "2");
  t = TomlSection(ddp->text, "training");
  // With PP the local batch is split into microbatches: 512 / 2 = 256 per DP rank = 2 x 128.
  EXPECT_EQ(t["local_batch_size"], "256");
  EXPECT_EQ(TomlSection(ddp->text, "activation_checkpoint")["mode"], "selective");
}

// With cp > 1 the export names PyTorch's rotater the plan charged: "allgather" for cp_exchange
// all_gather, "alltoall" (each block to the next rank) for the ring; a plan that moved the GQA
// heads says torchtitan repeats them first. Without CP the key is left at its default.
TEST(ExportTorchtitanTest, ContextParallelRotaterFollowsThePlan) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 8, 32768);
  const plan::Layout lay = Lay(1, 1, 1, 8, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B);
  for (const auto& [all_gather, repeated, method] :
       {std::tuple{true, true, "allgather"}, std::tuple{false, false, "alltoall"}}) {
    req.cp_all_gather = all_gather;
    req.cp_kv_repeated = repeated;
    auto out = ExportTorchtitan(req, lay);
    ASSERT_TRUE(out.ok()) << out.status().message();
    auto p = TomlSection(out->text, "parallelism");
    EXPECT_EQ(p["context_parallel_degree"], "8");
    EXPECT_EQ(p["context_parallel_rotate_method"], method);
    bool noted = false;
    for (const std::string& n : out->notes) noted |= n.find("repeat_kv") != std::string::npos;
    EXPECT_EQ(noted, !repeated) << out->text;
  }
  auto no_cp = ExportTorchtitan(req, Lay(1, 1, 8, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_TRUE(no_cp.ok());
  EXPECT_EQ(TomlSection(no_cp->text, "parallelism").count("context_parallel_rotate_method"), 0u);
}

// Master weights as BF16 remainders: Megatron-LM says so with its precision-aware optimizer (only
// beside the distributed optimizer); without it, and in DeepSpeed and torchtitan, which keep FP32
// master weights, the export notes it. With Transformer Engine's FP8 parameters NeMo keeps FP32
// ones too, and nothing is said.
TEST(ExportTest, MasterWeightRemaindersExportedOrNoted) {
  plan::PlanRequest req = PresetRequest("llama3-70b", 8, 512, 8192);
  req.master_weight_remainders = true;
  auto noted = [](const ExportedConfig& out) {
    for (const std::string& n : out.notes)
      if (n.find("16-bit remainders") != std::string::npos) return true;
    return false;
  };
  const plan::Layout zero1 = Lay(8, 1, 8, 1, 1, 1, 0, 1, schedule::ScheduleKind::k1F1B);
  const plan::Layout zero3 = Lay(8, 1, 8, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B);
  auto meg1 = ExportMegatron(req, zero1);
  auto meg3 = ExportMegatron(req, zero3);
  auto ds = ExportDeepSpeed(req, zero1);
  auto tt = ExportTorchtitan(req, zero3);
  ASSERT_TRUE(meg1.ok() && meg3.ok() && ds.ok() && tt.ok());
  EXPECT_EQ(MegatronArgs(meg1->text).count("--use-precision-aware-optimizer"), 1u);
  EXPECT_FALSE(noted(*meg1));
  EXPECT_EQ(MegatronArgs(meg3->text).count("--use-precision-aware-optimizer"), 0u);
  EXPECT_TRUE(noted(*meg3));
  EXPECT_TRUE(noted(*ds));
  EXPECT_TRUE(noted(*tt));
  req.precision = plan::Precision::kFp8;
  req.fp8_param_gather = true;
  auto fp8 = ExportMegatron(req, zero1);
  ASSERT_TRUE(fp8.ok());
  EXPECT_EQ(MegatronArgs(fp8->text).count("--use-precision-aware-optimizer"), 0u);
  auto ds8 = ExportDeepSpeed(req, zero1);
  ASSERT_TRUE(ds8.ok());
  EXPECT_FALSE(noted(*ds8));
}

// Activation offloading is Megatron-Core's: torchtitan and DeepSpeed have no such option, so
// their exports say so instead of dropping it silently.
TEST(ExportTest, OffloadingOutsideMegatronIsNoted) {
  plan::PlanRequest req = PresetRequest("llama3-70b", 8, 512, 8192);
  req.cpu_offload_layers = 20;
  const plan::Layout lay =
      Lay(8, 1, 8, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B, model::Recompute::kNone);
  auto tt = ExportTorchtitan(req, lay);
  auto ds = ExportDeepSpeed(req, lay);
  ASSERT_TRUE(tt.ok() && ds.ok());
  for (const auto* out : {&*tt, &*ds}) {
    bool noted = false;
    for (const std::string& n : out->notes) noted |= n.starts_with("activation offloading of 20");
    EXPECT_TRUE(noted) << out->text;
  }
}

// torchtitan has no module list for selective recompute: its export says which modules the plan
// assumed, Megatron-Core's default or the plan's own.
TEST(ExportTest, TorchtitanNotesTheRecomputeModulesThePlanAssumed) {
  plan::PlanRequest req = PresetRequest("llama3-8b", 1, 64, 8192);
  const plan::Layout lay =
      Lay(1, 1, 8, 1, 1, 3, 0, 1, schedule::ScheduleKind::k1F1B, model::Recompute::kSelective);
  const auto note = [&]() -> std::string {
    auto out = ExportTorchtitan(req, lay);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return "";
    for (const std::string& n : out->notes) {
      if (n.starts_with("the plan assumed Megatron's selective recompute")) return n;
    }
    return "";
  };
  EXPECT_NE(note().find("(the attention core only)"), std::string::npos) << note();
  req.recompute_modules = {model::kRecomputeCoreAttn | model::kRecomputeMlp};
  EXPECT_NE(note().find("recompute of core_attn mlp; torchtitan has no module list"),
            std::string::npos)
      << note();
}

TEST(ExportPytorchCsvTest, ReadsBackAsTheLayoutsSchedule) {
  const plan::PlanRequest req = PresetRequest("llama3-8b", 1, 16);
  auto out =
      ExportPytorchCsv(req, Lay(2, 4, 1, 1, 1, 0, 2, 1, schedule::ScheduleKind::kInterleaved1F1B));
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto s = ReadPytorchCsv(out->text);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pp, 4);
  EXPECT_EQ(s->vpp, 2);
  EXPECT_EQ(s->microbatches, 16);  // 16 sequences / (micro-batch 1 x dp 1)
  EXPECT_TRUE(schedule::ValidateStructure(*s).ok());
  auto none = ExportPytorchCsv(req, Lay(8, 1, 1, 1, 1, 0, 0, 1, schedule::ScheduleKind::k1F1B));
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
}

TEST(ExportTest, RefusesLayoutsThatAreNotAJob) {
  const plan::PlanRequest req = PresetRequest("llama3-8b", 1, 16);
  auto bad = ExportPlan(ExportFormat::kMegatron, req,
                        Lay(2, 2, 1, 1, 1, 0, 0, 1, schedule::ScheduleKind::k1F1B));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("use 4 GPUs, but the cluster has 8"), std::string::npos);
  auto batch = ExportPlan(ExportFormat::kDeepSpeed, req,
                          Lay(1, 1, 8, 1, 1, 0, 0, 3, schedule::ScheduleKind::k1F1B));
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("multiple of micro-batch x dp"), std::string::npos);
  EXPECT_FALSE(ParseExportFormat("yaml").ok());
  EXPECT_EQ(*ParseExportFormat("Pytorch-CSV"), ExportFormat::kPytorchCsv);
}

}  // namespace
}  // namespace infralens::io
