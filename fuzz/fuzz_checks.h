// What every parser's fuzz target checks of a refusal: its message is one line (errors are values
// of one line, docs/architecture.md). A message of several lines stops the fuzzer, as a crash.
#ifndef INFRALENS_FUZZ_FUZZ_CHECKS_H_
#define INFRALENS_FUZZ_FUZZ_CHECKS_H_

#include <string>

#include "base/status.h"

namespace infralens::fuzz {

// True when `r` holds a value; false when it holds an error of one line; traps otherwise.
template <typename T>
bool ValueOrOneLineError(const StatusOr<T>& r) {
  if (r.ok()) return true;
  if (r.status().message().find('\n') != std::string::npos) __builtin_trap();
  return false;
}

}  // namespace infralens::fuzz

#endif  // INFRALENS_FUZZ_FUZZ_CHECKS_H_
