#include "base/json_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace infralens {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (Unicode 15, Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::string JsonWriter::Escape(std::string_view s) {
  // JSON text is UTF-8 (RFC 8259 sec. 8.1): a byte that does not start a well-formed sequence
  // (from a URL parameter, a file name, a trace) becomes U+FFFD, so the document always parses.
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s.substr(i));
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
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

JsonWriter& JsonWriter::Open(char bracket, bool is_object) {
  BeforeValue();
  out_ += bracket;
  depth_.push_back({is_object, true});
  return *this;
}

JsonWriter& JsonWriter::Close(char bracket) {
  bool empty = depth_.back().empty;
  depth_.pop_back();
  if (!empty) Newline();
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::BeginObject() { return Open('{', true); }
JsonWriter& JsonWriter::EndObject() { return Close('}'); }
JsonWriter& JsonWriter::BeginArray() { return Open('[', false); }
JsonWriter& JsonWriter::EndArray() { return Close(']'); }

JsonWriter& JsonWriter::Field(std::string_view key, const std::vector<std::string>& values) {
  Key(key).BeginArray();
  for (const std::string& v : values) String(v);
  return EndArray();
}

JsonWriter& JsonWriter::Field(std::string_view key, const std::vector<int64_t>& values) {
  Key(key).BeginArray();
  for (int64_t v : values) Int(v);
  return EndArray();
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
