#include "server/params.h"

#include <fmt/format.h>

#include <cmath>

#include "base/strings.h"

namespace infralens::server {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      c = ' ';
    }
    if (c == '\0') return std::nullopt;
    out += c;
  }
  return out;
}

std::optional<ParamList> ParseForm(std::string_view text, const ParamLimits& limits,
                                   ParamError* error) {
  ParamList out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t amp = text.find('&', pos);
    std::string_view piece =
        text.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    pos = amp == std::string_view::npos ? text.size() + 1 : amp + 1;
    if (piece.empty()) continue;
    size_t eq = piece.find('=');
    std::string_view raw_name = piece.substr(0, eq);
    std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1);
    auto name = PercentDecode(raw_name, true);
    if (!name || name->empty()) {
      *error = {fmt::format("malformed parameter name '{}' (bad %-escape or empty)",
                            Excerpt(raw_name, 40)),
                ""};
      return std::nullopt;
    }
    if (name->size() > limits.max_name_bytes) {
      *error = {fmt::format("parameter name '{}' is longer than {} bytes", Excerpt(*name, 40),
                            limits.max_name_bytes),
                ""};
      return std::nullopt;
    }
    auto value = PercentDecode(raw_value, true);
    if (!value) {
      *error = {
          fmt::format("{}: malformed value (a %-escape must be two hex digits, and %00 is refused)",
                      *name),
          *name};
      return std::nullopt;
    }
    if (value->size() > limits.max_value_bytes) {
      *error = {fmt::format("{}: value of {} bytes exceeds the limit of {} bytes", *name,
                            value->size(), limits.max_value_bytes),
                *name};
      return std::nullopt;
    }
    if (out.size() >= limits.max_params) {
      *error = {fmt::format("more than {} parameters", limits.max_params), ""};
      return std::nullopt;
    }
    out.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

ParamReader::ParamReader(const ParamList& given, const std::vector<ParamSpec>& specs) {
  for (const auto& [name, value] : given) {
    const ParamSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == name) spec = &s;
      for (const auto& a : s.aliases) {
        if (a == name) spec = &s;
      }
      if (spec != nullptr) break;
    }
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const auto& s : specs) names.push_back(s.name);
      std::string hint = ClosestMatch(name, names);
      Fail(name, fmt::format("unknown parameter '{}'{}; allowed: {}", Excerpt(name, 40),
                             hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                             names.empty() ? "none" : Join(names, ", ")));
      continue;
    }
    if (Find(spec->name) != nullptr) {
      Fail(spec->name, fmt::format("{}: given more than once", spec->name));
      continue;
    }
    values_.emplace_back(spec->name, value);
  }
}

const std::string* ParamReader::Find(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return &v;
  }
  return nullptr;
}

void ParamReader::Fail(std::string parameter, std::string message) {
  if (!error_) error_ = ParamError{std::move(message), std::move(parameter)};
}

std::string ParamReader::Text(std::string_view name, std::string_view def) const {
  const std::string* v = Find(name);
  return v ? *v : std::string(def);
}

int ParamReader::Int(std::string_view name, int def, int min, int max) {
  const std::string* v = Find(name);
  if (!v) return def;
  auto n = ParseInt(*v);
  if (!n || *n < min || *n > max) {
    Fail(std::string(name),
         fmt::format("{}={}: expected an integer from {} to {}", name, Excerpt(*v, 40), min, max));
    return def;
  }
  return static_cast<int>(*n);
}

double ParamReader::Number(std::string_view name, double def, double min, double max) {
  auto v = OptionalNumber(name, min, max);
  return v ? *v : def;
}

std::optional<double> ParamReader::OptionalNumber(std::string_view name, double min, double max) {
  const std::string* v = Find(name);
  if (!v) return std::nullopt;
  auto n = ParseDouble(*v);
  if (!n || *n < min || *n > max) {
    Fail(std::string(name), fmt::format("{}={}: expected a number from {:g} to {:g}", name,
                                        Excerpt(*v, 40), min, max));
    return std::nullopt;
  }
  return *n;
}

std::string ParamReader::Choice(std::string_view name, std::string_view def,
                                const std::vector<std::string_view>& allowed) {
  const std::string* v = Find(name);
  if (!v) return std::string(def);
  std::string lower = ToLower(*v);
  for (auto a : allowed) {
    if (lower == a) return lower;
  }
  std::vector<std::string> names(allowed.begin(), allowed.end());
  Fail(std::string(name),
       fmt::format("{}={}: expected one of {}", name, Excerpt(*v, 40), Join(names, ", ")));
  return std::string(def);
}

bool ParamReader::Flag(std::string_view name) {
  const std::string* v = Find(name);
  if (!v) return false;
  std::string lower = ToLower(*v);
  if (lower.empty() || lower == "1" || lower == "true" || lower == "yes" || lower == "on")
    return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  Fail(std::string(name),
       fmt::format("{}={}: expected 1 or 0 (true or false)", name, Excerpt(*v, 40)));
  return false;
}

}  // namespace infralens::server
