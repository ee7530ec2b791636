// Lab 12's design worksheet for a job on N GPUs (8 nodes x 8 GPUs in the lab): two markdown
// tables a learner fills,
//
//   | Axis | Degree | Placement | Reason |                  rows TP, PP, DP, FSDP/ZeRO (+ CP, EP)
//   | Communication | Frequency | Preferred link | Risk |  rows TP collectives, PP send/recv,
//                                                          DP all-reduce, FSDP all-gather
//
// filled for the planner's best layout (FillWorksheet), or read from a learner's markdown
// (ParseWorksheet, InterpretWorksheet) and checked point by point against the engine
// (CheckWorksheet): does it fit, which link each collective really crosses, throughput against the
// best plan, and the misunderstandings the lab names. Everything is data; the renderers only
// format.
#ifndef INFRALENS_LAB_WORKSHEET_H_
#define INFRALENS_LAB_WORKSHEET_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "lab/explain.h"
#include "plan/planner.h"

namespace infralens::lab {

// ---- The two tables ------------------------------------------------------------------------

struct AxisRow {
  std::string axis, degree, placement, reason;
  int line = 0;  // 1-based line in the markdown it was read from (0 when filled by InfraLens)
};
struct CommRow {
  std::string communication, frequency, preferred_link, risk;
  int line = 0;
};
struct Worksheet {
  std::vector<AxisRow> axes;
  std::vector<CommRow> comms;
  bool has_comm_table = false;
};

// The worksheet filled for `r` (normally the planner's best), reasons naming the numbers.
Worksheet FillWorksheet(const plan::PlanRequest& req, const plan::PlanResult& r);
std::string RenderWorksheetMarkdown(const Worksheet& w);
// Lab 12's two tables with every answer cell empty, in the form ParseWorksheet reads
// (`infralens worksheet template`): a learner fills it and runs `worksheet check` on it.
std::string BlankWorksheetMarkdown();
std::string RenderWorksheetJson(const plan::PlanRequest& req, const plan::PlanResult& r,
                                const Worksheet& w);

// ---- Markdown --------------------------------------------------------------------------------

// Largest worksheet accepted (a filled worksheet is a few KiB).
inline constexpr size_t kMaxWorksheetBytes = 1 << 20;

// A GitHub-flavoured pipe table: a header row, a delimiter row (| --- | :---: |), body rows.
struct MarkdownTable {
  int header_line = 0;  // 1-based
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each padded to the header's width
  std::vector<int> row_lines;
};
// Every pipe table in `text`; other lines are ignored. InvalidArgument naming the line for a
// header without a delimiter row or a row with more cells than its header.
StatusOr<std::vector<MarkdownTable>> ParseMarkdownTables(std::string_view text);

// The axis table (header starting "Axis | Degree") and the communication table (header starting
// "Communication"), by their headers, case-insensitively. InvalidArgument when there is no axis
// table, or a table lacks a column the lab asks for.
StatusOr<Worksheet> ParseWorksheet(std::string_view text);

// Learner text as quoted in errors and findings: at most 60 characters, no control characters.
std::string QuoteCell(std::string_view s);

// ---- A learner's design ----------------------------------------------------------------------

// Where free text ("inside a node over NVLink", "across nodes", "same rail") puts a group.
enum class Where { kUnspecified, kInsideNode, kAcrossNodes, kSameRail, kUnclear };
const char* WhereName(
    Where w);  // "unspecified", "inside a node", "across nodes", "same rail", "unclear"
Where ParseWhere(std::string_view text);
// A preferred link ("NVLink", "InfiniBand", "PCIe", "rail", ...) as the link class it names;
// kNone for an empty cell. `ok` is false when the text names no link.
struct LinkWish {
  bool given = false, understood = false;
  bool network = false;  // any scale-out class (rail or spine)
  cluster::LinkClass link = cluster::LinkClass::kNone;
};
LinkWish ParseLinkWish(std::string_view text);

enum class WorksheetAxis { kTp, kPp, kDp, kZero, kCp, kEp, kSp, kVpp };
inline constexpr int kNumWorksheetAxes = 8;
const char* WorksheetAxisName(
    WorksheetAxis a);  // "TP", "PP", "DP", "FSDP/ZeRO", "CP", "EP", "SP", "VPP"

enum class CommKind { kTp, kPp, kDp, kFsdp, kCp, kEp, kOther };
const char* CommKindName(CommKind k);  // "TP collectives", "PP send/recv", ...

struct LearnerAxis {
  bool given = false;
  int degree = 1;             // for kZero: the ZeRO stage; for kSp: 0/1
  int fsdp_group = 0;         // kZero given as a group size ("FSDP 64"): that size
  bool degree_empty = false;  // the Degree cell was empty (DP: derive it)
  Where where = Where::kUnspecified;
  std::string placement, reason;
  int line = 0;
};
struct LearnerComm {
  CommKind kind = CommKind::kOther;
  LinkWish wish;
  std::string text, frequency, preferred_link, risk;
  int line = 0;
};
struct LearnerDesign {
  LearnerAxis axes[kNumWorksheetAxes];
  std::vector<LearnerComm> comms;
  bool has_comm_table = false;
  const LearnerAxis& at(WorksheetAxis a) const { return axes[static_cast<int>(a)]; }
  LearnerAxis& at(WorksheetAxis a) { return axes[static_cast<int>(a)]; }
};
// Reads the rows. InvalidArgument naming the line for an unknown axis, a repeated axis or a
// degree that is not a number ("TP=8", "8-way", "x8", "none" and "ZeRO-1" / "FSDP" are numbers).
StatusOr<LearnerDesign> InterpretWorksheet(const Worksheet& w);

// ---- The check -------------------------------------------------------------------------------

enum class Severity { kOk, kInfo, kWarning, kError };
const char* SeverityName(Severity s);  // "ok", "info", "warning", "error"

struct Finding {
  std::string id;  // stable: "fit", "dp-equals-gpus-ignores-memory", "tp-across-nodes", ...
  Severity severity = Severity::kInfo;
  std::string title;
  std::string detail;
  int line = 0;  // the worksheet line it is about (0: the design as a whole)
  std::vector<Quantity> numbers;
};

// One collective of the design: the link the learner prefers against the link its group crosses.
struct LinkComparison {
  std::string communication;  // CommKindName
  std::string group;          // the group kind it runs on: tp, pp, dp, cp, ep
  std::string preferred;      // the learner's words ("" when the row is missing)
  cluster::LinkClass real = cluster::LinkClass::kNone;
  int nodes = 0;               // nodes one group spans
  double time_per_step_s = 0;  // its collectives' time per step (before overlap)
  bool matches = true;
};

struct WorksheetCheck {
  std::string title;   // "llama3-70b on 64 x H100-SXM (dgx-h100, 8 nodes of 8)"
  std::string design;  // the learner's degrees and placements as read
  bool evaluated = false;
  plan::PlanResult result;  // the design as evaluated (when evaluated)
  std::string
      knobs;  // what the check chose that the worksheet does not say (recompute, micro-batch, ...)
  bool has_best = false;
  plan::PlanResult best;
  std::vector<Finding> findings;
  std::vector<LinkComparison> links;
};

// Evaluates the design (rank order from its placements: groups said to be inside a node vary
// fastest; recompute, micro-batch and schedule the fastest that fits for its degrees) and answers
// point by point. `best` may be null (then no throughput comparison).
WorksheetCheck CheckWorksheet(const plan::PlanRequest& req, const LearnerDesign& d,
                              const plan::PlanResult* best);
std::string RenderCheckMarkdown(const WorksheetCheck& c);
std::string RenderCheckJson(const WorksheetCheck& c);

}  // namespace infralens::lab

#endif  // INFRALENS_LAB_WORKSHEET_H_
