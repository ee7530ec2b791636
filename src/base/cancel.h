// A cancellation point for long computations: a deadline and a flag that another thread may
// raise (the server's I/O thread raises it when the client that asked has gone). Long loops ask
// Cancelled() between steps of their work and stop with what they have; asking costs a relaxed
// atomic load and, with a deadline, one steady_clock read.
#ifndef INFRALENS_BASE_CANCEL_H_
#define INFRALENS_BASE_CANCEL_H_

#include <atomic>
#include <chrono>

namespace infralens {

class CancelToken {
 public:
  using Clock = std::chrono::steady_clock;

  // No deadline: only Cancel() stops the work.
  CancelToken() = default;
  explicit CancelToken(Clock::time_point deadline) : deadline_(deadline) {}
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Thread-safe; the work sees it at its next Cancelled().
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  // Cancel() was called (whatever the deadline).
  bool CancelRequested() const { return cancelled_.load(std::memory_order_relaxed); }
  // Cancel() was called or the deadline has passed.
  bool Cancelled() const { return CancelRequested() || Clock::now() >= deadline_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  std::atomic<bool> cancelled_{false};
  const Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace infralens

#endif  // INFRALENS_BASE_CANCEL_H_
