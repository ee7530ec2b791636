#include "base/status.h"

#include "base/strings.h"

namespace infralens {

namespace {

// U+2039 and U+203A in UTF-8: the quotes around a field's name.
constexpr std::string_view kOpen = "\xE2\x80\xB9", kClose = "\xE2\x80\xBA";

// An option's field is lower case (micro_batch); a positional argument's is upper case (NAME).
bool IsFieldName(std::string_view name) {
  if (name.empty() || name.size() > 40) return false;
  const bool upper = name[0] >= 'A' && name[0] <= 'Z';
  for (char c : name) {
    const bool letter = upper ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z');
    if (!(letter || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool IsPositionalField(std::string_view name) { return name[0] >= 'A' && name[0] <= 'Z'; }

// A positional's API parameter: its name in lower case (NAME: name).
std::string FieldParameter(std::string_view name) { return ToLower(name); }

// Calls `on_text` and `on_field` for the pieces of `text` in order. Quotes around anything but a
// field name (a user's value may hold them) are text.
template <typename OnText, typename OnField>
void ForEachPiece(std::string_view text, OnText on_text, OnField on_field) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos) break;
    const size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) break;
    const std::string_view name = text.substr(open + kOpen.size(), close - open - kOpen.size());
    if (!IsFieldName(name)) {
      on_text(text.substr(at, open + kOpen.size() - at));
      at = open + kOpen.size();
      continue;
    }
    on_text(text.substr(at, open - at));
    on_field(name);
    at = close + kClose.size();
  }
  on_text(text.substr(at));
}

}  // namespace

std::string SpellFields(std::string_view text, FieldSpelling spelling) {
  std::string out;
  out.reserve(text.size() + 8);
  ForEachPiece(
      text, [&](std::string_view t) { out += t; },
      [&](std::string_view name) {
        if (spelling == FieldSpelling::kParameter) {
          out += FieldParameter(name);
          return;
        }
        if (IsPositionalField(name)) {  // as the CLI's help shows it
          out += name;
          return;
        }
        out += "--";
        for (char c : name) out += c == '_' ? '-' : c;
      });
  return out;
}

Status::Status(StatusCode code, std::string message) : code_(code) {
  if (message.find(kOpen) == std::string::npos) {
    message_ = std::move(message);
    return;
  }
  ForEachPiece(
      message, [](std::string_view) {},
      [&](std::string_view name) {
        if (field_.empty()) field_ = FieldParameter(name);
      });
  message_ = SpellFields(message, FieldSpelling::kFlag);
  if (!field_.empty()) fields_ = std::move(message);
}

std::string Status::MessageFor(FieldSpelling spelling) const {
  if (fields_.empty() || spelling == FieldSpelling::kFlag) return message_;
  return SpellFields(fields_, spelling);
}

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
