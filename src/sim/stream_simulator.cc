#include "sim/stream_simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "schedule/rank_actions.h"

namespace infralens::sim {

using schedule::Action;
using schedule::ActionType;

namespace {

// Completion times of one event kind (0: forward done, 1: input gradient done) on one stage, by
// microbatch: a ring (a power of two) over the span [lo, top) of the times produced and still
// awaited. A slot is cleared once read by every action that waits for it, and the span shrinks
// from either end, so microbatches produced in reverse order (looped BFS's backwards) cost no more
// than in order.
class EventRing {
 public:
  // The time of microbatch `mb`, or -1 when not produced yet (or already read by all).
  double Time(int64_t mb) const {
    if (held_ == 0 || mb < lo_ || mb >= top_) return -1.0;
    return time_[Slot(mb)];
  }
  // Records `mb` done at `t`, to be read by `readers` actions (> 0). False when it is held already.
  bool Produce(int64_t mb, double t, int readers) {
    if (held_ == 0) {
      lo_ = mb;
      top_ = mb + 1;
    } else {
      const int64_t lo = std::min(lo_, mb), top = std::max(top_, mb + 1);
      if (top - lo > Cap()) Grow(top - lo);
      lo_ = lo;
      top_ = top;
    }
    if (time_.empty()) Grow(1);
    const size_t k = Slot(mb);
    if (time_[k] >= 0) return false;
    time_[k] = t;
    readers_[k] = static_cast<uint8_t>(readers);
    ++held_;
    return true;
  }
  // One reader of `mb` (held) has run.
  void Read(int64_t mb) {
    const size_t k = Slot(mb);
    if (--readers_[k] > 0) return;
    time_[k] = -1.0;
    if (--held_ == 0) {
      // Nothing held: give a large ring's memory back (a stage whose microbatches are all done).
      if (time_.size() > 1024) time_ = {}, readers_ = {};
      return;
    }
    while (time_[Slot(lo_)] < 0) ++lo_;
    while (time_[Slot(top_ - 1)] < 0) --top_;
  }

 private:
  int64_t Cap() const { return static_cast<int64_t>(time_.size()); }
  size_t Slot(int64_t mb) const { return static_cast<size_t>(mb) & (time_.size() - 1); }
  void Grow(int64_t need) {
    size_t cap = std::max<size_t>(16, time_.size() * 2);
    while (static_cast<int64_t>(cap) < need) cap *= 2;
    std::vector<double> t(cap, -1.0);
    std::vector<uint8_t> n(cap, 0);
    if (held_ > 0) {
      for (int64_t mb = lo_; mb < top_; ++mb) {
        t[static_cast<size_t>(mb) & (cap - 1)] = time_[Slot(mb)];
        n[static_cast<size_t>(mb) & (cap - 1)] = readers_[Slot(mb)];
      }
    }
    time_ = std::move(t);
    readers_ = std::move(n);
  }

  int64_t lo_ = 0, top_ = 0;      // the held span, when held_ > 0
  int64_t held_ = 0;              // produced and not yet read by all
  std::vector<double> time_;      // -1: not held
  std::vector<uint8_t> readers_;  // actions still to read it
};

// A dependency of an action: event `kind` of (stage, mb), and whether it crosses ranks.
struct StreamDep {
  int kind = 0, stage = 0, mb = 0;
  bool cross_rank = false;
};

}  // namespace

StatusOr<SimResult> SimulateGenerated(const schedule::Schedule& shape, const Costs& costs) {
  if (shape.kind == schedule::ScheduleKind::kCustom) {
    return InvalidArgument("a loaded schedule is simulated from its lists (sim::Simulate)");
  }
  const int P = shape.pp, S = shape.num_stages();
  RETURN_IF_ERROR(ValidateCosts(costs, S));
  std::vector<EventRing> rings(static_cast<size_t>(2) * S);
  auto ring = [&](int kind, int stage) -> EventRing& {
    return rings[static_cast<size_t>(kind) * S + stage];
  };
  // Ranks waiting on an event of (kind, stage): a list per (kind, stage); a rank waits on one.
  std::vector<int32_t> wait_head(rings.size(), -1), wait_next(P, -1);
  std::vector<StreamDep> waits_for(P);

  std::vector<schedule::ActionStream> streams(P);
  std::vector<bool> has_action(P, false);
  std::vector<int64_t> done(P, 0);
  std::vector<double> busy(P, 0.0), first_start(P, 0.0), clock(P, 0.0);
  std::vector<int> live(P, 0), peak(P, 0);
  for (int r = 0; r < P; ++r) {
    streams[r] = schedule::RankActions(shape, r);
    has_action[r] = streams[r].Next();
  }
  // Ranks in turn, each for at most kBurst actions: any order gives the same times (an action's
  // start depends only on its rank's clock and its dependencies), but a rank left to run to its
  // first wait (as Simulate does) can produce every forward of GPipe before the next rank reads
  // one, and the rings would grow to m entries on every stage.
  constexpr int64_t kBurst = 256;
  std::deque<int32_t> runnable;
  for (int r = 0; r < P; ++r) runnable.push_back(r);

  // The rules of simulator.h, as AddDepsFor applies them there.
  auto deps_of = [&](int r, ActionType type, int stage, int mb, StreamDep* out, int& n) {
    switch (type) {
      case ActionType::kForward:
        if (stage > 0) out[n++] = {0, stage - 1, mb, shape.stage_to_rank[stage - 1] != r};
        break;
      case ActionType::kBackward:
      case ActionType::kBackwardInput:
        if (stage < S - 1) {
          out[n++] = {1, stage + 1, mb, shape.stage_to_rank[stage + 1] != r};
        } else {
          out[n++] = {0, stage, mb, false};
        }
        break;
      case ActionType::kBackwardWeight:
        out[n++] = {1, stage, mb, false};
        break;
      case ActionType::kOverlapFB:
        break;
    }
  };
  // Produces an event and wakes the ranks waiting for it. Readers: a forward is read by the next
  // stage's forward (the last stage's by its own backward); an input gradient by the previous
  // stage's backward, and by its W when the backward is split (I).
  Status failure = Status::Ok();
  auto produce = [&](int kind, int stage, int mb, double t, bool split) {
    const int readers = kind == 0 ? 1 : (stage > 0 ? 1 : 0) + (split ? 1 : 0);
    if (readers == 0) return;
    if (!ring(kind, stage).Produce(mb, t, readers) && failure.ok()) {
      failure = InvalidArgument(
          fmt::format("{}{}{} is produced twice", stage, kind == 0 ? "F" : "B/I", mb));
    }
    int32_t* link = &wait_head[static_cast<size_t>(kind) * S + stage];
    while (*link != -1) {
      const int32_t w = *link;
      if (waits_for[w].mb == mb) {
        *link = wait_next[w];
        wait_next[w] = -1;
        runnable.push_back(w);
      } else {
        link = &wait_next[w];
      }
    }
  };

  while (!runnable.empty() && failure.ok()) {
    const int r = runnable.front();
    runnable.pop_front();
    for (int64_t burst = 0; has_action[r]; ++burst) {
      if (burst == kBurst) {
        runnable.push_back(r);
        break;
      }
      const Action& a = streams[r].current();
      StreamDep deps[2];
      int n = 0;
      if (a.type == ActionType::kOverlapFB) {
        deps_of(r, ActionType::kForward, a.stage, a.microbatch, deps, n);
        deps_of(r, ActionType::kBackward, a.b_stage, a.b_microbatch, deps, n);
      } else {
        deps_of(r, a.type, a.stage, a.microbatch, deps, n);
      }
      double start = clock[r];
      int blocked = -1;
      for (int k = 0; k < n; ++k) {
        const double t = ring(deps[k].kind, deps[k].stage).Time(deps[k].mb);
        if (t < 0) {
          blocked = k;
          break;
        }
        start = std::max(start, t + (deps[k].cross_rank ? costs.p2p_ms : 0.0));
      }
      if (blocked >= 0) {
        waits_for[r] = deps[blocked];
        const size_t list = static_cast<size_t>(deps[blocked].kind) * S + deps[blocked].stage;
        wait_next[r] = wait_head[list];
        wait_head[list] = r;
        break;
      }
      for (int k = 0; k < n; ++k) ring(deps[k].kind, deps[k].stage).Read(deps[k].mb);
      const double end = start + costs.DurationMs(a);
      if (done[r] == 0) first_start[r] = start;
      busy[r] += end - start;
      clock[r] = end;
      ++done[r];
      // Activations held, as PeakActivations counts them.
      switch (a.type) {
        case ActionType::kForward:
          peak[r] = std::max(peak[r], ++live[r]);
          produce(0, a.stage, a.microbatch, end, false);
          break;
        case ActionType::kBackward:
          --live[r];
          produce(1, a.stage, a.microbatch, end, false);
          break;
        case ActionType::kBackwardInput:
          produce(1, a.stage, a.microbatch, end, true);
          break;
        case ActionType::kBackwardWeight:
          --live[r];
          break;
        case ActionType::kOverlapFB:
          peak[r] = std::max(peak[r], live[r] + 1);
          produce(0, a.stage, a.microbatch, end, false);
          produce(1, a.b_stage, a.b_microbatch, end, false);
          break;
      }
      has_action[r] = streams[r].Next();
    }
  }
  RETURN_IF_ERROR(failure);
  for (int r = 0; r < P; ++r) {
    if (!has_action[r]) continue;
    const StreamDep& d = waits_for[r];
    return InvalidArgument(fmt::format("deadlock: rank {} action #{} {} waits for {}{}{} (rank {})",
                                       r, done[r], schedule::ToString(streams[r].current()),
                                       d.stage, d.kind == 0 ? "F" : "B/I", d.mb,
                                       shape.stage_to_rank[d.stage]));
  }

  // Metrics, as Simulate computes them.
  SimResult res;
  res.ranks.resize(P);
  for (int r = 0; r < P; ++r) {
    RankMetrics& rm = res.ranks[r];
    rm.rank = r;
    rm.actions = done[r];
    rm.peak_activations = peak[r];
    if (done[r] > 0) {
      rm.first_start_ms = first_start[r];
      rm.last_end_ms = clock[r];
      rm.busy_ms = busy[r];
    }
    res.makespan_ms = std::max(res.makespan_ms, rm.last_end_ms);
  }
  FillSummaryFractions(res);
  return res;
}

}  // namespace infralens::sim
