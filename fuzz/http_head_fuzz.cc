// libFuzzer target for the transport's request framing (server/http_parser.h): the request head
// parser, the framing rules and the chunked-body decoder, on arbitrary bytes with small limits.
// Any input must end in complete, incomplete or a refusal with a known status: never a crash,
// never more bytes consumed than given, never a decoded body over its bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_parser.h"

using infralens::server::ChunkedDecoder;
using infralens::server::Framing;
using infralens::server::HeadLimits;
using infralens::server::HeadParse;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  HeadLimits limits;
  limits.max_line_bytes = 256;
  limits.max_fields = 8;
  limits.max_head_bytes = 1024;
  const HeadParse p = ParseRequestHead(in, limits);
  if (p.state == HeadParse::State::kError) {
    const int s = p.error.status;
    if (s != 400 && s != 414 && s != 431 && s != 505) std::abort();
    return 0;
  }
  if (p.state == HeadParse::State::kIncomplete) return 0;
  if (p.consumed > size || p.head.fields.size() > limits.max_fields + 1) std::abort();
  // Absolute-form targets arrive in origin form (RFC 9112 sec. 3.2.2).
  if (p.head.target != "*" && (p.head.target.empty() || p.head.target.front() != '/')) {
    std::abort();
  }
  Framing f;
  if (auto e = FrameRequest(p.head, &f)) {
    const int s = e->status;
    if (s != 400 && s != 415 && s != 417 && s != 501) std::abort();
    return 0;
  }
  (void)infralens::server::SplitHostPort(p.head.Get("host"));
  // The rest of the input as a chunked body, fed in two pieces.
  const std::string_view body = in.substr(p.consumed);
  ChunkedDecoder d(64, limits);
  std::string out;
  size_t used = 0, total = 0;
  const size_t half = body.size() / 2;
  auto r = d.Feed(body.substr(0, half), out, &used);
  total += used;
  if (r == ChunkedDecoder::Result::kNeedMore) {
    r = d.Feed(body.substr(half), out, &used);
    total += used;
  }
  if (total > body.size() || out.size() > 64 || out.size() != d.decoded()) std::abort();
  return 0;
}
