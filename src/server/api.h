// The web API and the embedded pages, independent of any HTTP library: a request goes in, a
// response comes out. http_server.cc (the HTTP/1.1 transport) feeds it requests;
// the tests and the fuzz target call it directly.
//
// Every endpoint is one registration: a path, its methods, its parameters and a handler. The
// router does what every endpoint needs: the same-origin checks, parameter parsing and unknown-
// parameter errors, the time limit, JSON errors {"error": ..., "parameter": ...}, and serving the
// embedded pages. See docs/workbench.md.
#ifndef INFRALENS_SERVER_API_H_
#define INFRALENS_SERVER_API_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/cancel.h"
#include "base/json_writer.h"
#include "base/status.h"
#include "server/params.h"

namespace infralens::server {

// Bounds on one request's size and work.
struct ServerLimits {
  size_t max_body_bytes = 4u << 20;  // request bodies (CSV uploads, forms); larger: 413
  // Endpoints that take uploaded files (Endpoint::upload, e.g. profiler traces) have their own
  // body and time limits, and at most `max_concurrent_uploads` of them are read at once (the
  // HTTP layer answers 503 beyond that, before reading the body).
  size_t max_upload_bytes = size_t{256} << 20;
  std::chrono::milliseconds upload_time_limit{30000};
  int max_concurrent_uploads = 2;
  // What one upload's kept events may cost once analysed (trace::TraceMemoryBudget): 512 MiB,
  // about 2.6 million kernels with their launches, whatever the JSON (2 GiB of terse JSON could
  // hold 30 million kernels). The CLI's budget is trace::kDefaultTraceMemoryBudgetBytes.
  uint64_t upload_analysis_bytes = uint64_t{512} << 20;
  ParamLimits params;
  // Schedules the server generates, imports or simulates for one request. The JSON of 200,000
  // actions is about 20 MB, already more than a page can draw; the CLI goes to 10 million (64
  // million as a streamed CSV).
  int64_t max_actions = 200'000;
  // All simulations of one /api/compare request together (every schedule, every sweep point).
  int64_t max_compare_actions = 4'000'000;
  // GPUs one /api/plan request may search or evaluate (the CLI goes to 65,536).
  int64_t max_plan_gpus = 16'384;
  // Wall time a handler may use; checked between the steps of the work (and between the layouts
  // of a plan search).
  std::chrono::milliseconds time_limit{5000};
  // Layouts one plan search simulates before it stops as at its time limit (0: no count limit);
  // its memory pass counts one per 256 layouts (plan::SearchOptions::stop). A search stopped
  // either way answers with the ranking so far, marked partial.
  int64_t max_search_layouts = 0;
  // A cacheable command's answers (the interview scenarios) are fixed work, computed once per
  // server on their own thread (server/command_api.h): a request may wait this long for them (a
  // worker thread waiting, no CPU) beyond time_limit, and with warm_caches the default query
  // starts computing when the endpoint is registered. `infralens serve` sets 60 s and true; the
  // defaults suit tests.
  std::chrono::milliseconds cached_wait{0};
  bool warm_caches = false;
};

struct HttpRequest {
  std::string method;  // GET, HEAD, POST, ...
  std::string target;  // the request target as sent: path and query, still %-encoded
  std::string body;
  std::string content_type;    // Content-Type header ("" when absent)
  std::string host;            // Host header
  std::string origin;          // Origin header
  std::string sec_fetch_site;  // Sec-Fetch-Site header
  // When the request had arrived whole: its time limit counts from here, so time spent waiting
  // for a worker is part of it. Unset (the epoch): when Handle starts.
  std::chrono::steady_clock::time_point arrival{};
  // Raised by the transport when the client has gone; the handler then stops at its next
  // cancellation point. Null: never cancelled.
  const CancelToken* cancel = nullptr;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>>
      headers;  // extra headers, e.g. Content-Disposition
};

// A failed request: HTTP status, message and the parameter at fault ("" when none). `details`
// may add fields to the JSON error object (e.g. where a CSV broke).
struct ApiError {
  int status = 400;
  std::string message;
  std::string parameter;
  std::function<void(JsonWriter&)> details;
};

using ApiResult = std::variant<HttpResponse, ApiError>;

// What a handler gets: its parameters, the body, the limits and the clock.
class ApiCall {
 public:
  ApiCall(ParamReader& params, std::string_view body, const ServerLimits& limits,
          std::chrono::steady_clock::time_point deadline, std::string_view content_type = {},
          std::chrono::milliseconds time_limit = std::chrono::milliseconds(-1),
          const CancelToken* cancel = nullptr)
      : params(params),
        body(body),
        content_type(content_type),
        limits(limits),
        deadline_(deadline),
        time_limit_(time_limit.count() < 0 ? limits.time_limit : time_limit),
        cancel_(cancel) {}

  ParamReader& params;
  std::string_view body;
  std::string_view content_type;  // the request's Content-Type, for endpoints that take data
  const ServerLimits& limits;

  // The deadline has passed or the client has gone: the work is abandoned.
  bool Expired() const {
    return (cancel_ != nullptr && cancel_->CancelRequested()) ||
           std::chrono::steady_clock::now() >= deadline_;
  }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  // The 503 error a handler returns once Expired().
  ApiError TimeLimitError() const;

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds time_limit_;  // the one this call runs under, for the message
  const CancelToken* cancel_;
};

struct Endpoint {
  std::string path;                  // e.g. "/api/schedule"
  std::vector<std::string> methods;  // GET and/or POST
  std::string summary;
  std::vector<ParamSpec> params;
  // POST bodies: false = form parameters (application/x-www-form-urlencoded, same names as the
  // query string); true = the body is the endpoint's input data (e.g. a CSV file).
  bool body_is_data = false;
  std::function<ApiResult(ApiCall&)> handler;
  // The body is uploaded files (implies body_is_data): ServerLimits::max_upload_bytes and
  // upload_time_limit apply instead of max_body_bytes and time_limit.
  bool upload = false;
  // Cheap and bounded whatever the parameters (a table lookup, one formula): served in the
  // transport's light lane, never queued behind searches and simulations.
  bool light = false;
};

// Who may talk to the server.
struct AccessPolicy {
  // Host header names (without the port) accepted; empty accepts any (a server bound to every
  // interface). Checking Host keeps DNS-rebinding pages away from a loopback server.
  std::vector<std::string> allowed_hosts = {"127.0.0.1", "localhost", "[::1]"};
};

class Api {
 public:
  Api(ServerLimits limits, AccessPolicy policy);

  void Register(Endpoint endpoint);
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  const ServerLimits& limits() const { return limits_; }

  // Everything a request goes through: access checks, routing, parameters, the handler or an
  // embedded file, and the JSON error for whatever fails. Never throws.
  HttpResponse Handle(const HttpRequest& request) const;

  // The largest body a request to `path` (decoded, without the query) may carry: the upload
  // limit for an upload endpoint, else max_body_bytes. The HTTP layer refuses a larger
  // Content-Length before reading the body.
  size_t MaxBodyBytes(std::string_view path) const;
  // Served in the light lane: the pages, /api itself and the endpoints marked light.
  bool IsLight(std::string_view path) const;
  // The paths of the upload endpoints.
  std::vector<std::string> UploadPaths() const;
  // The 413 answer for a body of `bytes` to `path` (for the HTTP layer).
  HttpResponse BodyTooLarge(std::string_view path, uint64_t bytes) const;
  // The answer to a request the access checks refuse (Host, method, cross-origin POST), or
  // nullopt: what Handle would answer before looking at the body. The HTTP layer asks before it
  // reads an upload's body.
  std::optional<HttpResponse> Refuse(const HttpRequest& request) const;

 private:
  HttpResponse Dispatch(const HttpRequest& request) const;
  std::optional<HttpResponse> AccessError(const HttpRequest& request) const;
  static HttpResponse WithSecurityHeaders(HttpResponse response);

  ServerLimits limits_;
  AccessPolicy policy_;
  std::vector<Endpoint> endpoints_;
};

// Helpers for handlers.
HttpResponse JsonResponse(std::string body);
HttpResponse TextResponse(std::string body, std::string content_type);
// A command's document: JSON (`json`) or its markdown (text/markdown).
HttpResponse DocumentResponse(std::string body, bool json);
ApiError ParamFailure(std::string parameter, std::string message);
// The first parameter error `call`'s reader recorded, as a 400 naming that parameter. Only when
// call.params.error() is set.
ApiError ParamErrorOf(const ApiCall& call);
// The longest time, in ms, any cost or duration parameter may say (a bound, not a physical limit:
// it keeps sums of a million of them finite).
inline constexpr double kMaxParamMs = 1e9;
// An engine error as an API error: InvalidArgument and friends are 400, ResourceExhausted 503
// (the time limit), Internal 500. `parameter` names the input at fault; when empty it is the
// field the status names (base/status.h), else the CLI flag the message starts with ("--pp 0: ..."
// names pp). The message spells its fields as parameters ("pp 0: ...").
ApiError FromStatus(const Status& status, std::string parameter = "");
// The JSON body of an error response.
std::string ErrorJson(const ApiError& error);
// The API parameter a CLI-style message is about ("-m 3: ..." -> "microbatches"), or "".
std::string ParameterOfMessage(std::string_view message);

// Registers every lab's endpoints (server/endpoints.cc); each lab adds one line there.
void RegisterAllEndpoints(Api& api);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_API_H_
