#include "server/http_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/strings.h"

namespace infralens::server {

namespace {

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsHttpTokenChar(c); });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A field value may hold visible ASCII, spaces, tabs and obs-text (0x80-0xFF); never other
// control characters (RFC 9110 sec. 5.5): a NUL or a bare CR is how header injection starts.
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || c >= 0x20 ? c != 0x7f : false;
  });
}

HeadParse HeadError(int status, std::string message) {
  HeadParse p;
  p.state = HeadParse::State::kError;
  p.error = {status, std::move(message)};
  return p;
}

// Shown in a message: at most 40 bytes, printable ASCII only.
std::string AsciiExcerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (s.size() > 40) out += "...";
  return out;
}

// "http://..." or "https://..." in any case (RFC 9112 sec. 3.2.2).
bool IsAbsoluteForm(std::string_view target) {
  const std::string lower = ToLower(target.substr(0, 8));
  return lower.rfind("http://", 0) == 0 || lower.rfind("https://", 0) == 0;
}

bool ParseDecimal(std::string_view s, uint64_t* out) {
  // 18 digits stay below 2^63: no overflow to check.
  if (s.empty() || s.size() > 18) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

HeadParse HeadError(const HttpError& e) { return HeadError(e.status, e.message); }

HeadParse LineTooLong(bool request_line, size_t max_line_bytes) {
  return request_line
             ? HeadError(414, fmt::format("request line longer than {} bytes", max_line_bytes))
             : HeadError(431,
                         fmt::format("header field line longer than {} bytes", max_line_bytes));
}

HeadParse HeadTooLarge(size_t max_head_bytes) {
  return HeadError(431, fmt::format("request head larger than {} bytes", max_head_bytes));
}

// The request target: an absolute form's path (its authority in *authority) or the origin form
// ("/path?query", or "*") as sent, in *path.
std::optional<HttpError> ParseRequestTarget(std::string_view target, std::string* path,
                                            std::string* authority) {
  if (IsAbsoluteForm(target)) {
    // RFC 9112 sec. 3.2.2: "http://" authority [path-abempty] ["?" query]. The scheme is
    // case-insensitive (RFC 3986 sec. 3.1); an empty path means "/".
    const std::string_view rest = target.substr(target.find("://") + 3);
    const size_t end = rest.find_first_of("/?");
    const std::string_view host = rest.substr(0, end);
    const std::string_view abs_path = end == std::string_view::npos ? "" : rest.substr(end);
    if (host.empty() || host.find('@') != std::string_view::npos) {
      return HttpError{400, fmt::format("request target '{}' has no usable authority (host:port)",
                                        AsciiExcerpt(target))};
    }
    path->clear();
    if (abs_path.empty() || abs_path.front() == '?') path->push_back('/');
    path->append(abs_path);
    *authority = std::string(host);
  } else if (target.empty() || (target.front() != '/' && target != "*")) {
    return HttpError{400, fmt::format("request target '{}' is not a path starting with '/'",
                                      AsciiExcerpt(target))};
  } else {
    *path = std::string(target);
  }
  // Only visible ASCII in a target (RFC 3986; anything else is %-encoded by clients).
  if (!std::all_of(target.begin(), target.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u > 0x20 && u < 0x7f;
      })) {
    return HttpError{400, "request target holds a byte that is not visible ASCII"};
  }
  return std::nullopt;
}

// "HTTP/1.1" or "HTTP/1.0"; any other well-formed version is 505.
std::optional<HttpError> ParseHttpVersion(std::string_view version, int* minor_version) {
  if (version == "HTTP/1.1") {
    *minor_version = 1;
  } else if (version == "HTTP/1.0") {
    *minor_version = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
             std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
             std::isdigit(static_cast<unsigned char>(version[7]))) {
    return HttpError{505,
                     fmt::format("HTTP version {} is not supported (HTTP/1.0 and HTTP/1.1 are)",
                                 AsciiExcerpt(version))};
  } else {
    return HttpError{400, "malformed HTTP version in the request line"};
  }
  return std::nullopt;
}

// "METHOD target HTTP/1.x", with exactly two spaces.
std::optional<HttpError> ParseRequestLine(std::string_view line, HeadParse* out) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return HttpError{400, "malformed request line: expected 'METHOD /target HTTP/1.1'"};
  }
  const std::string_view method = line.substr(0, sp1);
  if (!IsToken(method)) return HttpError{400, "malformed request method"};
  auto error =
      ParseRequestTarget(line.substr(sp1 + 1, sp2 - sp1 - 1), &out->head.target, &out->authority);
  if (!error) error = ParseHttpVersion(line.substr(sp2 + 1), &out->head.minor_version);
  if (!error) out->head.method = std::string(method);
  return error;
}

// "name: value", the name a token (kept lower-case), the value without its surrounding blanks.
std::optional<HttpError> ParseFieldLine(std::string_view line, size_t max_fields,
                                        RequestHead* head) {
  if (line.front() == ' ' || line.front() == '\t') {
    return HttpError{400, "obsolete line folding in a header field"};  // RFC 9112 sec. 5.2
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return HttpError{400, "header field line without ':'"};
  const std::string_view name = line.substr(0, colon);
  if (!IsToken(name)) {
    return HttpError{400, fmt::format("malformed header field name '{}'", AsciiExcerpt(name))};
  }
  const std::string_view value = TrimOws(line.substr(colon + 1));
  if (!IsFieldValue(value)) {
    return HttpError{400,
                     fmt::format("header field {} holds a control character", AsciiExcerpt(name))};
  }
  if (head->fields.size() >= max_fields) {
    return HttpError{431, fmt::format("more than {} header fields", max_fields)};
  }
  head->fields.emplace_back(ToLower(name), std::string(value));
  return std::nullopt;
}

// The empty line ends the head: an absolute form's authority names the host.
HeadParse CompleteHead(HeadParse out, size_t consumed) {
  if (!out.authority.empty()) {
    // The target's authority, not the Host field, names the server asked for (RFC 9112 sec.
    // 3.2.2); a missing Host is still refused by FrameRequest on HTTP/1.1 (sec. 3.2).
    for (auto& [name, value] : out.head.fields) {
      if (name == "host") value = ToLower(out.authority);
    }
    if (out.head.minor_version == 0 && out.head.Count("host") == 0) {
      out.head.fields.emplace_back("host", ToLower(out.authority));
    }
  }
  out.state = HeadParse::State::kComplete;
  out.consumed = consumed;
  return out;
}

}  // namespace

bool IsHttpTokenChar(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

std::string RequestHead::Get(std::string_view name) const {
  for (const auto& [k, v] : fields) {
    if (k == name) return v;
  }
  return "";
}

size_t RequestHead::Count(std::string_view name) const {
  return static_cast<size_t>(std::count_if(fields.begin(), fields.end(),
                                           [&](const auto& kv) { return kv.first == name; }));
}

HeadParse ParseRequestHead(std::string_view data, const HeadLimits& limits) {
  size_t pos = 0;
  for (int skipped = 0; skipped < 4 && data.substr(pos, 2) == "\r\n"; ++skipped) pos += 2;
  HeadParse out;
  bool request_line = true;
  for (;;) {
    const size_t eol = data.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      // Incomplete: refuse as soon as the line or the head is already over its bound, so that a
      // client cannot make us buffer more than the limits before it hears the answer.
      if (data.size() - pos > limits.max_line_bytes) {
        return LineTooLong(request_line, limits.max_line_bytes);
      }
      if (data.size() > limits.max_head_bytes) return HeadTooLarge(limits.max_head_bytes);
      return out;  // kIncomplete
    }
    const std::string_view line = data.substr(pos, eol - pos);
    pos = eol + 2;
    if (pos > limits.max_head_bytes) return HeadTooLarge(limits.max_head_bytes);
    if (line.size() > limits.max_line_bytes) {
      return LineTooLong(request_line, limits.max_line_bytes);
    }
    if (request_line) {
      request_line = false;
      if (auto error = ParseRequestLine(line, &out)) return HeadError(*error);
    } else if (line.empty()) {
      return CompleteHead(std::move(out), pos);
    } else if (auto error = ParseFieldLine(line, limits.max_fields, &out.head)) {
      return HeadError(*error);
    }
  }
}

std::optional<HttpError> FrameRequest(const RequestHead& head, Framing* f) {
  *f = Framing{};
  const bool http11 = head.minor_version == 1;
  for (const char* once : {"host", "origin", "content-length", "transfer-encoding"}) {
    if (head.Count(once) > 1) {
      return HttpError{400, fmt::format("more than one {} header field", once)};
    }
  }
  if (http11 && head.Count("host") == 0) {
    return HttpError{400, "HTTP/1.1 request without a Host header field"};
  }
  if (head.Count("host") == 1) {
    const auto [name, port] = SplitHostPort(head.Get("host"));
    if (name.empty() || port == -2) {
      return HttpError{400, fmt::format("malformed Host '{}'", AsciiExcerpt(head.Get("host")))};
    }
  }
  const std::string encoding = ToLower(head.Get("content-encoding"));
  if (head.Count("content-encoding") > 0 && encoding != "identity") {
    return HttpError{415, fmt::format("Content-Encoding '{}' is not accepted: send request bodies "
                                      "uncompressed",
                                      AsciiExcerpt(encoding))};
  }
  const bool has_length = head.Count("content-length") == 1;
  const bool has_te = head.Count("transfer-encoding") == 1;
  if (has_length && has_te) {
    return HttpError{400, "both Content-Length and Transfer-Encoding: send one of them"};
  }
  if (has_te) {
    if (!http11) return HttpError{400, "Transfer-Encoding in an HTTP/1.0 request"};
    if (ToLower(head.Get("transfer-encoding")) != "chunked") {
      return HttpError{501, fmt::format("Transfer-Encoding '{}' is not supported (only chunked)",
                                        AsciiExcerpt(head.Get("transfer-encoding")))};
    }
    f->chunked = true;
  }
  if (has_length && !ParseDecimal(head.Get("content-length"), &f->content_length)) {
    return HttpError{400, fmt::format("Content-Length '{}' is not a number of bytes",
                                      AsciiExcerpt(head.Get("content-length")))};
  }
  if (head.Count("expect") > 0) {
    if (ToLower(head.Get("expect")) != "100-continue") {
      return HttpError{417, fmt::format("Expect '{}' is not supported (only 100-continue)",
                                        AsciiExcerpt(head.Get("expect")))};
    }
    f->expect_continue = http11;
  }
  // Connection: a comma-separated list of options (RFC 9110 sec. 7.6.1).
  f->keep_alive = http11;
  for (const auto& [k, v] : head.fields) {
    if (k != "connection") continue;
    const std::string lower = ToLower(v);
    for (std::string_view option : Split(lower, ',')) {
      if (TrimOws(option) == "close") f->keep_alive = false;
    }
  }
  for (const auto& [k, v] : head.fields) {
    if (k != "accept-encoding") continue;
    const std::string lower = ToLower(v);
    for (std::string_view item : Split(lower, ',')) {
      item = TrimOws(item);
      const size_t semi = item.find(';');
      if (TrimOws(item.substr(0, semi)) != "gzip") continue;
      // "gzip;q=0" refuses gzip; any other q accepts it.
      std::string params = semi == std::string_view::npos ? "" : std::string(item.substr(semi + 1));
      params.erase(std::remove(params.begin(), params.end(), ' '), params.end());
      const bool refused = params == "q=0" || params == "q=0." || params == "q=0.0" ||
                           params == "q=0.00" || params == "q=0.000";
      if (!refused) f->accepts_gzip = true;
    }
  }
  return std::nullopt;
}

std::pair<std::string, int> SplitHostPort(std::string_view host) {
  std::string_view name = host, port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return {"", -2};
    name = host.substr(0, close + 1);
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return {"", -2};
      port = rest.substr(1);
    }
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
    if (port.empty()) return {std::string(name), -2};
  }
  if (port.empty() && host.size() > name.size()) return {std::string(name), -2};
  if (port.empty()) return {ToLower(name), -1};
  uint64_t p = 0;
  if (port.size() > 5 || !ParseDecimal(port, &p) || p > 65535) return {ToLower(name), -2};
  return {ToLower(name), static_cast<int>(p)};
}

ChunkedDecoder::Result ChunkedDecoder::Fail(int status, std::string message) {
  error_ = {status, std::move(message)};
  phase_ = Phase::kDone;
  return Result::kError;
}

ChunkedDecoder::Result ChunkedDecoder::Feed(std::string_view in, std::string& out,
                                            size_t* consumed) {
  constexpr size_t kMaxSizeLine = 1024;
  size_t pos = 0;
  auto done = [&](Result r) {
    *consumed = pos;
    return r;
  };
  if (!error_.message.empty()) return done(Result::kError);
  while (pos < in.size()) {
    switch (phase_) {
      case Phase::kSize:
      case Phase::kTrailer:
      case Phase::kDataEnd: {
        const size_t eol = in.find('\n', pos);
        const size_t take = (eol == std::string_view::npos ? in.size() : eol + 1) - pos;
        const size_t bound = phase_ == Phase::kTrailer ? limits_.max_line_bytes : kMaxSizeLine;
        if (line_.size() + take > bound + 2) {
          return done(Fail(phase_ == Phase::kTrailer ? 431 : 400,
                           phase_ == Phase::kTrailer ? "chunked trailer line too long"
                                                     : "chunk-size line too long"));
        }
        line_.append(in.substr(pos, take));
        pos += take;
        if (eol == std::string_view::npos) return done(Result::kNeedMore);
        if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
          return done(Fail(400, "chunked body line not ended by CRLF"));
        }
        std::string_view line(line_.data(), line_.size() - 2);
        if (phase_ == Phase::kDataEnd) {
          if (!line.empty()) return done(Fail(400, "chunk data longer than its size"));
          line_.clear();
          phase_ = Phase::kSize;
          break;
        }
        if (phase_ == Phase::kTrailer) {
          if (line.empty()) {
            line_.clear();
            phase_ = Phase::kDone;
            return done(Result::kDone);
          }
          if (++trailer_fields_ > limits_.max_fields) {
            return done(Fail(431, "too many chunked trailer fields"));
          }
          trailer_bytes_ += line_.size();
          if (trailer_bytes_ > limits_.max_head_bytes) {
            return done(Fail(431, fmt::format("chunked trailer section larger than {} bytes",
                                              limits_.max_head_bytes)));
          }
          line_.clear();
          break;
        }
        // chunk-size [; extensions]
        const size_t semi = line.find(';');
        if (semi != std::string_view::npos) {
          extension_bytes_ += line.size() - semi;
          if (extension_bytes_ > kMaxChunkExtensionBytes) {
            return done(Fail(400, fmt::format("chunk extensions longer than {} bytes in one "
                                              "request; send the data without them",
                                              kMaxChunkExtensionBytes)));
          }
        }
        const std::string_view size_text = TrimOws(line.substr(0, semi));
        if (size_text.empty() || size_text.size() > 15) {
          return done(Fail(400, "malformed chunk size"));
        }
        uint64_t size = 0;
        for (char c : size_text) {
          const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                    : -1;
          if (d < 0) return done(Fail(400, "malformed chunk size"));
          size = size * 16 + static_cast<uint64_t>(d);  // 15 hex digits < 2^60: no overflow
        }
        line_.clear();
        if (size == 0) {
          phase_ = Phase::kTrailer;
          break;
        }
        if (size > max_body_ - decoded_) {
          return done(Fail(413, fmt::format("request body larger than {} bytes", max_body_)));
        }
        remaining_ = size;
        phase_ = Phase::kData;
        break;
      }
      case Phase::kData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - pos));
        out.append(in.substr(pos, take));
        pos += take;
        remaining_ -= take;
        decoded_ += take;
        if (remaining_ == 0) phase_ = Phase::kDataEnd;
        break;
      }
      case Phase::kDone:
        return done(Result::kDone);
    }
  }
  return done(phase_ == Phase::kDone ? Result::kDone : Result::kNeedMore);
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace infralens::server
