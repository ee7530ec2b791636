#include "request/count_format.h"

#include <fmt/format.h>

namespace infralens::request {

std::string SiCount(double v, int significant, std::string_view separator) {
  struct Prefix {
    double scale;
    const char* suffix;
  };
  for (const Prefix& p :
       {Prefix{1e12, "T"}, Prefix{1e9, "B"}, Prefix{1e6, "M"}, Prefix{1e3, "K"}}) {
    if (v >= p.scale)
      return fmt::format("{:.{}g}{}{}", v / p.scale, significant, separator, p.suffix);
  }
  return fmt::format("{:.{}g}", v, significant);
}

}  // namespace infralens::request
