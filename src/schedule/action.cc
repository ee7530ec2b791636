#include "schedule/action.h"

#include <fmt/format.h>

#include <cctype>
#include <iterator>

#include "base/strings.h"

namespace infralens::schedule {

std::string_view ActionTypeLetter(ActionType type) {
  switch (type) {
    case ActionType::kForward:
      return "F";
    case ActionType::kBackward:
      return "B";
    case ActionType::kBackwardInput:
      return "I";
    case ActionType::kBackwardWeight:
      return "W";
    case ActionType::kOverlapFB:
      return "FB";
  }
  return "?";
}

std::string ToString(const Action& a) {
  std::string out;
  AppendAction(out, a);
  return out;
}

void AppendAction(std::string& out, const Action& a) {
  if (a.type == ActionType::kOverlapFB) {
    fmt::format_to(std::back_inserter(out), "({}F{};{}B{})OVERLAP_F_B", a.stage, a.microbatch,
                   a.b_stage, a.b_microbatch);
    return;
  }
  // fmt::format_int writes the digits without parsing a format string: this is the CSV writer's
  // inner loop.
  const fmt::format_int stage(a.stage), mb(a.microbatch);
  out.append(stage.data(), stage.size());
  out.append(ActionTypeLetter(a.type));
  out.append(mb.data(), mb.size());
}

namespace {

// Microbatch and stage indices are bounded well below INT32_MAX so that sizes derived from them
// (stages x microbatches) cannot overflow; the schedule limits are far lower still.
constexpr int64_t kMaxIndex = 100'000'000;

StatusOr<Action> ParseSimple(std::string_view text, std::string_view whole) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("action '{}': {}; expected forms like 2F0, 1I3, 0W2, 3B1", whole, why));
  };
  if (i == 0) return bad("missing stage index");
  auto stage = ParseInt(text.substr(0, i));
  if (!stage || *stage > kMaxIndex) return bad("stage index out of range");
  if (i >= text.size()) return bad("missing computation type");
  char type_char = text[i];
  std::string_view rest = text.substr(i + 1);
  ActionType type;
  switch (type_char) {
    case 'F':
      type = ActionType::kForward;
      break;
    case 'B':
      type = ActionType::kBackward;
      break;
    case 'I':
      type = ActionType::kBackwardInput;
      break;
    case 'W':
      type = ActionType::kBackwardWeight;
      break;
    default: {
      std::string_view tail = text.substr(i);
      for (std::string_view comm :
           {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD"}) {
        if (tail.substr(0, comm.size()) == comm) {
          return bad(
              fmt::format("{} is a communication/sharding action; only the compute-only form "
                          "(F, B, I, W, OVERLAP_F_B) is read",
                          comm));
        }
      }
      return bad(fmt::format("unknown computation type '{}'", type_char));
    }
  }
  if (rest.empty()) return bad("missing microbatch index");
  for (char c : rest) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return bad("microbatch index is not a number");
  }
  auto mb = ParseInt(rest);
  if (!mb || *mb > kMaxIndex) return bad("microbatch index out of range");
  return Action{type, static_cast<int32_t>(*stage), static_cast<int32_t>(*mb)};
}

}  // namespace

StatusOr<Action> ParseAction(std::string_view text) {
  std::string_view t = Trim(text);
  constexpr std::string_view kOverlap = ")OVERLAP_F_B";
  if (!t.empty() && t.front() == '(') {
    size_t close = t.find(')');
    if (close == std::string_view::npos || t.substr(close) != kOverlap) {
      return InvalidArgument(
          fmt::format("action '{}': a parenthesised action must be an overlapped pair like "
                      "(0F3;7B1)OVERLAP_F_B",
                      t));
    }
    auto parts = Split(t.substr(1, close - 1), ';');
    if (parts.size() != 2) {
      return InvalidArgument(
          fmt::format("action '{}': an overlapped pair holds exactly one F and one B", t));
    }
    ASSIGN_OR_RETURN(Action f, ParseSimple(Trim(parts[0]), t));
    ASSIGN_OR_RETURN(Action b, ParseSimple(Trim(parts[1]), t));
    if (f.type != ActionType::kForward || b.type != ActionType::kBackward) {
      return InvalidArgument(
          fmt::format("action '{}': an overlapped pair is a forward then a full backward, like "
                      "(0F3;7B1)OVERLAP_F_B",
                      t));
    }
    return Action::FB(f.stage, f.microbatch, b.stage, b.microbatch);
  }
  return ParseSimple(t, t);
}

}  // namespace infralens::schedule
