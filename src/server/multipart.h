// multipart/form-data and multipart/mixed bodies (RFC 7578, RFC 2046), read and written without
// an HTTP library: how several trace files arrive in one POST (/api/trace/analyze) and how the
// generated example set is sent back (/api/trace/synth). The parser is bounded (parts, header
// bytes, name lengths), copies nothing (parts are views into the body) and reports the first
// problem as one line naming the part. fuzz/multipart_fuzz.cc runs it on arbitrary input.
#ifndef INFRALENS_SERVER_MULTIPART_H_
#define INFRALENS_SERVER_MULTIPART_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens::server {

struct MultipartLimits {
  size_t max_parts = 1024;
  size_t max_header_bytes = 8 << 10;  // one part's header block
  size_t max_name_bytes = 255;        // the name and filename parameters
};

struct MultipartPart {
  std::string name;           // Content-Disposition name="..." ("" when absent)
  std::string filename;       // Content-Disposition filename="..." as sent ("" when absent)
  bool has_filename = false;  // a filename parameter was present (possibly empty)
  std::string content_type;   // the part's Content-Type ("" when absent)
  std::string_view body;      // a view into the request body
};

// True for "multipart/form-data" and "multipart/mixed" (any parameters, any case).
bool IsMultipartContentType(std::string_view content_type);

// The boundary parameter of a multipart Content-Type (quoted or not), checked against RFC 2046
// (1 to 70 characters from its set). InvalidArgument naming what is wrong.
StatusOr<std::string> MultipartBoundary(std::string_view content_type);

// Splits `body` into its parts. The preamble before the first delimiter and the epilogue after
// the closing one are ignored, as RFC 2046 says; lines end with CRLF. Errors: no delimiter, a part
// whose headers never end, a header line without ':', a malformed Content-Disposition, a body
// that ends before the closing delimiter (a truncated upload), too many parts.
StatusOr<std::vector<MultipartPart>> ParseMultipart(std::string_view body,
                                                    std::string_view content_type,
                                                    const MultipartLimits& limits = {});

// Writes files as multipart/form-data: each part `name`, `filename` and `content_type`.
struct MultipartFile {
  std::string name, filename, content_type;
  std::string_view content;
};
// The body, and in `content_type` the header value with the boundary (one that occurs in no
// part's content).
std::string WriteMultipart(const std::vector<MultipartFile>& files, std::string* content_type);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_MULTIPART_H_
