// Schedule generators. Each one reproduces the action order of a published implementation, named
// in its comment, so that a schedule drawn here is the schedule that framework runs.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>

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

// GPipe (Huang et al. 2019; PyTorch ScheduleGPipe): every forward, then every backward in
// microbatch order.
void GenGPipe(Schedule& s) {
  for (int r = 0; r < s.pp; ++r) {
    for (int i = 0; i < s.microbatches; ++i) s.ranks[r].push_back(Action::F(r, i));
    for (int i = 0; i < s.microbatches; ++i) s.ranks[r].push_back(Action::B(r, i));
  }
}

// 1F1B (PipeDream-Flush, Narayanan et al. 2021; PyTorch Schedule1F1B): rank r warms up with
// P-1-r forwards, then alternates one forward and one backward, then drains the backwards.
void Gen1F1B(Schedule& s) {
  const int P = s.pp, m = s.microbatches;
  for (int r = 0; r < P; ++r) {
    auto& ops = s.ranks[r];
    int warmup = std::min(P - 1 - r, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) ops.push_back(Action::F(r, f));
    while (f < m) {
      ops.push_back(Action::F(r, f++));
      ops.push_back(Action::B(r, b++));
    }
    while (b < m) ops.push_back(Action::B(r, b++));
  }
}

// PyTorch's flexible interleaved ordering (schedules.py, ScheduleInterleaved1F1B and
// ScheduleInterleavedZeroBubble, both built on _get_1f1b_rank_ops): microbatches go through a
// rank's chunks in rounds of `microbatches_per_round`; with m a multiple of P this is exactly
// Megatron-LM's interleaved schedule (warm-up (v-1)*P + 2*(P-1-r)).
void GenInterleavedRank(Schedule& s, int r, int per_round, int warmup_factor, bool zero_bubble) {
  const int P = s.pp, v = s.vpp, m = s.microbatches;
  const int total = v * m;
  // _get_warmup_ops: the last rank warms up (v-1) rounds; each hop further adds warmup_factor.
  int warmup = std::min((v - 1) * per_round + warmup_factor * (P - 1 - r), total);
  int fwd_bwd = total - warmup;
  int cooldown = total - fwd_bwd;
  auto fwd_stage = [&](int step) { return ((step / per_round) % v) * P + r; };
  auto bwd_stage = [&](int step) { return (v - 1 - ((step - warmup) / per_round) % v) * P + r; };
  // Zero bubble (ZB1P): rank r runs its first r backward steps without W, then follows each
  // I with the oldest pending W (num_1f1b_microbatches = rank in PyTorch).
  const int num_1f1b = r;
  std::vector<int> f_mb(s.num_stages(), 0), b_mb(s.num_stages(), 0), w_mb(s.num_stages(), 0);
  std::vector<int> backward_steps;
  size_t weights_done = 0;
  auto& ops = s.ranks[r];
  auto push_w = [&]() {
    int st = bwd_stage(backward_steps[weights_done++]);
    ops.push_back(Action::W(st, w_mb[st]++));
  };
  auto push_b = [&](int step) {
    int st = bwd_stage(step);
    ops.push_back(zero_bubble ? Action::I(st, b_mb[st]++) : Action::B(st, b_mb[st]++));
    backward_steps.push_back(step);
    if (zero_bubble && step - warmup >= num_1f1b) push_w();
  };
  for (int step = 0; step < warmup + fwd_bwd + cooldown; ++step) {
    if (step < warmup) {
      int st = fwd_stage(step);
      ops.push_back(Action::F(st, f_mb[st]++));
    } else if (step < warmup + fwd_bwd) {
      int st = fwd_stage(step);
      ops.push_back(Action::F(st, f_mb[st]++));
      push_b(step);
    } else {
      push_b(step);
    }
  }
  while (zero_bubble && weights_done < backward_steps.size()) push_w();
}

Status InterleavedRounds(const ScheduleParams& p, int vpp, int* per_round) {
  if (vpp == 1) {  // one chunk: rounds do not change the order
    *per_round = p.microbatches;
    return Status::Ok();
  }
  // PyTorch: number_of_rounds = max(1, m // P); m must be a multiple of it.
  int rounds = std::max(1, p.microbatches / p.pp);
  if (p.microbatches % rounds != 0) {
    return InvalidArgument(fmt::format(
        "-m {}: interleaved schedules run microbatches in rounds (max(1, m/pp) = {} rounds for pp={}) and "
        "need m to be a multiple of the round count, as PyTorch does; try -m {} or -m {}",
        p.microbatches, rounds, p.pp, p.microbatches / rounds * rounds,
        (p.microbatches / rounds + 1) * rounds));
  }
  *per_round = p.microbatches / rounds;
  return Status::Ok();
}

// Looped BFS (Lamy-Poirier 2023, "Breadth-First Pipeline Parallelism"; PyTorch ScheduleLoopedBFS):
// all microbatches through the rank's first chunk, then the next; backwards in reverse.
void GenLoopedBFS(Schedule& s) {
  const int P = s.pp, v = s.vpp, m = s.microbatches;
  for (int r = 0; r < P; ++r) {
    for (int c = 0; c < v; ++c) {
      for (int i = 0; i < m; ++i) s.ranks[r].push_back(Action::F(c * P + r, i));
    }
    for (int c = v - 1; c >= 0; --c) {
      for (int i = m - 1; i >= 0; --i) s.ranks[r].push_back(Action::B(c * P + r, i));
    }
  }
}

// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Section 3.1 and Figure 3): more
// warm-up forwards and the W passes moved towards the tail, so that with F = I = W and m >= 2P
// no rank idles between its first and last action.
// Rank r warms up with 2(P-r)-1 forwards (what fits before its first input gradient can arrive),
// then repeats F, I, W with each W lagging its I by 2r microbatches, and drains the lagged W's
// last. With unit costs rank r then runs without a gap from r to r + 3m, and every rank holds
// up to 2P microbatches (twice 1F1B's peak on rank 0), as the paper states for ZB-H2.
void GenZBH2(Schedule& s) {
  const int P = s.pp, m = s.microbatches;
  for (int r = 0; r < P; ++r) {
    auto& ops = s.ranks[r];
    const int lag = 2 * r;
    int f = 0, w = 0;
    for (; f < std::min(2 * (P - r) - 1, m); ++f) ops.push_back(Action::F(r, f));
    for (int i = 0; i < m; ++i) {
      if (f < m) ops.push_back(Action::F(r, f++));
      ops.push_back(Action::I(r, i));
      if (i - lag >= 0) ops.push_back(Action::W(r, w++));
    }
    while (w < m) ops.push_back(Action::W(r, w++));
  }
}

// ZBV (Qi et al. 2024, Section 6; PyTorch ScheduleZBVZeroBubble._calculate_single_rank_operations).
void GenZBV(Schedule& s) {
  const int P = s.pp, m = s.microbatches;
  const int n_micro = std::max(2 * P - 1, m);
  const int S = s.num_stages();
  for (int r = 0; r < P; ++r) {
    std::vector<Action> ops;
    const int c0 = r, c1 = S - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    for (int k = 0; k < 2 * (P - r) - 1; ++k) ops.push_back(Action::F(c0, f0++));
    for (int k = 0; k < r; ++k) {
      ops.push_back(Action::F(c1, f1++));
      ops.push_back(Action::F(c0, f0++));
    }
    for (int k = 0; k < P - r; ++k) {
      ops.push_back(Action::F(c1, f1++));
      ops.push_back(Action::I(c1, b1));
      ops.push_back(Action::W(c1, b1++));
    }
    while (f1 < f0 || f0 < n_micro) {
      if (f0 < n_micro) ops.push_back(Action::F(c0, f0++));
      ops.push_back(Action::I(c0, b0));
      ops.push_back(Action::W(c0, b0++));
      ops.push_back(Action::F(c1, f1++));
      ops.push_back(Action::I(c1, b1));
      ops.push_back(Action::W(c1, b1++));
    }
    int w0 = b0, w1 = b1;
    for (int k = 0; k < r; ++k) {
      ops.push_back(Action::I(c0, b0++));
      ops.push_back(Action::I(c1, b1++));
    }
    for (int k = 0; k < P - r; ++k) {
      ops.push_back(Action::I(c0, b0++));
      ops.push_back(Action::W(c0, w0++));
    }
    while (w1 < b1) ops.push_back(Action::W(c1, w1++));
    while (w0 < b0) ops.push_back(Action::W(c0, w0++));
    // PyTorch pads to 2P-1 microbatches and then drops the padding ones.
    for (const Action& a : ops) {
      if (a.microbatch < m) s.ranks[r].push_back(a);
    }
  }
}

// DualPipeV (DeepSeek-V3 report, arXiv 2412.19437; PyTorch ScheduleDualPipeV, after
// deepseek-ai/DualPipe dualpipev.py): eight phases per rank; the main phase overlaps the forward
// of one chunk with the full backward of the other.
void GenDualPipeV(Schedule& s) {
  const int P = s.pp, m = s.microbatches;
  const int S = s.num_stages();
  for (int r = 0; r < P; ++r) {
    auto& ops = s.ranks[r];
    const int st0 = r, st1 = S - 1 - r;
    // Next microbatch per stage for F, for I/B (shared), and pending W's in I order.
    std::vector<int> next_f(S, 0), next_b(S, 0);
    std::deque<std::pair<int, int>> weight_queue;
    auto add_f = [&](int st) { ops.push_back(Action::F(st, next_f[st]++)); };
    auto add_b = [&](int st) { ops.push_back(Action::B(st, next_b[st]++)); };
    auto add_i = [&](int st) {
      ops.push_back(Action::I(st, next_b[st]));
      weight_queue.emplace_back(st, next_b[st]++);
    };
    auto add_w_if_pending = [&]() {
      if (weight_queue.empty()) return;
      auto [st, mb] = weight_queue.front();
      weight_queue.pop_front();
      ops.push_back(Action::W(st, mb));
    };
    auto add_fb = [&](int f_st, int b_st) {
      ops.push_back(Action::FB(f_st, next_f[f_st]++, b_st, next_b[b_st]++));
    };
    for (int k = 0; k < (P - r - 1) * 2; ++k) add_f(st0);      // 1: F0
    for (int k = 0; k < r + 1; ++k) add_f(st0), add_f(st1);    // 2: F0 F1
    for (int k = 0; k < P - r - 1; ++k) {                       // 3: I1 W1 F1
      add_i(st1);
      add_w_if_pending();
      add_f(st1);
    }
    for (int k = 0; k < m - 2 * P + r + 1; ++k) {              // 4: F0B1 F1B0 overlapped
      if (k == 0 && r == P - 1) {
        add_f(st0);
        add_b(st1);
      } else {
        add_fb(st0, st1);
      }
      add_fb(st1, st0);
    }
    for (int k = 0; k < P - r - 1; ++k) {                       // 5: B1, F1B0
      add_b(st1);
      add_fb(st1, st0);
    }
    bool zb = false;                                            // 6: B1 B0, second half split
    const int step6 = r + 1;
    for (int k = 0; k < step6; ++k) {
      if (k == step6 / 2 && r % 2 == 1) zb = true;
      zb ? add_i(st1) : add_b(st1);
      if (k == step6 / 2 && r % 2 == 0) zb = true;
      zb ? add_i(st0) : add_b(st0);
    }
    for (int k = 0; k < P - r - 1; ++k) {                       // 7: W0 B0
      add_w_if_pending();
      zb ? add_i(st0) : add_b(st0);
    }
    for (int k = 0; k < r + 1; ++k) add_w_if_pending();         // 8: W0
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
  return SaturatingMul(SaturatingMul(SaturatingMul(p.pp, vpp), p.microbatches), info.split_backward ? 3 : 2);
}

StatusOr<Schedule> Generate(ScheduleKind kind, const ScheduleParams& p) {
  const ScheduleInfo& info = Info(kind);
  if (kind == ScheduleKind::kCustom) return InvalidArgument("a custom schedule is loaded, not generated");
  if (p.pp < 1) return InvalidArgument(fmt::format("‹pp› {}: must be at least 1", p.pp));
  if (p.microbatches < 1) {
    return InvalidArgument(fmt::format("-m {}: the number of microbatches must be at least 1", p.microbatches));
  }
  const int vpp = p.vpp == 0 ? info.default_vpp : p.vpp;
  if (vpp < 1) return InvalidArgument(fmt::format("‹vpp› {}: must be at least 1", vpp));
  // Bound the size before allocating anything: at most 3 actions per (stage, microbatch).
  const int64_t upper = ActionUpperBound(kind, p);
  if (upper > kMaxActions) {
    return InvalidArgument(fmt::format(
        "‹pp› {} ‹vpp› {} -m {}: up to {} actions exceed the limit of {} (10 million, about 500 "
        "MB)",
        p.pp, vpp, p.microbatches,
        upper == INT64_MAX ? std::string("more than 9e18") : std::to_string(upper), kMaxActions));
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
          "with fewer, use gpipe", p.microbatches, info.name, p.pp));
    }
    return Status::Ok();
  };
  switch (kind) {
    case ScheduleKind::kGPipe: {
      RETURN_IF_ERROR(need_one_chunk());
      Schedule s = Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
      GenGPipe(s);
      return s;
    }
    case ScheduleKind::k1F1B: {
      RETURN_IF_ERROR(need_one_chunk());
      RETURN_IF_ERROR(need_m_at_least_p());
      Schedule s = Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
      Gen1F1B(s);
      return s;
    }
    case ScheduleKind::kInterleaved1F1B: {
      if (vpp < 2) {
        return InvalidArgument(fmt::format(
            "‹vpp› {}: interleaved-1f1b needs at least 2 chunks per rank (with one it is 1f1b)",
            vpp));
      }
      int per_round = 0;
      RETURN_IF_ERROR(InterleavedRounds(p, vpp, &per_round));
      Schedule s = Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
      for (int r = 0; r < p.pp; ++r) GenInterleavedRank(s, r, per_round, 2, false);
      return s;
    }
    case ScheduleKind::kLoopedBFS: {
      Schedule s = Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
      GenLoopedBFS(s);
      return s;
    }
    case ScheduleKind::kZBH1: {
      RETURN_IF_ERROR(need_m_at_least_p());
      int per_round = 0;
      RETURN_IF_ERROR(InterleavedRounds(p, vpp, &per_round));
      Schedule s = Skeleton(kind, p.pp, vpp, p.microbatches, Placement::kLoop);
      for (int r = 0; r < p.pp; ++r) GenInterleavedRank(s, r, per_round, 1, true);
      return s;
    }
    case ScheduleKind::kZBH2: {
      RETURN_IF_ERROR(need_one_chunk());
      RETURN_IF_ERROR(need_m_at_least_p());
      Schedule s = Skeleton(kind, p.pp, 1, p.microbatches, Placement::kLoop);
      GenZBH2(s);
      return s;
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
        return InvalidArgument(fmt::format(
            "-m {}: dualpipev needs at least 2*pp = {} microbatches (one per stage)", p.microbatches, 2 * p.pp));
      }
      Schedule s = Skeleton(kind, p.pp, 2, p.microbatches, Placement::kV);
      if (kind == ScheduleKind::kZBV) {
        GenZBV(s);
      } else {
        GenDualPipeV(s);
      }
      return s;
    }
    case ScheduleKind::kCustom:
      break;
  }
  return Internal("unhandled schedule kind");
}

}  // namespace infralens::schedule
