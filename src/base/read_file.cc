#include "base/read_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>

namespace infralens {

namespace {

StatusOr<std::string> ReadLimited(std::istream& in, const std::string& path, size_t max_bytes) {
  std::string data;
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > max_bytes) {
      return InvalidArgument(fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
    }
  }
  if (in.bad()) return IoError(fmt::format("{}: read failed", path));
  return data;
}

}  // namespace

Status CheckRegularFile(const std::string& path) {
  struct stat st {};
  if (path == "/dev/stdin" || ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) {
    return Status::Ok();
  }
  const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "a device";
  return InvalidArgument(fmt::format("{}: is {}, not a regular file; give a file", path, kind));
}

StatusOr<std::string> ReadFileLimited(const std::string& path, size_t max_bytes) {
  if (path == "-") return ReadLimited(std::cin, "- (stdin)", max_bytes);
  RETURN_IF_ERROR(CheckRegularFile(path));
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(fmt::format("{}: cannot open (no such file or not readable)", path));
  return ReadLimited(f, path, max_bytes);
}

Status AsFileFailure(Status st) {
  if (st.code() != StatusCode::kInvalidArgument) return st;
  return FailedPrecondition(st.message());
}

}  // namespace infralens
