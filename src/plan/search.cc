// The layout search: enumerate, prune what cannot run or cannot fit (memory first, it is cheap),
// evaluate the rest on every core, rank, and say why each family of layouts lost.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "base/strings.h"
#include "plan/cpu_offload.h"
#include "plan/framework.h"
#include "plan/layer_layout.h"
#include "plan/planner.h"
#include "plan/recompute_lists.h"

namespace infralens::plan {
namespace {

// SearchOptions::zero_stages or zero_stages_pipelined as searched: empty is 0, 1 and 3.
std::vector<int> StagesOrSearchDefault(const std::vector<int>& stages) {
  if (stages.empty()) return std::vector<int>(kSearchZeroStages.begin(), kSearchZeroStages.end());
  return stages;
}

std::vector<int> Divisors(int64_t n, int64_t limit) {
  std::vector<int> out;
  for (int64_t d = 1; d <= std::min(n, limit); ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

// How the search splits L layers over pp ranks of v chunks: 0 = evenly; 1 = the embedding and
// the loss counted as layers (Megatron-LM's --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split, what its Llama-3 405B recipe and torchtitan's weighted
// stage split do: 126 layers over 16 ranks as 7, 8 x 14, 7 ... per rank, 1 layer fewer on the
// first and last chunk); 2 = neither, so Megatron-Core's general layout string, the most even
// split (plan::BalancedLayerLayout); -1 = fewer than two layers per stage.
int LoopedSplit(int64_t layers, int pp, int v) {
  const int64_t S = int64_t{pp} * v;
  if (layers % S == 0) return 0;
  if (pp >= 2 && (layers + 2) % S == 0 && (layers + 2) / S >= 2) return 1;
  // Megatron-Core's general layout (BalancedLayerLayout): at least two layers per stage.
  if (pp >= 2 && (layers + 2) / S >= 2) return 2;
  return -1;
}

// Pipeline degrees worth trying: the divisors of L (even splits) and of L + 2 (the embedding
// and the loss in the split), and the powers of two that leave at least 3 layers per rank (a
// general layout where neither divides: DeepSeek-V3 trained its 61 layers with pp 16), up to
// `limit`.
std::vector<int> PipelineDegrees(int64_t layers, int64_t limit) {
  std::vector<int> out = Divisors(layers, limit);
  for (int d : Divisors(layers + 2, limit)) {
    if (d >= 2 && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  for (int64_t d = 2; d <= limit && (layers + 2) / d >= 3; d *= 2) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(static_cast<int>(d));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The family a layout belongs to, for the explanations; the first rule that matches wins.
std::string FamilyOf(const Layout& l, int gpus_per_node) {
  const ParallelConfig& p = l.parallel;
  if (p.tp > gpus_per_node) return "TP across nodes (tp > GPUs per node)";
  if (p.ep > 1) return "expert parallel (ep > 1)";
  if (p.cp > 1) return "context parallel (cp > 1)";
  if (p.zero_stage >= 3) return "FSDP / ZeRO-3 (weights sharded)";
  if (p.tp == 1 && p.pp == 1) return "pure data parallel (tp=1, pp=1)";
  if (p.pp == 1) return "tensor + data parallel (pp=1)";
  if (p.pp >= 8) return "deep pipelines (pp >= 8)";
  return "tensor + pipeline + data parallel";
}

double GiB(double b) { return b / kGiB; }

// The memory pass asks SearchOptions::stop once per this many layouts (a few milliseconds).
constexpr size_t kStopAskEvery = 256;

// The StepTime component that grew most from the winner `w` to `r`, with the link it crosses.
std::string WhySlower(const PlanResult& w, const PlanResult& r) {
  struct Part {
    const char* name;
    const char* comm_prefix;  // CommItemFamily of the item to name the link from, or nullptr
    double winner, other;
  };
  const StepTime& a = w.time;
  const StepTime& b = r.time;
  const Part parts[] = {
      {"compute", nullptr, a.compute_s, b.compute_s},
      {"TP communication", "TP", a.tp_comm_s, b.tp_comm_s},
      {"CP communication", "CP", a.cp_comm_s, b.cp_comm_s},
      {"EP all-to-all", "EP", a.ep_comm_s, b.ep_comm_s},
      {"pipeline send/recv", "PP", a.pp_comm_s, b.pp_comm_s},
      {"pipeline bubble", nullptr, a.bubble_s, b.bubble_s},
      {"exposed DP communication", "DP", a.dp_comm_s, b.dp_comm_s},
      {"exposed FSDP gathers", "FSDP", a.fsdp_comm_s, b.fsdp_comm_s},
      {"compute slowed beside collectives", nullptr, a.contention_s, b.contention_s},
      {"optimizer step", nullptr, a.optimizer_s, b.optimizer_s},
      {"activation offloading's copies", nullptr, a.offload_s, b.offload_s}};
  const Part* worst = &parts[0];
  for (const Part& p : parts) {
    if (p.other - p.winner > worst->other - worst->winner) worst = &p;
  }
  std::string link;
  if (worst->comm_prefix != nullptr) {
    for (const auto& it : r.comm.items) {
      if (std::string_view(CommItemFamily(it.kind)) == worst->comm_prefix) {
        link = fmt::format(" ({} over {})", collective::CollectiveName(it.collective),
                           cluster::LinkClassName(it.link));
        break;
      }
    }
  }
  return fmt::format("{} {:.2f} s per step{} against the winner's {:.2f} s", worst->name,
                     worst->other, link, worst->winner);
}

}  // namespace

std::vector<std::string> SearchOptions::Constraints() const {
  std::vector<std::string> out;
  for (auto [name, v] : {std::pair<const char*, int>{"tp", fix_tp},
                         {"pp", fix_pp},
                         {"dp", fix_dp},
                         {"cp", fix_cp},
                         {"ep", fix_ep}}) {
    if (v > 0) out.push_back(fmt::format("{}={}", name, v));
  }
  if (fix_vpp > 0) out.push_back(fmt::format("vpp={}", fix_vpp));
  if (fix_zero >= 0) {
    out.push_back(fmt::format("zero={}", fix_zero));
  } else if (!zero_stages.empty() || !zero_stages_pipelined.empty()) {
    const std::string flat = ZeroStagesText(StagesOrSearchDefault(zero_stages));
    const std::string piped = ZeroStagesText(StagesOrSearchDefault(zero_stages_pipelined));
    out.push_back(flat == piped ? "zero " + flat
                                : fmt::format("zero {} ({} with pp > 1)", flat, piped));
  }
  if (fix_recompute >= 0)
    out.push_back(fmt::format("recompute {}",
                              model::RecomputeName(static_cast<model::Recompute>(fix_recompute))));
  if (!fixed_recompute_modules.empty()) {
    out.push_back("recompute modules " + fixed_recompute_modules);
  }
  if (fix_micro_batch > 0) out.push_back(fmt::format("micro-batch {}", fix_micro_batch));
  if (fix_sp >= 0) out.push_back(fix_sp ? "sp" : "no sp");
  if (seq_over_2_tp_cp) out.emplace_back("sequence a multiple of tp x 2 cp");
  if (!fix_order.empty()) out.push_back("order " + fix_order);
  if (split.first_stage_layers > 0)
    out.push_back(fmt::format("first-stage-layers {}", split.first_stage_layers));
  if (split.last_stage_layers > 0)
    out.push_back(fmt::format("last-stage-layers {}", split.last_stage_layers));
  if (split.embedding_in_split) out.emplace_back("embedding in split");
  if (split.loss_in_split) out.emplace_back("loss in split");
  if (!split.layout.empty()) out.push_back("layout " + split.layout);
  if (!schedules.empty()) out.push_back("schedule " + ScheduleNamesText(schedules));
  return out;
}

StatusOr<SearchResult> Search(const PlanRequest& req, const SearchOptions& opt,
                              const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const model::Model& m = req.model;
  const int64_t gpus = req.gpus();
  const int gpn = req.cluster.node.gpus_per_node;
  if (req.global_batch < 1)
    return InvalidArgument(fmt::format("‹global_batch› {}: must be at least 1", req.global_batch));
  std::vector<schedule::ScheduleKind> schedules = opt.schedules;
  if (schedules.empty()) {
    schedules = {schedule::ScheduleKind::k1F1B, schedule::ScheduleKind::kInterleaved1F1B,
                 schedule::ScheduleKind::kZBH1, schedule::ScheduleKind::kZBV,
                 schedule::ScheduleKind::kDualPipeV};
  }
  const int64_t seq = req.seq_len > 0 ? req.seq_len : m.seq_len;

  // Enumerate. Dominated options are left out: SP whenever tp > 1 (less memory, same traffic),
  // ZeRO-2 (between 1 and 3), recompute none (with fused attention it stores what selective does).
  std::vector<Layout> candidates;
  // For a candidate with a heavier module list, the index of the same layout with the list
  // before it (-1: none, the request's own list or another recompute).
  std::vector<int64_t> lighter;
  auto pick = [](int fixed, const std::vector<int>& all) {
    return fixed > 0 ? std::vector<int>{fixed} : all;
  };
  std::vector<int> tps;
  for (int t : Divisors(2 * int64_t{gpn}, 2 * int64_t{gpn})) {
    if (m.num_heads % t == 0 && (m.is_mla() || m.num_kv_heads % t == 0) && gpus % t == 0)
      tps.push_back(t);
  }
  // Context parallelism for long sequences, up to 32 (Meta ran 405B at 128k tokens with cp 16,
  // Dubey et al. 2024 sec. 3.3.2): Megatron's load-balanced causal split cuts each sequence into
  // 2 cp chunks (get_batch_on_this_cp_rank), so cp must divide seq / 2.
  std::vector<int> cps = {1};
  if (seq >= 32768) {
    for (int c = 2; c <= 32; c *= 2) {
      if (seq % (2 * c) == 0) cps.push_back(c);
    }
  }
  std::vector<int> eps = {1};
  if (m.is_moe()) {
    for (int e = 2; e <= std::min<int64_t>(m.num_experts, 64); e *= 2) {
      if (m.num_experts % e == 0) eps.push_back(e);
    }
  }
  std::vector<int> mbs;
  for (int b = 1; b <= std::max(1, opt.max_micro_batch); b *= 2) mbs.push_back(b);
  if (opt.fix_micro_batch > 0) mbs = {opt.fix_micro_batch};
  // The ZeRO stages each layout tries: the user's, else the framework's (with pp = 1 and with
  // pp > 1), else 0, 1 and 3.
  const std::vector<int> zeros_flat =
      opt.fix_zero >= 0 ? std::vector<int>{opt.fix_zero} : StagesOrSearchDefault(opt.zero_stages);
  const std::vector<int> zeros_piped = opt.fix_zero >= 0
                                           ? std::vector<int>{opt.fix_zero}
                                           : StagesOrSearchDefault(opt.zero_stages_pipelined);
  std::vector<model::Recompute> recomputes = {model::Recompute::kNone, model::Recompute::kSelective,
                                              model::Recompute::kFull};
  // Under selective recompute, the heavier module lists after the request's (none when the user
  // named the list or the framework takes none): each tried where the lighter one before it does
  // not fit (below, after the memory pass), as Megatron users add modules until a layout fits.
  const std::vector<model::RecomputeModules> heavier =
      opt.fix_recompute_modules ? std::vector<model::RecomputeModules>{}
                                : HeavierRecomputeModules(m, req.recompute_modules);
  if (opt.fix_recompute >= 0) recomputes = {static_cast<model::Recompute>(opt.fix_recompute)};
  // Activation offloading runs only without recompute and without a pipeline (plan/cpu_offload.h):
  // a fixed degree or recompute that Megatron-Core refuses is the user's error, said once.
  const bool offload_required = req.cpu_offload_layers > 0 && req.cpu_offload_required;
  if (offload_required) {
    RETURN_IF_ERROR(CheckCpuOffload(
        req.cpu_offload_layers, m.num_layers, std::max(1, opt.fix_pp),
        opt.fix_recompute >= 0 && opt.fix_recompute != static_cast<int>(model::Recompute::kNone)));
    recomputes = {model::Recompute::kNone};
  }
  // The user's own split, when given, replaces the search's (LoopedSplit) on every layout; a
  // layout string also fixes the stage count pp x vpp.
  const bool user_split = opt.split.uneven();
  int64_t layout_stages = 0;
  if (!opt.split.layout.empty()) {
    ASSIGN_OR_RETURN(layout_stages, LayerLayoutStages(opt.split.layout));
  }
  auto splits = [&](int pp, int v) { return user_split || LoopedSplit(m.num_layers, pp, v) >= 0; };
  // pp = 1 runs no schedule (the layout says 1f1b): a candidate unless a pipeline was asked for
  // (more than one chunk per rank, uneven stages, or schedules without 1f1b).
  const bool pipeline_required =
      opt.fix_vpp > 1 || user_split ||
      (!opt.schedules.empty() && std::find(opt.schedules.begin(), opt.schedules.end(),
                                           schedule::ScheduleKind::k1F1B) == opt.schedules.end());
  int64_t invalid = 0;
  for (int tp : pick(opt.fix_tp, tps)) {
    for (int cp : pick(opt.fix_cp, cps)) {
      if (gpus % (int64_t{tp} * cp) != 0) continue;
      if (opt.seq_over_2_tp_cp && seq % TorchtitanSeqDivisor(tp, cp) != 0) continue;
      for (int pp : pick(opt.fix_pp, PipelineDegrees(m.num_layers, 128))) {
        if (gpus % (int64_t{tp} * cp * pp) != 0) continue;
        if (pp == 1 && pipeline_required) continue;
        if (pp > 1 && offload_required) continue;
        // Chunks per rank the layouts of this pp must have (0: any the schedule takes).
        int want_v = opt.fix_vpp;
        if (layout_stages > 0) {
          if (layout_stages % pp != 0) continue;
          if (want_v > 0 && want_v != layout_stages / pp) continue;
          want_v = static_cast<int>(layout_stages / pp);
        }
        const int dp = static_cast<int>(gpus / (int64_t{tp} * cp * pp));
        if (opt.fix_dp > 0 && dp != opt.fix_dp) continue;
        for (int ep : pick(opt.fix_ep, eps)) {
          if (dp % ep != 0) continue;
          // With nothing to shard over (dp x cp = 1) every stage is stage 0: that one alone,
          // whatever stages the framework lists (MegaScale's ZeRO-2 on one replica is DDP).
          static const std::vector<int> kUnsharded = {0};
          const bool unsharded = dp * cp == 1 && opt.fix_zero < 0;
          for (int zero : unsharded ? kUnsharded : pp > 1 ? zeros_piped : zeros_flat) {
            // No recompute is a candidate too: with fused attention it stores almost what
            // selective stores (no scores either way) without recomputing anything.
            for (model::Recompute rc : recomputes) {
              for (int mb : mbs) {
                if (req.global_batch % (int64_t{mb} * dp) != 0) {
                  ++invalid;
                  continue;
                }
                const int64_t micro = req.global_batch / (int64_t{mb} * dp);
                std::vector<std::pair<schedule::ScheduleKind, int>> scheds;
                if (pp == 1) {
                  scheds.push_back({schedule::ScheduleKind::k1F1B, 1});
                } else {
                  for (auto k : schedules) {
                    switch (k) {
                      case schedule::ScheduleKind::k1F1B:
                      case schedule::ScheduleKind::kZBH1:
                        if (micro >= pp && splits(pp, 1)) scheds.push_back({k, 1});
                        break;
                      case schedule::ScheduleKind::kInterleaved1F1B:
                        for (int v :
                             want_v >= 2 ? std::vector<int>{want_v} : std::vector<int>{2, 4}) {
                          if (splits(pp, v) && micro % std::max<int64_t>(1, micro / pp) == 0)
                            scheds.push_back({k, v});
                        }
                        break;
                      // The V-shaped schedules split evenly (Megatron-Core's uneven forms are
                      // for the looped ones).
                      case schedule::ScheduleKind::kZBV:
                        if (!user_split && m.num_layers % (2 * int64_t{pp}) == 0)
                          scheds.push_back({k, 2});
                        break;
                      case schedule::ScheduleKind::kDualPipeV:
                        if (!user_split && m.num_layers % (2 * int64_t{pp}) == 0 && micro >= 2 * pp)
                          scheds.push_back({k, 2});
                        break;
                      case schedule::ScheduleKind::kCustom:
                        break;
                      default: {
                        // Asked for by name (--schedule gpipe, zb-h2, looped-bfs): its default
                        // chunks, or the ones given; Evaluate refuses what it cannot run.
                        const schedule::ScheduleInfo& info = schedule::Info(k);
                        const int v = info.default_vpp == 1 ? 1 : want_v >= 2 ? want_v : 2;
                        if (!info.v_shape && splits(pp, v)) scheds.push_back({k, v});
                        break;
                      }
                    }
                  }
                }
                if (want_v > 0) {
                  std::erase_if(scheds, [want_v](const auto& kv) { return kv.second != want_v; });
                }
                for (auto [kind, v] : scheds) {
                  Layout l;
                  l.parallel = {
                      tp, pp, v,    dp,
                      cp, ep, zero, opt.fix_sp >= 0 ? (opt.fix_sp == 1 && tp > 1) : tp > 1};
                  if (user_split) {
                    l.parallel.first_stage_layers = opt.split.first_stage_layers;
                    l.parallel.last_stage_layers = opt.split.last_stage_layers;
                    l.parallel.embedding_in_split = opt.split.embedding_in_split;
                    l.parallel.loss_in_split = opt.split.loss_in_split;
                    l.parallel.layout = opt.split.layout;
                  } else if (!schedule::Info(kind).v_shape) {
                    const int split = LoopedSplit(m.num_layers, pp, v);
                    if (split == 1) {
                      l.parallel.embedding_in_split = l.parallel.loss_in_split = true;
                    } else if (split == 2) {
                      l.parallel.layout = BalancedLayerLayout(m.num_layers, int64_t{pp} * v);
                    }
                  }
                  l.recompute = rc;
                  l.micro_batch = mb;
                  l.schedule = kind;
                  if (!opt.fix_order.empty()) l.order = opt.fix_order;
                  candidates.push_back(l);
                  lighter.push_back(-1);
                  if (rc != model::Recompute::kSelective) continue;
                  for (const model::RecomputeModules& set : heavier) {
                    l.recompute_modules = set;
                    lighter.push_back(static_cast<int64_t>(candidates.size()) - 1);
                    candidates.push_back(l);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // What a failed search was restricted to, named in its message: " with pp=3, zero=1".
  std::vector<std::string> constraints = opt.Constraints();
  if (offload_required) {
    constraints.push_back(fmt::format(
        "pp 1 and recompute none (the {} layers' activation offloading)", req.cpu_offload_layers));
  }
  const std::string within = constraints.empty() ? "" : " with " + Join(constraints, ", ");
  if (candidates.empty()) {
    if (opt.fix_dp > 0 && req.global_batch % opt.fix_dp != 0) {
      return FailedPrecondition(fmt::format(
          "‹global_batch› {} cannot be split over dp = {}: each step needs micro-batch x dp "
          "sequences, so the "
          "global batch must be a multiple of {}{}",
          req.global_batch, opt.fix_dp, opt.fix_dp,
          req.global_batch < opt.fix_dp ? fmt::format(" ({} short)", opt.fix_dp - req.global_batch)
                                        : ""));
    }
    return FailedPrecondition(
        fmt::format("no layout of {} GPUs{} runs {} with ‹global_batch› {}: no combination of "
                    "degrees divides the GPUs, the heads and the layers with a micro-batch x dp "
                    "that divides the batch",
                    gpus, within, m.name, req.global_batch));
  }

  // Evaluate on every core, in two passes. First every layout's memory (cheap), and for those
  // that fit a lower bound on the step time (StepTimeLowerBound: compute only, no communication,
  // no simulation). Then the layouts that fit, most promising (lowest bound) first, in chunks of
  // a fixed size: before each chunk the search notes the k-th best step so far and each family's
  // best, and a layout whose bound exceeds both is skipped, never simulated (it can neither enter
  // the top k nor be its family's best, so the answer is the exhaustive search's). The chunks
  // and the order do not depend on the number of threads, so which layouts are simulated does
  // not either. Layouts that do not fit are kept (their memory only) for the family verdicts.
  struct Outcome {
    bool done = false;         // looked at (a stopped search leaves the rest undone)
    bool memory_done = false;  // its memory looked at (or decided by a lighter module list's)
    bool ok = false;           // valid: memory estimated
    bool fits = false;         // in memory
    bool simulated = false;    // fits and evaluated in full (else skipped by its bound)
    double bound_s = 0;        // StepTimeLowerBound, when it fits
    double need_bytes = 0;     // the worst rank's memory, when ok
    // Only when simulated (a search holds tens of thousands of outcomes, most never simulated).
    std::unique_ptr<PlanResult> result;
    std::string error;
  };
  std::vector<Outcome> outcomes(candidates.size());
  std::vector<int> family_id(candidates.size());
  std::vector<std::string> family_names;  // by family_id
  int families_count = 0;
  {
    std::map<std::string, int> ids;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (lighter[i] >= 0) {  // a heavier list: its layout's family
        family_id[i] = family_id[static_cast<size_t>(lighter[i])];
        continue;
      }
      auto [it, fresh] = ids.emplace(FamilyOf(candidates[i], gpn), families_count);
      if (fresh) {
        ++families_count;
        family_names.push_back(it->first);
      }
      family_id[i] = it->second;
    }
  }
  // The order of the memory pass: layouts sharing a schedule (kind, pp, vpp, microbatches) one
  // after another, so that schedule::GenerateShared makes each once; the schedules whose most
  // promising layout (least AverageComputeSeconds) is the most promising first, so that a search
  // stopped in this pass has looked at the layouts most likely to win.
  std::vector<size_t> order(candidates.size());
  {
    struct Key {
      int kind, pp, vpp;
      int64_t microbatches;
      auto operator<=>(const Key&) const = default;
    };
    std::vector<Key> keys(candidates.size());
    std::vector<double> promise(candidates.size());
    std::map<Key, double> group_promise;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Layout& l = candidates[i];
      const int64_t micro = req.global_batch / (int64_t{l.micro_batch} * l.parallel.dp);
      keys[i] = {static_cast<int>(l.schedule), l.parallel.pp, l.parallel.vpp, micro};
      if (lighter[i] >= 0) {
        // A heavier list recomputes more, so promises no more than the list before it: that
        // list's group and promise (the group's least is what orders it).
        promise[i] = promise[static_cast<size_t>(lighter[i])];
      } else {
        auto avg = AverageComputeSeconds(req, l);
        promise[i] = avg.ok() ? *avg : std::numeric_limits<double>::infinity();
      }
      auto [it, fresh] = group_promise.emplace(keys[i], promise[i]);
      if (!fresh) it->second = std::min(it->second, promise[i]);
      order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double pa = group_promise[keys[a]], pb = group_promise[keys[b]];
      if (pa != pb) return pa < pb;
      return keys[a] < keys[b];
    });
  }
  std::atomic<int64_t> done{0};
  std::mutex progress_mu;
  const int threads =
      opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> stopped{false};
  auto finished_one = [&]() {
    const int64_t d = done.fetch_add(1) + 1;
    if (progress && (d % 64 == 0 || d == static_cast<int64_t>(candidates.size()))) {
      std::lock_guard<std::mutex> lock(progress_mu);
      progress(d, static_cast<int64_t>(candidates.size()));
    }
  };
  // Runs fn(list[k]) for every k on `threads` threads, until `stop` says so (asked before every
  // `ask_every`-th item).
  auto parallel_for = [&](const std::vector<size_t>& list, size_t ask_every, const auto& fn) {
    std::atomic<size_t> next{0};
    auto worker = [&]() {
      while (true) {
        if (stopped.load()) return;
        const size_t k = next.fetch_add(1);
        if (k >= list.size()) return;
        if (k % ask_every == 0 && opt.stop && opt.stop()) {
          stopped = true;
          return;
        }
        fn(list[k]);
      }
    };
    // jthreads join when the scope ends, also when worker() below throws (bad_alloc): no path
    // leaves a joinable thread behind (std::terminate).
    std::vector<std::jthread> pool;
    const int n = static_cast<int>(std::min<size_t>(threads, list.size()));
    for (int t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
  };
  // Pass 1: memory, and the bound of those that fit.
  const auto memory_pass = [&](size_t i) {
    Outcome& o = outcomes[i];
    o.memory_done = true;
    auto r = EvaluateMemory(req, candidates[i]);
    if (!r.ok()) {
      o.done = true;
      o.error = r.status().message();
      finished_one();
      return;
    }
    o.ok = true;
    o.need_bytes = r->memory.worst().total_bytes;
    o.fits = r->memory.fits;
    if (!o.fits) {
      o.done = true;
      finished_one();
      return;
    }
    // A layout whose bound cannot be computed is simulated (Evaluate then says what is wrong).
    auto bound = StepTimeLowerBound(req, *r);
    o.bound_s = bound.ok() ? *bound : -std::numeric_limits<double>::infinity();
  };
  {
    std::vector<size_t> first;
    for (size_t i : order) {
      if (lighter[i] < 0) first.push_back(i);
    }
    parallel_for(first, kStopAskEvery, memory_pass);
  }
  // Then the heavier module lists, a step at a time, each only where the list before it does not
  // fit. Where that one fits, the heavier one is never faster (it only recomputes more, and
  // nothing else in a step depends on memory): looked at, fits, not simulated, like a layout its
  // bound rules out. Where it is invalid, so is the heavier one.
  for (bool more = true; more && !stopped.load();) {
    more = false;
    std::vector<size_t> next;
    for (size_t i : order) {
      Outcome& o = outcomes[i];
      if (lighter[i] < 0 || o.memory_done) continue;
      const Outcome& l = outcomes[static_cast<size_t>(lighter[i])];
      if (!l.memory_done) continue;  // its own lighter list is a step below
      more = true;
      if (l.ok && !l.fits) {
        next.push_back(i);
        continue;
      }
      o.memory_done = o.done = true;
      o.ok = o.fits = l.ok;
      o.need_bytes = l.need_bytes;  // at most the lighter list's
      o.error = l.error;
      finished_one();
    }
    parallel_for(next, kStopAskEvery, memory_pass);
  }
  // Pass 2: the layouts that fit, lowest bound first (ties in the memory pass's order).
  std::vector<size_t> queue;
  for (size_t i : order) {
    if (outcomes[i].ok && !outcomes[i].done) queue.push_back(i);
  }
  std::stable_sort(queue.begin(), queue.end(), [&outcomes](size_t a, size_t b) {
    return outcomes[a].bound_s < outcomes[b].bound_s;
  });
  sim::SummaryMemo memo;
  const size_t k_best = static_cast<size_t>(std::max(1, opt.top_k));
  std::vector<double> best_steps;  // the k best steps so far, a max-heap
  std::vector<double> family_best(static_cast<size_t>(families_count),
                                  std::numeric_limits<double>::infinity());
  for (size_t begin = 0, chunk = 16; begin < queue.size() && !stopped.load();
       begin += chunk, chunk = std::min<size_t>(chunk * 2, 256)) {
    const size_t end = std::min(queue.size(), begin + chunk);
    const std::vector<size_t> part(queue.begin() + static_cast<std::ptrdiff_t>(begin),
                                   queue.begin() + static_cast<std::ptrdiff_t>(end));
    const double kth =
        best_steps.size() < k_best ? std::numeric_limits<double>::infinity() : best_steps.front();
    parallel_for(part, 1, [&](size_t i) {
      Outcome& o = outcomes[i];
      const double threshold = std::max(kth, family_best[static_cast<size_t>(family_id[i])]);
      if (!opt.prune || !(o.bound_s > threshold)) {
        EvaluateOptions eo;
        eo.memo = &memo;
        bool skipped = false;
        if (opt.prune) {
          eo.skip_slower_than_s = threshold;
          eo.skipped = &skipped;
        }
        auto r = Evaluate(req, candidates[i], eo);
        if (r.ok()) {
          o.simulated = !skipped;
          if (!skipped) o.result = std::make_unique<PlanResult>(std::move(r).value());
        } else {
          o.ok = false;
          o.error = r.status().message();
        }
      }
      o.done = true;
      finished_one();
    });
    // What this chunk found, in queue order (the thresholds of the next chunk).
    for (size_t i : part) {
      const Outcome& o = outcomes[i];
      if (!o.simulated) continue;
      const double step = o.result->time.step_s;
      double& fb = family_best[static_cast<size_t>(family_id[i])];
      fb = std::min(fb, step);
      if (best_steps.size() < k_best) {
        best_steps.push_back(step);
        std::push_heap(best_steps.begin(), best_steps.end());
      } else if (step < best_steps.front()) {
        std::pop_heap(best_steps.begin(), best_steps.end());
        best_steps.back() = step;
        std::push_heap(best_steps.begin(), best_steps.end());
      }
    }
  }
  if (stopped.load() && opt.keep_partial) {
    // Stopped in the memory pass: of the 16 layouts with the lowest compute bound whose memory is
    // known, the one with the lowest bound with communication (no simulation) is simulated anyway
    // (or the next if it fails), so that a partial search has an answer.
    if (!queue.empty() && !outcomes[queue.front()].done) {
      std::vector<std::pair<double, size_t>> picks;
      for (size_t k = 0; k < queue.size() && k < 16; ++k) {
        double bound = -std::numeric_limits<double>::infinity();
        EvaluateOptions eo;
        eo.skip_slower_than_s = -std::numeric_limits<double>::infinity();
        eo.bound_s = &bound;
        (void)Evaluate(req, candidates[queue[k]], eo);  // errors come back below
        picks.emplace_back(bound, queue[k]);
      }
      std::stable_sort(picks.begin(), picks.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (const auto& [bound, i] : picks) {
        Outcome& o = outcomes[i];
        EvaluateOptions eo;
        eo.memo = &memo;
        auto r = Evaluate(req, candidates[i], eo);
        o.done = true;
        ++done;
        if (r.ok()) {
          o.simulated = true;
          o.result = std::make_unique<PlanResult>(std::move(r).value());
          break;
        }
        o.ok = false;
        o.error = r.status().message();
      }
    }
  }
  const bool partial =
      stopped.load() && opt.keep_partial &&
      std::any_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.simulated; });
  if (stopped.load() && !partial) {
    return ResourceExhausted(fmt::format("the search was stopped after {} of {} layouts",
                                         done.load(), candidates.size()));
  }

  SearchResult sr;
  sr.constraints = constraints;
  sr.partial = partial;
  sr.layouts = static_cast<int64_t>(candidates.size()) + invalid;
  std::vector<const PlanResult*> fitting;
  const Outcome* smallest = nullptr;  // least memory, for "nothing fits"
  // The memory of a layout that was not simulated, estimated again (the search kept its size
  // only): the same values, from the same function.
  auto memory_of = [&](const Outcome& o) {
    return EvaluateMemory(req, candidates[static_cast<size_t>(&o - outcomes.data())]).value();
  };
  for (const Outcome& o : outcomes) {
    if (!o.done) continue;
    if (!o.ok) {
      ++sr.pruned;
      continue;
    }
    ++sr.evaluated;
    if (o.simulated) {
      ++sr.simulated;
      fitting.push_back(o.result.get());
    }
    if (!smallest || o.need_bytes < smallest->need_bytes) smallest = &o;
  }
  if (fitting.empty()) {
    if (!smallest) {
      return FailedPrecondition(fmt::format("no layout of {} GPUs{} is valid for {}: {}", gpus,
                                            within, m.name, outcomes.front().error));
    }
    const PlanResult least = memory_of(*smallest);
    const double need = least.memory.worst().total_bytes, have = least.memory.usable_bytes;
    return FailedPrecondition(fmt::format(
        "{} does not fit on {} x {}{}: the smallest layout ({}) needs {:.1f} GiB per GPU, {:.1f} "
        "GiB "
        "over the {:.1f} "
        "GiB usable ({:.0f} GiB HBM less the reserve); add GPUs or use a GPU with more memory",
        m.name, gpus, req.gpu.name, within, least.layout.ToString(), GiB(need), GiB(need - have),
        GiB(have), GiB(req.gpu.hbm_bytes)));
  }
  // Fastest first; on a tie, the one that leaves more memory free.
  std::stable_sort(fitting.begin(), fitting.end(), [](const PlanResult* a, const PlanResult* b) {
    if (a->time.step_s != b->time.step_s) return a->time.step_s < b->time.step_s;
    return a->memory.worst().total_bytes < b->memory.worst().total_bytes;
  });
  for (size_t i = 0; i < fitting.size() && static_cast<int>(i) < std::max(1, opt.top_k); ++i) {
    sr.ranked.push_back(*fitting[i]);
  }
  const PlanResult& win = sr.ranked.front();
  const StepTime& t = win.time;
  sr.winner_reason = fmt::format(
      "{} fits with {:.1f} of {:.1f} GiB usable per GPU and runs a step in {:.2f} s ({:.0f}% MFU): "
      "compute {:.2f} s, "
      "TP communication {:.2f} s, pipeline bubble {:.2f} s ({:.1f}% of the schedule), "
      "point-to-point {:.2f} s, "
      "exposed DP {:.2f} s, optimizer {:.3f} s",
      win.layout.ToString(), GiB(win.memory.worst().total_bytes), GiB(win.memory.usable_bytes),
      t.step_s, 100 * win.mfu, t.compute_s, t.tp_comm_s, t.bubble_s, 100 * win.bubble_fraction,
      t.pp_comm_s, t.dp_comm_s + t.fsdp_comm_s, t.optimizer_s);

  // Families.
  std::map<std::string, FamilyVerdict> fam;
  std::map<std::string, const Outcome*> fam_min_mem;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& f = family_names[static_cast<size_t>(family_id[i])];
    FamilyVerdict& v = fam[f];
    v.family = f;
    ++v.candidates;
    if (!outcomes[i].done) ++v.not_evaluated;
    const Outcome& o = outcomes[i];
    if (!o.ok) continue;
    if (o.simulated) {
      const PlanResult& r = *o.result;
      if (!v.has_best || r.time.step_s < v.best.time.step_s) {
        v.best = r;
        v.has_best = true;
      }
    } else if (o.fits) {
      // fits, skipped by its bound: slower than its family's best
    } else if (!fam_min_mem[f] || o.need_bytes < fam_min_mem[f]->need_bytes) {
      fam_min_mem[f] = &o;
    }
  }
  for (auto& [name, v] : fam) {
    if (v.has_best) {
      if (v.best.layout.ToString() == win.layout.ToString()) {
        v.verdict = fmt::format("the winner's family: {:.2f} s per step", v.best.time.step_s);
      } else if (v.best.time.step_s < 1.005 * win.time.step_s) {
        v.verdict = fmt::format(
            "best {} at {:.2f} s per step, as fast as the winner (within 0.5%); it needs "
            "{:.1f} GiB per GPU against the winner's {:.1f}",
            v.best.layout.ToString(), v.best.time.step_s, GiB(v.best.memory.worst().total_bytes),
            GiB(win.memory.worst().total_bytes));
      } else {
        v.verdict =
            fmt::format("best {} at {:.2f} s per step, {:.0f}% slower than the winner: {}",
                        v.best.layout.ToString(), v.best.time.step_s,
                        100 * (v.best.time.step_s / win.time.step_s - 1), WhySlower(win, v.best));
      }
    } else if (const Outcome* o = fam_min_mem[name]) {
      const PlanResult least = memory_of(*o);
      const PlanResult* r = &least;
      const double need = r->memory.worst().total_bytes, have = r->memory.usable_bytes;
      v.verdict = fmt::format(
          "out of memory: the leanest ({}) needs {:.1f} GiB per GPU, {:.1f} GiB over the {:.1f} "
          "GiB usable",
          r->layout.ToString(), GiB(need), GiB(need - have), GiB(have));
    } else if (v.not_evaluated > 0) {
      v.verdict = "not evaluated before the search was stopped";
    } else {
      v.verdict = "no valid layout (degrees, heads or batch do not divide)";
    }
    sr.families.push_back(v);
  }
  std::sort(sr.families.begin(), sr.families.end(),
            [](const FamilyVerdict& a, const FamilyVerdict& b) {
              if (a.has_best != b.has_best) return a.has_best;
              return a.has_best ? a.best.time.step_s < b.best.time.step_s : a.family < b.family;
            });
  sr.pruned += invalid;
  sr.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sr;
}

}  // namespace infralens::plan
