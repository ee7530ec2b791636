// Filling the worksheet for a plan, checking a learner's, and rendering both.
#include "lab/worksheet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/enum_names.h"
#include "base/json_writer.h"
#include "base/strings.h"
#include "cluster/placement.h"
#include "lab/explain.h"
#include "plan/framework.h"
#include "plan/recompute_lists.h"

namespace infralens::lab {

using plan::CommItem;
using plan::Evaluate;
using plan::Layout;
using plan::ParallelConfig;
using plan::PlaceJob;
using plan::PlanRequest;
using plan::PlanResult;
using plan::RankMemory;
using plan::SplitText;
using plan::StepTime;
using plan::ZeroModelStateBytes;

namespace {

// The link class and node span of every group kind (tp, cp, ep, dp, edp, pp) of a layout.
struct GroupInfo {
  cluster::LinkClass link = cluster::LinkClass::kNone;
  int size = 1, nodes = 1;
};
std::map<std::string, GroupInfo> GroupsOf(const PlanRequest& req, const Layout& lay) {
  std::map<std::string, GroupInfo> out;
  auto placement = PlaceJob(lay.parallel, lay.order, req.gpus());
  if (!placement.ok()) return out;
  for (const cluster::AxisLinks& a : cluster::ClassifyAxes(req.cluster, *placement)) {
    out[a.name] = {a.worst.link, a.degree, a.worst.nodes};
  }
  return out;
}

GroupInfo Group(const std::map<std::string, GroupInfo>& g, const std::string& kind) {
  auto it = g.find(kind);
  return it == g.end() ? GroupInfo{} : it->second;
}

// "inside a node over NVLink/NVSwitch" / "across 4 nodes (network, same rail)".
std::string PlacementWords(const cluster::Cluster& c, const GroupInfo& g) {
  if (g.size <= 1) return "-";
  if (!cluster::IsNetwork(g.link))
    return fmt::format("inside a node over {}", LinkWords(c, g.link));
  return fmt::format("across {} nodes ({})", g.nodes, LinkWords(c, g.link));
}

// Items of the comm plan run by a group kind (prefix match: "dp" matches "dp+cp").
std::vector<const CommItem*> ItemsOf(const PlanResult& r, std::string_view group, bool fsdp) {
  std::vector<const CommItem*> out;
  for (const CommItem& it : r.comm.items) {
    const bool is_fsdp = std::string_view(CommItemFamily(it.kind)) == "FSDP";
    if (it.group.rfind(group, 0) == 0 && is_fsdp == fsdp) out.push_back(&it);
  }
  return out;
}

double TimeOf(const std::vector<const CommItem*>& items) {
  double t = 0;
  for (const CommItem* it : items) t += it->time_per_step_s;
  return t;
}

double BytesOf(const std::vector<const CommItem*>& items) {
  double b = 0;
  for (const CommItem* it : items) b += it->message_bytes * static_cast<double>(it->count);
  return b;
}

int64_t CallsOf(const std::vector<const CommItem*>& items) {
  int64_t n = 0;
  for (const CommItem* it : items) n += it->count;
  return n;
}

// "80 calls per step", or for several items each one's count with its name, then the sum: "2560
// FSDP all-gather of weights (forward) + 2560 ... (backward) + 2560 FSDP reduce-scatter of the
// gradients of weights = 7680 calls per step", so that the sum reads as the items it adds.
std::string CallsText(const std::vector<const CommItem*>& items) {
  if (items.size() == 1) return fmt::format("{} calls per step", CallsOf(items));
  std::vector<std::string> parts;
  for (const CommItem* it : items) parts.push_back(fmt::format("{} {}", it->count, it->name));
  return fmt::format("{} = {} calls per step", Join(parts, " + "), CallsOf(items));
}

// Fills a worksheet from a plan: an axis row per parallelism with the reason for its degree in
// the plan's own numbers, then the communication rows. The parts share the plan and its layout.
class WorksheetFiller {
 public:
  WorksheetFiller(const PlanRequest& req, const PlanResult& r)
      : r_(r),
        p_(r.layout.parallel),
        c_(req.cluster),
        groups_(GroupsOf(req, r.layout)),
        worst_(r.memory.worst()),
        t_(r.time),
        step_(t_.step_s),
        m_(req.model) {}

  Worksheet Fill() {
    w_.has_comm_table = true;
    AddTpAxis();
    AddPpAxis();
    AddDpAxis();
    AddZeroAxis();
    AddCpAndEpAxes();
    AddCommRows();
    return std::move(w_);
  }

 private:
  void AddTpAxis() {
    const auto tp_items = ItemsOf(r_, "tp", false);
    if (p_.tp > 1) {
      w_.axes.push_back(
          {"TP", std::to_string(p_.tp), PlacementWords(c_, Group(groups_, "tp")),
           fmt::format(
               "splits every layer's matmuls {} ways{}: {:.3g}B parameters per GPU; its {} "
               "collectives per step ({} in all) cost {} on the critical path ({} of the step)",
               p_.tp, p_.sequence_parallel ? " (with sequence parallelism)" : "",
               ParametersHeldPerGpu(worst_, p_) / 1e9, CallsOf(tp_items),
               FormatSize(BytesOf(tp_items)), FormatSeconds(t_.tp_comm_s),
               FormatPercent(t_.tp_comm_s / step_)),
           0});
    } else {
      w_.axes.push_back({"TP", "1", "-",
                         "not used: the model state fits without splitting layers, so no per-layer "
                         "collectives",
                         0});
    }
  }

  void AddPpAxis() {
    if (p_.pp > 1) {
      const auto pp_items = ItemsOf(r_, "pp", false);
      const double send = pp_items.empty() ? 0 : pp_items.front()->message_bytes;
      w_.axes.push_back(
          {"PP", p_.vpp > 1 ? fmt::format("{} (vpp {})", p_.pp, p_.vpp) : std::to_string(p_.pp),
           PlacementWords(c_, Group(groups_, "pp")),
           fmt::format("{} layers in {} stages ({}); with {} microbatches ({}) the bubble is {} of "
                       "the step "
                       "({}); each boundary sends {} per microbatch",
                       m_.num_layers, p_.pp * p_.vpp, SplitText(m_, p_), r_.memory.microbatches,
                       schedule::Info(r_.layout.schedule).name, FormatPercent(t_.bubble_s / step_),
                       FormatSeconds(t_.bubble_s), FormatSize(send)),
           0});
    } else {
      w_.axes.push_back(
          {"PP", "1", "-",
           fmt::format("not used: no pipeline bubble; {} per GPU fits in {} without it",
                       FormatGiB(worst_.total_bytes), FormatGiB(r_.memory.usable_bytes)),
           0});
    }
  }

  void AddDpAxis() {
    const auto dp_items = ItemsOf(r_, "dp", false);
    if (p_.dp > 1 && p_.zero_stage >= 3) {
      w_.axes.push_back(
          {"DP", std::to_string(p_.dp), PlacementWords(c_, Group(groups_, "dp")),
           fmt::format(
               "{} replicas on different sequences, their model state sharded by FSDP (below); "
               "adds throughput, not memory",
               p_.dp),
           0});
    } else if (p_.dp > 1) {
      w_.axes.push_back({"DP", std::to_string(p_.dp), PlacementWords(c_, Group(groups_, "dp")),
                         fmt::format("{} replicas on different sequences; their gradient traffic "
                                     "({} per step) takes {} of "
                                     "which {} is not hidden behind backward",
                                     p_.dp, FormatSize(BytesOf(dp_items)),
                                     FormatSeconds(TimeOf(dp_items)), FormatSeconds(t_.dp_comm_s)),
                         0});
    } else {
      w_.axes.push_back(
          {"DP", "1", "-", "not used: every GPU holds a distinct part of the model", 0});
    }
  }

  // FSDP / ZeRO.
  void AddZeroAxis() {
    const double params = worst_.parameters;
    const int shard = p_.dp * p_.cp;
    const double replicated = ZeroModelStateBytes(params, 0, shard);
    const double sharded = ZeroModelStateBytes(params, p_.zero_stage, shard);
    const auto fsdp_items = ItemsOf(r_, "dp", true);
    std::string zero_reason;
    switch (p_.zero_stage) {
      case 0:
        zero_reason =
            fmt::format("none: replicated weights, gradients and optimizer states ({} per GPU) fit",
                        FormatGiB(replicated));
        break;
      case 3:
        zero_reason = fmt::format(
            "FSDP shards weights, gradients and optimizer states over {} GPUs: {} per GPU instead "
            "of "
            "{}; its gathers "
            "and reduce-scatters ({}; {} in all) leave {} exposed",
            shard, FormatGiB(sharded), FormatGiB(replicated), CallsText(fsdp_items),
            FormatSize(BytesOf(fsdp_items)), FormatSeconds(t_.fsdp_comm_s));
        break;
      default:
        zero_reason = fmt::format(
            "ZeRO-{} ({}) shards {} over {} GPUs: model state {} per GPU instead of {}, for the "
            "same "
            "traffic as an "
            "all-reduce (reduce-scatter + all-gather)",
            p_.zero_stage,
            p_.zero_stage == 1 ? "Megatron's distributed optimizer" : "optimizer + gradients",
            p_.zero_stage == 1 ? "optimizer states" : "optimizer states and gradients", shard,
            FormatGiB(sharded), FormatGiB(replicated));
    }
    w_.axes.push_back(
        {"FSDP/ZeRO",
         p_.zero_stage == 0
             ? "none"
             : (p_.zero_stage == 3 ? "FSDP (ZeRO-3)" : fmt::format("ZeRO-{}", p_.zero_stage)),
         p_.zero_stage == 0
             ? "-"
             : fmt::format("over the DP group: {}", PlacementWords(c_, Group(groups_, "dp"))),
         zero_reason, 0});
  }

  void AddCpAndEpAxes() {
    if (p_.cp > 1) {
      const auto cp_items = ItemsOf(r_, "cp", false);
      w_.axes.push_back(
          {"CP", std::to_string(p_.cp), PlacementWords(c_, Group(groups_, "cp")),
           fmt::format(
               "splits each {}-token sequence into {} chunks so activations fit: {} per GPU; ring "
               "exchange {} per step, {} not hidden behind attention",
               r_.memory.seq_len, p_.cp, FormatGiB(worst_.activations_bytes),
               FormatSeconds(TimeOf(cp_items)), FormatSeconds(t_.cp_comm_s)),
           0});
    }
    if (p_.ep > 1) {
      w_.axes.push_back({"EP", std::to_string(p_.ep), PlacementWords(c_, Group(groups_, "ep")),
                         fmt::format("{} experts per GPU ({} of {}); the all-to-all costs {} per "
                                     "step on the critical path",
                                     m_.num_experts / p_.ep, m_.num_experts / p_.ep, m_.num_experts,
                                     FormatSeconds(t_.ep_comm_s)),
                         0});
    }
  }

  // A communication row: its collectives, how often, over which links, and the risk.
  void AddCommRow(const char* name, const std::vector<const CommItem*>& items,
                  const std::string& risk) {
    if (items.empty()) return;
    const CommItem& first = *items.front();
    std::vector<std::string> kinds;
    for (const CommItem* it : items) {
      const std::string k(collective::CollectiveName(it->collective));
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    }
    const std::string freq = fmt::format("{}: {}; {}, {} each", Join(kinds, " + "), first.frequency,
                                         CallsText(items), FormatSize(first.message_bytes));
    w_.comms.push_back({name, freq, LinkWords(c_, first.link), risk, 0});
  }

  // Communication rows, in the lab's order.
  void AddCommRows() {
    const auto tp_items = ItemsOf(r_, "tp", false);
    const auto pp_items = ItemsOf(r_, "pp", false);
    const auto dp_items = ItemsOf(r_, "dp", false);
    const auto fsdp_items = ItemsOf(r_, "dp", true);
    AddCommRow(
        "TP collectives", tp_items,
        fmt::format("on the critical path of every layer: {} per step ({}); off the node it would "
                    "cross the network",
                    FormatSeconds(t_.tp_comm_s), FormatPercent(t_.tp_comm_s / step_)));
    if (p_.tp == 1) w_.comms.push_back({"TP collectives", "-", "-", "none: tp=1", 0});
    AddCommRow(
        "PP send/recv", pp_items,
        fmt::format("latency between stages plus the bubble: {} send/recv and {} idle per step",
                    FormatSeconds(t_.pp_comm_s), FormatSeconds(t_.bubble_s)));
    if (p_.pp == 1) w_.comms.push_back({"PP send/recv", "-", "-", "none: pp=1", 0});
    AddCommRow(p_.zero_stage == 0 ? "DP all-reduce" : "DP all-reduce (reduce-scatter + all-gather)",
               dp_items,
               fmt::format(
                   "{} per step, {} not hidden behind backward; grows with the gradient bytes, not "
                   "the batch",
                   FormatSeconds(TimeOf(dp_items)), FormatSeconds(t_.dp_comm_s)));
    if (dp_items.empty())
      w_.comms.push_back({"DP all-reduce", "-", "-",
                          p_.zero_stage >= 3 ? "none: FSDP reduce-scatters instead" : "none: dp=1",
                          0});
    AddCommRow(
        "FSDP all-gather", fsdp_items,
        fmt::format(
            "weights gathered for every layer and microbatch: {} per step, prefetched behind "
            "the previous "
            "layer; {} exposed where a gather outlasts a layer's compute",
            FormatSeconds(TimeOf(fsdp_items)), FormatSeconds(t_.fsdp_comm_s)));
    if (fsdp_items.empty())
      w_.comms.push_back(
          {"FSDP all-gather", "-", "-", fmt::format("none: ZeRO stage {}", p_.zero_stage), 0});
    AddCommRow(
        "CP ring exchange", ItemsOf(r_, "cp", false),
        fmt::format("hidden behind attention except {} per step", FormatSeconds(t_.cp_comm_s)));
    AddCommRow("EP all-to-all", ItemsOf(r_, "ep", false),
               fmt::format("on the critical path of every MoE layer: {} per step",
                           FormatSeconds(t_.ep_comm_s)));
  }

  const PlanResult& r_;
  const ParallelConfig& p_;
  const cluster::Cluster& c_;
  const std::map<std::string, GroupInfo> groups_;
  const RankMemory& worst_;
  const StepTime& t_;
  const double step_;
  const model::Model& m_;
  Worksheet w_;
};

}  // namespace

// ---- Filling --------------------------------------------------------------------------------

Worksheet FillWorksheet(const PlanRequest& req, const PlanResult& r) {
  return WorksheetFiller(req, r).Fill();
}

std::string BlankWorksheetMarkdown() {
  return "# Lab 12: my design\n"
         "\n"
         "<!-- Fill each empty cell: a degree (1 when the axis is unused; ZeRO-1, ZeRO-3 or none "
         "for\n"
         "     FSDP/ZeRO), where the group's GPUs sit (inside a node over NVLink, across nodes, "
         "same\n"
         "     rail) and why; then how often each collective runs, the link it should use and its\n"
         "     risk. Check it with: infralens worksheet check FILE.md --model M --cluster C\n"
         "     --nodes N --global-batch B -->\n"
         "\n"
         "| Axis | Degree | Placement | Reason |\n"
         "| --- | --- | --- | --- |\n"
         "| TP |  |  |  |\n"
         "| PP |  |  |  |\n"
         "| DP |  |  |  |\n"
         "| CP |  |  |  |\n"
         "| EP |  |  |  |\n"
         "| FSDP/ZeRO |  |  |  |\n"
         "\n"
         "| Communication | Frequency | Preferred link | Risk |\n"
         "| --- | --- | --- | --- |\n"
         "| TP collectives |  |  |  |\n"
         "| PP send/recv |  |  |  |\n"
         "| DP all-reduce |  |  |  |\n"
         "| CP exchange |  |  |  |\n"
         "| EP all-to-all |  |  |  |\n"
         "| FSDP all-gather |  |  |  |\n";
}

std::string RenderWorksheetMarkdown(const Worksheet& w) {
  auto esc = [](const std::string& s) {
    std::string out;
    for (char ch : s) {
      if (ch == '|')
        out += "\\|";
      else if (ch != '\n')
        out += ch;
    }
    return out;
  };
  std::string out = "| Axis | Degree | Placement | Reason |\n| --- | --- | --- | --- |\n";
  for (const AxisRow& a : w.axes) {
    out += fmt::format("| {} | {} | {} | {} |\n", esc(a.axis), esc(a.degree), esc(a.placement),
                       esc(a.reason));
  }
  out += "\n| Communication | Frequency | Preferred link | Risk |\n| --- | --- | --- | --- |\n";
  for (const CommRow& c : w.comms) {
    out += fmt::format("| {} | {} | {} | {} |\n", esc(c.communication), esc(c.frequency),
                       esc(c.preferred_link), esc(c.risk));
  }
  return out;
}

std::string RenderWorksheetJson(const PlanRequest& req, const PlanResult& r, const Worksheet& w) {
  JsonWriter j;
  j.BeginObject();
  j.Field("model", req.model.name).Field("cluster", req.cluster.name).Field("gpus", req.gpus());
  j.Field("global_batch", req.global_batch).Field("seq_len", r.memory.seq_len);
  j.Field("layout", r.layout.ToString())
      .Field("step_s", r.time.step_s)
      .Field("tokens_per_s", r.tokens_per_s);
  j.Field("mfu", r.mfu).Field("memory_per_gpu_bytes", r.memory.worst().total_bytes);
  j.Key("axes").BeginArray();
  for (const AxisRow& a : w.axes) {
    j.BeginObject().Field("axis", a.axis).Field("degree", a.degree).Field("placement", a.placement);
    j.Field("reason", a.reason).EndObject();
  }
  j.EndArray();
  j.Key("communication").BeginArray();
  for (const CommRow& c : w.comms) {
    j.BeginObject().Field("communication", c.communication).Field("frequency", c.frequency);
    j.Field("preferred_link", c.preferred_link).Field("risk", c.risk).EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str();
}

// ---- Checking -------------------------------------------------------------------------------

constexpr EnumName<Severity> kSeverityNames[] = {{Severity::kOk, "ok"},
                                                 {Severity::kInfo, "info"},
                                                 {Severity::kWarning, "warning"},
                                                 {Severity::kError, "error"}};

const char* SeverityName(Severity s) { return NameIn(kSeverityNames, s); }

namespace {

using WA = WorksheetAxis;

bool SaysFree(const std::string& text) {
  const std::string l = " " + ToLower(text) + " ";
  for (const char* w : {"free", "no cost", "costless", "negligible", "cheap", "no risk", "nothing",
                        "none", " low "}) {
    if (l.find(w) != std::string::npos) return true;
  }
  return Trim(text).empty() || Trim(text) == "-";
}

// Rank order from the placements: groups said to be inside a node vary fastest, groups said to be
// across nodes slowest; the rest keep Megatron's order tp-cp-ep-dp-pp.
std::string OrderFrom(const LearnerDesign& d) {
  struct A {
    const char* name;
    WA axis;
  };
  std::vector<A> axes = {
      {"tp", WA::kTp}, {"cp", WA::kCp}, {"ep", WA::kEp}, {"dp", WA::kDp}, {"pp", WA::kPp}};
  auto rank = [&](const A& a) {
    switch (d.at(a.axis).where) {
      case Where::kInsideNode:
        return 0;
      case Where::kAcrossNodes:
      case Where::kSameRail:
        return 2;
      default:
        return 1;
    }
  };
  std::stable_sort(axes.begin(), axes.end(),
                   [&](const A& x, const A& y) { return rank(x) < rank(y); });
  std::vector<std::string> names;
  for (const A& a : axes) names.push_back(a.name);
  return Join(names, "-");
}

std::string DesignString(const LearnerDesign& d, int dp, bool dp_derived) {
  std::vector<std::string> parts;
  for (WA a : {WA::kTp, WA::kPp, WA::kDp, WA::kCp, WA::kEp}) {
    const LearnerAxis& x = d.at(a);
    const int deg = a == WA::kDp ? dp : x.degree;
    if (!x.given && deg == 1) continue;
    std::string s = fmt::format("{}={}", WorksheetAxisName(a), deg);
    if (a == WA::kDp && dp_derived) s += " (derived)";
    if (x.where != Where::kUnspecified) s += fmt::format(" ({})", WhereName(x.where));
    parts.push_back(s);
  }
  const LearnerAxis& z = d.at(WA::kZero);
  parts.push_back(z.degree == 0
                      ? "no ZeRO"
                      : (z.degree == 3 ? "FSDP (ZeRO-3)" : fmt::format("ZeRO-{}", z.degree)));
  return Join(parts, ", ");
}

// The fastest recompute / micro-batch / schedule for the learner's degrees that fits; if none
// fits, the one with the least memory.
StatusOr<PlanResult> EvaluateDesign(const PlanRequest& req, Layout base, std::string* knobs) {
  std::vector<model::Recompute> recs = {model::Recompute::kSelective, model::Recompute::kFull,
                                        model::Recompute::kNone};
  std::vector<int64_t> mbs = {1, 2, 4};
  // The schedules the planner's search tries (plan::SearchOptions::schedules' default), each at
  // its default chunks per rank unless the learner gave vpp: the worksheet has no schedule row,
  // so the best plan's own worksheet reads back as the best plan whatever its schedule.
  std::vector<schedule::ScheduleKind> scheds = {schedule::ScheduleKind::k1F1B};
  if (base.parallel.pp > 1) {
    scheds.insert(scheds.end(),
                  {schedule::ScheduleKind::kInterleaved1F1B, schedule::ScheduleKind::kZBH1,
                   schedule::ScheduleKind::kZBV, schedule::ScheduleKind::kDualPipeV});
  }
  // Selective recompute's module lists as the search tries them: the request's, then the heavier
  // ones where the framework's selective recompute takes a list (plan/recompute_lists.h).
  std::vector<std::optional<model::RecomputeModules>> lists = {std::nullopt};
  if (plan::FrameworkListsRecomputeModules(req)) {
    for (const model::RecomputeModules& l :
         plan::HeavierRecomputeModules(req.model, req.recompute_modules)) {
      lists.emplace_back(l);
    }
  }
  bool have = false, have_fit = false;
  PlanResult best;
  Status last = InvalidArgument("no layout evaluated");
  for (auto s : scheds) {
    for (auto rc : recs) {
      for (const auto& list :
           rc == model::Recompute::kSelective
               ? lists
               : std::vector<std::optional<model::RecomputeModules>>{std::nullopt}) {
        for (int64_t mb : mbs) {
          Layout l = base;
          l.schedule = s;
          l.recompute = rc;
          l.recompute_modules = list;
          l.micro_batch = mb;
          if (base.parallel.vpp == 0 && s == schedule::ScheduleKind::k1F1B) l.parallel.vpp = 1;
          auto r = Evaluate(req, l);
          if (!r.ok()) {
            if (mb == 1 && s == scheds.front() && rc == recs.front()) last = r.status();
            continue;
          }
          const bool fits = r->memory.fits;
          const bool better = !have || (fits && !have_fit) ||
                              (fits == have_fit && (fits ? r->time.step_s < best.time.step_s
                                                         : r->memory.worst().total_bytes <
                                                               best.memory.worst().total_bytes));
          if (better) {
            best = *r;
            have = true;
            have_fit = have_fit || fits;
          }
        }
      }
    }
  }
  if (!have) return last;
  std::string recompute = model::RecomputeName(best.layout.recompute);
  if (best.layout.recompute == model::Recompute::kSelective &&
      plan::RecomputeModulesOf(req, best.layout) != model::RecomputeModules{}) {
    recompute +=
        " (" + model::RecomputeModulesName(plan::RecomputeModulesOf(req, best.layout)) + ")";
  }
  *knobs = fmt::format(
      "{} recompute, micro-batch {}{}{}, rank order {}: {} for these degrees", recompute,
      best.layout.micro_batch, best.layout.parallel.pp > 1 ? ", " : "",
      best.layout.parallel.pp > 1 ? std::string(schedule::Info(best.layout.schedule).name) : "",
      best.layout.order, have_fit ? "the fastest that fits" : "the least memory (nothing fits)");
  return best;
}

// One check of a learner's design against the engine: the job, the design, the degrees it
// implies and the findings so far. Each Check* adds the findings of one kind, in the order the
// report lists them; CheckWorksheet runs them.
struct DesignCheck {
  DesignCheck(const PlanRequest& req, const LearnerDesign& d, const PlanResult* best);

  void add(std::string id, Severity s, std::string title, std::string detail, int line,
           std::vector<Quantity> numbers = {}) {
    c.findings.push_back(
        {std::move(id), s, std::move(title), std::move(detail), line, std::move(numbers)});
  }
  // Degrees without placements, placements not understood.
  void CheckPlacementWords();
  // False when the degrees do not use the job's GPUs: nothing further can be checked.
  bool CheckDegreeProduct();
  // The design evaluated with its best knobs (c.result, groups); false when it cannot run.
  bool EvaluateLayout();
  void CheckFit();
  void CheckTpAcrossNodes();
  void CheckPpAcrossNodes();
  // Where each axis really lands against what the learner wrote.
  void CheckPlacements();
  // Each collective's real link against the preferred one.
  void CheckLinks();
  // Throughput against the best plan.
  void CheckThroughput();

  const PlanRequest& req;
  const LearnerDesign& d;
  const PlanResult* best;
  WorksheetCheck c;
  const int64_t gpus;
  const int gpn;
  const int tp, pp, cp, ep, zero;
  const int64_t model_par;
  const LearnerAxis& dpx;
  const bool dp_given;
  int64_t dp;
  std::map<std::string, GroupInfo> groups;  // by axis, once evaluated
};

DesignCheck::DesignCheck(const PlanRequest& req, const LearnerDesign& d, const PlanResult* best)
    : req(req),
      d(d),
      best(best),
      gpus(req.gpus()),
      gpn(req.cluster.node.gpus_per_node),
      tp(d.at(WA::kTp).degree),
      pp(d.at(WA::kPp).degree),
      cp(d.at(WA::kCp).degree),
      ep(d.at(WA::kEp).degree),
      zero(d.at(WA::kZero).degree),
      model_par(int64_t{tp} * pp * cp),
      dpx(d.at(WA::kDp)),
      dp_given(dpx.given && !dpx.degree_empty),
      dp(dp_given ? dpx.degree : (model_par > 0 && gpus % model_par == 0 ? gpus / model_par : 0)) {
  c.title = fmt::format("{} on {} x {} ({}, {} nodes of {}), global batch {}", req.model.name,
                        req.gpus(), req.gpu.name, req.cluster.name, req.cluster.num_nodes,
                        req.cluster.node.gpus_per_node, req.global_batch);
  if (best != nullptr) {
    c.has_best = true;
    c.best = *best;
  }
  if (dp_given && model_par * dp != gpus && ep > 1 && model_par * dp * ep == gpus) {
    add("dp-counts-ep", Severity::kInfo, "DP counted without EP",
        fmt::format("TP x PP x DP x CP = {} x {} x {} x {} = {} of {} GPUs; counting as "
                    "Megatron-LM does (expert "
                    "parallelism carved out of data parallelism), your DP={} with EP={} is dp={}",
                    tp, pp, dp, cp, model_par * dp, gpus, dp, ep, dp * ep),
        dpx.line);
    dp *= ep;
  }
  c.design = DesignString(d, static_cast<int>(dp), !dp_given);
}

void DesignCheck::CheckPlacementWords() {
  std::vector<std::string> missing;
  int used = 0;
  for (WA a : {WA::kTp, WA::kPp, WA::kDp, WA::kCp, WA::kEp}) {
    const LearnerAxis& x = d.at(a);
    const int deg = a == WA::kDp ? static_cast<int>(dp) : x.degree;
    if (deg <= 1) continue;
    ++used;
    if (x.where == Where::kUnspecified) missing.push_back(WorksheetAxisName(a));
  }
  if (used > 0 && static_cast<int>(missing.size()) == used) {
    add("tuple-without-placement", Severity::kError,
        "a numeric tuple without placement is not a design",
        fmt::format("you gave degrees for {} but no placement for any of them. The same numbers "
                    "run at very "
                    "different speeds depending on which groups share a node: say for each where "
                    "its GPUs sit "
                    "(inside a node over NVLink, across nodes, same rail) and why. The check "
                    "below assumes "
                    "Megatron-LM's default order (TP innermost, then DP, then PP).",
                    Join(missing, ", ")),
        0);
  } else {
    for (const std::string& a : missing) {
      add("placement-missing", Severity::kInfo, fmt::format("{}: no placement", a),
          "no placement given; the check keeps Megatron-LM's default position for it", 0);
    }
  }
  for (WA a : {WA::kTp, WA::kPp, WA::kDp, WA::kCp, WA::kEp}) {
    const LearnerAxis& x = d.at(a);
    if (x.where == Where::kUnclear) {
      add("placement-unclear", Severity::kInfo,
          fmt::format("{}: placement not understood", WorksheetAxisName(a)),
          fmt::format(
              "'{}' names no place; write inside a node (NVLink), across nodes, or same rail",
              QuoteCell(x.placement)),
          x.line);
    }
  }
}

bool DesignCheck::CheckDegreeProduct() {
  if (dp < 1 || model_par * dp != gpus) {
    add("degrees", Severity::kError, "the degrees do not use the GPUs",
        fmt::format(
            "TP x PP x DP x CP = {} x {} x {} x {} = {}, but the job has {} GPUs ({} nodes of {})",
            tp, pp, dp, cp, model_par * std::max<int64_t>(dp, 0), gpus, req.cluster.num_nodes, gpn),
        dpx.line,
        {{"gpus", static_cast<double>(gpus), "count"},
         {"product", double(model_par * std::max<int64_t>(dp, 0)), "count"}});
    return false;
  }
  if (d.at(WA::kZero).fsdp_group > 0 && d.at(WA::kZero).fsdp_group != dp * cp) {
    add("fsdp-group", Severity::kInfo, "FSDP group size",
        fmt::format("you shard over {} GPUs; InfraLens shards FSDP over the whole data-parallel "
                    "group (dp x cp = {})",
                    d.at(WA::kZero).fsdp_group, dp * cp),
        d.at(WA::kZero).line);
  }
  return true;
}

bool DesignCheck::EvaluateLayout() {
  Layout lay;
  lay.parallel.tp = tp;
  lay.parallel.pp = pp;
  lay.parallel.dp = static_cast<int>(dp);
  lay.parallel.cp = cp;
  lay.parallel.ep = ep;
  lay.parallel.zero_stage = zero;
  lay.parallel.sequence_parallel = d.at(WA::kSp).given ? d.at(WA::kSp).degree == 1 : tp > 1;
  lay.parallel.vpp = d.at(WA::kVpp).given ? d.at(WA::kVpp).degree : 0;
  lay.order = OrderFrom(d);
  auto r = EvaluateDesign(req, lay, &c.knobs);
  if (!r.ok()) {
    add("invalid", Severity::kError, "the design cannot run", r.status().message(), 0);
    return false;
  }
  c.evaluated = true;
  c.result = *r;
  groups = GroupsOf(req, c.result.layout);
  return true;
}

void DesignCheck::CheckFit() {
  const PlanResult& res = c.result;
  const RankMemory& w = res.memory.worst();
  const std::vector<Quantity> mem_numbers = {{"memory_per_gpu_bytes", w.total_bytes, "bytes"},
                                             {"usable_bytes", res.memory.usable_bytes, "bytes"},
                                             {"weights_bytes", w.weights_bytes, "bytes"},
                                             {"gradients_bytes", w.gradients_bytes, "bytes"},
                                             {"optimizer_bytes", w.optimizer_bytes, "bytes"},
                                             {"activations_bytes", w.activations_bytes, "bytes"}};
  if (res.memory.fits) {
    add("fit", Severity::kOk, "it fits",
        fmt::format("{} per GPU (weights {}, gradients {}, optimizer {}, activations {}) of {} "
                    "usable on a {}",
                    FormatGiB(w.total_bytes), FormatGiB(w.weights_bytes),
                    FormatGiB(w.gradients_bytes), FormatGiB(w.optimizer_bytes),
                    FormatGiB(w.activations_bytes), FormatGiB(res.memory.usable_bytes),
                    req.gpu.name),
        0, mem_numbers);
  } else {
    add("fit", Severity::kError, "it does not fit",
        fmt::format("{} per GPU (weights {}, gradients {}, optimizer {}, activations {}) against "
                    "{} usable on a {}: "
                    "{} over, even with {} recompute and micro-batch {}",
                    FormatGiB(w.total_bytes), FormatGiB(w.weights_bytes),
                    FormatGiB(w.gradients_bytes), FormatGiB(w.optimizer_bytes),
                    FormatGiB(w.activations_bytes), FormatGiB(res.memory.usable_bytes),
                    req.gpu.name, FormatGiB(w.total_bytes - res.memory.usable_bytes),
                    model::RecomputeName(res.layout.recompute), res.layout.micro_batch),
        0, mem_numbers);
  }
  // "64 GPUs means DP=64" ignores memory.
  if (dp == gpus && !res.memory.fits) {
    const double params = static_cast<double>(model::CountParameters(req.model).total);
    add("dp-equals-gpus-ignores-memory", Severity::kError,
        fmt::format("\"{0} GPUs means DP={0}\" ignores memory", gpus),
        fmt::format(
            "with DP={} every GPU holds a whole replica: {:.3g}B parameters x {:.0f} bytes (BF16 "
            "weights and "
            "gradients, FP32 Adam{}) = {} of model state per GPU before activations, {:.1f}x the "
            "{} a {} can "
            "use. Data parallelism adds throughput, not memory: split the model (TP inside a node, "
            "PP across "
            "nodes) or shard it (FSDP) first.",
            dp, params / 1e9, (w.weights_bytes + w.gradients_bytes + w.optimizer_bytes) / params,
            zero > 0 ? fmt::format(", ZeRO-{} sharding only part of it", zero) : "",
            FormatGiB(w.weights_bytes + w.gradients_bytes + w.optimizer_bytes),
            (w.weights_bytes + w.gradients_bytes + w.optimizer_bytes) / res.memory.usable_bytes,
            FormatGiB(res.memory.usable_bytes), req.gpu.name),
        dpx.line,
        {{"parameters", params, "count"},
         {"model_state_bytes_per_gpu", w.weights_bytes + w.gradients_bytes + w.optimizer_bytes,
          "bytes"},
         {"usable_bytes", res.memory.usable_bytes, "bytes"}});
  }
}

void DesignCheck::CheckTpAcrossNodes() {
  const PlanResult& res = c.result;
  const GroupInfo tpg = Group(groups, "tp");
  if (tp > 1 && cluster::IsNetwork(tpg.link)) {
    const auto items = ItemsOf(res, "tp", false);
    const CommItem* first = items.empty() ? nullptr : items.front();
    add("tp-across-nodes", Severity::kError,
        "TP across nodes puts per-layer collectives on the slow link",
        fmt::format("each TP group of {} spans {} nodes, so all {} TP collectives of a step ({} "
                    "per layer per "
                    "microbatch, {} each) cross {} at about {} bus bandwidth instead of NVLink "
                    "inside a node: {} per "
                    "step on the critical path, {} of the step. Keep TP within a node (tp <= {}) "
                    "and span nodes with "
                    "PP or DP.",
                    tp, tpg.nodes, CallsOf(items),
                    first ? first->frequency.substr(0, first->frequency.find(' ')) : "?",
                    first ? FormatSize(first->message_bytes) : "?",
                    LinkWords(req.cluster, tpg.link),
                    first ? FormatRate(first->estimate.busbw_bytes_per_s) : "?",
                    FormatSeconds(res.time.tp_comm_s),
                    FormatPercent(res.time.tp_comm_s / res.time.step_s), gpn),
        d.at(WA::kTp).line,
        {{"tp_comm_s", res.time.tp_comm_s, "s"},
         {"tp_busbw_bytes_per_s", first ? first->estimate.busbw_bytes_per_s : 0, "bytes/s"},
         {"nodes_per_tp_group", double(tpg.nodes), "count"}});
  }
}

void DesignCheck::CheckPpAcrossNodes() {
  const PlanResult& res = c.result;
  // PP across nodes is not free.
  const GroupInfo ppg = Group(groups, "pp");
  if (pp > 1 && cluster::IsNetwork(ppg.link)) {
    const LearnerComm* pp_row = nullptr;
    for (const auto& row : d.comms) {
      if (row.kind == CommKind::kPp) pp_row = &row;
    }
    const bool free_claim = pp_row == nullptr || SaysFree(pp_row->risk) ||
                            ToLower(d.at(WA::kPp).reason).find("free") != std::string::npos;
    const auto items = ItemsOf(res, "pp", false);
    const CommItem* first = items.empty() ? nullptr : items.front();
    // Whether the cost is large enough to matter here (with m >> p the bubble is small).
    const bool costly = (res.time.bubble_s + res.time.pp_comm_s) >= 0.05 * res.time.step_s;
    add(free_claim ? "pp-across-nodes-is-not-free" : "pp-across-nodes",
        free_claim && costly ? Severity::kWarning : Severity::kInfo,
        free_claim ? (costly ? "\"PP across nodes is free\" ignores bubbles and send/recv"
                             : "\"PP across nodes is free\": nearly, here, only because there are "
                               "many microbatches")
                   : "PP across nodes: the cost you named",
        fmt::format("PP moves little data ({} per send, {} sends per step over {}), but the "
                    "pipeline idles: with {} "
                    "microbatches over {} stages the busiest rank waits {} per step (bubble {} of "
                    "the step{}), and "
                    "send/recv latency adds {} on the critical path.",
                    first ? FormatSize(first->message_bytes) : "?", CallsOf(items),
                    LinkWords(req.cluster, ppg.link), res.memory.microbatches,
                    pp * res.layout.parallel.vpp, FormatSeconds(res.time.bubble_s),
                    FormatPercent(res.time.bubble_s / res.time.step_s),
                    ClosedFormBubble(res.layout.schedule, pp, res.layout.parallel.vpp,
                                     res.memory.microbatches) >= 0
                        ? fmt::format("; (p-1)/(m+p-1) = {}",
                                      FormatPercent(ClosedFormBubble(res.layout.schedule, pp,
                                                                     res.layout.parallel.vpp,
                                                                     res.memory.microbatches)))
                        : "",
                    FormatSeconds(res.time.pp_comm_s)),
        pp_row ? pp_row->line : d.at(WA::kPp).line,
        {{"bubble_s", res.time.bubble_s, "s"},
         {"bubble_fraction", res.bubble_fraction, "fraction"},
         {"pp_comm_s", res.time.pp_comm_s, "s"},
         {"send_bytes", first ? first->message_bytes : 0, "bytes"}});
  }
}

void DesignCheck::CheckPlacements() {
  const PlanResult& res = c.result;
  for (auto [axis, kind] : {std::pair{WA::kTp, "tp"},
                            {WA::kPp, "pp"},
                            {WA::kDp, "dp"},
                            {WA::kCp, "cp"},
                            {WA::kEp, "ep"}}) {
    const LearnerAxis& x = d.at(axis);
    const GroupInfo g = Group(groups, kind);
    if (g.size <= 1 || x.where == Where::kUnspecified || x.where == Where::kUnclear) continue;
    const bool net = cluster::IsNetwork(g.link);
    const bool said_net = x.where != Where::kInsideNode;
    std::string real = PlacementWords(req.cluster, g);
    if (said_net != net || (x.where == Where::kSameRail && g.link == cluster::LinkClass::kSpine)) {
      add("placement-mismatch", Severity::kWarning,
          fmt::format("{} is not where you put it", WorksheetAxisName(axis)),
          fmt::format(
              "you wrote '{}', but with {} each {} group of {} GPUs lands {}{}",
              QuoteCell(x.placement), res.layout.ToString(), WorksheetAxisName(axis), g.size, real,
              said_net
                  ? ""
                  : fmt::format(" (a node has {} GPUs and the faster-varying groups fill it first)",
                                gpn)),
          x.line,
          {{"group_size", double(g.size), "count"}, {"nodes_spanned", double(g.nodes), "count"}});
    } else {
      add("placement", Severity::kOk, fmt::format("{} placement holds", WorksheetAxisName(axis)),
          fmt::format("each {} group of {} GPUs lands {}", WorksheetAxisName(axis), g.size, real),
          x.line);
    }
  }
}

void DesignCheck::CheckLinks() {
  const PlanResult& res = c.result;
  struct KindGroup {
    CommKind kind;
    const char* group;
    bool fsdp;
  };
  for (const KindGroup kg : {KindGroup{CommKind::kTp, "tp", false},
                             {CommKind::kPp, "pp", false},
                             {CommKind::kDp, "dp", false},
                             {CommKind::kFsdp, "dp", true},
                             {CommKind::kCp, "cp", false},
                             {CommKind::kEp, "ep", false}}) {
    const auto items = ItemsOf(res, kg.group, kg.fsdp);
    const LearnerComm* row = nullptr;
    for (const auto& lc : d.comms) {
      if (lc.kind == kg.kind) row = &lc;
    }
    if (items.empty()) {
      if (row != nullptr && row->wish.given) {
        add("no-such-communication", Severity::kInfo,
            fmt::format("{}: not in this design", CommKindName(kg.kind)),
            fmt::format("the design issues no {} (its degree is 1 or, for FSDP, ZeRO stage {} < 3)",
                        CommKindName(kg.kind), zero),
            row->line);
      }
      continue;
    }
    const CommItem& first = *items.front();
    LinkComparison lc;
    lc.communication = CommKindName(kg.kind);
    lc.group = first.group;
    lc.preferred = row ? row->preferred_link : "";
    lc.real = first.link;
    lc.nodes = Group(groups, kg.group).nodes;
    lc.time_per_step_s = TimeOf(items);
    if (row == nullptr) {
      if (d.has_comm_table) {
        add("communication-row-missing", Severity::kInfo,
            fmt::format("{}: no row", CommKindName(kg.kind)),
            fmt::format("the design issues {} ({} calls per step over {}, {} per step) but the "
                        "communication table has "
                        "no row for it",
                        CommKindName(kg.kind), CallsOf(items), LinkWords(req.cluster, first.link),
                        FormatSeconds(lc.time_per_step_s)),
            0);
      }
    } else if (row->wish.given && row->wish.understood) {
      const bool net = cluster::IsNetwork(first.link);
      bool match = row->wish.network == net;
      if (match && row->wish.link != cluster::LinkClass::kNone && row->wish.link != first.link) {
        // A named class: scale-up vs PCIe, rail vs spine.
        match = false;
      }
      lc.matches = match;
      add(match ? "link" : "link-mismatch", match ? Severity::kOk : Severity::kWarning,
          fmt::format(
              "{}: {}", CommKindName(kg.kind),
              match ? "the link you prefer is the link it crosses" : "it crosses a different link"),
          fmt::format("you prefer '{}'; with {} it crosses {} ({} calls per step, {} per step, "
                      "busbw about {})",
                      QuoteCell(row->preferred_link), res.layout.ToString(),
                      LinkWords(req.cluster, first.link), CallsOf(items),
                      FormatSeconds(lc.time_per_step_s),
                      FormatRate(first.estimate.busbw_bytes_per_s)),
          row->line,
          {{"time_per_step_s", lc.time_per_step_s, "s"},
           {"busbw_bytes_per_s", first.estimate.busbw_bytes_per_s, "bytes/s"}});
    } else if (row->wish.given) {
      add("link-unclear", Severity::kInfo,
          fmt::format("{}: link not understood", CommKindName(kg.kind)),
          fmt::format("'{}' names no link; it crosses {}", QuoteCell(row->preferred_link),
                      LinkWords(req.cluster, first.link)),
          row->line);
    }
    c.links.push_back(lc);
  }
  if (!d.has_comm_table) {
    add("communication-table-missing", Severity::kWarning, "no communication table",
        "the lab's second table (| Communication | Frequency | Preferred link | Risk |) is "
        "missing: a design names "
        "its collectives, how often they run and which link they need",
        0);
  }
}

void DesignCheck::CheckThroughput() {
  const PlanResult& res = c.result;
  if (best != nullptr && res.memory.fits) {
    const double ratio = res.tokens_per_s / best->tokens_per_s;
    const bool same = res.layout.ToString() == best->layout.ToString();
    add("throughput", same ? Severity::kOk : (ratio < 0.8 ? Severity::kWarning : Severity::kInfo),
        same ? "this is the planner's best layout"
             : fmt::format("{} of the best plan's throughput", FormatPercent(ratio)),
        fmt::format("predicted {:.0f} tokens/s ({} per step, MFU {}); the planner's best, {}, "
                    "reaches {:.0f} tokens/s "
                    "({} per step, MFU {})",
                    res.tokens_per_s, FormatSeconds(res.time.step_s), FormatPercent(res.mfu),
                    best->layout.ToString(), best->tokens_per_s, FormatSeconds(best->time.step_s),
                    FormatPercent(best->mfu)),
        0,
        {{"tokens_per_s", res.tokens_per_s, "tokens/s"},
         {"best_tokens_per_s", best->tokens_per_s, "tokens/s"},
         {"throughput_vs_best", ratio, "ratio"}});
  } else if (best != nullptr) {
    add("throughput", Severity::kInfo, "no throughput until it fits",
        fmt::format(
            "the planner's best, {}, reaches {:.0f} tokens/s ({} per step, MFU {}, {} per GPU)",
            best->layout.ToString(), best->tokens_per_s, FormatSeconds(best->time.step_s),
            FormatPercent(best->mfu), FormatGiB(best->memory.worst().total_bytes)),
        0, {{"best_tokens_per_s", best->tokens_per_s, "tokens/s"}});
  }
}

}  // namespace

WorksheetCheck CheckWorksheet(const PlanRequest& req, const LearnerDesign& d,
                              const PlanResult* best) {
  DesignCheck check(req, d, best);
  check.CheckPlacementWords();
  if (!check.CheckDegreeProduct() || !check.EvaluateLayout()) return check.c;
  check.CheckFit();
  check.CheckTpAcrossNodes();
  check.CheckPpAcrossNodes();
  check.CheckPlacements();
  check.CheckLinks();
  check.CheckThroughput();
  return check.c;
}

std::string RenderCheckMarkdown(const WorksheetCheck& c) {
  std::string out = fmt::format("# Worksheet check: {}\n\n", c.title);
  out += fmt::format("**Your design.** {}\n", c.design);
  if (c.evaluated) {
    out += fmt::format("\n**Evaluated as.** {} ({}).\n", c.result.layout.ToString(), c.knobs);
    out += fmt::format(
        "\n**Prediction.** {} per step, {:.0f} tokens/s, MFU {}, {} per GPU of {} usable.\n",
        FormatSeconds(c.result.time.step_s), c.result.tokens_per_s, FormatPercent(c.result.mfu),
        FormatGiB(c.result.memory.worst().total_bytes), FormatGiB(c.result.memory.usable_bytes));
  }
  out += "\n## Findings\n\n";
  int n = 0;
  for (const Finding& f : c.findings) {
    out += fmt::format("{}. **[{}] {}**{}: {}\n", ++n, SeverityName(f.severity), f.title,
                       f.line > 0 ? fmt::format(" (line {})", f.line) : "", f.detail);
  }
  if (!c.links.empty()) {
    out +=
        "\n## Links\n\n| Communication | Group | Your preferred link | Real link | Per step |\n"
        "| --- | --- | --- | --- | ---: |\n";
    for (const LinkComparison& l : c.links) {
      out += fmt::format("| {} | {} | {} | {}{} | {} |\n", l.communication, l.group,
                         l.preferred.empty() ? "-" : l.preferred, cluster::LinkClassName(l.real),
                         cluster::IsNetwork(l.real) ? fmt::format(" ({} nodes)", l.nodes) : "",
                         FormatSeconds(l.time_per_step_s));
    }
  }
  return out;
}

std::string RenderCheckJson(const WorksheetCheck& c) {
  JsonWriter w;
  w.BeginObject();
  w.Field("title", c.title).Field("design", c.design).Field("evaluated", c.evaluated);
  if (c.evaluated) {
    w.Field("layout", c.result.layout.ToString()).Field("knobs", c.knobs);
    w.Key("predicted").BeginObject();
    w.Field("fits", c.result.memory.fits).Field("step_s", c.result.time.step_s);
    w.Field("tokens_per_s", c.result.tokens_per_s).Field("mfu", c.result.mfu);
    w.Field("memory_per_gpu_bytes", c.result.memory.worst().total_bytes);
    w.Field("usable_bytes", c.result.memory.usable_bytes)
        .Field("bubble_fraction", c.result.bubble_fraction);
    w.EndObject();
  }
  if (c.has_best) {
    w.Key("best").BeginObject();
    w.Field("layout", c.best.layout.ToString()).Field("step_s", c.best.time.step_s);
    w.Field("tokens_per_s", c.best.tokens_per_s).Field("mfu", c.best.mfu);
    w.EndObject();
  }
  w.Key("findings").BeginArray();
  for (const Finding& f : c.findings) {
    w.BeginObject();
    w.Field("id", f.id).Field("severity", SeverityName(f.severity)).Field("title", f.title);
    w.Field("detail", f.detail).Field("line", f.line);
    WriteQuantities(w, "numbers", f.numbers);
    w.EndObject();
  }
  w.EndArray();
  w.Key("links").BeginArray();
  for (const LinkComparison& l : c.links) {
    w.BeginObject();
    w.Field("communication", l.communication)
        .Field("group", l.group)
        .Field("preferred", l.preferred);
    w.Field("real_link", cluster::LinkClassName(l.real)).Field("nodes", l.nodes);
    w.Field("time_per_step_s", l.time_per_step_s).Field("matches", l.matches);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace infralens::lab
