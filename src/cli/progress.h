// Progress for work that runs over a second: a line on stderr ("infralens scenarios: working,
// 4 s"), redrawn twice a second and cleared when the work ends. Only when stderr is a terminal and
// NO_COLOR is unset (base/terminal.h, ColorEnabled), so pipes, logs and tests never see it; stdout
// is untouched.
#ifndef INFRALENS_CLI_PROGRESS_H_
#define INFRALENS_CLI_PROGRESS_H_

#include <string>
#include <thread>

namespace infralens::cli {

class ProgressTicker {
 public:
  // Starts counting; nothing is drawn before a second has passed.
  explicit ProgressTicker(std::string label);
  // Stops, and clears the line if one was drawn.
  ~ProgressTicker();
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  std::jthread thread_;
};

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_PROGRESS_H_
