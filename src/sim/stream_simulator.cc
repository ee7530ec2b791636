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

// One run of a generated schedule, event by event: each rank's action stream, clock and metrics,
// the rings of events between stages, and the ranks waiting on them.
class GeneratedScheduleRun {
 public:
  GeneratedScheduleRun(const schedule::Schedule& shape, const Costs& costs)
      : shape_(shape),
        costs_(costs),
        ranks_(shape.pp),
        stages_(shape.num_stages()),
        rings_(static_cast<size_t>(2) * stages_),
        wait_head_(rings_.size(), -1),
        wait_next_(ranks_, -1),
        waits_for_(ranks_),
        streams_(ranks_),
        has_action_(ranks_, false),
        done_(ranks_, 0),
        busy_(ranks_, 0.0),
        first_start_(ranks_, 0.0),
        clock_(ranks_, 0.0),
        live_(ranks_, 0),
        peak_(ranks_, 0) {
    for (int r = 0; r < ranks_; ++r) {
      streams_[r] = schedule::RankActions(shape, r);
      has_action_[r] = streams_[r].Next();
    }
    for (int r = 0; r < ranks_; ++r) runnable_.push_back(r);
  }

  // Runs the ranks in turn until none can run; a rank still holding actions then is deadlocked.
  Status Run() {
    while (!runnable_.empty() && failure_.ok()) {
      const int r = runnable_.front();
      runnable_.pop_front();
      RunBurst(r);
    }
    RETURN_IF_ERROR(failure_);
    for (int r = 0; r < ranks_; ++r) {
      if (!has_action_[r]) continue;
      const StreamDep& d = waits_for_[r];
      return InvalidArgument(
          fmt::format("deadlock: rank {} action #{} {} waits for {}{}{} (rank {})", r, done_[r],
                      schedule::ToString(streams_[r].current()), d.stage, d.kind == 0 ? "F" : "B/I",
                      d.mb, shape_.stage_to_rank[d.stage]));
    }
    return Status::Ok();
  }

  // Metrics, as Simulate computes them.
  SimResult Metrics() const {
    SimResult res;
    res.ranks.resize(ranks_);
    for (int r = 0; r < ranks_; ++r) {
      RankMetrics& rm = res.ranks[r];
      rm.rank = r;
      rm.actions = done_[r];
      rm.peak_activations = peak_[r];
      if (done_[r] > 0) {
        rm.first_start_ms = first_start_[r];
        rm.last_end_ms = clock_[r];
        rm.busy_ms = busy_[r];
      }
      res.makespan_ms = std::max(res.makespan_ms, rm.last_end_ms);
    }
    FillSummaryFractions(res);
    return res;
  }

 private:
  // Ranks in turn, each for at most kBurst actions: any order gives the same times (an action's
  // start depends only on its rank's clock and its dependencies), but a rank left to run to its
  // first wait (as Simulate does) can produce every forward of GPipe before the next rank reads
  // one, and the rings would grow to m entries on every stage.
  static constexpr int64_t kBurst = 256;

  EventRing& Ring(int kind, int stage) {
    return rings_[static_cast<size_t>(kind) * stages_ + stage];
  }

  // The rules of simulator.h, as AddDepsFor applies them there.
  void DepsOf(int r, ActionType type, int stage, int mb, StreamDep* out, int& n) const {
    switch (type) {
      case ActionType::kForward:
        if (stage > 0) out[n++] = {0, stage - 1, mb, shape_.stage_to_rank[stage - 1] != r};
        break;
      case ActionType::kBackward:
      case ActionType::kBackwardInput:
        if (stage < stages_ - 1) {
          out[n++] = {1, stage + 1, mb, shape_.stage_to_rank[stage + 1] != r};
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
  }

  // Runs rank r's actions, at most kBurst of them, until it waits on an event or has no more.
  void RunBurst(int r) {
    for (int64_t burst = 0; has_action_[r]; ++burst) {
      if (burst == kBurst) {
        runnable_.push_back(r);
        break;
      }
      const Action& a = streams_[r].current();
      StreamDep deps[2];
      int n = 0;
      if (a.type == ActionType::kOverlapFB) {
        DepsOf(r, ActionType::kForward, a.stage, a.microbatch, deps, n);
        DepsOf(r, ActionType::kBackward, a.b_stage, a.b_microbatch, deps, n);
      } else {
        DepsOf(r, a.type, a.stage, a.microbatch, deps, n);
      }
      double start = clock_[r];
      int blocked = -1;
      for (int k = 0; k < n; ++k) {
        const double t = Ring(deps[k].kind, deps[k].stage).Time(deps[k].mb);
        if (t < 0) {
          blocked = k;
          break;
        }
        start = std::max(start, t + (deps[k].cross_rank ? costs_.p2p_ms : 0.0));
      }
      if (blocked >= 0) {
        Wait(r, deps[blocked]);
        break;
      }
      for (int k = 0; k < n; ++k) Ring(deps[k].kind, deps[k].stage).Read(deps[k].mb);
      Finish(r, a, start);
      has_action_[r] = streams_[r].Next();
    }
  }

  // Rank r waits on event d: it joins the list of (kind, stage); a rank waits on one.
  void Wait(int r, const StreamDep& d) {
    waits_for_[r] = d;
    const size_t list = static_cast<size_t>(d.kind) * stages_ + d.stage;
    wait_next_[r] = wait_head_[list];
    wait_head_[list] = r;
  }

  // Rank r ran action a from `start`: its clock and metrics, and the events it produces.
  void Finish(int r, const Action& a, double start) {
    const double end = start + costs_.DurationMs(a);
    if (done_[r] == 0) first_start_[r] = start;
    busy_[r] += end - start;
    clock_[r] = end;
    ++done_[r];
    // Activations held, as PeakActivations counts them.
    switch (a.type) {
      case ActionType::kForward:
        peak_[r] = std::max(peak_[r], ++live_[r]);
        Produce(0, a.stage, a.microbatch, end, false);
        break;
      case ActionType::kBackward:
        --live_[r];
        Produce(1, a.stage, a.microbatch, end, false);
        break;
      case ActionType::kBackwardInput:
        Produce(1, a.stage, a.microbatch, end, true);
        break;
      case ActionType::kBackwardWeight:
        --live_[r];
        break;
      case ActionType::kOverlapFB:
        peak_[r] = std::max(peak_[r], live_[r] + 1);
        Produce(0, a.stage, a.microbatch, end, false);
        Produce(1, a.b_stage, a.b_microbatch, end, false);
        break;
    }
  }

  // Produces an event and wakes the ranks waiting for it. Readers: a forward is read by the next
  // stage's forward (the last stage's by its own backward); an input gradient by the previous
  // stage's backward, and by its W when the backward is split (I).
  void Produce(int kind, int stage, int mb, double t, bool split) {
    const int readers = kind == 0 ? 1 : (stage > 0 ? 1 : 0) + (split ? 1 : 0);
    if (readers == 0) return;
    if (!Ring(kind, stage).Produce(mb, t, readers) && failure_.ok()) {
      failure_ = InvalidArgument(
          fmt::format("{}{}{} is produced twice", stage, kind == 0 ? "F" : "B/I", mb));
    }
    int32_t* link = &wait_head_[static_cast<size_t>(kind) * stages_ + stage];
    while (*link != -1) {
      const int32_t w = *link;
      if (waits_for_[w].mb == mb) {
        *link = wait_next_[w];
        wait_next_[w] = -1;
        runnable_.push_back(w);
      } else {
        link = &wait_next_[w];
      }
    }
  }

  const schedule::Schedule& shape_;
  const Costs& costs_;
  const int ranks_, stages_;
  std::vector<EventRing> rings_;
  // Ranks waiting on an event of (kind, stage): a list per (kind, stage); a rank waits on one.
  std::vector<int32_t> wait_head_, wait_next_;
  std::vector<StreamDep> waits_for_;
  std::vector<schedule::ActionStream> streams_;
  std::vector<bool> has_action_;
  std::vector<int64_t> done_;
  std::vector<double> busy_, first_start_, clock_;
  std::vector<int> live_, peak_;
  std::deque<int32_t> runnable_;
  Status failure_ = Status::Ok();
};

}  // namespace

StatusOr<SimResult> SimulateGenerated(const schedule::Schedule& shape, const Costs& costs) {
  if (shape.kind == schedule::ScheduleKind::kCustom) {
    return InvalidArgument("a loaded schedule is simulated from its lists (sim::Simulate)");
  }
  RETURN_IF_ERROR(ValidateCosts(costs, shape.num_stages()));
  GeneratedScheduleRun run(shape, costs);
  RETURN_IF_ERROR(run.Run());
  return run.Metrics();
}

}  // namespace infralens::sim
