#include "plan/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "base/csv.h"
#include "base/strings.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/cpu_offload.h"
#include "plan/framework_recipe.h"
#include "plan/layer_layout.h"

namespace infralens::plan {

namespace {

// A preset lookup's message without the flag it names ("--gpu Z100: unknown GPU ..." ->
// "unknown GPU ..."): in a CSV the column is named instead.
std::string WithoutFlag(std::string_view message) {
  if (message.rfind("--", 0) == 0) {
    if (const size_t colon = message.find(": "); colon != std::string_view::npos)
      return std::string(message.substr(colon + 2));
  }
  return std::string(message);
}

// One row of the published runs' CSV: its cells by column name, read and checked with the line
// they are on named in every error.
class PublishedRunCells {
 public:
  PublishedRunCells(const std::map<std::string, size_t>& col, const std::vector<std::string>& row,
                    int line)
      : col_(col), row_(row), line_(line) {}

  int line() const { return line_; }

  // The cell, trimmed; "" when the column is absent.
  std::string Cell(const char* name) const {
    auto it = col_.find(name);
    if (it == col_.end() || it->second >= row_.size()) return "";
    return std::string(Trim(row_[it->second]));
  }
  // A whole number 0..2^40; `fallback` when empty, unless `required`.
  StatusOr<int64_t> Integer(const char* name, int64_t fallback, bool required) const {
    std::string s = Cell(name);
    if (s.empty()) {
      if (required) return InvalidArgument(fmt::format("line {}: column {} is empty", line_, name));
      return fallback;
    }
    auto v = ParseInt(s);
    if (!v || *v < 0 || *v > (int64_t{1} << 40)) {
      return InvalidArgument(
          fmt::format("line {}: {} '{}' is not a whole number >= 0", line_, name, s));
    }
    return *v;
  }
  // A number >= 0; 0 when empty.
  StatusOr<double> Number(const char* name) const {
    std::string s = Cell(name);
    if (s.empty()) return 0.0;
    auto v = ParseDouble(s);
    if (!v || *v < 0)
      return InvalidArgument(fmt::format("line {}: {} '{}' is not a number >= 0", line_, name, s));
    return *v;
  }
  // yes or no; `fallback` when empty.
  StatusOr<bool> YesNo(const char* name, bool fallback) const {
    const std::string v = ToLower(Cell(name));
    if (v.empty()) return fallback;
    if (v == "yes") return true;
    if (v == "no") return false;
    return InvalidArgument(
        fmt::format("line {}: {} '{}' must be yes, no or empty", line_, name, v));
  }

 private:
  const std::map<std::string, size_t>& col_;
  const std::vector<std::string>& row_;
  int line_;
};

// The run's names: source, model, GPU and cluster (both presets), recomputation, precision, notes.
Status ReadPublishedRunNames(const PublishedRunCells& row, PublishedRun* run) {
  run->source = row.Cell("source");
  run->model_name = row.Cell("model");
  run->gpu = row.Cell("gpu");
  run->cluster = row.Cell("cluster");
  run->recompute = row.Cell("recompute");
  run->precision = row.Cell("precision").empty() ? "bf16" : row.Cell("precision");
  run->notes = row.Cell("notes");
  if (auto g = hw::FindGpu(run->gpu); !g.ok()) {
    return InvalidArgument(fmt::format("line {}: column gpu '{}': {}", row.line(), run->gpu,
                                       WithoutFlag(g.status().message())));
  }
  if (auto c = cluster::FindClusterPreset(run->cluster); !c.ok()) {
    return InvalidArgument(fmt::format("line {}: column cluster '{}': {}", row.line(), run->cluster,
                                       WithoutFlag(c.status().message())));
  }
  return Status::Ok();
}

// The model's shape from its columns (GPT-style or SwiGLU), or a preset with the row's sequence.
Status ReadPublishedRunModel(const PublishedRunCells& row, PublishedRun* run) {
  model::Model& m = run->model;
  m.name = run->model_name;
  m.source = run->source;
  ASSIGN_OR_RETURN(m.num_layers, row.Integer("layers", 0, true));
  ASSIGN_OR_RETURN(m.hidden, row.Integer("hidden", 0, true));
  ASSIGN_OR_RETURN(m.num_heads, row.Integer("heads", 0, true));
  ASSIGN_OR_RETURN(m.num_kv_heads, row.Integer("kv_heads", m.num_heads, false));
  ASSIGN_OR_RETURN(m.ffn_hidden, row.Integer("ffn_hidden", 0, true));
  ASSIGN_OR_RETURN(m.vocab, row.Integer("vocab", 0, true));
  ASSIGN_OR_RETURN(m.seq_len, row.Integer("seq_len", 0, true));
  if (m.num_heads > 0) m.head_dim = m.hidden / m.num_heads;
  const std::string mlp = ToLower(row.Cell("mlp"));
  if (mlp == "swiglu") {
    m.gated_mlp = true;
  } else if (mlp == "gelu" || mlp.empty()) {
    // GPT-style: LayerNorm, biases, learned positions (Brown et al. 2020; Megatron GPT), and
    // dropout 0.1 (Megatron's default).
    m.layernorm = true;
    m.qkv_bias = m.out_bias = m.mlp_bias = true;
    m.learned_positions = m.seq_len;
    m.attention_dropout = m.hidden_dropout = 0.1;
  } else if (mlp == "relu2") {
    // Nemotron-4's squared ReLU: two matrices like GeLU's, with LayerNorm, no biases, rotary
    // positions and no dropout (Parmar et al. 2024, sec. 2; NeMo's nemotron configs: activation
    // squared-relu, bias false, position_embedding_type rope, hidden_dropout 0).
    m.layernorm = true;
  } else {
    return InvalidArgument(
        fmt::format("line {}: mlp '{}' must be gelu, relu2 or swiglu", row.line(), mlp));
  }
  if (const std::string preset = row.Cell("preset"); !preset.empty()) {
    // A built-in model whose shape the columns cannot express (MLA, MoE); the row's sequence.
    auto p = model::FindPreset(preset);
    if (!p.ok())
      return InvalidArgument(fmt::format("line {}: preset: {}", row.line(), p.status().message()));
    const int64_t seq = m.seq_len;
    m = *p;
    m.seq_len = seq;
  }
  Status valid = model::Validate(m);
  if (!valid.ok()) return InvalidArgument(fmt::format("line {}: {}", row.line(), valid.message()));
  return Status::Ok();
}

// The layout (degrees, virtual stages, ZeRO), the batch and the measurements.
Status ReadPublishedRunLayout(const PublishedRunCells& row, PublishedRun* run) {
  ASSIGN_OR_RETURN(run->num_gpus, row.Integer("num_gpus", 0, true));
  ASSIGN_OR_RETURN(int64_t tp, row.Integer("tp", 1, true));
  ASSIGN_OR_RETURN(int64_t pp, row.Integer("pp", 1, true));
  ASSIGN_OR_RETURN(int64_t dp, row.Integer("dp", 1, true));
  ASSIGN_OR_RETURN(int64_t cp, row.Integer("cp", 1, false));
  ASSIGN_OR_RETURN(int64_t ep, row.Integer("ep", 1, false));
  ASSIGN_OR_RETURN(int64_t vp, row.Integer("vp", 0, false));
  // An empty zero cell is open (-1): the stages the framework implements are tried.
  ASSIGN_OR_RETURN(int64_t zero, row.Integer("zero", -1, false));
  for (auto [name, v] : {std::pair{"tp", tp}, {"pp", pp}, {"dp", dp}, {"cp", cp}, {"ep", ep}}) {
    if (v < 1 || v > 65536)
      return InvalidArgument(fmt::format("line {}: {} {} must be 1..65536", row.line(), name, v));
  }
  if (zero > 3)
    return InvalidArgument(fmt::format("line {}: zero {} must be 0..3", row.line(), zero));
  run->tp = static_cast<int>(tp), run->pp = static_cast<int>(pp), run->dp = static_cast<int>(dp);
  run->cp = static_cast<int>(cp), run->ep = static_cast<int>(ep),
  run->vp = static_cast<int>(std::min<int64_t>(vp, 64));
  run->zero = static_cast<int>(zero);
  if (int64_t{run->tp} * run->pp * run->dp * run->cp != run->num_gpus) {
    return InvalidArgument(fmt::format("line {}: tp x pp x dp x cp = {} but num_gpus = {}",
                                       row.line(), int64_t{run->tp} * run->pp * run->dp * run->cp,
                                       run->num_gpus));
  }
  ASSIGN_OR_RETURN(run->global_batch, row.Integer("global_batch", 0, true));
  ASSIGN_OR_RETURN(run->micro_batch, row.Integer("micro_batch", 0, false));
  ASSIGN_OR_RETURN(run->measured_step_time_s, row.Number("measured_step_time_s"));
  if (run->measured_step_time_s <= 0) {
    return InvalidArgument(fmt::format("line {}: measured_step_time_s must be > 0", row.line()));
  }
  ASSIGN_OR_RETURN(run->measured_tflops_per_gpu, row.Number("measured_tflops_per_gpu"));
  ASSIGN_OR_RETURN(run->measured_mfu, row.Number("measured_mfu"));
  return Status::Ok();
}

// The framework's behaviour: its defaults, then the row's attention, overlaps, torch.compile and
// MoE dispatch.
Status ReadPublishedRunBehaviour(const PublishedRunCells& row, PublishedRun* run) {
  const std::string fw = row.Cell("framework");
  if (!fw.empty()) {
    auto f = ParseFramework(fw);
    if (!f.ok())
      return InvalidArgument(
          fmt::format("line {}: framework: {}", row.line(), f.status().message()));
    run->framework = *f;
  }
  auto precision = ParsePrecision(run->precision);
  if (!precision.ok())
    return InvalidArgument(
        fmt::format("line {}: precision {}", row.line(), precision.status().message()));
  run->behaviour = FrameworkDefaults(run->framework, std::max(run->zero, 0), *precision);
  // The framework's recipe for this model on this GPU (data/frameworks/recipes.csv; the row's
  // preset, or the preset of its columns' shape: RecipeModelFor): under the row's own cells,
  // which follow.
  std::vector<const FrameworkRecipe*> recipe;
  if (auto gpu = hw::FindGpu(run->gpu); gpu.ok()) {
    recipe = ApplyFrameworkRecipes(run->framework, RecipeModelFor(run->model), gpu->name,
                                   *precision, &run->behaviour);
  }
  // The row's own cells win: the recipe rows they override are not reported as applied.
  for (const char* key :
       {"ep_dispatcher", "ep_overlap", "cpu_offload_layers", "recompute_modules"}) {
    if (!row.Cell(key).empty()) DropRecipeKey(key, &recipe);
  }
  run->recipe = RecipeSources(recipe);
  const std::string attention = ToLower(row.Cell("attention"));
  if (Status st = ApplyAttention(attention, &run->behaviour); !st.ok()) {
    return InvalidArgument(fmt::format("line {}: attention {}", row.line(), st.message()));
  }
  ASSIGN_OR_RETURN(run->behaviour.overlap_grad_reduce,
                   row.YesNo("dp_overlap", run->behaviour.overlap_grad_reduce));
  ASSIGN_OR_RETURN(
      run->overlap_grad_reduce_zero3,
      row.YesNo("dp_overlap",
                run->zero >= 3
                    ? run->behaviour.overlap_grad_reduce
                    : FrameworkDefaults(run->framework, 3, *precision).overlap_grad_reduce));
  ASSIGN_OR_RETURN(run->behaviour.tp_overlap, row.YesNo("tp_overlap", run->behaviour.tp_overlap));
  // torch.compile on (fused elementwise kernels) or off (eager); empty: the framework's default
  // (data/frameworks/, `elementwise`).
  ASSIGN_OR_RETURN(const bool compiled, row.YesNo("compile", !run->behaviour.eager_elementwise));
  run->behaviour.eager_elementwise = !compiled;
  // Pipeline send/recv that blocks the sender (the framework's version says which: 2021's
  // Megatron-LM waited on every batch_isend_irecv and synchronised); yes or no for every
  // schedule; empty: the framework's (Megatron-Core's blocks without interleaving only).
  if (!row.Cell("p2p_blocking").empty()) {
    ASSIGN_OR_RETURN(const bool blocking, row.YesNo("p2p_blocking", false));
    run->behaviour.p2p_wait = blocking ? P2pWait::kBlocking : P2pWait::kOverlapped;
  }
  // MoE dispatch (alltoall, or DeepEP/HybridEP's hierarchical one) and the 1F1B A2A overlap;
  // empty: the framework's default (data/frameworks/, ep_dispatcher and ep_overlap).
  if (const std::string d = ToLower(row.Cell("ep_dispatcher")); !d.empty()) {
    auto h = EpDispatcherIsHierarchical(d);
    if (!h.ok())
      return InvalidArgument(
          fmt::format("line {}: ep_dispatcher {}", row.line(), h.status().message()));
    run->behaviour.ep_hierarchical_dispatch = *h;
  }
  ASSIGN_OR_RETURN(run->behaviour.ep_overlap, row.YesNo("ep_overlap", run->behaviour.ep_overlap));
  // The gradients' dtype, kept and reduced: fp32 (Megatron's main_grad) or bf16 (NeMo 1.x's
  // distributed_fused_adam with grad_sync_dtype bf16, for one). Empty: the framework's
  // (grad_reduce_fp32_bf16 / _fp8 in data/frameworks/).
  if (const std::string g = ToLower(row.Cell("grad_dtype")); !g.empty()) {
    if (g != "fp32" && g != "bf16") {
      return InvalidArgument(
          fmt::format("line {}: grad_dtype '{}': expected fp32 or bf16", row.line(), Excerpt(g)));
    }
    run->behaviour.fp32_grads = g == "fp32";
  }
  // The optimizer's master weights: fp32 (every framework listed) or bf16_remainders (NeMo 1.x's
  // distributed_fused_adam: plan::MemoryConfig::master_weight_remainders). Empty: fp32.
  if (Status st = ApplyMasterWeights(ToLower(row.Cell("master_weights")), &run->behaviour);
      !st.ok()) {
    return InvalidArgument(fmt::format("line {}: master_weights {}", row.line(), st.message()));
  }
  // Activation offloading (Megatron-Core's --cpu-offloading-num-layers), as the run's own: its
  // layout must be one Megatron-Core offloads with (plan/cpu_offload.h). Empty: the recipe's.
  if (const std::string n = row.Cell("cpu_offload_layers"); !n.empty()) {
    const StatusOr<int64_t> layers = ParseCpuOffloadLayers(n);
    if (!layers.ok()) {
      return InvalidArgument(
          fmt::format("line {}: cpu_offload_layers {}", row.line(), layers.status().message()));
    }
    run->behaviour.cpu_offload_layers = *layers;
    run->behaviour.cpu_offload_required = *layers > 0;
  }
  // Selective recompute's modules (Megatron-Core's --recompute-modules), read where the layout
  // recomputes selectively. Empty: the recipe's, else core_attn.
  if (const std::string mods = ToLower(row.Cell("recompute_modules")); !mods.empty()) {
    const StatusOr<model::RecomputeModules> parsed = model::ParseRecomputeModules(mods);
    if (!parsed.ok()) {
      // The column's name, as the API spells its parameters.
      return InvalidArgument(fmt::format("line {}: {}", row.line(),
                                         parsed.status().MessageFor(FieldSpelling::kParameter)));
    }
    run->behaviour.recompute_modules = *parsed;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<PublishedRun>> ReadPublishedRuns(std::string_view text) {
  std::vector<size_t> lines;
  ASSIGN_OR_RETURN(auto rows, ParseCsv(text, size_t{1} << 20, &lines));
  if (rows.empty()) return InvalidArgument("the CSV is empty; expected a header row");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[ToLower(Trim(rows[0][i]))] = i;
  const char* required[] = {"model", "layers",  "hidden", "heads",        "ffn_hidden",
                            "vocab", "seq_len", "gpu",    "cluster",      "num_gpus",
                            "tp",    "pp",      "dp",     "global_batch", "measured_step_time_s"};
  for (const char* r : required) {
    if (!col.count(r)) return InvalidArgument(fmt::format("header: missing column '{}'", r));
  }
  std::vector<PublishedRun> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    PublishedRun run;
    run.line = static_cast<int>(lines[i]);
    // A row of another width than the header's has its cells under the wrong names: refused in
    // CSV words before any cell is read.
    if (row.size() != rows[0].size()) {
      return InvalidArgument(fmt::format("line {}: {} columns, expected {} as in the header",
                                         run.line, row.size(), rows[0].size()));
    }
    const PublishedRunCells cells(col, row, run.line);
    RETURN_IF_ERROR(ReadPublishedRunNames(cells, &run));
    RETURN_IF_ERROR(ReadPublishedRunModel(cells, &run));
    RETURN_IF_ERROR(ReadPublishedRunLayout(cells, &run));
    RETURN_IF_ERROR(ReadPublishedRunBehaviour(cells, &run));
    ASSIGN_OR_RETURN(run.first_stage_layers, cells.Integer("first_stage_layers", 0, false));
    ASSIGN_OR_RETURN(run.last_stage_layers, cells.Integer("last_stage_layers", 0, false));
    out.push_back(std::move(run));
  }
  return out;
}

std::string SourceGroup(std::string_view source) {
  // The publication: the text before the first ", " or " (" ("Narayanan et al. SC21"); for a
  // repository path, its owner/name ("pytorch/torchtitan benchmarks/x.md" -> "pytorch/torchtitan").
  std::string_view head = source.substr(0, std::min(source.find(", "), source.find(" (")));
  const size_t slash = head.find('/');
  if (slash != std::string_view::npos &&
      head.substr(0, slash).find(' ') == std::string_view::npos) {
    const size_t end = head.find_first_of(" /", slash + 1);
    head = head.substr(0, end);
  }
  return std::string(Trim(head));
}

namespace {

StatusOr<PlanRequest> RequestFor(const PublishedRun& run) {
  PlanRequest req;
  req.model = run.model;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(run.gpu));
  ASSIGN_OR_RETURN(req.cluster, cluster::FindClusterPreset(run.cluster));
  const int gpn = req.cluster.node.gpus_per_node;
  if (run.num_gpus % gpn != 0) {
    // A job that does not fill a rack-scale NVLink domain (GB200 NVL72: 18 compute trays of 4
    // GPUs, NVIDIA GB200 NVL72 product page) uses an equal part of each domain it spans: the
    // largest whole number of trays that divides the job. Whole-node clusters (8 GPUs per node)
    // have no smaller unit.
    constexpr int kTrayGpus = 4;
    int part = 0;
    if (gpn > 8) {
      for (int d = kTrayGpus; d < gpn; d += kTrayGpus) {
        if (run.num_gpus % d == 0) part = d;
      }
    }
    if (part == 0) {
      return InvalidArgument(
          fmt::format("num_gpus {} is not whole {}-GPU nodes", run.num_gpus, gpn));
    }
    req.cluster.node.gpus_per_node = part;
  }
  req.cluster.num_nodes = static_cast<int>(run.num_gpus / req.cluster.node.gpus_per_node);
  req.global_batch = run.global_batch;
  req.seq_len = run.model.seq_len;
  ASSIGN_OR_RETURN(req.precision, ParsePrecision(run.precision));
  // What the framework ran: the row's own cells, its framework's defaults where they are empty.
  ApplyBehaviour(run.behaviour, &req);
  req.fp32_gradients = run.behaviour.fp32_grads;
  return req;
}

// The median as the validation tables take it: the mean of the middle two of an even count.
double MedianOf(std::vector<double> e) {
  if (e.empty()) return 0.0;
  std::sort(e.begin(), e.end());
  const size_t n = e.size();
  return n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
}

// The spread of signed errors: median and nearest-rank 80th percentile of |error|.
ErrorSpread SpreadOfErrors(const std::vector<double>& errors) {
  ErrorSpread s;
  std::vector<double> abs;
  for (double e : errors) {
    abs.push_back(std::fabs(e));
    if (e < 0) ++s.predicted_fast;
  }
  s.rows = static_cast<int>(abs.size());
  if (abs.empty()) return s;
  s.median_abs = MedianOf(abs);
  std::sort(abs.begin(), abs.end());
  // Nearest rank: the smallest value with at least q of the rows at or below it.
  const size_t rank = static_cast<size_t>(std::ceil(0.8 * static_cast<double>(abs.size())));
  s.p80_abs = abs[std::max<size_t>(rank, 1) - 1];
  return s;
}

// One candidate layout of `run`: its degrees with this ZeRO stage, micro-batch, interleaving
// depth, recompute and sequence parallelism, its stages split as its framework would have split
// them.
Layout CandidateLayout(const PublishedRun& run, int zero, int64_t mb, int vp,
                       model::Recompute recompute, bool sp) {
  Layout lay;
  lay.parallel.tp = run.tp;
  lay.parallel.pp = run.pp;
  lay.parallel.dp = run.dp;
  lay.parallel.cp = run.cp;
  lay.parallel.ep = run.ep;
  lay.parallel.vpp = vp;
  lay.parallel.zero_stage = zero;
  lay.parallel.sequence_parallel = sp;
  // Uneven stages: the row's own cells, else, where the layers do not split evenly, the
  // embedding and the loss counted as layers (Megatron-LM's and NeMo's 405B recipes,
  // torchtitan's weighted stage split), as its users would have run it.
  lay.parallel.first_stage_layers = static_cast<int>(run.first_stage_layers);
  lay.parallel.last_stage_layers = static_cast<int>(run.last_stage_layers);
  if (lay.parallel.uneven() && vp > 1 &&
      !StageLayerCounts(run.model.num_layers, lay.parallel, vp).ok()) {
    // The row's first/last stage sizes with interleaving where a rank's layers do not
    // split evenly over its chunks (Meta's Llama 3 405B: one layer fewer on the first and
    // last stage, Dubey et al. 2024 sec. 3.3.2): the same per-rank split as Megatron-
    // Core's general layout, each rank's layers spread over its chunks, lighter first.
    ParallelConfig even_ranks = lay.parallel;
    auto per_rank = StageLayerCounts(run.model.num_layers, even_ranks, 1);
    if (per_rank.ok()) {
      lay.parallel.first_stage_layers = lay.parallel.last_stage_layers = 0;
      lay.parallel.layout = LayerLayoutOfRanks(*per_rank, vp);
    }
  }
  const int64_t stages = int64_t{run.pp} * vp;
  if (!lay.parallel.uneven() && run.pp > 1 && run.model.num_layers % stages != 0) {
    if ((run.model.num_layers + 2) % stages == 0) {
      lay.parallel.embedding_in_split = lay.parallel.loss_in_split = true;
    } else {
      // Neither form splits: Megatron-Core's general layout, as DeepSeek-V3's recipes
      // give one (--pipeline-model-parallel-layout), the most even split.
      lay.parallel.layout = BalancedLayerLayout(run.model.num_layers, stages);
    }
  }
  lay.recompute = recompute;
  lay.micro_batch = mb;
  lay.schedule = vp > 1 ? schedule::ScheduleKind::kInterleaved1F1B : schedule::ScheduleKind::k1F1B;
  return lay;
}

}  // namespace

Validation ValidateRuns(const std::vector<PublishedRun>& runs,
                        std::shared_ptr<const EfficiencyTable> efficiency) {
  Validation v;
  std::vector<double> errors;
  for (const PublishedRun& run : runs) {
    ValidationRow row;
    row.run = run;
    auto req = RequestFor(run);
    if (!req.ok()) {
      row.status = req.status();
      v.rows.push_back(std::move(row));
      continue;
    }
    req->efficiency = efficiency;
    // Candidates for what the source leaves open.
    // Where the row is silent, what its framework runs by default (data/frameworks/,
    // pipeline_chunks and pipeline_microbatches), else every value its users might have picked.
    const FrameworkData& fw = BuiltinFrameworkData(run.framework);
    std::vector<int64_t> mbs = run.micro_batch > 0 ? std::vector<int64_t>{run.micro_batch}
                                                   : std::vector<int64_t>{1, 2, 4, 8};
    if (run.micro_batch <= 0 && run.pp > 1 && fw.pipeline_microbatches_per_rank > 0 && run.dp > 0) {
      // torchtitan: as many microbatches as pipeline ranks, each the local batch over them.
      const int64_t microbatches = int64_t{run.pp} * fw.pipeline_microbatches_per_rank;
      const int64_t local = run.global_batch / run.dp;
      if (local >= microbatches && local % microbatches == 0) mbs = {local / microbatches};
    }
    std::vector<int> vps;
    const std::vector<schedule::ScheduleKind> schedules = FrameworkSchedules(run.framework);
    const bool interleaves =
        schedules.empty() || std::find(schedules.begin(), schedules.end(),
                                       schedule::ScheduleKind::kInterleaved1F1B) != schedules.end();
    if (run.vp > 0) {
      vps = {run.vp};
    } else if (!interleaves) {
      vps = {1};  // the framework has no interleaved schedule (DeepSpeed's PipelineEngine)
    } else if (fw.pipeline_chunks > 0) {
      vps = {fw.pipeline_chunks};  // its default schedule (torchtitan's and NeMo's: 1F1B)
    } else {
      // Interleaving depths that split the layers evenly; only when none does (126 layers over
      // 8 or 16 ranks), those that split them with the embedding and the loss counted as layers.
      const int64_t L = run.model.num_layers;
      const bool even = L % run.pp == 0;
      vps = {1};
      const bool given_stages = run.first_stage_layers > 0 || run.last_stage_layers > 0;
      for (int vp = 2; vp <= 8 && run.pp > 1; ++vp) {
        const int64_t S = int64_t{run.pp} * vp;
        // With the row's own first/last stage sizes every depth can run: a rank whose layers do
        // not split over its chunks gets Megatron-Core's general layout (below).
        if (given_stages || (even ? L % S == 0 : (L + 2) % S == 0)) vps.push_back(vp);
      }
    }
    std::vector<std::pair<model::Recompute, bool>> recomputes;  // (mode, sequence parallel)
    const std::string rc = ToLower(run.recompute);
    if (rc == "full") {
      recomputes = {{model::Recompute::kFull, false}};
    } else if (rc == "selective+sp") {
      recomputes = {{model::Recompute::kSelective, true}};
    } else if (rc == "selective") {
      // torchtitan's "selective" is its op-level SAC (data/published/README.md, recompute);
      // Megatron-LM's and NeMo's is the attention core.
      recomputes = {{run.framework == Framework::kTorchtitan ? model::Recompute::kOpSac
                                                             : model::Recompute::kSelective,
                     false}};
    } else if (rc == "none") {
      recomputes = {{model::Recompute::kNone, false}};
    } else {
      // Not published: what its users would have run, the fastest that fits; sequence
      // parallelism comes with tensor parallelism in every Megatron-Core-era recipe.
      recomputes = {{model::Recompute::kSelective, run.tp > 1},
                    {model::Recompute::kFull, run.tp > 1}};
      // A recipe that offloads activations (data/frameworks/recipes.csv cpu_offload_layers) runs
      // without recompute on the layouts that offload: Megatron-Core refuses the two together
      // (plan/cpu_offload.h).
      if (run.behaviour.cpu_offload_layers > 0)
        recomputes.push_back({model::Recompute::kNone, run.tp > 1});
    }
    // Frameworks that always run sequence parallelism with TP (data/frameworks/,
    // sequence_parallel: NeMo's recipes, torchtitan's TP plan, MegaScale): SP whenever tp > 1,
    // whatever the recompute cell says.
    if (run.behaviour.sp_with_tp && run.tp > 1) {
      for (auto& [mode, sp] : recomputes) sp = true;
    }
    // ZeRO: the row's stage, else those its framework implements at this pipeline depth
    // (data/frameworks/, zero_stages and zero_stages_pipelined); with nothing to shard over
    // (dp x cp = 1) every stage is stage 0.
    std::vector<int> zeros = {run.zero};
    if (run.zero < 0) {
      zeros = int64_t{run.dp} * run.cp > 1 ? FrameworkZeroStages(run.framework, run.pp > 1)
                                           : std::vector<int>{0};
    }
    bool have = false;
    bool have_unfit = false;  // the leanest candidate, when none fits
    PlanResult unfit;
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    Status last = FailedPrecondition("no candidate layout fits in memory");
    for (int zero : zeros) {
      req->overlap_grad_reduce =
          zero >= 3 ? run.overlap_grad_reduce_zero3 : run.behaviour.overlap_grad_reduce;
      for (int64_t mb : mbs) {
        for (int vp : vps) {
          for (auto [recompute, sp] : recomputes) {
            const Layout lay = CandidateLayout(run, zero, mb, vp, recompute, sp);
            auto r = Evaluate(*req, lay);
            if (!r.ok()) {
              last = r.status();
              continue;
            }
            if (!r->memory.fits) {
              // Kept in case nothing fits: the run trained, so that is a miss of the memory model,
              // reported with its terms, and the step is still predicted.
              // The leanest candidate: even it does not fit.
              if (!have_unfit || r->memory.worst().total_bytes < unfit.memory.worst().total_bytes) {
                unfit = *r;
                have_unfit = true;
              }
              continue;
            }
            ++row.fitting_candidates;
            row.slowest_fit_step_time_s = std::max(row.slowest_fit_step_time_s, r->time.step_s);
            if (!have || r->time.step_s < row.predicted.time.step_s) {
              row.predicted = std::move(r).value();
              have = true;
            }
          }
        }
      }
    }
    if (!have && have_unfit) {
      const RankMemory& w = unfit.memory.worst();
      row.memory_miss = fmt::format(
          "memory-model miss: the model puts {:.1f} GiB on pipeline rank {} (weights {:.1f}, "
          "gradients {:.1f}, optimizer {:.1f}, activations {:.1f}) against {:.1f} GiB usable, "
          "yet the run trained",
          w.total_bytes / kGiB, w.rank, w.weights_bytes / kGiB, w.gradients_bytes / kGiB,
          w.optimizer_bytes / kGiB, w.activations_bytes / kGiB, unfit.memory.usable_bytes / kGiB);
      row.predicted = std::move(unfit);
      have = true;
    }
    if (!have) {
      row.status = last;
    } else {
      row.predicted_step_time_s = row.predicted.time.step_s;
      row.error = (row.predicted_step_time_s - run.measured_step_time_s) / run.measured_step_time_s;
      if (row.fitting_candidates > 0) {
        row.slowest_fit_error =
            (row.slowest_fit_step_time_s - run.measured_step_time_s) / run.measured_step_time_s;
      }
      // In the source's own FLOP count when it published one; else the model's FLOPs
      // (model::TrainingFlopsPerStep, no recompute) over the predicted step.
      row.predicted_tflops_per_gpu =
          run.measured_tflops_per_gpu > 0
              ? run.measured_tflops_per_gpu * run.measured_step_time_s / row.predicted_step_time_s
              : model::TrainingFlopsPerStep(run.model, run.model.seq_len, run.global_batch) /
                    row.predicted_step_time_s / static_cast<double>(run.num_gpus) / 1e12;
      errors.push_back(std::fabs(row.error));
    }
    v.rows.push_back(std::move(row));
  }
  v.predicted = static_cast<int>(errors.size());
  v.median_abs_error = MedianOf(errors);
  std::vector<double> signed_errors;
  for (const ValidationRow& r : v.rows) {
    if (!r.status.ok()) continue;
    signed_errors.push_back(r.error);
    if (!r.memory_miss.empty()) ++v.memory_misses;
    if (r.fitting_candidates == 0) continue;
    if (r.slowest_fit_error < 0) {
      ++v.slower_than_every_fit;
    } else if (r.error <= 0) {
      ++v.within_fitting_range;
    }
  }
  v.median_error = MedianOf(signed_errors);
  // Per source and per framework: |error| and signed error medians.
  auto summarise = [&](auto key_of, std::vector<SourceSummary>* out) {
    std::vector<std::vector<double>> abs_e, sgn_e;
    for (const ValidationRow& r : v.rows) {
      const std::string group = key_of(r);
      auto it = std::find_if(out->begin(), out->end(),
                             [&](const SourceSummary& s) { return s.source == group; });
      if (it == out->end()) {
        out->push_back({group, 0, 0, 0, 0});
        abs_e.emplace_back();
        sgn_e.emplace_back();
        it = out->end() - 1;
      }
      ++it->rows;
      if (r.status.ok()) {
        ++it->predicted;
        const size_t i = static_cast<size_t>(it - out->begin());
        abs_e[i].push_back(std::fabs(r.error));
        sgn_e[i].push_back(r.error);
      }
    }
    for (size_t i = 0; i < out->size(); ++i) {
      (*out)[i].median_abs_error = MedianOf(abs_e[i]);
      (*out)[i].median_error = MedianOf(sgn_e[i]);
    }
  };
  summarise([](const ValidationRow& r) { return SourceGroup(r.run.source); }, &v.sources);
  summarise([](const ValidationRow& r) { return std::string(FrameworkName(r.run.framework)); },
            &v.frameworks);
  return v;
}

ErrorSpread SpreadOf(const Validation& v) {
  std::vector<double> errors;
  for (const ValidationRow& r : v.rows) {
    if (r.status.ok()) errors.push_back(r.error);
  }
  return SpreadOfErrors(errors);
}

std::vector<GroupSpread> GroupSpreadsOf(const Validation& v) {
  std::vector<GroupSpread> out;
  std::vector<std::vector<double>> errors;
  auto add = [&](const std::string& framework, const std::string& gpu, double error) {
    auto it = std::find_if(out.begin(), out.end(), [&](const GroupSpread& g) {
      return g.framework == framework && g.gpu == gpu;
    });
    if (it == out.end()) {
      out.push_back({framework, gpu, {}, 0});
      errors.emplace_back();
      it = out.end() - 1;
    }
    errors[static_cast<size_t>(it - out.begin())].push_back(error);
  };
  // Each predicted row's framework and GPU preset name, read once.
  struct Keyed {
    std::string framework, gpu;
    double error;
  };
  std::vector<Keyed> keyed;
  for (const ValidationRow& r : v.rows) {
    if (!r.status.ok()) continue;
    auto gpu = hw::FindGpu(r.run.gpu);
    keyed.push_back({FrameworkName(r.run.framework), gpu.ok() ? gpu->name : r.run.gpu, r.error});
  }
  // Three passes so that the groups come out pairs first, then frameworks, then GPUs.
  for (int pass = 0; pass < 3; ++pass) {
    for (const Keyed& k : keyed) add(pass == 2 ? "" : k.framework, pass == 1 ? "" : k.gpu, k.error);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].spread = SpreadOfErrors(errors[i]);
    out[i].median_error = MedianOf(errors[i]);
  }
  return out;
}

const GroupSpread* SpreadFor(const std::vector<GroupSpread>& groups, std::string_view framework,
                             std::string_view gpu) {
  auto find = [&](std::string_view f, std::string_view g) -> const GroupSpread* {
    for (const GroupSpread& s : groups) {
      if (s.framework == f && s.gpu == g && s.spread.rows >= kMinGroupRuns) return &s;
    }
    return nullptr;
  };
  const GroupSpread* s = nullptr;
  if (!framework.empty()) {
    s = find(framework, gpu);
    if (s == nullptr) s = find(framework, "");
  }
  return s != nullptr ? s : find("", gpu);
}

std::string GroupSpreadText(const GroupSpread& g) {
  const std::string who = !g.framework.empty() && !g.gpu.empty() ? g.framework + " on " + g.gpu
                          : !g.framework.empty()                 ? g.framework + " on any GPU"
                                                                 : "any framework on " + g.gpu;
  return fmt::format(
      "{}: {} published runs, median error {:+.1f}% (half within +-{:.1f}%), {} ran slower than "
      "predicted",
      who, g.spread.rows, 100 * g.median_error, 100 * g.spread.median_abs, g.spread.predicted_fast);
}

std::vector<PublishedMfu> PublishedMfusOf(const std::vector<PublishedRun>& runs) {
  std::vector<PublishedMfu> out;
  for (const PublishedRun& run : runs) {
    auto gpu = hw::FindGpu(run.gpu);
    auto precision = ParsePrecision(run.precision);
    if (!gpu.ok() || !precision.ok() || run.num_gpus < 1 || run.measured_step_time_s <= 0) continue;
    // The peak a plan at this precision divides by (planner.cc, Rates): FP8's where it has one.
    const bool fp8 = *precision == Precision::kFp8 && gpu->fp8_flops_per_s > 0;
    const double peak = fp8 ? gpu->fp8_flops_per_s : gpu->bf16_flops_per_s;
    if (peak <= 0) continue;
    const double mfu = model::TrainingFlopsPerStep(run.model, run.model.seq_len, run.global_batch) /
                       (run.measured_step_time_s * static_cast<double>(run.num_gpus) * peak);
    const std::string name = PrecisionName(*precision);
    auto it = std::find_if(out.begin(), out.end(), [&](const PublishedMfu& g) {
      return g.gpu == gpu->name && g.precision == name;
    });
    if (it == out.end()) it = out.insert(out.end(), PublishedMfu{gpu->name, name});
    ++it->runs;
    if (mfu > it->best_mfu) {
      it->best_mfu = mfu;
      it->best_run =
          fmt::format("{}, {} on {} GPUs", SourceGroup(run.source), run.model_name, run.num_gpus);
    }
  }
  return out;
}

const std::vector<PublishedMfu>& BuiltinPublishedMfus() {
  static const auto* const kGroups = [] {
    auto runs = ReadPublishedRuns(BundledPublishedRuns());
    // The built-in file is tested (it validates in full); a broken one holds nothing against.
    return new std::vector<PublishedMfu>(runs.ok() ? PublishedMfusOf(*runs)
                                                   : std::vector<PublishedMfu>{});
  }();
  return *kGroups;
}

const PublishedMfu* PublishedMfuFor(const std::vector<PublishedMfu>& groups, std::string_view gpu,
                                    std::string_view precision) {
  for (const PublishedMfu& g : groups) {
    if (g.gpu == gpu && g.precision == precision) return &g;
  }
  return nullptr;
}

const PublishedMfu* BuiltinPublishedMfuFor(std::string_view gpu, Precision precision) {
  return PublishedMfuFor(BuiltinPublishedMfus(), gpu, PrecisionName(precision));
}

std::string AbovePublishedText(const PublishedMfu* group, double mfu) {
  if (group == nullptr || !(mfu > group->best_mfu)) return "";
  return fmt::format(
      "MFU {:.1f}% is above every published run on {} in {} the model was checked on ({} run{}; "
      "the best, {}, reached {:.1f}%)",
      100 * mfu, group->gpu, group->precision, group->runs, group->runs == 1 ? "" : "s",
      group->best_run, 100 * group->best_mfu);
}

std::string SpreadText(const ErrorSpread& s) {
  if (s.rows == 0) return "";
  return fmt::format(
      "typical error on {} published runs: +-{:.1f}% (half of them), +-{:.0f}% (four in five); "
      "{} ran slower than predicted (infralens validate)",
      s.rows, 100 * s.median_abs, 100 * s.p80_abs, s.predicted_fast);
}

}  // namespace infralens::plan
