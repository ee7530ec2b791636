// The interview answer for one parallel layout (lab 09), as data: five sections, each a few
// sentences and the numbers behind them, all computed from the engine (memory, communication
// plan, step-time breakdown, schedule simulation) so that changing a preset changes the answer.
//
//   problem        the bottleneck, quantified (model state against HBM, FLOPs against peak, and
//                  the largest overhead of this layout)
//   mechanism      what is replicated and what is sharded, along which axis
//   communication  which collective, how often, how many bytes, which link, how long (CommPlan)
//   tradeoff       what the choice costs: bubble, memory, exposed communication, recompute
//   measurement    what to profile and which numbers would confirm or refute the prediction
#ifndef INFRALENS_LAB_EXPLAIN_H_
#define INFRALENS_LAB_EXPLAIN_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/json_writer.h"
#include "base/status.h"
#include "plan/planner.h"

namespace infralens::lab {

// A number behind a sentence, in base units (bytes, seconds, bytes/s, FLOPs, or a fraction).
struct Quantity {
  std::string name;  // snake_case, stable (JSON key material)
  double value = 0;
  std::string unit;  // "bytes", "s", "bytes/s", "FLOP", "fraction", "count", "tokens/s"
};

struct Section {
  std::string name;   // "problem", "mechanism", "communication", "tradeoff", "measurement"
  std::string title;  // "Problem", ...
  std::vector<std::string> sentences;
  std::vector<Quantity> numbers;
};

struct Explanation {
  std::string title;     // "llama3-70b on 64 x H100-SXM (dgx-h100, 8 nodes of 8)"
  std::string question;  // set by scenarios: what the interviewer asked
  std::string layout;    // Layout::ToString()
  bool planner_best = false;
  Section problem, mechanism, communication, tradeoff, measurement;
  std::vector<const Section*> sections() const {
    return {&problem, &mechanism, &communication, &tradeoff, &measurement};
  }
  std::vector<Section*> sections() {
    return {&problem, &mechanism, &communication, &tradeoff, &measurement};
  }
};

// The planner's fastest layout that fits (plan::Search, top 1, with `options`' schedules, threads
// and stop). FailedPrecondition when nothing fits, with Search's reason.
StatusOr<plan::PlanResult> BestPlan(const plan::PlanRequest& req, plan::SearchOptions options = {});

// Explains `chosen`; `best` (may be null or equal to chosen) adds the comparison with the planner's
// pick to the tradeoff.
Explanation Explain(const plan::PlanRequest& req, const plan::PlanResult& chosen,
                    const plan::PlanResult* best);

std::string RenderExplanationMarkdown(const Explanation& e);
std::string RenderExplanationJson(const Explanation& e);
// `numbers` as the array `key` of {name, value, unit} objects (the form both JSON outputs of the
// lab use).
void WriteQuantities(JsonWriter& w, std::string_view key, const std::vector<Quantity>& numbers);

// Short human forms shared by the lab renderers: "61.9 GiB", "12.3 ms" / "1.25 s", "1.50 MiB",
// "450 GB/s", "12.5%".
std::string FormatGiB(double bytes);
std::string FormatSeconds(double s);
std::string FormatSize(double bytes);
std::string FormatRate(double bytes_per_s);
std::string FormatPercent(double fraction);

// How people name link class `l` on `c`: in a sentence ("the network on one rail (NIC, leaf
// switch, NIC)") and as a worksheet's short label ("network, same rail").
std::string LinkPhrase(const cluster::Cluster& c, cluster::LinkClass l);
std::string LinkWords(const cluster::Cluster& c, cluster::LinkClass l);

// Closed-form bubble fraction (idle / (P x makespan)) of gpipe and 1F1B, (p-1)/(m+p-1), and of
// interleaved 1F1B, (p-1)/(v m + p-1) (Narayanan et al. SC21, sec. 2.2); -1 for other schedules.
double ClosedFormBubble(schedule::ScheduleKind k, int p, int v, int64_t m);

// The parameters one GPU of pipeline rank `w` holds, as EstimateMemory shards them: under ZeRO-3
// the dense ones over the dp x cp ranks and the routed experts over the dp x cp / ep ranks that
// hold the same experts; otherwise all of w.parameters (after the TP and EP splits).
double ParametersHeldPerGpu(const plan::RankMemory& w, const plan::ParallelConfig& p);

}  // namespace infralens::lab

#endif  // INFRALENS_LAB_EXPLAIN_H_
