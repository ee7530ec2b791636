// Every export, for every model preset and layouts of the kinds the planner picks (even stages,
// uneven first/last stages, the embedding and loss counted in the split, the general layout
// string, interleaved and V schedules, MoE with expert parallelism, FP8, ZeRO 0-3), checked
// against pinned upstream data and against upstream's rules, re-implemented here from the source:
// - Megatron-LM commit 000c4ac: every flag is in tests/data/megatron_arguments_flags.txt
//   (tools/megatron_flags.py); validate_args (megatron/training/arguments.py) and
//   TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py) for the
//   rules our flags touch; get_num_layers_to_build (megatron/core/transformer/
//   transformer_block.py) and PipelineParallelLayerLayout for the split.
// - torchtitan v0.2.2: every key in tests/data/torchtitan_job_config_keys.txt
//   (tools/torchtitan_keys.py); ParallelDims._validate (torchtitan/distributed/parallel_dims.py);
//   pipeline_module_split (torchtitan/distributed/pipeline_parallel.py) for the split.
// - DeepSpeed v0.16.4: every key in tests/data/deepspeed_config_keys.txt
//   (tools/deepspeed_keys.py); DeepSpeedConfig._batch_assertion (deepspeed/runtime/config.py).
// The split rules are checked first on hand-worked cases, then used on every export.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "cluster/cluster.h"
#include "golden_test_util.h"
#include "hw/gpu.h"
#include "io/export_deepspeed.h"
#include "io/export_megatron.h"
#include "io/export_torchtitan.h"
#include "model/presets.h"
#include "plan/testing.h"

namespace infralens::io {
namespace {

using Counts = std::vector<int64_t>;

std::set<std::string> PinnedList(const std::string& relative) {
  std::ifstream f(testing::SourcePath(relative));
  EXPECT_TRUE(f.good()) << relative;
  std::set<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] != '#') names.insert(line);
  }
  return names;
}

// ---- Megatron-LM (commit 000c4ac) ------------------------------------------------------------

// The words after pretrain_gpt.py as flag -> value, the shell's single quotes removed.
std::map<std::string, std::string> ArgsAfterScript(const std::string& text) {
  std::map<std::string, std::string> out;
  const size_t at = text.find("pretrain_gpt.py");
  if (at == std::string::npos) return out;
  std::istringstream in(text.substr(at + 15));
  std::string word, flag;
  while (in >> word) {
    if (word == "\\") continue;
    if (word.size() >= 2 && word.front() == '\'' && word.back() == '\'')
      word = word.substr(1, word.size() - 2);
    if (word.rfind("--", 0) == 0) {
      flag = word;
      out[flag] = "";
    } else {
      out[flag] += out[flag].empty() ? word : " " + word;
    }
  }
  return out;
}

// PipelineParallelLayerLayout.from_str: "(...)*n" and "x*n" repeat, '|' ends a stage; the number
// of 't' per stage. Only what the exports write (no nesting beyond one level is needed, but it is
// handled recursively).
std::string ExpandLayout(const std::string& s, size_t& i) {
  std::string out;
  while (i < s.size() && s[i] != ')') {
    std::string unit;
    if (s[i] == '(') {
      ++i;
      unit = ExpandLayout(s, i);
      ++i;  // ')'
    } else {
      unit = std::string(1, s[i++]);
    }
    int64_t n = 1;
    if (i < s.size() && s[i] == '*') {
      ++i;
      n = 0;
      while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) n = n * 10 + (s[i++] - '0');
    }
    for (int64_t k = 0; k < n; ++k) out += unit;
  }
  return out;
}

Counts LayoutCounts(const std::string& layout) {
  size_t i = 0;
  const std::string flat = ExpandLayout(layout, i);
  Counts c(1, 0);
  for (char ch : flat) {
    if (ch == '|') c.push_back(0);
    if (ch == 't') ++c.back();
  }
  return c;
}

// get_num_layers_to_build for every (virtual) stage, in model order: stage s is chunk s / pp of
// pipeline rank s % pp. An empty result when upstream's asserts refuse the split.
Counts MegatronSplit(int64_t layers, int pp, int vpp, int first, int last, bool emb, bool loss) {
  std::vector<int64_t> per_rank(pp);
  if (first > 0 || last > 0) {
    if (emb || loss) return {};
    int64_t rest = layers - first - last;
    int left = pp - (first > 0) - (last > 0);
    int64_t each = 0;
    if (left > 0) {
      if (rest % left != 0) return {};
      each = rest / left;
    }
    for (int r = 0; r < pp; ++r) per_rank[r] = each;
    if (first > 0) per_rank[0] = first;
    if (last > 0) per_rank[pp - 1] = last;
  } else {
    const int64_t n = layers + emb + loss;
    if (n % pp != 0) return {};
    for (auto& x : per_rank) x = n / pp;
  }
  Counts out(static_cast<size_t>(pp) * vpp);
  for (int s = 0; s < pp * vpp; ++s) {
    const int r = s % pp, c = s / pp;
    if (per_rank[r] % vpp != 0) return {};
    int64_t n = per_rank[r] / vpp;
    if (emb && r == 0 && c == 0) --n;
    if (loss && r == pp - 1 && c == vpp - 1) --n;
    if (n < 0) return {};
    out[s] = n;
  }
  return out;
}

TEST(ExportRulesTest, MegatronSplitRuleOnHandCases) {
  // 80 layers, pp 4, vpp 5: 20 per rank, 4 per chunk.
  EXPECT_EQ(MegatronSplit(80, 4, 5, 0, 0, false, false), Counts(20, 4));
  // 61 layers + embedding + loss = 63 over pp 3: 21 per rank; first and last one lighter.
  EXPECT_EQ(MegatronSplit(61, 3, 1, 0, 0, true, true), (Counts{20, 21, 20}));
  // First 5, last 4 of 32 over pp 4: the middle two get (32 - 9) / 2, which is not whole.
  EXPECT_TRUE(MegatronSplit(32, 4, 1, 5, 4, false, false).empty());
  EXPECT_EQ(MegatronSplit(32, 4, 1, 6, 6, false, false), (Counts{6, 10, 10, 6}));
  // Interleaved with first/last: ranks hold 4, 8, 8, 8 (the middle two (28 - 12) / 2), each in
  // two chunks; stage s is chunk s / 4 of rank s % 4.
  EXPECT_EQ(MegatronSplit(28, 4, 2, 4, 8, false, false), (Counts{2, 4, 4, 4, 2, 4, 4, 4}));
  EXPECT_EQ(LayoutCounts("Et*3|(tt|)*2,t*4L"), (Counts{3, 2, 2, 4}));
}

struct MegatronCheck {
  std::vector<std::string> violations;
  Counts split;
};

// The validate_args / TransformerConfig rules that the exported flags touch, for `gpus` ranks.
MegatronCheck CheckMegatron(const std::string& text, int64_t gpus,
                            const std::set<std::string>& flags) {
  MegatronCheck r;
  auto a = ArgsAfterScript(text);
  auto bad = [&](std::string v) { r.violations.push_back(std::move(v)); };
  for (const auto& [f, v] : a) {
    if (!flags.count(f)) bad("flag not in arguments.py at 000c4ac: " + f);
  }
  auto has = [&](const char* f) { return a.count(f) > 0; };
  auto num = [&](const char* f, int64_t def) { return has(f) ? std::stoll(a[f]) : def; };
  const int64_t tp = num("--tensor-model-parallel-size", 1),
                pp = num("--pipeline-model-parallel-size", 1),
                cp = num("--context-parallel-size", 1), ep = num("--expert-model-parallel-size", 1);
  if (gpus % (tp * pp * cp) != 0) bad("world size not a multiple of tp x pp x cp");
  const int64_t dp = gpus / (tp * pp * cp);
  // validate_args: global batch divisible by micro batch x data-parallel size.
  if (num("--global-batch-size", 0) % (num("--micro-batch-size", 1) * dp) != 0)
    bad("global batch not divisible by micro x dp");
  // TransformerConfig: heads and query groups divisible by tp.
  const int64_t heads = num("--num-attention-heads", 1);
  if (heads % tp != 0) bad("heads % tp");
  if (has("--group-query-attention") && num("--num-query-groups", 1) % tp != 0)
    bad("query groups % tp");
  // Virtual pipeline forms: at most one of the three.
  const int forms = has("--num-layers-per-virtual-pipeline-stage") +
                    has("--num-virtual-stages-per-pipeline-rank") +
                    has("--pipeline-model-parallel-layout");
  if (forms > 1) bad("more than one virtual-pipeline form");
  const bool first_last =
      has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers");
  const bool account = has("--account-for-embedding-in-pipeline-split") ||
                       has("--account-for-loss-in-pipeline-split");
  if (first_last && account) bad("first/last stage layers with account-for flags");
  if (has("--pipeline-model-parallel-layout") && (first_last || account))
    bad("layout with first/last or account-for flags");
  if (has("--num-layers-per-virtual-pipeline-stage") && first_last)
    bad("--num-layers-per-virtual-pipeline-stage with uneven stages");
  if (has("--overlap-param-gather") &&
      (!(has("--use-distributed-optimizer") || has("--use-megatron-fsdp")) ||
       !has("--overlap-grad-reduce")))
    bad("--overlap-param-gather without the distributed optimizer and --overlap-grad-reduce");
  // OptimizerConfig.__post_init__ (megatron/core/optimizer/optimizer_config.py).
  if (has("--use-precision-aware-optimizer") && !has("--use-distributed-optimizer"))
    bad("--use-precision-aware-optimizer without the distributed optimizer");
  // MoE router rules (TransformerConfig.__post_init__).
  const int64_t experts = num("--num-experts", 0);
  const std::string score =
      has("--moe-router-score-function") ? a["--moe-router-score-function"] : "softmax";
  if (has("--moe-router-enable-expert-bias") && score != "sigmoid")
    bad("expert bias only supports sigmoid");
  if (has("--moe-router-group-topk")) {
    const int64_t g = num("--moe-router-num-groups", 0);
    if (g == 0)
      bad("group top-k without num groups");
    else if (experts % g != 0 || num("--moe-router-group-topk", 0) > g)
      bad("router groups");
  }
  if (experts > 0 && num("--moe-router-topk", 2) == 1 && score == "softmax" &&
      !has("--moe-router-pre-softmax"))
    bad("top-1 softmax without pre-softmax");
  if (experts > 0 && experts % ep != 0) bad("experts % ep");
  if (ep > 1 && experts == 0) bad("ep without experts");

  // The split.
  const int64_t layers = num("--num-layers", 0);
  if (has("--pipeline-model-parallel-layout")) {
    r.split = LayoutCounts(a["--pipeline-model-parallel-layout"]);
    if (static_cast<int64_t>(r.split.size()) % pp != 0) bad("layout stages % pp");
  } else {
    int64_t vpp = num("--num-virtual-stages-per-pipeline-rank", 1);
    if (has("--num-layers-per-virtual-pipeline-stage")) {
      const int64_t n = layers + account;  // only the even form reaches here
      vpp = n / pp / num("--num-layers-per-virtual-pipeline-stage", 1);
    }
    r.split = MegatronSplit(layers, static_cast<int>(pp), static_cast<int>(vpp),
                            static_cast<int>(num("--decoder-first-pipeline-num-layers", 0)),
                            static_cast<int>(num("--decoder-last-pipeline-num-layers", 0)),
                            has("--account-for-embedding-in-pipeline-split"),
                            has("--account-for-loss-in-pipeline-split"));
    if (r.split.empty()) bad("get_num_layers_to_build refuses the split");
  }
  return r;
}

// ---- torchtitan v0.2.2 ------------------------------------------------------------------------

struct Toml {
  std::map<std::string, std::string> values;        // "section.key" -> raw value
  std::vector<std::vector<std::string>> fqn_parts;  // module_fqns_per_model_part
};

Toml ParseToml(const std::string& text) {
  Toml t;
  std::istringstream in(text);
  std::string line, section;
  bool in_parts = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (in_parts) {
      if (line == "]") {
        in_parts = false;
        continue;
      }
      std::vector<std::string> part;
      size_t q = 0;
      while ((q = line.find('"', q)) != std::string::npos) {
        const size_t e = line.find('"', q + 1);
        part.push_back(line.substr(q + 1, e - q - 1));
        q = e + 1;
      }
      t.fqn_parts.push_back(part);
      continue;
    }
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string v = line.substr(eq + 3);
    if (const size_t hash = v.find("  #"); hash != std::string::npos) v.resize(hash);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    const std::string key = section + "." + line.substr(0, eq);
    t.values[key] = v;
    if (key == "parallelism.module_fqns_per_model_part") in_parts = true;
  }
  return t;
}

// The transformer layers of each stage of a module_fqns_per_model_part list; empty when it is
// not the contiguous layers.0 .. layers.(L-1) with the embedding first and norm, output last.
Counts TorchtitanSplit(const std::vector<std::vector<std::string>>& parts, int64_t layers) {
  Counts c;
  int64_t next = 0;
  for (size_t s = 0; s < parts.size(); ++s) {
    int64_t n = 0;
    for (size_t i = 0; i < parts[s].size(); ++i) {
      const std::string& m = parts[s][i];
      if (m == "tok_embeddings") {
        if (s != 0 || i != 0) return {};
      } else if (m == "norm" || m == "output") {
        if (s + 1 != parts.size()) return {};
      } else if (m == fmt::format("layers.{}", next)) {
        ++next;
        ++n;
      } else {
        return {};
      }
    }
    c.push_back(n);
  }
  if (next != layers) return {};
  return c;
}

TEST(ExportRulesTest, TorchtitanSplitRuleOnHandCases) {
  // generate_llm_fqn_per_model_part(4, 6, 1, 1): 8 effective layers, 2 each; the first and last
  // stage give one to the embedding / output.
  EXPECT_EQ(TorchtitanSplit({{"tok_embeddings", "layers.0"},
                             {"layers.1", "layers.2"},
                             {"layers.3", "layers.4"},
                             {"layers.5", "norm", "output"}},
                            6),
            (Counts{1, 2, 2, 1}));
  EXPECT_TRUE(
      TorchtitanSplit({{"tok_embeddings", "layers.1"}, {"layers.0", "norm", "output"}}, 2).empty());
  EXPECT_EQ(TorchtitanStageModules({1, 0, 2}),
            (std::vector<std::vector<std::string>>{
                {"tok_embeddings", "layers.0"}, {}, {"layers.1", "layers.2", "norm", "output"}}));
}

// ---- The cases ---------------------------------------------------------------------------------

plan::PlanRequest Request(const model::Model& m, plan::Precision precision) {
  plan::PlanRequest r = plan::testing::PresetRequest(m, 8, 512);  // 64 GPUs
  r.precision = precision;
  r.fsdp_max_live_params = 1e9;  // DeepSpeed's ZeRO-3 exports then carry its live bound
  // BF16 exports keep the master weights as remainders (Megatron-LM's precision-aware optimizer).
  r.master_weight_remainders = precision == plan::Precision::kBf16;
  return r;
}

struct Shape {
  const char* what;
  int tp, pp, dp, cp, ep, zero, vpp;
  schedule::ScheduleKind sched;
  int split;  // 0 even, 1 first/last, 2 embedding+loss counted, 3 layout string
};

std::vector<Shape> Shapes() {
  using K = schedule::ScheduleKind;
  return {
      {"tp8 dp8 zero1", 8, 1, 8, 1, 1, 1, 0, K::k1F1B, 0},
      {"tp8 pp4 1f1b", 8, 4, 2, 1, 1, 1, 0, K::k1F1B, 0},
      {"tp4 pp4 interleaved vpp2", 4, 4, 4, 1, 1, 1, 2, K::kInterleaved1F1B, 0},
      {"tp8 pp4 interleaved vpp5", 8, 4, 2, 1, 1, 1, 5, K::kInterleaved1F1B, 0},
      {"tp2 pp4 first/last", 2, 4, 8, 1, 1, 1, 0, K::k1F1B, 1},
      {"tp2 pp4 embedding+loss", 2, 4, 8, 1, 1, 0, 0, K::k1F1B, 2},
      {"tp4 pp4 layout string", 4, 4, 4, 1, 1, 1, 0, K::k1F1B, 3},
      {"tp1 pp4 zbv", 1, 4, 16, 1, 1, 1, 2, K::kZBV, 0},
      {"tp1 dp64 zero3", 1, 1, 64, 1, 1, 3, 0, K::k1F1B, 0},
      {"tp2 cp2 dp16 zero2", 2, 1, 16, 2, 1, 2, 0, K::k1F1B, 0},
      {"tp1 ep8 dp64", 1, 1, 64, 1, 8, 1, 0, K::k1F1B, 0},
      {"tp2 pp4 ep8 dp8", 2, 4, 8, 1, 8, 1, 0, K::k1F1B, 0},
      {"tp2 pp4 ep8 dp8 first/last", 2, 4, 8, 1, 8, 1, 0, K::k1F1B, 1},
  };
}

// The shape's layout for model m, or nullopt when its split does not fit m's layers.
std::optional<plan::Layout> MakeLayout(const Shape& s, const model::Model& m) {
  plan::Layout l = plan::LayoutOf(s.tp, s.pp, s.dp, s.cp, s.ep, s.zero, s.vpp, /*micro_batch=*/1,
                                  s.sched, model::Recompute::kSelective);
  const int64_t L = m.num_layers;
  if (s.split == 1) {
    // First stage one layer lighter than a quarter, the two middle stages equal, the rest last.
    const int64_t first = L / 4 - 1;
    if (first < 1) return std::nullopt;
    const int64_t mid = (L - first) / 3;
    l.parallel.first_stage_layers = static_cast<int>(first);
    l.parallel.last_stage_layers = static_cast<int>(L - first - 2 * mid);
  } else if (s.split == 2) {
    l.parallel.embedding_in_split = l.parallel.loss_in_split = true;
  } else if (s.split == 3) {
    // Four stages: the first holds the embedding and one layer fewer than the others.
    const int64_t each = (L + 1) / 4;
    if (each < 2) return std::nullopt;
    const int64_t last = L - (each - 1) - 2 * each;
    if (last < 1) return std::nullopt;
    l.parallel.layout = fmt::format("Et*{}|(t*{}|)*2t*{}L", each - 1, each, last);
  }
  if (!plan::EvaluateMemory(Request(m, plan::Precision::kBf16), l).ok()) return std::nullopt;
  return l;
}

TEST(ExportRulesTest, EveryExportOfEveryPresetPassesTheUpstreamRules) {
  const auto megatron_flags = PinnedList("tests/data/megatron_arguments_flags.txt");
  const auto titan_keys = PinnedList("tests/data/torchtitan_job_config_keys.txt");
  const auto ds_keys = PinnedList("tests/data/deepspeed_config_keys.txt");
  ASSERT_GT(megatron_flags.size(), 500u);
  ASSERT_GT(titan_keys.size(), 100u);
  ASSERT_GT(ds_keys.size(), 100u);
  int checked = 0;
  std::set<std::string> kinds_seen;
  for (const auto& preset : model::ModelPresets()) {
    const model::Model& m = preset.model;
    int per_model = 0;
    for (const Shape& s : Shapes()) {
      if (s.ep > 1 && !m.is_moe()) continue;
      const auto lay = MakeLayout(s, m);
      if (!lay) continue;
      for (plan::Precision prec : {plan::Precision::kBf16, plan::Precision::kFp8}) {
        const plan::PlanRequest req = Request(m, prec);
        const std::string where =
            fmt::format("{} {} {}", m.name, s.what, prec == plan::Precision::kFp8 ? "fp8" : "bf16");
        SCOPED_TRACE(where);
        auto job = ResolveExportJob(req, *lay);
        ASSERT_TRUE(job.ok()) << job.status().message();

        // Megatron-LM.
        auto meg = ExportMegatron(req, *lay);
        ASSERT_TRUE(meg.ok()) << meg.status().message();
        const MegatronCheck mc = CheckMegatron(meg->text, req.gpus(), megatron_flags);
        EXPECT_TRUE(mc.violations.empty()) << fmt::format("{}", fmt::join(mc.violations, "; "));
        EXPECT_EQ(mc.split, job->stage_layers) << "Megatron builds another split";
        EXPECT_NE(meg->text.find(kMegatronCommit), std::string::npos);

        // torchtitan. At v0.2.2 qwen3's and gpt_oss's TrainSpecs have no pipelining_fn
        // (torchtitan/models/qwen3/__init__.py, gpt_oss/__init__.py), so train.py refuses pp > 1
        // for them; every model's parallelize asserts seq_len % (tp x 2 cp) == 0.
        auto tt = ExportTorchtitan(req, *lay);
        const bool titan_pipelines = m.name.rfind("qwen3-", 0) != 0 && m.name != "gpt-oss-120b";
        EXPECT_EQ(TorchtitanRunsPipelines(m), titan_pipelines);
        if (lay->parallel.pp > 1 && !titan_pipelines) {
          ASSERT_FALSE(tt.ok());
          EXPECT_NE(tt.status().message().find("has no pipelining"), std::string::npos)
              << tt.status().message();
        } else if (job->seq_len % (int64_t{lay->parallel.tp} * 2 * lay->parallel.cp) != 0) {
          ASSERT_FALSE(tt.ok());
          EXPECT_NE(tt.status().message().find("seq_len_divisor"), std::string::npos);
        } else {
          ASSERT_TRUE(tt.ok()) << tt.status().message();
          const Toml t = ParseToml(tt->text);
          for (const auto& [k, v] : t.values) {
            EXPECT_TRUE(titan_keys.count(k)) << "not a torchtitan v0.2.2 key: " << k;
          }
          auto deg = [&](const char* k) {
            return std::stoll(t.values.at("parallelism." + std::string(k)));
          };
          const int64_t rep = deg("data_parallel_replicate_degree"),
                        shard = deg("data_parallel_shard_degree"),
                        tp = deg("tensor_parallel_degree"), pp = deg("pipeline_parallel_degree"),
                        cp = deg("context_parallel_degree"), ep = deg("expert_parallel_degree");
          EXPECT_EQ(rep * shard * cp * tp * pp, req.gpus());  // ParallelDims._validate
          if (ep > 1) {
            const int64_t etp = deg("expert_tensor_parallel_degree");
            EXPECT_TRUE(etp == tp || etp == 1);  // "Currently we only support ETP=TP or ETP=1"
            EXPECT_EQ(etp, lay->parallel.tp);    // the plan shards experts over tp too
            if ((shard * cp * tp) % (etp * ep) != 0) {
              EXPECT_NE(tt->text.find("cannot build this one"), std::string::npos);
            }
          }
          if (pp > 1) {
            const Counts split = TorchtitanSplit(t.fqn_parts, m.num_layers);
            EXPECT_EQ(split, job->stage_layers) << "torchtitan builds another split";
            EXPECT_EQ(static_cast<int64_t>(t.fqn_parts.size()) % pp, 0);  // pipeline_module_split
            const std::string sched = t.values.at("parallelism.pipeline_parallel_schedule");
            if (sched == "1F1B" || sched == "GPipe") {
              EXPECT_EQ(static_cast<int64_t>(t.fqn_parts.size()), pp);  // single-stage schedules
            } else {
              EXPECT_GE(static_cast<int64_t>(t.fqn_parts.size()), 2 * pp);
            }
            // local batch / microbatch size = the plan's microbatches.
            EXPECT_EQ(std::stoll(t.values.at("training.local_batch_size")) /
                          std::stoll(t.values.at("parallelism.pipeline_parallel_microbatch_size")),
                      job->microbatches);
          }
          if (t.values.count("model.converters")) {
            EXPECT_EQ(t.values.at("model.converters"), "[\"quantize.linear.float8\"]");
            EXPECT_TRUE(titan_keys.count("quantize.linear.float8.emulate"));
          }
          EXPECT_NE(tt->text.find(kTorchtitanCommit), std::string::npos);
        }

        // DeepSpeed.
        auto ds = ExportDeepSpeed(req, *lay);
        ASSERT_TRUE(ds.ok()) << ds.status().message();
        const auto js = nlohmann::json::parse(ds->text);
        for (const auto& [k, v] : js.items()) {
          EXPECT_TRUE(ds_keys.count(k)) << "not a DeepSpeed key: " << k;
          if (v.is_object()) {
            for (const auto& [k2, v2] : v.items()) {
              EXPECT_TRUE(ds_keys.count(k == "zero_optimization" ? k + "." + k2 : k2))
                  << "not a DeepSpeed key: " << k << "." << k2;
            }
          }
        }
        EXPECT_EQ(js["train_batch_size"].get<int64_t>(),
                  js["train_micro_batch_size_per_gpu"].get<int64_t>() *
                      js["gradient_accumulation_steps"].get<int64_t>() * lay->parallel.dp);
        ++checked;
        ++per_model;
        kinds_seen.insert(s.what);
      }
    }
    EXPECT_GE(per_model, 2) << m.name << ": too few layouts fit to test its exports";
  }
  // Every kind of layout was exported for some model.
  EXPECT_EQ(kinds_seen.size(), Shapes().size());
  EXPECT_GT(checked, 100);
}

// torchtitan v0.2.2 has the Qwen3 MoE and GPT-OSS models (torchtitan/models/qwen3/__init__.py
// flavors "30B-A3B" and "235B-A22B", torchtitan/models/gpt_oss/__init__.py "120b"), without
// pipelining (pipelining_fn=None): their exports name them at pp 1 and refuse pp 2, as
// train.py would.
TEST(ExportRulesTest, TorchtitanNamesQwen3AndGptOssAndRefusesTheirPipelines) {
  for (const auto& [preset, name, flavor] : {std::tuple{"qwen3-30b-a3b", "qwen3", "30B-A3B"},
                                             std::tuple{"qwen3-235b-a22b", "qwen3", "235B-A22B"},
                                             std::tuple{"gpt-oss-120b", "gpt_oss", "120b"}}) {
    SCOPED_TRACE(preset);
    const model::Model m = *model::FindPreset(preset);
    plan::Layout flat;
    flat.parallel.dp = 64;
    flat.parallel.ep = 8;
    flat.parallel.zero_stage = 3;
    flat.micro_batch = 1;
    auto out = ExportTorchtitan(Request(m, plan::Precision::kBf16), flat);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Toml t = ParseToml(out->text);
    EXPECT_EQ(t.values.at("model.name"), name);
    EXPECT_EQ(t.values.at("model.flavor"), flavor);
    plan::Layout piped = flat;
    piped.parallel.pp = 2;
    piped.parallel.dp = 32;
    auto refused = ExportTorchtitan(Request(m, plan::Precision::kBf16), piped);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(
        refused.status().message().find(fmt::format("pp 2: torchtitan v0.2.2's {} model", name)),
        std::string::npos)
        << refused.status().message();
  }
  // A sequence torchtitan's sequence parallelism cannot split: 4,100 tokens over tp 8 x 2.
  plan::PlanRequest req = Request(*model::FindPreset("llama3-8b"), plan::Precision::kBf16);
  req.seq_len = 4100;
  plan::Layout lay;
  lay.parallel.tp = 8;
  lay.parallel.dp = 8;
  lay.micro_batch = 1;
  auto odd = ExportTorchtitan(req, lay);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("sequence length 4100"), std::string::npos)
      << odd.status().message();
}

// ---- The cases issue 22 names ------------------------------------------------------------------

TEST(ExportRulesTest, DeepSeekV3MegatronHasUpstreamsRouterAndNorms) {
  const model::Model m = *model::FindPreset("deepseek-v3");
  const auto l = MakeLayout(Shapes()[12], m);  // tp2 pp4 ep8, first/last stages
  ASSERT_TRUE(l.has_value());
  auto out = ExportMegatron(Request(m, plan::Precision::kBf16), *l);
  ASSERT_TRUE(out.ok());
  auto a = ArgsAfterScript(out->text);
  // Upstream's recipe (examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh at d98e8a6) and
  // deepseek-ai/DeepSeek-V3 config.json.
  EXPECT_EQ(a["--moe-router-score-function"], "sigmoid");
  EXPECT_TRUE(a.count("--moe-router-enable-expert-bias"));
  EXPECT_EQ(a["--moe-router-topk-scaling-factor"], "2.5");
  EXPECT_EQ(a["--moe-router-num-groups"], "8");
  EXPECT_EQ(a["--moe-router-group-topk"], "4");
  EXPECT_TRUE(a.count("--qk-layernorm"));
  EXPECT_EQ(a["--norm-epsilon"], "1e-06");
}

TEST(ExportRulesTest, Llama405bMegatronScalesRopeAndStatesThePaddedVocabulary) {
  const model::Model m = *model::FindPreset("llama3-405b");
  const auto l = MakeLayout(Shapes()[0], m);  // tp8 dp8
  ASSERT_TRUE(l.has_value());
  auto out = ExportMegatron(Request(m, plan::Precision::kBf16), *l);
  ASSERT_TRUE(out.ok());
  auto a = ArgsAfterScript(out->text);
  EXPECT_TRUE(a.count("--use-rope-scaling"));
  EXPECT_EQ(a.count("--rope-scaling-factor"), 0u);  // 8 is the default
  EXPECT_EQ(a.count("--norm-epsilon"), 0u);         // 1e-5 is the default
  // 128256 rounded up to a multiple of 128 x 8 = 1024: 126 x 1024 = 129024.
  EXPECT_EQ(MegatronPaddedVocab(128256, 128, 8), 129024);
  EXPECT_NE(out->text.find("pads it to 129024"), std::string::npos);
  // The 8B preset (Meta-Llama-3-8B) has no RoPE scaling.
  const auto l8 = MakeLayout(Shapes()[0], *model::FindPreset("llama3-8b"));
  ASSERT_TRUE(l8.has_value());
  auto small =
      ExportMegatron(Request(*model::FindPreset("llama3-8b"), plan::Precision::kBf16), *l8);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(ArgsAfterScript(small->text).count("--use-rope-scaling"), 0u);
}

// The torchtitan export of the preset `model` in Shapes()[shape] at `precision`; "" (and the
// failure reported) when it fails.
std::string TorchtitanText(const char* model, size_t shape, plan::Precision precision) {
  const model::Model m = *model::FindPreset(model);
  const auto l = MakeLayout(Shapes()[shape], m);
  EXPECT_TRUE(l.has_value()) << model;
  if (!l.has_value()) return "";
  auto out = ExportTorchtitan(Request(m, precision), *l);
  EXPECT_TRUE(out.ok()) << model << ": " << out.status().message();
  return out.ok() ? out->text : "";
}

TEST(ExportRulesTest, TorchtitanWritesThePlansSplitAndV02Names) {
  // Llama-3 70B at tp8 pp4 vpp5: 20 stages of 4 (torchtitan's default weighting would make 82
  // effective layers, and pipeline_parallel_layers_per_stage 4 would ask for 21 stages).
  {
    const std::string text = TorchtitanText("llama3-70b", 3, plan::Precision::kFp8);
    const Toml t = ParseToml(text);
    EXPECT_EQ(TorchtitanSplit(t.fqn_parts, 80), Counts(20, 4));
    EXPECT_EQ(t.values.at("model.converters"), "[\"quantize.linear.float8\"]");
    EXPECT_EQ(t.values.count("parallelism.pipeline_parallel_layers_per_stage"), 0u);
  }
  // Mixtral 8x7B at pp4: 8 layers each (the default split would be [8, 9, 8, 7]).
  {
    const std::string text = TorchtitanText("mixtral-8x7b", 11, plan::Precision::kBf16);
    const Toml t = ParseToml(text);
    EXPECT_EQ(TorchtitanSplit(t.fqn_parts, 32), Counts(4, 8));
    EXPECT_EQ(t.values.at("parallelism.expert_parallel_degree"), "8");
    EXPECT_EQ(t.values.at("parallelism.expert_tensor_parallel_degree"), "2");
  }
  // DeepSeek-V3: its own [model], and the plan's uneven split: first 61 / 4 - 1 = 14, the middle
  // two (61 - 14) / 3 = 15, the last 61 - 14 - 30 = 17 (the default would be [16, 16, 16, 13]).
  {
    const std::string text = TorchtitanText("deepseek-v3", 12, plan::Precision::kBf16);
    const Toml t = ParseToml(text);
    EXPECT_EQ(t.values.at("model.name"), "deepseek_v3");
    EXPECT_EQ(t.values.at("model.flavor"), "671B");
    EXPECT_EQ(TorchtitanSplit(t.fqn_parts, 61), (Counts{14, 15, 15, 17}));
    EXPECT_NE(text.find("norm epsilon 1e-06"), std::string::npos);
  }
}

}  // namespace
}  // namespace infralens::io
