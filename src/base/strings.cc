#include "base/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace infralens {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

namespace {

// `s` as a T when all of it is one as std::from_chars reads it, white space around it and a leading
// '+' aside.
template <typename T>
std::optional<T> FromCharsWhole(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  T v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> ParseInt(std::string_view s) { return FromCharsWhole<int64_t>(s); }

std::optional<double> ParseDouble(std::string_view s) {
  const std::optional<double> v = FromCharsWhole<double>(s);
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

int EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: Levenshtein plus adjacent transpositions ("gpiep").
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string lower = ToLower(word);
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    int d = EditDistance(lower, ToLower(c));
    // A prefix ("sched" for "schedule") is a plausible abbreviation too.
    if (!lower.empty() && ToLower(c).rfind(lower, 0) == 0) d = std::min(d, 1);
    if (d < best_d) best_d = d, best = c;
  }
  // Allow about one typo per three letters, at least one.
  int allowed = std::max<int>(1, static_cast<int>(word.size()) / 3);
  return best_d <= allowed ? best : "";
}

std::string AlnumKey(std::string_view s) {
  std::string key;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

bool KeyNames(std::string_view key, std::string_view name,
              const std::vector<std::string>& aliases) {
  if (key.empty()) return false;
  if (AlnumKey(name) == key) return true;
  return std::any_of(aliases.begin(), aliases.end(),
                     [&](const std::string& a) { return AlnumKey(a) == key; });
}

std::string DidYouMean(std::string_view key, const std::vector<std::string>& names) {
  std::vector<std::string> keys;
  for (const std::string& n : names) keys.push_back(AlnumKey(n));
  std::string hint;
  const std::string close = ClosestMatch(key, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!close.empty() && keys[i] == close) hint = names[i];
  }
  return hint.empty() ? "" : "; did you mean '" + hint + "'?";
}

std::string Excerpt(std::string_view s, size_t max_bytes) {
  std::string out;
  for (char c : s.substr(0, max_bytes)) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f ? '?' : c);
  }
  if (s.size() > max_bytes) out += "...";
  return out;
}

std::string BoundedMessage(std::string_view m, size_t max_bytes) {
  if (m.size() <= max_bytes) return std::string(m);
  size_t cut = max_bytes > 64 ? max_bytes - 64 : max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(m[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes in all)", m.substr(0, cut), m.size());
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace infralens
