#include "base/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "base/strings.h"

namespace infralens {

namespace {

struct Unit {
  const char* name;  // lower case
  double bytes;
};

constexpr Unit kUnits[] = {
    {"b", 1},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
    {"kib", 1024.0},
    {"mib", 1024.0 * 1024},
    {"gib", 1024.0 * 1024 * 1024},
    {"tib", 1024.0 * 1024 * 1024 * 1024},
};

constexpr const char* kAccepted =
    "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)";

}  // namespace

StatusOr<int64_t> ParseBytes(std::string_view text) {
  std::string_view t = Trim(text);
  size_t split = 0;
  // The unit starts at the first letter, except the 'e' of an exponent ("1e3KB").
  while (split < t.size()) {
    char c = t[split];
    bool exponent = (c == 'e' || c == 'E') && split > 0 && split + 1 < t.size() &&
                    (std::isdigit(static_cast<unsigned char>(t[split + 1])) ||
                     t[split + 1] == '-' || t[split + 1] == '+');
    if (std::isalpha(static_cast<unsigned char>(c)) && !exponent) break;
    ++split;
  }
  std::string_view number = Trim(t.substr(0, split));
  std::string unit = ToLower(Trim(t.substr(split)));
  auto value = ParseDouble(number);
  if (number.empty() || !value) {
    return InvalidArgument(
        fmt::format("size '{}': expected a number with an optional unit ({})", text, kAccepted));
  }
  double scale = 0;
  if (unit.empty()) {
    scale = 1;
  } else {
    for (const auto& u : kUnits) {
      if (unit == u.name) scale = u.bytes;
    }
  }
  if (scale == 0) {
    return InvalidArgument(fmt::format("size '{}': unknown unit '{}'; expected {}", text,
                                       Trim(t.substr(split)), kAccepted));
  }
  double bytes = *value * scale;
  if (!(bytes > 0))
    return InvalidArgument(fmt::format("size '{}': must be more than 0 bytes", text));
  if (bytes > static_cast<double>(kMaxParsedBytes)) {
    return InvalidArgument(
        fmt::format("size '{}': larger than the limit of 1 PiB ({} bytes)", text, kMaxParsedBytes));
  }
  double whole = std::round(bytes);
  // A decimal fraction times a power of ten is rarely exact in binary floating point
  // ("1.1 KB" = 1100.0000000000002), so accept anything within a millionth of a byte.
  if (std::fabs(bytes - whole) > 1e-6 * std::max(1.0, whole) || whole < 1) {
    return InvalidArgument(
        fmt::format("size '{}': is {:g} bytes, not a whole number of bytes", text, bytes));
  }
  return static_cast<int64_t>(whole);
}

std::string FormatBytes(int64_t bytes) {
  // Binary when the value in the largest binary unit is exact to 3 decimals (1.75 GiB, 1.5 KiB).
  static constexpr const char* kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  int64_t unit = 1;
  while (i < 5 && bytes / unit >= 1024) {
    unit *= 1024;
    ++i;
  }
  if (i > 0 && bytes <= (int64_t{1} << 52) && (bytes * 1000) % unit == 0) {
    return fmt::format("{:g} {}", static_cast<double>(bytes) / static_cast<double>(unit),
                       kBinary[i]);
  }
  static constexpr const char* kDecimal[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  i = 0;
  while (i < 5 && std::fabs(v) >= 1000) {
    v /= 1000;
    ++i;
  }
  return i == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.4g} {}", v, kDecimal[i]);
}

}  // namespace infralens
