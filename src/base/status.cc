#include "base/status.h"

namespace infralens {

int Status::ExitCode() const {
  switch (code_) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
      return 2;
    default:
      return 1;
  }
}

}  // namespace infralens
