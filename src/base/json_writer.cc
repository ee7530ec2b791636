#include "base/json_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace infralens {

std::string JsonWriter::Escape(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void JsonWriter::Newline() {
  if (indent_ == 0) return;
  out_ += '\n';
  out_.append(depth_.size() * indent_, ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_.empty()) return;
  if (!depth_.back().empty) out_ += ',';
  depth_.back().empty = false;
  Newline();
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ += '{';
  depth_.push_back({true, true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  bool empty = depth_.back().empty;
  depth_.pop_back();
  if (!empty) Newline();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ += '[';
  depth_.push_back({false, true});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  bool empty = depth_.back().empty;
  depth_.pop_back();
  if (!empty) Newline();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  out_ += Escape(key);
  out_ += indent_ ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  out_ += Escape(value);
  return *this;
}

JsonWriter& JsonWriter::Number(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_ += "null";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    out_ += fmt::format("{}", static_cast<int64_t>(value));
  } else {
    out_ += fmt::format("{}", value);
  }
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  out_ += fmt::format("{}", value);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

}  // namespace infralens
