// The flags of the lab commands (worksheet, explain, scenarios' overrides): which model, which
// cluster and how much of it (--gpus or --nodes), the batch and precision, and optionally one
// layout (degrees, ZeRO, SP, recompute, micro-batch, schedule) to evaluate instead of searching.
#ifndef INFRALENS_REQUEST_REQUEST_FLAGS_H_
#define INFRALENS_REQUEST_REQUEST_FLAGS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "io/export.h"
#include "plan/efficiency.h"
#include "plan/planner.h"
#include "plan/validate.h"
#include "request/cluster_flags.h"
#include "request/command.h"
#include "request/flag_sink.h"
#include "request/training_flags.h"

namespace infralens::request {

struct RequestFlags {
  ClusterFlags cf;
  TrainingFlags tf;
  std::string export_format;    // --export (with `exports`)
  std::string efficiency_path;  // --efficiency FILE (CLI only: the API reads no file)
  // The API's `efficiency`: the same constants as CSV text (a request reads no file).
  std::string efficiency_text;
  // What the framework does (docs/planner.md, "Checking against reality"): --framework NAME
  // sets its defaults, which --attention, --dp-overlap and --tp-overlap override. Empty: fused
  // attention, gradient reduction overlapped, TP not overlapped.
  std::string framework, attention, dp_overlap, tp_overlap, tp_overlap_sms, sp_backward;
  std::string fsdp_with_pp;
  std::string fsdp_max_live_params;  // --fsdp-max-live-params; "": the framework's
  // --ep-dispatcher (alltoall, deepep, hybridep) and --ep-overlap: the MoE all-to-all's;
  // --fp8-recipe (delayed, tensorwise): PlanRequest::fp8_transformer_engine.
  std::string ep_dispatcher, ep_overlap, fp8_recipe;
  // --fp8-param-gather yes|no: Transformer Engine's FP8 weights as the parameters (Megatron's
  // --fp8-param-gather); empty: the framework's (NeMo's FP8 presets yes, the others no).
  std::string fp8_param_gather;
  // --fused-projections yes|no: q, k, v as one GEMM and gate and up as one
  // (plan::PlanRequest::fused_projections); empty: the framework's, else yes.
  std::string fused_projections;
  // --cp-exchange ring|all_gather and --cp-kv-heads kv|query: how context parallelism moves K
  // and V (plan::PlanRequest::cp_all_gather, cp_kv_repeated); empty: the framework's, else ring
  // and kv.
  std::string cp_exchange, cp_kv_heads;
  // --master-weights fp32|bf16_remainders (plan::PlanRequest::master_weight_remainders); empty:
  // fp32.
  std::string master_weights;
  // --cpu-offload-layers N: activation offloading (plan::PlanRequest::cpu_offload_layers); empty:
  // the framework's recipe, else 0.
  std::string cpu_offload_layers;
  // --recompute-modules LIST (plan::PlanRequest::recompute_modules); empty: the framework's
  // recipe, else core_attn.
  std::string recompute_modules;
  bool bidirectional = false;  // --bidirectional: no causal mask (attention does all s x s)

  // With `layout`: every ClusterFlags and TrainingFlags flag (degrees, ZeRO, ...); otherwise only
  // --model --cluster --nodes --global-batch --seq --precision --fp32-grads. Always --gpus; with
  // `exports` also --export.
  void Register(FlagSink& flags, bool layout, bool exports);
  // The API's form (`files_allowed` false): no file is read, and --efficiency's value is the
  // constants' CSV text rather than a path (the API reads the option into the same field).
  void SetFilesAllowed(bool files_allowed);
  // --framework, --attention, --dp-overlap, --tp-overlap, --bidirectional (also the API's).
  void RegisterBehaviour(FlagSink& flags);
  // The request: the model, the cluster sized by --gpus or --nodes, its GPU, the batch.
  StatusOr<plan::PlanRequest> Request(const GivenFn& given) const;
  StatusOr<plan::PlanRequest> Request(const FlagSink& flags) const {
    return Request(GivenOf(flags));
  }
  // --framework's defaults with --attention, --dp-overlap and --tp-overlap over them (DeepSpeed
  // overlaps gradient reduction only under ZeRO-3: `zero_stage` is the given one, 0 searching).
  // With a framework, its recipe for the model preset `model` on the GPU preset `gpu` applies
  // between its defaults and the flags (plan/framework_recipe.h); `recipe` gets the rows no flag
  // overrode, in words (settings) and with their sources.
  struct AppliedRecipe {
    std::string settings, sources;
  };
  StatusOr<plan::FrameworkBehaviour> Behaviour(int zero_stage, plan::Precision precision,
                                               std::string_view model = {},
                                               std::string_view gpu = {},
                                               AppliedRecipe* recipe = nullptr) const;
  // --framework parsed (nullopt when not given); InvalidArgument naming the flag otherwise.
  StatusOr<std::optional<plan::Framework>> Framework() const;
  // The framework whose pipeline schedules and ZeRO stages bound a search: --framework, else the
  // one --export writes for (megatron: megatron-lm, deepspeed, torchtitan), so that the layout
  // exported is one that framework runs; nullopt for neither (or pytorch-csv).
  StatusOr<std::optional<plan::Framework>> SearchFramework() const;
  // Whether the flags give one whole layout, evaluated as given: --tp and --pp both (dp is the
  // GPUs left, cp and ep 1 unless given, the other options their defaults). Any other subset of
  // layout options restricts a search (RestrictSearch).
  static bool LayoutGiven(const GivenFn& given);
  // The layout the flags describe, or nullopt when it is not given whole (search instead).
  StatusOr<std::optional<plan::Layout>> Layout(const GivenFn& given,
                                               const plan::PlanRequest& req) const;
  StatusOr<std::optional<plan::Layout>> Layout(const FlagSink& flags,
                                               const plan::PlanRequest& req) const {
    return Layout(GivenOf(flags), req);
  }
  // Without a whole layout, every layout option given restricts the search of `req` to itself:
  // the degrees (--tp --cp --pp --dp --ep), --vpp, ZeRO (--zero, --distributed-optimizer,
  // --fsdp), --recompute, --micro-batch, --sp, --order, the uneven split (--first-stage-layers,
  // --last-stage-layers, --embedding-in-split, --loss-in-split, --layout) and --schedule.
  // InvalidArgument naming the flags for options that contradict each other or the GPU count
  // (--schedule zbv --vpp 4, --pp 1 --vpp 2, degrees that do not divide the GPUs).
  Status RestrictSearch(const GivenFn& given, const plan::PlanRequest& req,
                        plan::SearchOptions* opt) const;
};

// --efficiency FILE: the efficiency constants of the file over the built-in ones
// (plan/efficiency.h).
void RegisterEfficiency(FlagSink& flags, std::string* path);
// The table for --efficiency `path` ("" = null: the built-in table). InvalidArgument naming the
// file, line and column for a malformed row; NotFound for a missing file.
StatusOr<std::shared_ptr<const plan::EfficiencyTable>> LoadEfficiency(const std::string& path);
// What DeviceEfficiency::origin (the plan JSON's gemm_from) says of constants sent as text.
inline constexpr std::string_view kEfficiencyTextOrigin = "--efficiency (CSV text of the request)";
// The same for the file's text (the API's `efficiency`), `origin` naming it in errors and in
// DeviceEfficiency::origin ("" = null: the built-in table).
StatusOr<std::shared_ptr<const plan::EfficiencyTable>> EfficiencyFromText(std::string_view csv,
                                                                          std::string_view origin);

// `--export FORMAT` of a declared command (plan, explain, worksheet): the export of `lay` in
// `format` (io::ParseExportFormat) as the document; the exporter's notes go to ctx.note ("note:
// ..." lines) for the formats whose file cannot carry them (DeepSpeed's JSON, PyTorch's CSV).
StatusOr<std::string> ExportDocument(const std::string& format, const plan::PlanRequest& req,
                                     const plan::Layout& lay, const RunContext& ctx);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_REQUEST_FLAGS_H_
