// HTTP/1.1 request framing for `infralens serve` (RFC 9112), written for hostile input: the request
// head is parsed from a bounded buffer, every line and the field count are capped, and the framing
// rules that request smuggling and amplification exploit are refused outright. Pure functions over
// bytes, with no sockets: the transport (http_server.cc) feeds them, the tests and the fuzz target
// (fuzz/http_head_fuzz.cc) call them directly.
#ifndef INFRALENS_SERVER_HTTP_PARSER_H_
#define INFRALENS_SERVER_HTTP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infralens::server {

// RFC 9110 sec. 5.6.2: whether `c` is a tchar (what header names and tokens are made of).
bool IsHttpTokenChar(char c);

// Bounds on a request head. nginx's defaults are 8 KiB lines (large_client_header_buffers) and
// Apache's 100 fields (LimitRequestFields); the total keeps a head at a few pages of memory.
struct HeadLimits {
  size_t max_line_bytes = 8 * 1024;   // request line (414 beyond) or one field line (431 beyond)
  size_t max_fields = 100;            // 431 beyond
  size_t max_head_bytes = 64 * 1024;  // the whole head, CRLF CRLF included (431 beyond)
};

struct RequestHead {
  std::string method;  // "GET", as sent (case-sensitive, RFC 9110 sec. 9.1)
  // Origin-form "/path?query", still %-encoded; "*" for OPTIONS. An absolute-form target
  // ("http://host:port/path?query", RFC 9112 sec. 3.2.2) arrives here in origin form, and its
  // authority replaces the Host field's value, as that section requires of a server.
  std::string target;
  int minor_version = 1;  // HTTP/1.<minor>: 0 or 1
  // Every field in order: names lower-cased, values without surrounding whitespace.
  std::vector<std::pair<std::string, std::string>> fields;

  // The value of the first field `name` (lower-case), or "" when absent.
  std::string Get(std::string_view name) const;
  size_t Count(std::string_view name) const;
};

// What the head says about the body and the connection, after FrameRequest accepted it.
struct Framing {
  uint64_t content_length = 0;  // bytes of body when !chunked
  bool chunked = false;
  bool keep_alive = true;        // HTTP/1.1 without "Connection: close"; HTTP/1.0 never
  bool expect_continue = false;  // "Expect: 100-continue"
  bool accepts_gzip = false;     // Accept-Encoding lists gzip with a non-zero q
};

// A refusal: the status to answer with and a one-line reason. The connection is closed after it.
struct HttpError {
  int status = 400;
  std::string message;
};

// Parsing a head from the start of `data` (bytes received so far on a connection):
//  - complete: `head` is filled and `consumed` bytes (through the blank line) belong to it;
//  - incomplete: need more bytes; no limit is exceeded by what is there;
//  - error: 400 (malformed), 414 (request line too long), 431 (field line too long, too many
//    fields, head too large), 501 (method not a token we serve), 505 (HTTP version).
// Leading empty lines before the request line are skipped (RFC 9112 sec. 2.2), at most 4.
struct HeadParse {
  enum class State { kIncomplete, kComplete, kError } state = State::kIncomplete;
  size_t consumed = 0;
  RequestHead head;
  HttpError error;
  std::string authority;  // an absolute-form target's "host:port"; "" for origin-form
};
HeadParse ParseRequestHead(std::string_view data, const HeadLimits& limits = {});

// The framing rules, checked on a complete head (RFC 9112 sec. 6, RFC 9110):
//  - HTTP/1.1 without Host, or more than one Host, Origin or Content-Length field: 400;
//  - Content-Length together with Transfer-Encoding: 400 (RFC 9112 sec. 6.1 allows a server to
//    reject it; it is the request-smuggling vector); a Content-Length that is not 1-18 digits: 400;
//  - a Transfer-Encoding other than exactly "chunked": 501; Transfer-Encoding on HTTP/1.0: 400;
//  - a Content-Encoding other than "identity": 415 (request bodies are taken as sent, never
//    inflated: a small compressed body cannot become a large one);
//  - an Expect other than 100-continue: 417.
// Range is never looked at: every answer is the whole representation (200).
std::optional<HttpError> FrameRequest(const RequestHead& head, Framing* framing);

// The host name and port of a Host value ("127.0.0.1:8080", "[::1]:80", "localhost"); port -1 when
// absent, -2 when present but not a number 0-65535.
std::pair<std::string, int> SplitHostPort(std::string_view host);

// An incremental decoder of a chunked body (RFC 9112 sec. 7.1). Feed it bytes as they arrive; it
// appends the data to `out` and stops at the first byte after the last chunk's trailer section.
// Bounds: chunk-size lines (with extensions) of at most 1 KiB, sizes of at most 15 hex digits, a
// decoded body of at most `max_body` bytes (413 beyond, before the chunk is stored), trailer lines
// and counts as in HeadLimits. Per request: chunk extensions (what follows the size on its line)
// of at most kMaxChunkExtensionBytes together (400 beyond: an extension flood costs the reader
// about 1 KiB of parsing per decoded byte, the attack of Node.js's CVE-2024-22019, which Node
// bounds the same way), and a trailer section of at most HeadLimits::max_head_bytes (431).
inline constexpr size_t kMaxChunkExtensionBytes = 16 * 1024;

class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(uint64_t max_body, HeadLimits limits = {})
      : max_body_(max_body), limits_(limits) {}

  enum class Result { kNeedMore, kDone, kError };
  // Consumes a prefix of `in` (all of it unless kDone); `*consumed` says how much.
  Result Feed(std::string_view in, std::string& out, size_t* consumed);
  const HttpError& error() const { return error_; }
  uint64_t decoded() const { return decoded_; }

 private:
  enum class Phase { kSize, kData, kDataEnd, kTrailer, kDone };
  Result Fail(int status, std::string message);

  const uint64_t max_body_;
  const HeadLimits limits_;
  Phase phase_ = Phase::kSize;
  std::string line_;        // the size or trailer line being read
  uint64_t remaining_ = 0;  // bytes left in the current chunk
  uint64_t decoded_ = 0;
  size_t trailer_fields_ = 0;
  size_t trailer_bytes_ = 0;
  size_t extension_bytes_ = 0;
  HttpError error_;
};

// The reason phrase for a status code ("Not Found"); "Unknown" for codes we never send.
const char* ReasonPhrase(int status);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_HTTP_PARSER_H_
