#include "base/read_file.h"

#include <fmt/format.h>

#include <fstream>

namespace infralens {

StatusOr<std::string> ReadFileLimited(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(fmt::format("{}: cannot open (no such file or not readable)", path));
  std::string data;
  char buf[65536];
  while (f) {
    f.read(buf, sizeof buf);
    data.append(buf, static_cast<size_t>(f.gcount()));
    if (data.size() > max_bytes) {
      return InvalidArgument(fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
    }
  }
  if (f.bad()) return IoError(fmt::format("{}: read failed", path));
  return data;
}

}  // namespace infralens
