// Generated schedules one action at a time: each rank's action list as a lazy stream, so that a
// schedule of tens of millions of actions can be simulated and printed without holding it.
// schedule::Generate fills its lists from these same streams, so both forms are one order.
#ifndef INFRALENS_SCHEDULE_RANK_ACTIONS_H_
#define INFRALENS_SCHEDULE_RANK_ACTIONS_H_

#include <coroutine>
#include <cstdint>
#include <exception>
#include <utility>

#include "base/status.h"
#include "schedule/action.h"
#include "schedule/schedule.h"

namespace infralens::schedule {

// A C++20 coroutine yielding one rank's actions in execution order. Move-only; its state (a
// few counters per chunk of the rank, and the W passes still pending) lives in one heap frame.
//   for (ActionStream a = RankActions(shape, r); a.Next();) use(a.current());
class ActionStream {
 public:
  struct promise_type {
    Action current;
    ActionStream get_return_object() {
      return ActionStream(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(const Action& a) noexcept {
      current = a;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };

  ActionStream() = default;
  explicit ActionStream(std::coroutine_handle<promise_type> h) : h_(h) {}
  ActionStream(ActionStream&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  ActionStream& operator=(ActionStream&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ActionStream(const ActionStream&) = delete;
  ActionStream& operator=(const ActionStream&) = delete;
  ~ActionStream() {
    if (h_) h_.destroy();
  }

  // Advances to the next action; false when the rank has no more (then current() is invalid).
  bool Next() {
    if (!h_ || h_.done()) return false;
    h_.resume();
    return !h_.done();
  }
  const Action& current() const { return h_.promise().current; }

 private:
  std::coroutine_handle<promise_type> h_;
};

// Checks kind and params as Generate does (the same messages) and returns the schedule without
// its actions: name, kind, pp, vpp, microbatches and placement set, `ranks` holding pp empty
// lists. Schedules of more than `max_actions` actions (ActionUpperBound) are refused.
StatusOr<Schedule> GenerateShape(ScheduleKind kind, const ScheduleParams& params,
                                 int64_t max_actions);

// Rank `rank`'s actions of a shape from GenerateShape, in the order Generate lists them. The
// stream copies what it needs from `shape`, which need not outlive it.
ActionStream RankActions(const Schedule& shape, int rank);

}  // namespace infralens::schedule

#endif  // INFRALENS_SCHEDULE_RANK_ACTIONS_H_
