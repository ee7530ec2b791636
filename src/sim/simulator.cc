#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace infralens::sim {

using schedule::Action;
using schedule::ActionType;
using schedule::Schedule;

double Costs::DurationMs(const schedule::Action& a) const {
  const StageCosts& c = stage(a.stage);
  switch (a.type) {
    case ActionType::kForward:
      return c.f_ms;
    case ActionType::kBackward:
      return c.b_ms;
    case ActionType::kBackwardInput:
      return c.i_ms;
    case ActionType::kBackwardWeight:
      return c.w_ms;
    case ActionType::kOverlapFB:
      return c.fb_ms >= 0 ? c.fb_ms : c.f_ms + stage(a.b_stage).b_ms;
  }
  return 0;
}

Status ValidateCosts(const Costs& costs, int num_stages) {
  auto check = [](const StageCosts& c, const std::string& where) -> Status {
    const std::pair<const char*, double> fields[] = {
        {"f", c.f_ms}, {"b", c.b_ms}, {"i", c.i_ms}, {"w", c.w_ms}};
    for (const auto& [name, v] : fields) {
      if (!std::isfinite(v) || v < 0 || v > kMaxCostMs) {
        return InvalidArgument(
            fmt::format("--{} {}{}: a duration must be a number from 0 to {:g} ms", name, v, where,
                        kMaxCostMs));
      }
    }
    if (!std::isfinite(c.fb_ms) || std::abs(c.fb_ms) > kMaxCostMs) {
      return InvalidArgument(
          fmt::format("‹fb› {}{}: must be a number from 0 to {:g} ms (negative: f + b)", c.fb_ms,
                      where, kMaxCostMs));
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(check(costs.uniform, ""));
  if (!costs.per_stage.empty() && static_cast<int>(costs.per_stage.size()) != num_stages) {
    return InvalidArgument(fmt::format("per-stage costs list {} stages but the schedule has {}",
                                       costs.per_stage.size(), num_stages));
  }
  for (size_t s = 0; s < costs.per_stage.size(); ++s) {
    RETURN_IF_ERROR(check(costs.per_stage[s], fmt::format(" (stage {})", s)));
  }
  if (!std::isfinite(costs.p2p_ms) || costs.p2p_ms < 0 || costs.p2p_ms > kMaxCostMs) {
    return InvalidArgument(fmt::format("‹p2p› {}: a latency must be a number from 0 to {:g} ms",
                                       costs.p2p_ms, kMaxCostMs));
  }
  return Status::Ok();
}

StatusOr<Costs> ResolveCosts(const CostInput& in) {
  Costs c;
  StageCosts& u = c.uniform;
  u.f_ms = in.f;
  u.fb_ms = in.fb;
  const bool gb = in.b.has_value(), gi = in.i.has_value(), gw = in.w.has_value();
  double bb = in.b.value_or(2.0), ii = in.i.value_or(1.0), ww = in.w.value_or(1.0);
  if (gb && !gi && !gw) {
    ii = ww = bb / 2;
  } else if (gb && gi && !gw) {
    ww = bb - ii;
  } else if (gb && !gi && gw) {
    ii = bb - ww;
  } else if (!gb && (gi || gw)) {
    bb = ii + ww;
  }
  if (ii < 0 || ww < 0) {
    return InvalidArgument(
        fmt::format("‹b› {} with ‹i› {} ‹w› {}: the split parts of the backward must be >= 0 "
                    "(B = I + W)",
                    bb, ii, ww));
  }
  u.b_ms = bb;
  u.i_ms = ii;
  u.w_ms = ww;
  c.p2p_ms = in.p2p;
  return c;
}

std::vector<int> PeakActivations(const Schedule& s) {
  std::vector<int> peaks(s.pp, 0);
  for (int r = 0; r < s.pp; ++r) {
    int live = 0, peak = 0;
    for (const Action& a : s.ranks[r]) {
      switch (a.type) {
        case ActionType::kForward:
          peak = std::max(peak, ++live);
          break;
        case ActionType::kBackward:
        case ActionType::kBackwardWeight:
          --live;
          break;
        case ActionType::kBackwardInput:
          break;  // the activation is still needed by W
        case ActionType::kOverlapFB:
          peak = std::max(peak, ++live);  // the forward allocates while the backward still holds
          --live;
          break;
      }
    }
    peaks[r] = peak;
  }
  return peaks;
}

namespace {

// Completion events: kind 0 = F(s,i) done, kind 1 = gradient of (s,i) done (B or I).
struct Keys {
  int S, m;
  int64_t Of(int kind, int stage, int mb) const {
    return (static_cast<int64_t>(kind) * S + stage) * m + mb;
  }
};

struct Dep {
  int64_t key = -1;  // -1: none
  bool cross_rank = false;
};

// Up to four dependencies (an FB pair has two for each half).
struct Deps {
  Dep d[2];
  int n = 0;
};

void AddDepsFor(const Schedule& s, const Keys& keys, int rank, ActionType type, int stage, int mb,
                Deps& out) {
  const int S = s.num_stages();
  switch (type) {
    case ActionType::kForward:
      if (stage > 0)
        out.d[out.n++] = {keys.Of(0, stage - 1, mb), s.stage_to_rank[stage - 1] != rank};
      break;
    case ActionType::kBackward:
    case ActionType::kBackwardInput:
      if (stage < S - 1) {
        out.d[out.n++] = {keys.Of(1, stage + 1, mb), s.stage_to_rank[stage + 1] != rank};
      } else {
        out.d[out.n++] = {keys.Of(0, stage, mb), false};
      }
      break;
    case ActionType::kBackwardWeight:
      out.d[out.n++] = {keys.Of(1, stage, mb), false};
      break;
    case ActionType::kOverlapFB:
      break;
  }
}

// The dependencies of action `a` on `rank`: an FB pair waits for what its forward half and its
// backward half each wait for.
Deps DepsOf(const Schedule& s, const Keys& keys, int rank, const Action& a) {
  Deps deps;
  if (a.type == ActionType::kOverlapFB) {
    AddDepsFor(s, keys, rank, ActionType::kForward, a.stage, a.microbatch, deps);
    AddDepsFor(s, keys, rank, ActionType::kBackward, a.b_stage, a.b_microbatch, deps);
  } else {
    AddDepsFor(s, keys, rank, a.type, a.stage, a.microbatch, deps);
  }
  return deps;
}

// Whether `a` completes the forward (forward = true) or the input gradient of (stage, mb).
bool Produces(const Action& a, bool forward, int stage, int mb) {
  switch (a.type) {
    case ActionType::kForward:
      return forward && a.stage == stage && a.microbatch == mb;
    case ActionType::kBackward:
    case ActionType::kBackwardInput:
      return !forward && a.stage == stage && a.microbatch == mb;
    case ActionType::kBackwardWeight:
      return false;
    case ActionType::kOverlapFB:
      return forward ? a.stage == stage && a.microbatch == mb
                     : a.b_stage == stage && a.b_microbatch == mb;
  }
  return false;
}

std::string DescribeKey(const Schedule& s, const Keys& keys, int64_t key) {
  int mb = static_cast<int>(key % keys.m);
  int64_t rest = key / keys.m;
  int stage = static_cast<int>(rest % keys.S);
  int kind = static_cast<int>(rest / keys.S);
  return fmt::format("{}{}{} (rank {})", stage, kind == 0 ? "F" : "B/I", mb,
                     s.stage_to_rank[stage]);
}

StatusOr<SimResult> Run(const Schedule& s, const Costs& costs, DeadlockReport* deadlock,
                        bool record_times) {
  const int P = s.pp, S = s.num_stages(), m = s.microbatches;
  RETURN_IF_ERROR(ValidateCosts(costs, S));
  if (s.num_actions() > schedule::kMaxActions) {
    return InvalidArgument(fmt::format("schedule has {} actions, above the limit of {}",
                                       s.num_actions(), schedule::kMaxActions));
  }
  const Keys keys{S, m};
  std::vector<double> done_at(static_cast<size_t>(2) * S * m, -1.0);
  // Waiters: each rank waits on at most one key at a time; an intrusive list per key.
  std::vector<int32_t> waiter_head(done_at.size(), -1);
  std::vector<int32_t> waiter_next(P, -1);
  std::vector<int64_t> waiting_on(P, -1);

  SimResult res;
  if (record_times) {
    res.start_ms.resize(P);
    res.end_ms.resize(P);
    for (int r = 0; r < P; ++r) {
      res.start_ms[r].resize(s.ranks[r].size());
      res.end_ms[r].resize(s.ranks[r].size());
    }
  }
  // Per rank, summed in action order (the same sums with or without the per-action times).
  std::vector<double> busy(P, 0.0), first_start(P, 0.0);
  std::vector<size_t> next(P, 0);
  std::vector<double> clock(P, 0.0);
  std::vector<int32_t> runnable;
  runnable.reserve(P);
  for (int r = P - 1; r >= 0; --r) runnable.push_back(r);

  auto complete = [&](int64_t key, double t) {
    done_at[key] = t;
    for (int32_t w = waiter_head[key]; w != -1;) {
      int32_t nxt = waiter_next[w];
      waiter_next[w] = -1;
      waiting_on[w] = -1;
      runnable.push_back(w);
      w = nxt;
    }
    waiter_head[key] = -1;
  };

  while (!runnable.empty()) {
    const int r = runnable.back();
    runnable.pop_back();
    const auto& ops = s.ranks[r];
    while (next[r] < ops.size()) {
      const Action& a = ops[next[r]];
      const Deps deps = DepsOf(s, keys, r, a);
      double start = clock[r];
      int64_t blocked = -1;
      for (int k = 0; k < deps.n; ++k) {
        double t = done_at[deps.d[k].key];
        if (t < 0) {
          blocked = deps.d[k].key;
          break;
        }
        start = std::max(start, t + (deps.d[k].cross_rank ? costs.p2p_ms : 0.0));
      }
      if (blocked >= 0) {
        waiting_on[r] = blocked;
        waiter_next[r] = waiter_head[blocked];
        waiter_head[blocked] = r;
        break;
      }
      const double end = start + costs.DurationMs(a);
      if (record_times) {
        res.start_ms[r][next[r]] = start;
        res.end_ms[r][next[r]] = end;
      }
      if (next[r] == 0) first_start[r] = start;
      busy[r] += end - start;
      clock[r] = end;
      ++next[r];
      switch (a.type) {
        case ActionType::kForward:
          complete(keys.Of(0, a.stage, a.microbatch), end);
          break;
        case ActionType::kBackward:
        case ActionType::kBackwardInput:
          complete(keys.Of(1, a.stage, a.microbatch), end);
          break;
        case ActionType::kBackwardWeight:
          break;
        case ActionType::kOverlapFB:
          complete(keys.Of(0, a.stage, a.microbatch), end);
          complete(keys.Of(1, a.b_stage, a.b_microbatch), end);
          break;
      }
    }
  }

  // Any rank left with work is stuck: follow the chain of waits to name the cycle.
  for (int r = 0; r < P; ++r) {
    if (next[r] >= s.ranks[r].size()) continue;
    std::string msg = "deadlock:";
    std::vector<bool> seen(P, false);
    int cur = r;
    for (int hops = 0; hops < P && !seen[cur]; ++hops) {
      seen[cur] = true;
      const int64_t key = waiting_on[cur];
      const int producer = s.stage_to_rank[(key / m) % S];
      if (deadlock != nullptr) {
        DeadlockWait wait;
        wait.rank = cur;
        wait.index = static_cast<int64_t>(next[cur]);
        wait.waits_microbatch = static_cast<int>(key % m);
        wait.waits_stage = static_cast<int>((key / m) % S);
        wait.waits_forward = key / (int64_t{S} * m) == 0;
        wait.producer_rank = producer;
        const auto& list = s.ranks[producer];
        for (size_t k = 0; k < list.size(); ++k) {
          if (Produces(list[k], wait.waits_forward, wait.waits_stage, wait.waits_microbatch)) {
            wait.producer_index = static_cast<int64_t>(k);
            break;
          }
        }
        deadlock->chain.push_back(wait);
      }
      msg += fmt::format("{} rank {} action #{} {} waits for {}", hops ? ";" : "", cur, next[cur],
                         schedule::ToString(s.ranks[cur][next[cur]]), DescribeKey(s, keys, key));
      if (producer == cur) {
        msg += ", which this rank only runs later or never";
        break;
      }
      cur = producer;
      if (next[cur] >= s.ranks[cur].size()) {
        msg += fmt::format(", which rank {} never runs", cur);
        break;
      }
    }
    return InvalidArgument(msg);
  }

  // Metrics.
  const std::vector<int> peaks = PeakActivations(s);
  res.ranks.resize(P);
  for (int r = 0; r < P; ++r) {
    RankMetrics& rm = res.ranks[r];
    rm.rank = r;
    rm.actions = static_cast<int64_t>(s.ranks[r].size());
    rm.peak_activations = peaks[r];
    if (!s.ranks[r].empty()) {
      rm.first_start_ms = first_start[r];
      rm.last_end_ms = clock[r];  // the end of the rank's last action
      rm.busy_ms = busy[r];
    }
    res.makespan_ms = std::max(res.makespan_ms, rm.last_end_ms);
  }
  FillSummaryFractions(res);
  return res;
}

}  // namespace

void FillSummaryFractions(SimResult& res) {
  const int P = static_cast<int>(res.ranks.size());
  double sum_span = 0, sum_span_idle = 0, sum_idle = 0;
  for (auto& rm : res.ranks) {
    rm.idle_ms = res.makespan_ms - rm.busy_ms;
    rm.span_ms = rm.last_end_ms - rm.first_start_ms;
    rm.span_idle_ms = rm.span_ms - rm.busy_ms;
    sum_idle += rm.idle_ms;
    sum_span += rm.span_ms;
    sum_span_idle += rm.span_idle_ms;
  }
  res.bubble_fraction = res.makespan_ms > 0 ? sum_idle / (P * res.makespan_ms) : 0.0;
  res.span_bubble_fraction = sum_span > 0 ? sum_span_idle / sum_span : 0.0;
}

StatusOr<SimResult> Simulate(const Schedule& s, const Costs& costs, DeadlockReport* deadlock) {
  return Run(s, costs, deadlock, /*record_times=*/true);
}

StatusOr<SimResult> SimulateSummary(const Schedule& s, const Costs& costs) {
  return Run(s, costs, nullptr, /*record_times=*/false);
}

namespace {

// The bytes of everything a summary depends on: the schedule's identity (a generated schedule is
// a function of these fields) and every cost as stored, so equal keys mean equal inputs.
std::string MemoKey(const Schedule& s, const Costs& costs) {
  std::string key;
  key.reserve(32 + (costs.per_stage.size() + 1) * sizeof(StageCosts));
  auto put = [&key](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(static_cast<int>(s.kind));
  put(s.pp);
  put(s.vpp);
  put(s.microbatches);
  put(static_cast<int>(s.placement));
  put(costs.p2p_ms);
  const auto put_stage = [&put](const StageCosts& c) {
    put(c.f_ms);
    put(c.b_ms);
    put(c.i_ms);
    put(c.w_ms);
    put(c.fb_ms);
  };
  put_stage(costs.uniform);
  put(costs.per_stage.size());
  for (const StageCosts& c : costs.per_stage) put_stage(c);
  return key;
}

}  // namespace

StatusOr<SimResult> SummaryMemo::Simulate(const Schedule& s, const Costs& costs) {
  if (s.kind == schedule::ScheduleKind::kCustom) return SimulateSummary(s, costs);
  std::string key = MemoKey(s, costs);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = results_.find(key); it != results_.end()) {
      ++hits_;
      return it->second;
    }
  }
  // Simulated outside the lock; two threads asking at once both simulate (equal results).
  ASSIGN_OR_RETURN(SimResult r, SimulateSummary(s, costs));
  std::lock_guard<std::mutex> lock(mu_);
  ++misses_;
  if (results_.size() >= max_entries_) results_.clear();
  results_.emplace(std::move(key), r);
  return r;
}

int64_t SummaryMemo::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int64_t SummaryMemo::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

std::vector<std::vector<int64_t>> ActionDependencies(const Schedule& s) {
  const int S = s.num_stages(), m = s.microbatches;
  const Keys keys{S, m};
  // Which flat action completes each event.
  std::vector<int64_t> producer(static_cast<size_t>(2) * S * m, -1);
  auto set = [&](int kind, int stage, int mb, int64_t flat) {
    if (stage >= 0 && stage < S && mb >= 0 && mb < m) producer[keys.Of(kind, stage, mb)] = flat;
  };
  int64_t flat = 0;
  for (int r = 0; r < s.pp; ++r) {
    for (const Action& a : s.ranks[r]) {
      switch (a.type) {
        case ActionType::kForward:
          set(0, a.stage, a.microbatch, flat);
          break;
        case ActionType::kBackward:
        case ActionType::kBackwardInput:
          set(1, a.stage, a.microbatch, flat);
          break;
        case ActionType::kBackwardWeight:
          break;
        case ActionType::kOverlapFB:
          set(0, a.stage, a.microbatch, flat);
          set(1, a.b_stage, a.b_microbatch, flat);
          break;
      }
      ++flat;
    }
  }
  std::vector<std::vector<int64_t>> deps(static_cast<size_t>(flat));
  flat = 0;
  for (int r = 0; r < s.pp; ++r) {
    for (const Action& a : s.ranks[r]) {
      const Deps d = DepsOf(s, keys, r, a);
      for (int k = 0; k < d.n; ++k) {
        if (d.d[k].key >= 0 && producer[d.d[k].key] >= 0)
          deps[flat].push_back(producer[d.d[k].key]);
      }
      ++flat;
    }
  }
  return deps;
}

}  // namespace infralens::sim
