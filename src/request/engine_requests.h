// Every command's request, from parsed inputs to results and their documents, and its declaration
// (request/command.h: `const Command& NameCommand()`), from which both front ends are generated:
// the CLI (cli::RunDeclared) and the web API (server::RegisterCommand), so that both validate the
// same way, give the same messages and write the same JSON for the same request. Each section is
// defined in src/request/<name>_request.cc (explain's in layout_choice_request.cc).
//
// A query holds what the options hold; `given` says which were set, by their long flag
// ("--nodes"), as Flags::Given does. Every Compute* is the command's own work after parsing.
#ifndef INFRALENS_REQUEST_ENGINE_REQUESTS_H_
#define INFRALENS_REQUEST_ENGINE_REQUESTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "collective/collective.h"
#include "hw/gpu.h"
#include "lab/worksheet.h"
#include "model/model.h"
#include "plan/comm_plan.h"
#include "plan/memory.h"
#include "plan/planner.h"
#include "request/cluster_flags.h"
#include "request/command.h"
#include "request/flag_sink.h"
#include "request/request_flags.h"
#include "request/trace_flags.h"
#include "request/training_flags.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"
#include "trace/loader.h"

namespace infralens::request {

// --- infralens topology ---------------------------------------------------------------------

inline constexpr int kMaxDrawnNodes = 256;

// The longest --search-seconds (an hour: past it, give no limit).
inline constexpr double kMaxSearchSeconds = 3600;

struct TopologyQuery {
  ClusterFlags cluster;
  std::string color_axis;    // tp, cp, ep, dp or pp; "" = the fastest axis of degree > 1
  int max_nodes = 8;         // nodes drawn (ascii, svg, and the JSON "drawing")
  int first_node = 0;        // the first node drawn (0..nodes-1)
  bool coordinates = false;  // JSON: add "drawing", every drawn GPU with its groups

  // --color-axis, --max-nodes, --first-node, --coordinates (the cluster's options are
  // `cluster`'s).
  void Register(FlagSink& flags);
};

struct TopologyResult {
  cluster::Cluster cluster;
  cluster::Placement placement;
  std::vector<cluster::AxisLinks> axes;
  cluster::Axis color_axis = cluster::Axis::kTp;
};

StatusOr<TopologyResult> ComputeTopology(const TopologyQuery& q, const GivenFn& given);
// `infralens topology --json` (with --coordinates: plus "drawing": every GPU of nodes
// [first_node, first_node + max_nodes) in full, and "overview", the colour group of every GPU of
// the cluster, at most cluster::kMaxGpus numbers). indent 0 = one line.
std::string TopologyJson(const TopologyResult& r, const TopologyQuery& q, int indent = 2);
// The other formats: "ascii" (colour = ANSI colours), "svg".
std::string TopologyText(const TopologyResult& r, const TopologyQuery& q, std::string_view format,
                         bool color);
// `infralens topology` (ascii, svg, json; toml: the cluster alone as a topology file),
// `/api/topology`.
const Command& TopologyCommand();

// --- infralens comm -------------------------------------------------------------------------

struct CommQuery {
  ClusterFlags cluster;
  std::string collective = "all_reduce";
  std::string size = "1GiB";
  std::string group;  // tp, cp, ep, dp, edp, pp; "" = ranks 0..ranks-1
  std::string algorithm = "auto";
  int ranks = 0;
  double bandwidth_gbps = 0;  // used when --bandwidth is given
  double latency_us = 0;      // used when --latency is given

  // --collective, --size, --group, --ranks, --algorithm, --bandwidth, --latency.
  void Register(FlagSink& flags);
};

// The group being measured and how it was chosen.
struct CommTarget {
  std::string kind;  // "tp" ... or "ranks"
  std::vector<int64_t> ranks;
  int64_t groups = 1;       // groups of the kind (all communicate at once)
  int64_t group_index = 0;  // which one is reported (the slowest)
};

struct CommResult {
  cluster::Cluster cluster;
  CommTarget target;
  std::vector<collective::Estimate> estimates;  // every algorithm, fastest first
  collective::Request request;
};

// `stop` is checked between the groups of a kind.
StatusOr<CommResult> ComputeComm(const CommQuery& q, const GivenFn& given, const StopFn& stop = {});
std::string CommJson(const CommResult& r, int indent = 2);
std::string CommText(const CommResult& r);
// `infralens comm`, `/api/comm`.
const Command& CommCommand();

// --- infralens comm-plan --------------------------------------------------------------------

struct CommPlanQuery {
  ClusterFlags cluster;
  TrainingFlags training;  // degrees come from `cluster`
};

struct CommPlanResult {
  model::Model model;
  cluster::Cluster cluster;
  cluster::Placement placement;
  plan::CommPlanConfig config;
  plan::CommPlan plan;
};

StatusOr<CommPlanResult> ComputeCommPlan(const CommPlanQuery& q, const GivenFn& given);
std::string CommPlanJson(const CommPlanResult& r, int indent = 2);
// The table (markdown: a markdown table), the frequency and overlap of each call, the totals.
std::string CommPlanText(const CommPlanResult& r, bool markdown);
// `infralens comm-plan`, `/api/comm-plan`.
const Command& CommPlanCommand();

// --- infralens memory -----------------------------------------------------------------------

struct MemoryQuery {
  // The cluster names the GPU (its HBM); the degrees come from here, dp derived from --gpus or
  // --nodes (or one node) when not given.
  ClusterFlags cluster;
  TrainingFlags training;  // the layout options
  double reserve_gib = plan::kDefaultReserveBytes / plan::kGiB;
  // --fp8-recipe: delayed (Transformer Engine's FP8, the default) or tensorwise (torchao's
  // Float8Linear): plan::MemoryConfig::fp8_transformer_engine.
  std::string fp8_recipe;
  // --fp8-param-gather yes|no (default no): plan::MemoryConfig::fp8_param_gather.
  std::string fp8_param_gather;
  // --master-weights fp32|bf16_remainders (default fp32):
  // plan::MemoryConfig::master_weight_remainders.
  std::string master_weights;
  // --cpu-offload-layers N (default 0): plan::MemoryConfig::cpu_offload_layers.
  std::string cpu_offload_layers;
  // --recompute-modules LIST (default core_attn): plan::MemoryConfig::recompute_modules.
  std::string recompute_modules;
};

struct MemoryResult {
  model::Model model;
  cluster::Cluster cluster;
  hw::Gpu gpu;
  plan::MemoryConfig config;
  plan::MemoryReport report;
};

StatusOr<MemoryResult> ComputeMemory(const MemoryQuery& q, const GivenFn& given);
std::string MemoryJson(const MemoryResult& r, int indent = 2);
// The table of ranks and the worst rank against the usable HBM.
std::string MemoryText(const MemoryResult& r);
// `infralens memory`, `/api/memory`.
const Command& MemoryCommand();

// --- infralens plan -------------------------------------------------------------------------

struct PlanQuery {
  PlanQuery() { request.tf.recompute = "selective"; }
  RequestFlags request;  // model, cluster, --gpus, batch, and the degrees of one layout
  int top = 10;
  int threads = 0;  // 0 = every core
  // A search ended by `stop` answers with what it ranked so far (SearchResult::partial): the
  // server's, at its time limit.
  bool keep_partial = false;
  // Seconds the search may run before it ranks what it has evaluated (SearchResult::partial);
  // 0: no limit. The design page asks for a first ranking this way, then for the whole search.
  double search_seconds = 0;
  // The CLI's own: --explain (why the winner won) and --from-megatron FILE (the job of a
  // Megatron-LM launch script).
  bool explain = false;
  std::string from_megatron;
  // The most GPUs the request may ask for (0: the engines' own bound): the server's limit.
  int64_t max_gpus = 0;

  // --top and --search-seconds (the request's options are `request`'s; --threads is the CLI's own).
  void RegisterSearch(FlagSink& flags);
};

struct PlanOutcome {
  plan::PlanRequest request;
  bool evaluated = false;  // a layout was given (any degree flag): `one` holds it
  plan::PlanResult one;
  plan::SearchResult search;  // otherwise the ranked search
};

// The request (model, cluster sized by --gpus or --nodes, batch, precision; RequestFlags), then
// the layout the degrees give evaluated, or the search. PlanRequestOf alone is cheap: the server
// bounds the work by its GPU count first.
StatusOr<plan::PlanRequest> PlanRequestOf(const PlanQuery& q, const GivenFn& given);
StatusOr<PlanOutcome> ComputePlan(const PlanQuery& q, const GivenFn& given,
                                  const plan::ProgressFn& progress = {}, const StopFn& stop = {});
// PlanResultJsonDocument or SearchJsonDocument (plan_output.h), as `plan --json` writes it.
std::string PlanJson(const PlanOutcome& o, int indent = 2);
// `infralens plan`, `/api/plan`.
const Command& PlanCommand();
// InvalidArgument naming gpus (or nodes, when --gpus was not given) when `request` asks for
// more than `max_gpus` GPUs (0: no bound); the server's bound (RunContext::max_gpus).
Status CheckRequestGpus(const plan::PlanRequest& request, const GivenFn& given, int64_t max_gpus);
// A search's threads and stop from a run's context.
plan::SearchOptions SearchOptionsOf(const RunContext& ctx);

// --- infralens explain, worksheet, --export: one layout, given or the planner's best -----------

struct LayoutChoice {
  plan::PlanRequest request;
  bool given = false;  // the degrees named the layout; otherwise it is the planner's best
  plan::PlanResult chosen;
  bool has_best = false;  // the planner's best was searched and a layout fits
  plan::PlanResult best;
};
// The request (RequestFlags::Request), then the layout the degree flags give, evaluated, and with
// `want_best` the planner's best beside it (for the comparison); or, with no degree given, the
// planner's best as the chosen layout (an error when nothing fits). `search` gives the search
// its threads, stop and schedules.
StatusOr<LayoutChoice> ChooseLayout(const RequestFlags& rf, const GivenFn& given, bool want_best,
                                    const plan::SearchOptions& search = {});
// The same for a request already built from `rf` (the server builds it first to bound its size).
StatusOr<LayoutChoice> ChooseLayout(plan::PlanRequest request, const RequestFlags& rf,
                                    const GivenFn& given, bool want_best,
                                    const plan::SearchOptions& search = {});
// The same as a declared command runs it: files as `ctx` allows, the server's GPU bound, the
// search's threads and stop from `ctx`.
StatusOr<LayoutChoice> ChooseLayoutFor(const RequestFlags& rf, const RunContext& ctx,
                                       bool want_best);

// `infralens explain`: the five-part answer for the choice, markdown or JSON.
std::string ExplainDocument(const LayoutChoice& c, bool json);
// `infralens explain` (--export: the layout as a framework config, its notes as
// RunContext::note), `/api/explain` (a search route: the server's GPU bound and search options).
const Command& ExplainCommand();

// --- infralens worksheet --------------------------------------------------------------------

// The worksheet filled for the chosen layout: a heading naming the job and the layout, then the
// two tables (markdown), or lab::RenderWorksheetJson.
std::string WorksheetDocument(const LayoutChoice& c, bool json);
// `worksheet check`: a learner's markdown read and interpreted; InvalidArgument starting with
// `source` ("my-design.md", "request body") for a worksheet that cannot be read.
StatusOr<lab::LearnerDesign> ReadWorksheetDesign(std::string_view text, std::string_view source);
// The design checked against the request, point by point; `best` (may be null) adds the
// throughput comparison.
std::string WorksheetCheckDocument(const lab::LearnerDesign& design, const plan::PlanRequest& req,
                                   const plan::PlanResult* best, bool json);
// `infralens worksheet` (/api/worksheet), `worksheet check` (/api/worksheet/check, the
// worksheet as the request body) and `worksheet template`.
const Command& WorksheetCommand();
const Command& WorksheetCheckCommand();
const Command& WorksheetTemplateCommand();

// --- infralens trace analyze, summarize, compare, calibrate, merge, synth (trace_request.cc) ----

// The traces of `paths` within --memory-limit, at least one of them usable: the reason otherwise
// (the only file's, or the first of several). Files that could not be used are in `errors`.
StatusOr<trace::LoadedTraces> LoadSomeTraces(const std::vector<std::string>& paths,
                                             const TraceMemoryFlag& memory);
// The trace files a run could not use, after its document: one line each and a failure that says
// how many (exit 1), through ctx.note_after and ctx.fail_after.
void ReportSkippedTraces(const std::vector<trace::FileError>& errors, size_t used,
                         std::string_view command, const RunContext& ctx);
const Command& TraceAnalyzeCommand();
const Command& TraceSummarizeCommand();
const Command& TraceCompareCommand();
const Command& TraceCalibrateCommand();
const Command& TraceMergeCommand();
const Command& TraceSynthCommand();

// --- infralens validate (src/request/validate_request.cc) -----------------------------------

// The step-time model against published runs (--published FILE.csv, or the built-in copy).
const Command& ValidateCommand();

// --- infralens scenarios --------------------------------------------------------------------

// Every scenario with its live one-line answer (markdown table or {"scenarios": [...]}); a
// scenario that fails shows its error in its row, but a search stopped by `search.stop` fails the
// whole list (ResourceExhausted).
StatusOr<std::string> ScenarioListDocument(bool json, const plan::SearchOptions& search = {});
// One scenario's five-part answer, titled with its name. InvalidArgument listing the names for
// an unknown one.
StatusOr<std::string> ScenarioDocument(std::string_view name, bool json,
                                       const plan::SearchOptions& search = {});
// `infralens scenarios [NAME]`, /api/scenarios?name=NAME: the documents depend only on the
// binary (CommandInfo::cacheable), so the server computes each once and keeps it.
const Command& ScenariosCommand();

// --- infralens model -----------------------------------------------------------------------

// `infralens model`: parameters and FLOPs of one model (no API endpoint: the pages read
// /api/presets).
const Command& ModelCommand();

// --- infralens schedule --------------------------------------------------------------------

// `infralens schedule` (its csv of a generated schedule streams to RunContext::stream), and
// /api/schedule: the API adds the pipeline page's format=columns and --dependencies, downloads
// named by the schedule, and the server's action limit per format (RunContext::max_actions).
const Command& ScheduleCommand();

// Actions whose dependencies a format=json document lists: the pipeline page draws at most this
// many blocks (web/js/timeline.js MAX_DRAWN).
inline constexpr int64_t kMaxDependencyActions = 20'000;

struct ScheduleDocumentOptions {
  std::string_view format;    // ascii, json, columns, csv, chrome or svg
  bool dependencies = false;  // JSON actions list what they wait for
  int width = 100;            // of the ascii timeline, in columns
  bool color = false;         // ANSI colour in the ascii timeline
  int json_indent = 2;
};
// A simulated schedule's document, as `infralens schedule --format F` writes it (and
// /api/import, which simulates an uploaded CSV); format=columns is the pipeline page's compact
// JSON: the document without "actions", which come as "columns" (one array per field, the type
// as a code into "types"; with dependencies "deps" flat and "dep_offsets").
std::string ScheduleDocumentOf(const schedule::Schedule& s, const sim::Costs& costs,
                               const sim::SimResult& r, const ScheduleDocumentOptions& options);

// --- infralens compare ---------------------------------------------------------------------

// `infralens compare`, `/api/compare` (RunContext::max_actions bounds the simulated actions).
const Command& CompareCommand();

// --- infralens presets ----------------------------------------------------------------------

// `infralens presets --kind K --json`: all, models, gpus or clusters.
StatusOr<std::string> PresetsJson(std::string_view kind, int indent = 2);
// The text form: a table per section under its title.
StatusOr<std::string> PresetsText(std::string_view kind);
// The kinds --kind takes besides "all", in the order they are printed.
std::vector<std::string> PresetKindNames();
// --kind K (default "all").
void RegisterPresetKind(FlagSink& flags, std::string* kind);
// `infralens presets`, `/api/presets`.
const Command& PresetsCommand();

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_ENGINE_REQUESTS_H_
