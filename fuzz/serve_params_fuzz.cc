// libFuzzer target for the web API's request handling: the request target (path and query
// string), percent-decoding, form bodies, typed parameter reading and the handlers behind them,
// run exactly as the server runs them (server::Api::Handle), with small work limits.
// Input: first byte picks the method, then the target up to the first newline, then the body.
// Any input must give a response with a known status and a JSON error body (an unknown page
// outside /api/ gets the HTML 404 page), never a crash, a hang or a 500.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/api.h"
#include "server/params.h"

namespace {

const infralens::server::Api& TheApi() {
  static const infralens::server::Api* api = [] {
    infralens::server::ServerLimits limits;
    limits.max_actions = 5000;
    limits.max_compare_actions = 50000;
    limits.max_body_bytes = 64 << 10;
    // Plan searches stop at the time limit; small bounds keep every input well inside
    // libFuzzer's per-input timeout, even under the sanitizers.
    limits.max_plan_gpus = 256;
    limits.time_limit = std::chrono::milliseconds(1000);
    auto* a = new infralens::server::Api(limits, infralens::server::AccessPolicy{});
    infralens::server::RegisterAllEndpoints(*a);
    return a;
  }();
  return *api;
}

}  // namespace

// The API once, before the first input: registering the design endpoints computes the published
// runs' error spread (plan::BuiltinSpread, 60 evaluated plans), seconds under the sanitizers on a
// busy machine, which would otherwise count against the first input's 5 s timeout.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)TheApi();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nl = in.find('\n');
  infralens::server::HttpRequest req;
  req.method = data[0] % 3 == 0 ? "POST" : data[0] % 3 == 1 ? "GET" : "HEAD";
  req.target = std::string(in.substr(0, nl));
  req.body = nl == std::string_view::npos ? "" : std::string(in.substr(nl + 1));
  req.content_type = data[0] & 0x10 ? "text/csv" : "application/x-www-form-urlencoded";
  req.host = "127.0.0.1:8080";
  if (data[0] & 0x20) req.origin = "http://127.0.0.1:8080";

  // The parameter layer on its own: whatever it accepts, typed reads never fail badly.
  infralens::server::ParamError err;
  if (auto params = infralens::server::ParseForm(req.target, {}, &err)) {
    infralens::server::ParamReader r(
        *params, {{"pp", {"stages"}, "", ""}, {"f", {}, "", ""}, {"format", {}, "", ""}});
    (void)r.Int("pp", 4, 1, 1024);
    (void)r.Number("f", 1, 0, 1e9);
    (void)r.Choice("format", "json", {"json", "csv"});
  }

  // The interview scenarios are fixed documents computed once per server on a thread of their
  // own that outlives the request (server/scenarios_api.cc): seconds of planner searches under
  // the sanitizers, more than an input may take. (The engine's tables that thread reads are
  // never destroyed, so a thread still running at exit is safe.) Their two parameters (name,
  // format) are covered by lab09_api_test.cc.
  {
    const std::string_view raw = std::string_view(req.target).substr(0, req.target.find('?'));
    auto path = infralens::server::PercentDecode(raw, /*plus_as_space=*/false);
    if (path && path->rfind("/api/scenarios", 0) == 0) return 0;
  }

  infralens::server::HttpResponse res = TheApi().Handle(req);
  switch (res.status) {
    case 200:
    case 400:
    case 403:
    case 404:
    case 405:
    case 413:
    case 415:
    case 503:
      break;
    default:
      __builtin_trap();  // 500 or anything unexpected is a bug
  }
  // Errors are JSON, except the page a person gets for an unknown page outside /api/: the
  // embedded 404.html, exactly.
  const bool page_404 = res.status == 404 && req.target.rfind("/api/", 0) != 0 &&
                        res.content_type == "text/html; charset=utf-8" &&
                        res.body.find("<title>") != std::string::npos;
  if (res.status != 200 && !page_404 &&
      (res.content_type != "application/json" || res.body.rfind("{\"error\":", 0) != 0)) {
    __builtin_trap();
  }
  return 0;
}
