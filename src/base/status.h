// Status and StatusOr: errors are values (LevelDB style). Only main() turns a Status into an exit
// code: kInvalidArgument is a usage error (exit 2); every other code is a failure (exit 1).
#ifndef INFRALENS_BASE_STATUS_H_
#define INFRALENS_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace infralens {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad flag, value or input file content: the user can fix the request
  kNotFound,            // a named file, preset or key does not exist
  kIoError,             // reading or writing failed
  kResourceExhausted,   // a request exceeds a size limit
  kFailedPrecondition,  // the request is valid but cannot be satisfied (e.g. does not fit)
  kInternal,            // a bug
};

// How a message spells the user's inputs it names. The engine names an input as a field,
// ‹name› (its API parameter's name in angle quotes: "‹micro_batch› 0: must be 1..4096"), never as
// one front end spells it; each front end renders the fields its own way. A positional argument's
// field is its name in capitals as the CLI's help shows it (‹NAME›: NAME in the CLI, the
// parameter name in the API, server/command_api.h).
enum class FieldSpelling {
  kFlag,       // the CLI's flags: --micro-batch
  kParameter,  // the HTTP API's parameters: micro_batch
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  // `message` may name fields (see FieldSpelling).
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The message with its fields spelled as the CLI's flags.
  const std::string& message() const { return message_; }
  // The message with its fields spelled `spelling`'s way.
  std::string MessageFor(FieldSpelling spelling) const;
  // The first field the message names, the input it is about, spelled as a parameter
  // ("micro_batch", "name" for ‹NAME›); "" when none.
  const std::string& field() const { return field_; }
  // The same message and fields under another code (an engine's NotFound that is the user's
  // input to fix: kInvalidArgument). `code` is not kOk.
  Status WithCode(StatusCode code) const {
    Status s = *this;
    s.code_ = code;
    return s;
  }
  // Exit code for the CLI: 0 ok, 2 usage error, 1 anything else.
  int ExitCode() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;  // fields spelled as flags
  std::string fields_;   // the message as written, with its fields; empty when it names none
  std::string field_;
};

// `text` with every field (‹name›) spelled `spelling`'s way.
std::string SpellFields(std::string_view text, FieldSpelling spelling);

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit like absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace infralens

#define INFRALENS_CONCAT_INNER(a, b) a##b
#define INFRALENS_CONCAT(a, b) INFRALENS_CONCAT_INNER(a, b)

// Returns early with the status when it is not ok.
#define RETURN_IF_ERROR(expr)         \
  do {                                \
    ::infralens::Status _st = (expr); \
    if (!_st.ok()) return _st;        \
  } while (0)

// ASSIGN_OR_RETURN(auto x, F()) declares x from a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(INFRALENS_CONCAT(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#endif  // INFRALENS_BASE_STATUS_H_
