#include "cli/progress.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "base/terminal.h"

namespace infralens::cli {

ProgressTicker::ProgressTicker(std::string label) {
  if (!ColorEnabled(stderr)) return;
  thread_ = std::jthread([label = std::move(label)](std::stop_token stop) {
    using namespace std::chrono_literals;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    const auto start = std::chrono::steady_clock::now();
    // Waits that end early when the work ends (the stop token is signalled).
    auto sleep = [&](std::chrono::milliseconds d) {
      return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
    };
    bool drew = false;
    for (auto wait = std::chrono::milliseconds(1000); sleep(wait); wait = 500ms) {
      const auto s = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - start);
      std::fprintf(stderr, "\r%s: working, %lld s ", label.c_str(),
                   static_cast<long long>(s.count()));
      std::fflush(stderr);
      drew = true;
    }
    if (drew) {
      std::fprintf(stderr, "\r%*s\r", static_cast<int>(label.size()) + 24, "");
      std::fflush(stderr);
    }
  });
}

ProgressTicker::~ProgressTicker() = default;  // std::jthread: request_stop, then join

}  // namespace infralens::cli
