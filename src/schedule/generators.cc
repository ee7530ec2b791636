// Schedule generators. Each one reproduces the action order of a published implementation, named
// in its comment, so that a schedule drawn here is the schedule that framework runs.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>

#include "schedule/rank_actions.h"
#include "schedule/schedule.h"

namespace infralens::schedule {
namespace {

Schedule Skeleton(ScheduleKind kind, int pp, int vpp, int m, Placement placement) {
  Schedule s;
  s.kind = kind;
  s.name = std::string(Info(kind).name);
  s.pp = pp;
  s.vpp = vpp;
  s.microbatches = m;
  s.ranks.assign(pp, {});
  SetPlacement(s, placement);
  return s;
}

// Each generator below is a coroutine yielding one rank's actions (rank_actions.h); it takes its
// parameters by value, since it outlives the call that starts it.

// GPipe (Huang et al. 2019; PyTorch ScheduleGPipe): every forward, then every backward in
// microbatch order.
ActionStream GPipeRank(int r, int m) {
  for (int i = 0; i < m; ++i) co_yield Action::F(r, i);
  for (int i = 0; i < m; ++i) co_yield Action::B(r, i);
}

// 1F1B (PipeDream-Flush, Narayanan et al. 2021; PyTorch Schedule1F1B): rank r warms up with
// P-1-r forwards, then alternates one forward and one backward, then drains the backwards.
ActionStream OneFOneBRank(int P, int m, int r) {
  const int warmup = std::min(P - 1 - r, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) co_yield Action::F(r, f);
  while (f < m) {
    co_yield Action::F(r, f++);
    co_yield Action::B(r, b++);
  }
  while (b < m) co_yield Action::B(r, b++);
}

// PyTorch's flexible interleaved ordering (schedules.py, ScheduleInterleaved1F1B and
// ScheduleInterleavedZeroBubble, both built on _get_1f1b_rank_ops): microbatches go through a
// rank's chunks in rounds of `microbatches_per_round`; with m a multiple of P this is exactly
// Megatron-LM's interleaved schedule (warm-up (v-1)*P + 2*(P-1-r)).
ActionStream InterleavedRank(int P, int v, int m, int r, int per_round, int warmup_factor,
                             bool zero_bubble) {
  const int total = v * m;
  // _get_warmup_ops: the last rank warms up (v-1) rounds; each hop further adds warmup_factor.
  const int warmup = std::min((v - 1) * per_round + warmup_factor * (P - 1 - r), total);
  const int fwd_bwd = total - warmup;
  const int cooldown = total - fwd_bwd;
  // Chunk (not stage) indexes, so the counters are per chunk of this rank: v of them.
  auto fwd_chunk = [&](int step) { return (step / per_round) % v; };
  auto bwd_chunk = [&](int step) { return v - 1 - ((step - warmup) / per_round) % v; };
  // Zero bubble (ZB1P): rank r runs its first r backward steps without W, then follows each
  // I with the oldest pending W (num_1f1b_microbatches = rank in PyTorch).
  const int num_1f1b = r;
  std::vector<int> f_mb(v, 0), b_mb(v, 0), w_mb(v, 0);
  std::deque<int> pending_w;  // backward steps whose W is still to come, oldest first
  for (int step = 0; step < warmup + fwd_bwd + cooldown; ++step) {
    if (step < warmup + fwd_bwd) {
      const int c = fwd_chunk(step);
      co_yield Action::F(c * P + r, f_mb[c]++);
    }
    if (step < warmup) continue;
    const int c = bwd_chunk(step);
    if (!zero_bubble) {
      co_yield Action::B(c * P + r, b_mb[c]++);
      continue;
    }
    co_yield Action::I(c * P + r, b_mb[c]++);
    pending_w.push_back(step);
    if (step - warmup >= num_1f1b) {
      const int wc = bwd_chunk(pending_w.front());
      pending_w.pop_front();
      co_yield Action::W(wc * P + r, w_mb[wc]++);
    }
  }
  while (!pending_w.empty()) {
    const int wc = bwd_chunk(pending_w.front());
    pending_w.pop_front();
    co_yield Action::W(wc * P + r, w_mb[wc]++);
  }
}

Status InterleavedRounds(const ScheduleParams& p, int vpp, int* per_round) {
  if (vpp == 1) {  // one chunk: rounds do not change the order
    *per_round = p.microbatches;
    return Status::Ok();
  }
  // PyTorch: number_of_rounds = max(1, m // P); m must be a multiple of it.
  auto valid = [&](int64_t m) { return m % std::max<int64_t>(1, m / p.pp) == 0; };
  int rounds = std::max(1, p.microbatches / p.pp);
  if (!valid(p.microbatches)) {
    // The nearest counts that pass the same rule (the round count changes with m, so a multiple
    // of this m's rounds need not be one); a multiple of pp always is, so each search stops
    // within pp steps.
    int64_t below = p.microbatches, above = p.microbatches;
    while (below > 1 && !valid(below)) --below;
    while (!valid(above)) ++above;
    return InvalidArgument(fmt::format(
        "-m {}: interleaved schedules run microbatches in rounds (max(1, m/pp) = {} rounds for "
        "pp={}) and "
        "need m to be a multiple of the round count, as PyTorch does; try -m {} or -m {}",
        p.microbatches, rounds, p.pp, below, above));
  }
  *per_round = p.microbatches / rounds;
  return Status::Ok();
}

// Looped BFS (Lamy-Poirier 2023, "Breadth-First Pipeline Parallelism"; PyTorch ScheduleLoopedBFS):
// all microbatches through the rank's first chunk, then the next; backwards in reverse.
ActionStream LoopedBFSRank(int P, int v, int m, int r) {
  for (int c = 0; c < v; ++c) {
    for (int i = 0; i < m; ++i) co_yield Action::F(c * P + r, i);
  }
  for (int c = v - 1; c >= 0; --c) {
    for (int i = m - 1; i >= 0; --i) co_yield Action::B(c * P + r, i);
  }
}

// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Section 3.1 and Figure 3): more
// warm-up forwards and the W passes moved towards the tail, so that with F = I = W and m >= 2P
// no rank idles between its first and last action.
// Rank r warms up with 2(P-r)-1 forwards (what fits before its first input gradient can arrive),
// then repeats F, I, W with each W lagging its I by 2r microbatches, and drains the lagged W's
// last. With unit costs rank r then runs without a gap from r to r + 3m, and every rank holds
// up to 2P microbatches (twice 1F1B's peak on rank 0), as the paper states for ZB-H2.
ActionStream ZBH2Rank(int P, int m, int r) {
  const int lag = 2 * r;
  int f = 0, w = 0;
  for (; f < std::min(2 * (P - r) - 1, m); ++f) co_yield Action::F(r, f);
  for (int i = 0; i < m; ++i) {
    if (f < m) co_yield Action::F(r, f++);
    co_yield Action::I(r, i);
    if (i - lag >= 0) co_yield Action::W(r, w++);
  }
  while (w < m) co_yield Action::W(r, w++);
}

// ZBV (Qi et al. 2024, Section 6; PyTorch ScheduleZBVZeroBubble._calculate_single_rank_operations),
// on max(2P-1, m) microbatches: PyTorch pads to 2P-1 and drops the padding ones (ZBVRank).
ActionStream ZBVPaddedRank(int P, int m, int r) {
  const int n_micro = std::max(2 * P - 1, m);
  const int c0 = r, c1 = 2 * P - 1 - r;
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int k = 0; k < 2 * (P - r) - 1; ++k) co_yield Action::F(c0, f0++);
  for (int k = 0; k < r; ++k) {
    co_yield Action::F(c1, f1++);
    co_yield Action::F(c0, f0++);
  }
  for (int k = 0; k < P - r; ++k) {
    co_yield Action::F(c1, f1++);
    co_yield Action::I(c1, b1);
    co_yield Action::W(c1, b1++);
  }
  while (f1 < f0 || f0 < n_micro) {
    if (f0 < n_micro) co_yield Action::F(c0, f0++);
    co_yield Action::I(c0, b0);
    co_yield Action::W(c0, b0++);
    co_yield Action::F(c1, f1++);
    co_yield Action::I(c1, b1);
    co_yield Action::W(c1, b1++);
  }
  int w0 = b0, w1 = b1;
  for (int k = 0; k < r; ++k) {
    co_yield Action::I(c0, b0++);
    co_yield Action::I(c1, b1++);
  }
  for (int k = 0; k < P - r; ++k) {
    co_yield Action::I(c0, b0++);
    co_yield Action::W(c0, w0++);
  }
  while (w1 < b1) co_yield Action::W(c1, w1++);
  while (w0 < b0) co_yield Action::W(c0, w0++);
}

ActionStream ZBVRank(int P, int m, int r) {
  for (ActionStream padded = ZBVPaddedRank(P, m, r); padded.Next();) {
    if (padded.current().microbatch < m) co_yield padded.current();
  }
}

// DualPipeV (DeepSeek-V3 report, arXiv 2412.19437; PyTorch ScheduleDualPipeV, after
// deepseek-ai/DualPipe dualpipev.py): eight phases per rank; the main phase overlaps the forward
// of one chunk with the full backward of the other.
ActionStream DualPipeVRank(int P, int m, int r) {
  const int st0 = r, st1 = 2 * P - 1 - r;
  // Next microbatch per chunk (0: st0, 1: st1) for F, for I/B (shared), and pending W's in I
  // order.
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::deque<std::pair<int, int>> weight_queue;
  auto chunk = [&](int st) { return st == st0 ? 0 : 1; };
  auto f = [&](int st) { return Action::F(st, next_f[chunk(st)]++); };
  auto b = [&](int st) { return Action::B(st, next_b[chunk(st)]++); };
  auto i = [&](int st) {
    weight_queue.emplace_back(st, next_b[chunk(st)]);
    return Action::I(st, next_b[chunk(st)]++);
  };
  auto fb = [&](int f_st, int b_st) {
    const int f_mb = next_f[chunk(f_st)]++;
    return Action::FB(f_st, f_mb, b_st, next_b[chunk(b_st)]++);
  };
  for (int k = 0; k < (P - r - 1) * 2; ++k) co_yield f(st0);  // 1: F0
  for (int k = 0; k < r + 1; ++k) {                           // 2: F0 F1
    co_yield f(st0);
    co_yield f(st1);
  }
  for (int k = 0; k < P - r - 1; ++k) {  // 3: I1 W1 F1
    co_yield i(st1);
    if (!weight_queue.empty()) {
      const std::pair<int, int> w = weight_queue.front();
      weight_queue.pop_front();
      co_yield Action::W(w.first, w.second);
    }
    co_yield f(st1);
  }
  for (int k = 0; k < m - 2 * P + r + 1; ++k) {  // 4: F0B1 F1B0 overlapped
    if (k == 0 && r == P - 1) {
      co_yield f(st0);
      co_yield b(st1);
    } else {
      co_yield fb(st0, st1);
    }
    co_yield fb(st1, st0);
  }
  for (int k = 0; k < P - r - 1; ++k) {  // 5: B1, F1B0
    co_yield b(st1);
    co_yield fb(st1, st0);
  }
  bool zb = false;  // 6: B1 B0, second half split
  // The choice is made in a function: a conditional expression directly in co_yield evaluated
  // both branches with g++ 12 (each advancing the microbatch counter).
  auto i_or_b = [&](int st) { return zb ? i(st) : b(st); };
  const int step6 = r + 1;
  for (int k = 0; k < step6; ++k) {
    if (k == step6 / 2 && r % 2 == 1) zb = true;
    co_yield i_or_b(st1);
    if (k == step6 / 2 && r % 2 == 0) zb = true;
    co_yield i_or_b(st0);
  }
  for (int k = 0; k < P - r - 1; ++k) {  // 7: W0 B0
    if (!weight_queue.empty()) {
      const std::pair<int, int> w = weight_queue.front();
      weight_queue.pop_front();
      co_yield Action::W(w.first, w.second);
    }
    co_yield i_or_b(st0);
  }
  for (int k = 0; k < r + 1 && !weight_queue.empty(); ++k) {  // 8: W0
    const std::pair<int, int> w = weight_queue.front();
    weight_queue.pop_front();
    co_yield Action::W(w.first, w.second);
  }
}

}  // namespace

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return INT64_MAX;
  return product;
}

int64_t ActionUpperBound(ScheduleKind kind, const ScheduleParams& p) {
  const ScheduleInfo& info = Info(kind);
  const int64_t vpp = p.vpp == 0 ? info.default_vpp : p.vpp;
  if (p.pp < 1 || vpp < 1 || p.microbatches < 1) return 0;
  return SaturatingMul(SaturatingMul(SaturatingMul(p.pp, vpp), p.microbatches),
                       info.split_backward ? 3 : 2);
}

StatusOr<Schedule> GenerateShape(ScheduleKind kind, const ScheduleParams& p, int64_t max_actions) {
  const ScheduleInfo& info = Info(kind);
  if (kind == ScheduleKind::kCustom)
    return InvalidArgument("a custom schedule is loaded, not generated");
  if (p.pp < 1) return InvalidArgument(fmt::format("‹pp› {}: must be at least 1", p.pp));
  if (p.microbatches < 1) {
    return InvalidArgument(
        fmt::format("-m {}: the number of microbatches must be at least 1", p.microbatches));
  }
  const int vpp = p.vpp == 0 ? info.default_vpp : p.vpp;
  if (vpp < 1) return InvalidArgument(fmt::format("‹vpp› {}: must be at least 1", vpp));
  // Bound the size before allocating anything: at most 3 actions per (stage, microbatch).
  const int64_t upper = ActionUpperBound(kind, p);
  if (upper > max_actions) {
    return InvalidArgument(fmt::format(
        "‹pp› {} ‹vpp› {} -m {}: up to {} actions exceed the limit of {}{}", p.pp, vpp,
        p.microbatches, upper == INT64_MAX ? std::string("more than 9e18") : std::to_string(upper),
        max_actions, max_actions == kMaxActions ? " (10 million, about 500 MB)" : ""));
  }
  auto need_one_chunk = [&]() -> Status {
    if (vpp != 1) {
      return InvalidArgument(
          fmt::format("‹vpp› {}: {} runs one chunk per rank (‹vpp› 1); "
                      "interleaved-1f1b and looped-bfs take more",
                      vpp, info.name));
    }
    return Status::Ok();
  };
  auto need_m_at_least_p = [&]() -> Status {
    if (p.microbatches < p.pp) {
      return InvalidArgument(fmt::format(
          "-m {}: {} needs at least as many microbatches as pipeline ranks (m >= pp = {}); "
          "with fewer, use gpipe",
          p.microbatches, info.name, p.pp));
    }
    return Status::Ok();
  };
  switch (kind) {
    case ScheduleKind::kGPipe: {
      RETURN_IF_ERROR(need_one_chunk());
      return Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::k1F1B: {
      RETURN_IF_ERROR(need_one_chunk());
      RETURN_IF_ERROR(need_m_at_least_p());
      return Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::kInterleaved1F1B: {
      if (vpp < 2) {
        return InvalidArgument(fmt::format(
            "‹vpp› {}: interleaved-1f1b needs at least 2 chunks per rank (with one it is 1f1b)",
            vpp));
      }
      int per_round = 0;
      RETURN_IF_ERROR(InterleavedRounds(p, vpp, &per_round));
      return Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::kLoopedBFS: {
      return Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::kZBH1: {
      RETURN_IF_ERROR(need_m_at_least_p());
      int per_round = 0;
      RETURN_IF_ERROR(InterleavedRounds(p, vpp, &per_round));
      return Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::kZBH2: {
      RETURN_IF_ERROR(need_one_chunk());
      RETURN_IF_ERROR(need_m_at_least_p());
      return Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
    }
    case ScheduleKind::kZBV:
    case ScheduleKind::kDualPipeV: {
      if (vpp != 2) {
        return InvalidArgument(
            fmt::format("‹vpp› {}: {} places exactly 2 chunks per rank in a V (rank r holds stages "
                        "r and 2P-1-r)",
                        vpp, info.name));
      }
      if (kind == ScheduleKind::kDualPipeV && p.microbatches < 2 * p.pp) {
        return InvalidArgument(
            fmt::format("-m {}: dualpipev needs at least 2*pp = {} microbatches (one per stage)",
                        p.microbatches, 2 * p.pp));
      }
      return Skeleton(kind, p.pp, 2, p.microbatches, Placement::kV);
    }
    case ScheduleKind::kCustom:
      break;
  }
  return Internal("unhandled schedule kind");
}

ActionStream RankActions(const Schedule& s, int r) {
  const int P = s.pp, v = s.vpp, m = s.microbatches;
  // The round size InterleavedRounds checked in GenerateShape.
  const int per_round = v == 1 ? m : m / std::max(1, m / P);
  switch (s.kind) {
    case ScheduleKind::kGPipe:
      return GPipeRank(r, m);
    case ScheduleKind::k1F1B:
      return OneFOneBRank(P, m, r);
    case ScheduleKind::kInterleaved1F1B:
      return InterleavedRank(P, v, m, r, per_round, 2, false);
    case ScheduleKind::kLoopedBFS:
      return LoopedBFSRank(P, v, m, r);
    case ScheduleKind::kZBH1:
      return InterleavedRank(P, v, m, r, per_round, 1, true);
    case ScheduleKind::kZBH2:
      return ZBH2Rank(P, m, r);
    case ScheduleKind::kZBV:
      return ZBVRank(P, m, r);
    case ScheduleKind::kDualPipeV:
      return DualPipeVRank(P, m, r);
    case ScheduleKind::kCustom:
      break;
  }
  return ActionStream();
}

StatusOr<Schedule> Generate(ScheduleKind kind, const ScheduleParams& p) {
  ASSIGN_OR_RETURN(Schedule s, GenerateShape(kind, p, kMaxActions));
  for (int r = 0; r < s.pp; ++r) {
    for (ActionStream a = RankActions(s, r); a.Next();) s.ranks[r].push_back(a.current());
  }
  return s;
}

}  // namespace infralens::schedule
