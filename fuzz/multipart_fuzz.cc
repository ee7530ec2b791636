// libFuzzer target for the multipart parser of trace uploads (server/multipart.h). Input: the
// Content-Type header up to the first newline, then the body. Any input must give parts or one
// error, never a crash, a hang or an allocation beyond the input; every part must lie inside the
// body; and what the writer makes of the parts must parse back to the same parts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens::server;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view type = in.substr(0, nl);
  const std::string_view body =
      nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  MultipartLimits limits;
  limits.max_parts = 16;
  limits.max_header_bytes = 512;
  auto parts = ParseMultipart(body, type, limits);
  if (!parts.ok()) {
    if (parts.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (parts->empty() || parts->size() > limits.max_parts) __builtin_trap();
  std::vector<MultipartFile> files;
  for (const MultipartPart& p : *parts) {
    if (p.body.data() < body.data() || p.body.data() + p.body.size() > body.data() + body.size())
      __builtin_trap();
    if (p.filename.size() > limits.max_name_bytes || p.name.size() > limits.max_name_bytes)
      __builtin_trap();
    files.push_back({p.name, p.filename, p.content_type, p.body});
  }
  std::string written_type;
  const std::string written = WriteMultipart(files, &written_type);
  // The writer quotes the names, escaping '"' and '\\': a name read unquoted can come back up to
  // twice as long, so the header block it writes may exceed the small limit above (a name of
  // backslashes did). Read it back with room for both names quoted at their largest, beside a
  // content type as long as the original header block.
  MultipartLimits again_limits = limits;
  again_limits.max_header_bytes = limits.max_header_bytes + 4 * limits.max_name_bytes + 128;
  auto again = ParseMultipart(written, written_type, again_limits);
  if (!again.ok() || again->size() != parts->size()) __builtin_trap();
  for (size_t k = 0; k < parts->size(); ++k) {
    const MultipartPart &a = (*parts)[k], &b = (*again)[k];
    if (a.body != b.body || a.name != b.name || a.filename != b.filename ||
        a.content_type != b.content_type)
      __builtin_trap();
  }
  return 0;
}
