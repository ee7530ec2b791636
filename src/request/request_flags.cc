#include "request/request_flags.h"

#include <fmt/format.h>

#include <tuple>

#include "base/read_file.h"
#include "base/strings.h"
#include "hw/gpu.h"
#include "io/export_torchtitan.h"
#include "plan/framework_recipe.h"
#include "plan/layer_layout.h"
#include "plan/validate.h"
#include "request/pipeline_flags.h"
#include "schedule/schedule.h"

namespace infralens::request {

void RequestFlags::Register(FlagSink& flags, bool layout, bool exports) {
  cf.Register(flags, layout);
  tf.Register(flags, layout);
  RegisterEfficiency(flags, &efficiency_path);
  RegisterBehaviour(flags);
  if (exports) {
    flags.String("--export", &export_format,
                 "also print the layout as a framework config: " + io::ExportFormatNames());
  }
}

void RequestFlags::RegisterBehaviour(FlagSink& flags) {
  flags.String("--framework", &framework,
               "the framework whose defaults apply: megatron-lm, megatron-deepspeed, deepspeed, "
               "torchtitan, nemo, megascale (docs/planner.md lists each default and its source)");
  flags.String("--attention", &attention,
               "fused (the framework's fused kernel), flash2 (FlashAttention-2, as PyTorch SDPA "
               "runs it: torchtitan's, DeepSpeed's), cudnn (Transformer Engine's: Megatron-LM's, "
               "NeMo's) or materialized (the s x s scores through HBM)");
  flags.String("--dp-overlap", &dp_overlap,
               "yes or no: gradient reduction overlapped with the backward (Megatron's "
               "--overlap-grad-reduce); default: the framework's");
  flags.String("--tp-overlap", &tp_overlap,
               "yes or no: TP collectives overlapped with the GEMMs (Megatron's --tp-comm-overlap, "
               "torchtitan's async TP); default: the framework's");
  flags.String("--tp-overlap-sms", &tp_overlap_sms,
               "N or RS,BULK: under TP overlap, the SMs Transformer Engine's userbuffers kernels "
               "hold from the GEMMs they overlap (RS: the forward's proj and fc2, BULK: the "
               "backward's qkv and fc1); default: the framework's (Transformer Engine's 16,16; "
               "torchtitan's async TP 0)");
  flags.String("--sp-backward", &sp_backward,
               "regather or saved: under sequence parallelism, whether the backward gathers each "
               "column-parallel input again under its dgrad GEMM and reduce-scatters its gradient "
               "under its wgrad GEMM (Megatron-Core's and Transformer Engine's) or keeps the "
               "gathered input and runs its collectives in line (PyTorch's DTensor); default: the "
               "framework's");
  flags.String("--fsdp-with-pp", &fsdp_with_pp,
               "per_step or per_microbatch: under FSDP with a pipeline, whether each stage's "
               "weights are gathered once per step and kept and its gradients reduce-scattered "
               "after the last microbatch (torchtitan's, PyTorch's pipelining) or gathered and "
               "reduce-scattered every microbatch (Megatron FSDP's); default: the framework's");
  flags.String(
      "--fsdp-max-live-params", &fsdp_max_live_params,
      "N: under ZeRO-3, gather each linear's weights by its own call and prefetch while at "
      "most N parameters are gathered and not yet released (DeepSpeed's "
      "stage3_max_live_parameters); 0: one layer at a time, the next one prefetched "
      "(FSDP2's, Megatron FSDP's); default: the framework's (DeepSpeed's 1e9)");
  flags.String("--ep-dispatcher", &ep_dispatcher,
               "alltoall (one copy per routed token and expert) or deepep / hybridep (once per "
               "target node over the network, once per target GPU inside it: Megatron's flex "
               "dispatcher); default: the framework's");
  flags.String("--ep-overlap", &ep_overlap,
               "yes or no: the MoE all-to-all overlapped with another microbatch's compute "
               "(Megatron's --overlap-moe-expert-parallel-comm); default: the framework's");
  flags.String("--fp8-recipe", &fp8_recipe, kFp8RecipeHelp);
  flags.String("--fp8-param-gather", &fp8_param_gather, kFp8ParamGatherHelp);
  flags.String("--cpu-offload-layers", &cpu_offload_layers, kCpuOffloadLayersHelp);
  flags.String("--recompute-modules", &recompute_modules, kRecomputeModulesHelp);
  flags.String("--fused-projections", &fused_projections,
               "yes or no: the query, key and value projections as one GEMM and a gated MLP's "
               "gate and up projections as one (Megatron-Core's linear_qkv and linear_fc1), or "
               "each its own GEMM (torchtitan's wq, wk, wv and w1, w3; Hugging Face models'); "
               "default: the framework's, else yes");
  flags.String("--cp-exchange", &cp_exchange,
               "ring or all_gather: under context parallelism, each block's keys and values "
               "passed to the next rank while the current block's attention runs (Transformer "
               "Engine's, Megatron-LM's and NeMo's) or every rank's gathered in one call before "
               "the attention, gradients passed around the ring in FP32 (PyTorch's "
               "context_parallel, torchtitan's); default: the framework's, else ring");
  flags.String("--cp-kv-heads", &cp_kv_heads,
               "kv or query: under context parallelism, whether the exchange moves the model's "
               "key-value heads or keys and values repeated to every query head first "
               "(torchtitan's repeat_kv before the attention); default: the framework's, else kv");
  flags.String("--master-weights", &master_weights, kMasterWeightsHelp);
  flags.Bool("--bidirectional", &bidirectional,
             "attention without a causal mask (encoders): fused kernels then compute every score");
}

bool RequestFlags::LayoutGiven(const GivenFn& given) { return given("--tp") && given("--pp"); }

namespace {

// The chunks per rank a schedule runs (schedule/generators.cc): one for 1f1b, gpipe, zb-h2; two
// or more for the interleaved ones; exactly two in a V. zb-h1 and looped-bfs take any.
Status CheckScheduleChunks(schedule::ScheduleKind kind, int vpp) {
  const schedule::ScheduleInfo& info = schedule::Info(kind);
  using K = schedule::ScheduleKind;
  if (info.v_shape && vpp != 2) {
    return InvalidArgument(
        fmt::format("--schedule {} --vpp {}: {} places exactly 2 chunks per rank in a V", info.name,
                    vpp, info.name));
  }
  if ((kind == K::k1F1B || kind == K::kGPipe || kind == K::kZBH2) && vpp != 1) {
    return InvalidArgument(fmt::format(
        "--schedule {} --vpp {}: {} runs one chunk per rank; interleaved-1f1b takes more",
        info.name, vpp, info.name));
  }
  if (kind == K::kInterleaved1F1B && vpp < 2) {
    return InvalidArgument(
        fmt::format("--schedule {} --vpp {}: interleaved-1f1b needs at least 2 chunks per rank",
                    info.name, vpp));
  }
  return Status::Ok();
}

}  // namespace

Status RequestFlags::RestrictSearch(const GivenFn& given, const plan::PlanRequest& req,
                                    plan::SearchOptions* opt) const {
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  // Where no flag names them, only the schedules and ZeRO stages the framework runs
  // (plan::FrameworkSchedules, plan::FrameworkZeroStages): --framework's, else --export's.
  ASSIGN_OR_RETURN(const std::optional<plan::Framework> f, SearchFramework());
  if (given("--schedule")) {
    opt->schedules = {job.schedule};
  } else if (f) {
    opt->schedules = plan::FrameworkSchedules(*f);
  }
  if (given("--zero") || given("--distributed-optimizer") || given("--fsdp")) {
    opt->fix_zero = job.parallel.zero_stage;
  } else if (f) {
    opt->zero_stages = plan::FrameworkZeroStages(*f, false);
    opt->zero_stages_pipelined = plan::FrameworkZeroStages(*f, true);
  }
  if (given("--recompute")) opt->fix_recompute = static_cast<int>(job.recompute);
  // Heavier selective module lists only where the framework's selective recompute takes a list
  // and the user named none.
  opt->fix_recompute_modules =
      given("--recompute-modules") || (f && !plan::FrameworkListsRecomputeModules(*f));
  if (given("--recompute-modules")) {
    opt->fixed_recompute_modules = model::RecomputeModulesName(req.recompute_modules);
  }
  if (given("--micro-batch") && job.micro_batch < 1) {  // 0 once meant "search them all"
    return InvalidArgument(fmt::format(
        "--micro-batch {}: must be at least 1 (leave it out to search it)", job.micro_batch));
  }
  if (given("--micro-batch")) opt->fix_micro_batch = static_cast<int>(job.micro_batch);
  if (given("--sp")) opt->fix_sp = 1;
  if (given("--no-sp")) opt->fix_sp = 0;
  // A torchtitan export searches the layouts torchtitan runs: pp 1 for a model whose train spec
  // has no pipelining (Qwen3 and GPT-OSS at v0.2.2; a given --pp is the export's to refuse,
  // naming the rule), and a sequence that splits into tp x 2 cp pieces
  // (ParallelDims.seq_len_divisor).
  if (!export_format.empty()) {
    ASSIGN_OR_RETURN(io::ExportFormat target, io::ParseExportFormat(export_format));
    if (target == io::ExportFormat::kTorchtitan) {
      if (!given("--pp") && !io::TorchtitanRunsPipelines(req.model)) opt->fix_pp = 1;
      opt->seq_over_2_tp_cp = true;
    }
  }

  // The degrees given, each within the GPUs, together dividing them (a usage error otherwise:
  // no model or batch could change it).
  const int64_t gpus = req.gpus();
  int64_t product = 1;
  std::vector<std::string> named;
  for (auto [flag, value, out] :
       {std::tuple{"--tp", cf.tp, &opt->fix_tp}, std::tuple{"--cp", cf.cp, &opt->fix_cp},
        std::tuple{"--pp", cf.pp, &opt->fix_pp}, std::tuple{"--dp", cf.dp, &opt->fix_dp},
        std::tuple{"--ep", cf.ep, &opt->fix_ep}}) {
    if (!given(flag)) continue;
    if (value < 1 || value > gpus) {
      return InvalidArgument(
          fmt::format("{} {}: must be 1..{} (the job's GPUs)", flag, value, gpus));
    }
    *out = value;
    if (std::string_view(flag) == "--ep") continue;  // carved out of dp, not a factor
    product *= value;
    named.push_back(fmt::format("{} {}", flag, value));
  }
  if (gpus % product != 0) {
    return InvalidArgument(
        named.size() == 1
            ? fmt::format("{}: does not divide the cluster's {} GPUs", named[0], gpus)
            : fmt::format("{}: multiply to {}, which does not divide the cluster's {} GPUs",
                          Join(named, " "), product, gpus));
  }
  if (given("--dp") && given("--ep") && cf.dp % cf.ep != 0) {
    return InvalidArgument(fmt::format(
        "--dp {} --ep {}: ep must divide dp (expert-parallel groups are carved out of the "
        "data-parallel ranks, as Megatron does)",
        cf.dp, cf.ep));
  }
  if (given("--order")) {
    RETURN_IF_ERROR(cluster::Placement::Make({}, cf.order, 1).status());
    opt->fix_order = cf.order;
  }

  // The pipeline: chunks per rank, the split, the schedule; what contradicts itself is a usage
  // error naming the flags.
  const bool pipeline_one = given("--pp") && cf.pp == 1;
  if (given("--vpp") && job.parallel.vpp != 0) {
    const int v = job.parallel.vpp;
    if (v < 1 || v > kMaxChunksPerRank) {
      return InvalidArgument(fmt::format("--vpp {}: must be 1..{} (0 = the schedule's default)", v,
                                         kMaxChunksPerRank));
    }
    if (pipeline_one && v > 1) {
      return InvalidArgument(
          fmt::format("--pp 1 --vpp {}: chunks per rank need a pipeline (--pp 2 or more)", v));
    }
    if (given("--schedule")) RETURN_IF_ERROR(CheckScheduleChunks(job.schedule, v));
    opt->fix_vpp = v;
  }
  const plan::ParallelConfig& p = job.parallel;
  if (p.uneven()) {
    std::vector<std::string> split;
    for (auto [flag, on] : {std::pair{"--first-stage-layers", p.first_stage_layers > 0},
                            {"--last-stage-layers", p.last_stage_layers > 0},
                            {"--embedding-in-split", p.embedding_in_split},
                            {"--loss-in-split", p.loss_in_split},
                            {"--layout", !p.layout.empty()}}) {
      if (on) split.emplace_back(flag);
    }
    if (pipeline_one) {
      return InvalidArgument(
          fmt::format("--pp 1 {}: uneven stages need a pipeline (--pp 2 or more)", split[0]));
    }
    if (given("--schedule") && schedule::Info(job.schedule).v_shape) {
      return InvalidArgument(fmt::format(
          "--schedule {} {}: the V-shaped schedules split evenly (Megatron-Core's uneven forms "
          "are for the looped schedules)",
          schedule::Info(job.schedule).name, split[0]));
    }
    if (!p.layout.empty()) RETURN_IF_ERROR(plan::LayerLayoutStages(p.layout).status());
    opt->split = p;
  }
  if (pipeline_one && given("--schedule") && job.schedule != schedule::ScheduleKind::k1F1B) {
    return InvalidArgument(fmt::format(
        "--pp 1 --schedule {}: a pipeline schedule needs --pp 2 or more (pp 1 runs none)",
        schedule::Info(job.schedule).name));
  }
  return Status::Ok();
}

void RequestFlags::SetFilesAllowed(bool files_allowed) {
  cf.files_allowed = tf.files_allowed = files_allowed;
  if (!files_allowed && !efficiency_path.empty()) {
    efficiency_text = std::move(efficiency_path);
    efficiency_path.clear();
  }
}

void RegisterEfficiency(FlagSink& flags, std::string* path) {
  flags.String("--efficiency", path,
               "CSV of efficiency constants over the built-in ones (docs/planner.md, "
               "data/hw/efficiency.csv): your GEMM, attention, HBM and link measurements, as "
               "infralens trace calibrate writes them");
}

StatusOr<std::shared_ptr<const plan::EfficiencyTable>> LoadEfficiency(const std::string& path) {
  if (path.empty()) return std::shared_ptr<const plan::EfficiencyTable>();
  // The file's content is a failure (exit 1), not a usage error (base/read_file.h).
  auto text = ReadFileLimited(path, plan::kMaxEfficiencyBytes);
  if (!text.ok()) return AsFileFailure(text.status());
  auto table = EfficiencyFromText(*text, "--efficiency " + path);
  if (!table.ok()) return AsFileFailure(table.status());
  return table;
}

StatusOr<std::shared_ptr<const plan::EfficiencyTable>> EfficiencyFromText(std::string_view csv,
                                                                          std::string_view origin) {
  if (csv.empty()) return std::shared_ptr<const plan::EfficiencyTable>();
  auto user = plan::EfficiencyTable::Parse(csv, origin);
  if (!user.ok()) return user.status();
  auto table = std::make_shared<plan::EfficiencyTable>(plan::EfficiencyTable::Builtin());
  table->Overlay(*user);
  return std::shared_ptr<const plan::EfficiencyTable>(std::move(table));
}

StatusOr<std::optional<plan::Framework>> RequestFlags::Framework() const {
  if (framework.empty()) return std::optional<plan::Framework>();
  auto f = plan::ParseFramework(framework);
  if (!f.ok()) return InvalidArgument("--framework " + std::string(f.status().message()));
  return std::optional<plan::Framework>(*f);
}

StatusOr<std::optional<plan::Framework>> RequestFlags::SearchFramework() const {
  ASSIGN_OR_RETURN(std::optional<plan::Framework> f, Framework());
  if (f || export_format.empty()) return f;
  ASSIGN_OR_RETURN(io::ExportFormat target, io::ParseExportFormat(export_format));
  switch (target) {
    case io::ExportFormat::kMegatron:
      return std::optional<plan::Framework>(plan::Framework::kMegatronLm);
    case io::ExportFormat::kDeepSpeed:
      return std::optional<plan::Framework>(plan::Framework::kDeepSpeed);
    case io::ExportFormat::kTorchtitan:
      return std::optional<plan::Framework>(plan::Framework::kTorchtitan);
    case io::ExportFormat::kPytorchCsv:
      break;
  }
  return std::optional<plan::Framework>();
}

StatusOr<plan::FrameworkBehaviour> RequestFlags::Behaviour(int zero_stage,
                                                           plan::Precision precision,
                                                           std::string_view model,
                                                           std::string_view gpu,
                                                           AppliedRecipe* recipe) const {
  plan::FrameworkBehaviour b;
  ASSIGN_OR_RETURN(std::optional<plan::Framework> f, Framework());
  if (f) {
    b = plan::FrameworkDefaults(*f, zero_stage, precision);
    auto rows = plan::ApplyFrameworkRecipes(*f, model, gpu, precision, &b);
    // The flags below win: the recipe rows they override are not reported as applied.
    if (!ep_dispatcher.empty()) plan::DropRecipeKey("ep_dispatcher", &rows);
    if (!ep_overlap.empty()) plan::DropRecipeKey("ep_overlap", &rows);
    if (!cpu_offload_layers.empty()) plan::DropRecipeKey("cpu_offload_layers", &rows);
    if (!recompute_modules.empty()) plan::DropRecipeKey("recompute_modules", &rows);
    if (!tp_overlap_sms.empty()) {
      plan::DropRecipeKey("tp_overlap_rs_sms", &rows);
      plan::DropRecipeKey("tp_overlap_bulk_sms", &rows);
    }
    if (recipe) *recipe = {plan::RecipeSettings(rows), plan::RecipeSources(rows)};
  }
  if (Status st = plan::ApplyAttention(attention, &b); !st.ok()) {
    return InvalidArgument("--attention " + st.message());
  }
  if (!ep_dispatcher.empty()) {
    auto h = plan::EpDispatcherIsHierarchical(ep_dispatcher);
    if (!h.ok()) return InvalidArgument("--ep-dispatcher " + std::string(h.status().message()));
    b.ep_hierarchical_dispatch = *h;
  }
  if (!tp_overlap_sms.empty()) {
    auto sms = plan::ParseTpOverlapSms(tp_overlap_sms);
    if (!sms.ok())
      return InvalidArgument("--tp-overlap-sms " + std::string(sms.status().message()));
    std::tie(b.tp_overlap_rs_sms, b.tp_overlap_bulk_sms) = *sms;
  }
  if (Status st = plan::ApplySpBackward(sp_backward, &b); !st.ok()) {
    return InvalidArgument("--sp-backward " + st.message());
  }
  if (Status st = plan::ApplyFsdpWithPp(fsdp_with_pp, &b); !st.ok()) {
    return InvalidArgument("--fsdp-with-pp " + st.message());
  }
  if (!fsdp_max_live_params.empty()) {
    const std::optional<double> n = ParseDouble(fsdp_max_live_params);
    if (!n || !(*n >= 0 && *n <= 1e15)) {
      return InvalidArgument(fmt::format(
          "--fsdp-max-live-params '{}': expected a parameter count from 0 (one layer at a time) "
          "to 1e15",
          Excerpt(fsdp_max_live_params)));
    }
    b.fsdp_max_live_params = *n;
  }
  for (auto [flag, value, apply] :
       {std::tuple{"--cp-exchange", &cp_exchange, &plan::ApplyCpExchange},
        std::tuple{"--cp-kv-heads", &cp_kv_heads, &plan::ApplyCpKvHeads},
        std::tuple{"--master-weights", &master_weights, &plan::ApplyMasterWeights}}) {
    if (Status st = apply(*value, &b); !st.ok()) {
      return InvalidArgument(std::string(flag) + " " + st.message());
    }
  }
  RETURN_IF_ERROR(ApplyFp8Recipe(fp8_recipe, &b.fp8_transformer_engine));
  RETURN_IF_ERROR(ApplyCpuOffloadLayers(cpu_offload_layers, &b.cpu_offload_layers));
  if (!cpu_offload_layers.empty()) b.cpu_offload_required = true;
  RETURN_IF_ERROR(ApplyRecomputeModules(recompute_modules, &b.recompute_modules));
  for (auto [flag, value, out] :
       {std::tuple{"--dp-overlap", &dp_overlap, &b.overlap_grad_reduce},
        std::tuple{"--tp-overlap", &tp_overlap, &b.tp_overlap},
        std::tuple{"--ep-overlap", &ep_overlap, &b.ep_overlap},
        std::tuple{"--fp8-param-gather", &fp8_param_gather, &b.fp8_param_gather},
        std::tuple{"--fused-projections", &fused_projections, &b.fused_projections}}) {
    RETURN_IF_ERROR(ApplyYesNo(flag, *value, out));
  }
  return b;
}

StatusOr<plan::PlanRequest> RequestFlags::Request(const GivenFn& given) const {
  plan::PlanRequest req;
  if (!efficiency_path.empty() && !cf.files_allowed) {
    return InvalidArgument("--efficiency: the workbench reads no file; use the CLI");
  }
  ASSIGN_OR_RETURN(req.efficiency, LoadEfficiency(efficiency_path));
  if (!efficiency_text.empty()) {
    ASSIGN_OR_RETURN(req.efficiency, EfficiencyFromText(efficiency_text, kEfficiencyTextOrigin));
  }
  ASSIGN_OR_RETURN(req.model, tf.LoadModel());
  ASSIGN_OR_RETURN(cluster::Cluster c, cf.Load(given));
  RETURN_IF_ERROR(cluster::Validate(c));
  req.cluster = c;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(c.node.gpu_model));
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  req.global_batch = job.global_batch;
  if (tf.global_batch == 0 && !LayoutGiven(given)) {
    return InvalidArgument(
        given("--global-batch")
            ? "--global-batch 0: a search needs it, at least 1 (sequences per step)"
            : "--global-batch: required, a search needs it (sequences per step; or give the "
              "layout, --tp and --pp, to derive it)");
  }
  if (tf.global_batch == 0) {
    // The layout is given: 2pp microbatches per data-parallel rank, as memory and comm-plan
    // derive it (enough to fill a 1F1B pipeline's warm-up twice).
    ASSIGN_OR_RETURN(cluster::Placement placement, cf.Place(c));
    req.global_batch =
        int64_t{job.micro_batch} * cluster::DataParallelDegree(placement) * 2 * cf.pp;
  }
  if (bidirectional) req.model.causal = false;
  AppliedRecipe recipe;
  ASSIGN_OR_RETURN(plan::FrameworkBehaviour b,
                   Behaviour(job.parallel.zero_stage, job.precision,
                             plan::RecipeModelFor(req.model), req.gpu.name, &recipe));
  req.framework_recipe = recipe.sources;
  req.framework_recipe_settings = recipe.settings;
  ASSIGN_OR_RETURN(std::optional<plan::Framework> f, Framework());
  req.framework = f ? plan::FrameworkName(*f) : "";
  plan::ApplyBehaviour(b, &req);  // the framework's defaults, the flags over them (Behaviour)
  req.seq_len = job.seq_len;
  req.precision = job.precision;
  req.fp32_gradients = job.fp32_gradients || b.fp32_grads;  // --fp32-grads, or the framework's
  if (req.precision == plan::Precision::kFp8 && req.gpu.fp8_flops_per_s <= 0) {
    return InvalidArgument(
        fmt::format("--precision fp8: {} has no FP8 tensor cores", req.gpu.name));
  }
  return req;
}

StatusOr<std::optional<plan::Layout>> RequestFlags::Layout(const GivenFn& given,
                                                           const plan::PlanRequest& req) const {
  if (!LayoutGiven(given)) return std::optional<plan::Layout>();
  ClusterFlags sized = cf;
  sized.nodes = req.cluster.num_nodes;
  ASSIGN_OR_RETURN(cluster::Placement placement, sized.Place(req.cluster));
  ASSIGN_OR_RETURN(plan::MemoryConfig job, tf.Config(given));
  plan::Layout lay;
  lay.parallel = job.parallel;
  lay.parallel.tp = cf.tp;
  lay.parallel.pp = cf.pp;
  lay.parallel.cp = cf.cp;
  lay.parallel.ep = cf.ep;
  lay.parallel.dp = cluster::DataParallelDegree(placement);
  lay.order = placement.OrderString();
  lay.recompute = job.recompute;
  lay.micro_batch = job.micro_batch;
  lay.schedule = job.schedule;
  // A framework that runs sequence parallelism whenever it runs TP (data/frameworks/*.csv
  // sequence_parallel always: NeMo's recipes, torchtitan's TP plan) runs it on the user's layout
  // too, unless --sp or --no-sp already said; the search does the same for every layout.
  if (!given("--sp") && !given("--no-sp") && lay.parallel.tp > 1) {
    ASSIGN_OR_RETURN(const std::optional<plan::Framework> f, Framework());
    if (f && plan::BuiltinFrameworkData(*f).sp_always) lay.parallel.sequence_parallel = true;
  }
  return std::optional<plan::Layout>(lay);
}

StatusOr<std::string> ExportDocument(const std::string& format, const plan::PlanRequest& req,
                                     const plan::Layout& lay, const RunContext& ctx) {
  ASSIGN_OR_RETURN(io::ExportFormat f, io::ParseExportFormat(format));
  ASSIGN_OR_RETURN(io::ExportedConfig cfg, io::ExportPlan(f, req, lay));
  if (ctx.note && (f == io::ExportFormat::kDeepSpeed || f == io::ExportFormat::kPytorchCsv)) {
    for (const auto& n : cfg.notes) ctx.note("note: " + n + "\n");
  }
  return std::move(cfg.text);
}

}  // namespace infralens::request
