#include "server/api.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <variant>
#include <vector>

#include "base/strings.h"
#include "server/assets.h"

namespace infralens::server {

namespace {

// base-uri 'self', not 'none': the 404 page sets a relative <base> so that it works at any depth.
constexpr std::string_view kSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

HttpResponse ErrorResponse(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.content_type = "application/json";
  r.body = ErrorJson(e);
  return r;
}

ApiError Error(int status, std::string message, std::string parameter = "") {
  return ApiError{status, std::move(message), std::move(parameter), nullptr};
}

// "127.0.0.1:8080" -> "127.0.0.1", "[::1]:8080" -> "[::1]", "LocalHost" -> "localhost".
std::string HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    return ToLower(host.substr(0, close == std::string_view::npos ? host.size() : close + 1));
  }
  return ToLower(host.substr(0, host.find(':')));
}

bool IsFormContentType(std::string_view content_type) {
  std::string ct = ToLower(Trim(content_type.substr(0, content_type.find(';'))));
  return ct == "application/x-www-form-urlencoded";
}

HttpResponse MethodNotAllowed(std::string message, std::string allow) {
  HttpResponse r = ErrorResponse(Error(405, std::move(message)));
  r.headers.emplace_back("Allow", std::move(allow));
  return r;
}

// GET /api: every endpoint with its methods, body and parameters, and the server's limits.
std::string EndpointIndexJson(const std::vector<Endpoint>& endpoints, const ServerLimits& limits) {
  JsonWriter w(2);
  w.BeginObject();
  w.Key("endpoints").BeginArray();
  for (const Endpoint& e : endpoints) {
    w.BeginObject().Field("path", e.path).Field("summary", e.summary);
    w.Key("methods").BeginArray();
    for (const auto& m : e.methods) w.String(m);
    w.EndArray();
    w.Field("body", e.upload         ? "files (multipart/form-data)"
                    : e.body_is_data ? "data"
                                     : "form parameters");
    w.Key("parameters").BeginArray();
    for (const ParamSpec& p : e.params) {
      w.BeginObject().Field("name", p.name);
      if (!p.aliases.empty()) {
        w.Key("aliases").BeginArray();
        for (const auto& a : p.aliases) w.String(a);
        w.EndArray();
      }
      w.Field("help", p.help);
      if (!p.default_text.empty()) w.Field("default", p.default_text);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("limits").BeginObject();
  w.Field("max_body_bytes", static_cast<int64_t>(limits.max_body_bytes));
  w.Field("max_upload_bytes", static_cast<int64_t>(limits.max_upload_bytes));
  w.Field("upload_time_limit_ms", static_cast<int64_t>(limits.upload_time_limit.count()));
  w.Field("max_concurrent_uploads", static_cast<int64_t>(limits.max_concurrent_uploads));
  w.Field("max_actions", limits.max_actions);
  w.Field("max_compare_actions", limits.max_compare_actions);
  w.Field("max_plan_gpus", limits.max_plan_gpus);
  w.Field("time_limit_ms", static_cast<int64_t>(limits.time_limit.count()));
  w.EndObject();
  w.EndObject();
  return w.str();
}

// The endpoint registered last at `path`, or null.
const Endpoint* FindEndpoint(const std::vector<Endpoint>& endpoints, std::string_view path) {
  const Endpoint* ep = nullptr;
  for (const Endpoint& e : endpoints) {
    if (e.path == path) ep = &e;
  }
  return ep;
}

HttpResponse NoSuchEndpoint(const std::vector<Endpoint>& endpoints, std::string_view path) {
  std::vector<std::string> paths;
  for (const Endpoint& e : endpoints) paths.push_back(e.path);
  return ErrorResponse(Error(
      404,
      fmt::format("no API endpoint '{}'; endpoints: {} (GET /api lists them with their parameters)",
                  Excerpt(path, 80), Join(paths, ", "))));
}

// The query string's parameters, then those of a form-encoded POST body (when the body is not
// the endpoint's data), within the limits of one request.
std::variant<ParamList, ApiError> RequestParams(const Endpoint& ep, const HttpRequest& req,
                                                std::string_view raw_query,
                                                const ParamLimits& limits) {
  ParamError perr;
  auto params = ParseForm(raw_query, limits, &perr);
  if (!params) return Error(400, perr.message, perr.parameter);
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (!get && !ep.body_is_data && !req.body.empty()) {
    if (!IsFormContentType(req.content_type)) {
      return Error(415, fmt::format("{} takes its POST parameters form-encoded (Content-Type: "
                                    "application/x-www-form-urlencoded), not '{}'",
                                    ep.path, Excerpt(req.content_type, 80)));
    }
    auto form = ParseForm(req.body, limits, &perr);
    if (!form) return Error(400, perr.message, perr.parameter);
    params->insert(params->end(), form->begin(), form->end());
    if (params->size() > limits.max_params) {
      return Error(400, fmt::format("more than {} parameters", limits.max_params));
    }
  }
  return *std::move(params);
}

// Runs the endpoint's handler on its parameters, under the endpoint's time limit.
HttpResponse RunEndpoint(const Endpoint& ep, const ParamList& params, const HttpRequest& req,
                         const ServerLimits& limits) {
  ParamReader reader(params, ep.params);
  if (reader.error())
    return ErrorResponse(Error(400, reader.error()->message, reader.error()->parameter));
  const auto time_limit = ep.upload ? limits.upload_time_limit : limits.time_limit;
  // From the request's arrival: a request that waited for a worker has that much less left,
  // and one whose limit passed in the queue (or whose client left) is not computed at all.
  const auto arrival = req.arrival == std::chrono::steady_clock::time_point{}
                           ? std::chrono::steady_clock::now()
                           : req.arrival;
  ApiCall call(reader, ep.body_is_data ? std::string_view(req.body) : std::string_view(), limits,
               arrival + time_limit, req.content_type, time_limit, req.cancel);
  // Waited past its limit in a queue of the transport (or its client left): not computed.
  if (req.arrival != std::chrono::steady_clock::time_point{} && call.Expired()) {
    return ErrorResponse(call.TimeLimitError());
  }
  ApiResult result = ep.handler(call);
  if (auto* e = std::get_if<ApiError>(&result)) return ErrorResponse(*e);
  return std::get<HttpResponse>(std::move(result));
}

// A request under /api/ (but not /api itself): its endpoint, method and parameters, then the call.
HttpResponse CallEndpoint(const std::vector<Endpoint>& endpoints, const ServerLimits& limits,
                          std::string_view path, std::string_view raw_query,
                          const HttpRequest& req) {
  const Endpoint* ep = FindEndpoint(endpoints, path);
  if (ep == nullptr) return NoSuchEndpoint(endpoints, path);
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  if (std::find(ep->methods.begin(), ep->methods.end(), method) == ep->methods.end()) {
    return MethodNotAllowed(fmt::format("{} answers {}", ep->path, Join(ep->methods, ", ")),
                            Join(ep->methods, ", "));
  }
  std::variant<ParamList, ApiError> params = RequestParams(*ep, req, raw_query, limits.params);
  if (auto* e = std::get_if<ApiError>(&params)) return ErrorResponse(*e);
  return RunEndpoint(*ep, std::get<ParamList>(params), req, limits);
}

// A page that does not exist answers a page a person can read and leave (API paths keep their
// JSON errors).
HttpResponse PageNotFound(std::string_view path) {
  if (const EmbeddedFile* page = FindAsset("404.html")) {
    HttpResponse r;
    r.status = 404;
    r.content_type = std::string(ContentTypeFor(page->path));
    r.body = std::string(page->data);
    // Relative, not "/": behind a proxy that serves the workbench under /prefix/, the root is
    // /prefix/, which only a path relative to the one asked for reaches. The path is bounded
    // by the head's size, and so is this.
    std::string up;
    for (size_t k = 1; k < path.size(); ++k) {
      if (path[k] == '/') up += "../";
    }
    constexpr std::string_view kBase = "<base href=\"./\">";
    if (const size_t at = r.body.find(kBase); at != std::string::npos && !up.empty()) {
      r.body.replace(at, kBase.size(), "<base href=\"" + up + "\">");
    }
    r.headers.emplace_back("Cache-Control", "no-cache");
    return r;
  }
  return ErrorResponse(
      Error(404, fmt::format("no page '{}' (the server has only its built-in pages; start at /)",
                             Excerpt(path, 80))));
}

// An embedded file, looked up by exact name: nothing else exists.
HttpResponse ServeEmbeddedFile(std::string_view path) {
  const std::string_view name = path == "/" ? std::string_view("index.html") : path.substr(1);
  const EmbeddedFile* file = FindAsset(name);
  if (file == nullptr) return PageNotFound(path);
  HttpResponse r;
  r.content_type = std::string(ContentTypeFor(file->path));
  r.body = std::string(file->data);
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

}  // namespace

ApiError ApiCall::TimeLimitError() const {
  return Error(
      503,
      fmt::format("the request took longer than the server's time limit of {} ms; ask for less "
                  "work, or use the CLI",
                  time_limit_.count()));
}

HttpResponse JsonResponse(std::string body) {
  return TextResponse(std::move(body), "application/json");
}

HttpResponse TextResponse(std::string body, std::string content_type) {
  HttpResponse r;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

HttpResponse DocumentResponse(std::string body, bool json) {
  return json ? JsonResponse(std::move(body))
              : TextResponse(std::move(body), "text/markdown; charset=utf-8");
}

ApiError ParamFailure(std::string parameter, std::string message) {
  return Error(400, std::move(message), std::move(parameter));
}

ApiError ParamErrorOf(const ApiCall& call) {
  return ParamFailure(call.params.error()->parameter, call.params.error()->message);
}

std::string ParameterOfMessage(std::string_view message) {
  // The CLI's other spellings; every other flag is its long name without the dashes, with '_'
  // for '-' ("--global-batch" names global_batch).
  static const std::vector<std::pair<std::string_view, std::string_view>> kFlags = {
      {"--stages", "pp"}, {"--virtual", "vpp"}, {"-m", "microbatches"}};
  std::string_view first = message.substr(0, message.find_first_of(" :"));
  for (const auto& [flag, name] : kFlags) {
    if (first == flag) return std::string(name);
  }
  if (first.size() < 3 || first.substr(0, 2) != "--") return "";
  std::string name(first.substr(2));
  for (char& c : name) {
    if (c == '-') c = '_';
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return "";
  }
  return name;
}

ApiError FromStatus(const Status& status, std::string parameter) {
  int code = 400;
  switch (status.code()) {
    case StatusCode::kOk:
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      code = 400;
      break;
    case StatusCode::kNotFound:
      code = 404;
      break;
    case StatusCode::kResourceExhausted:
      code = 503;
      break;
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      code = 500;
      break;
  }
  // The field the engine named (base/status.h); a message that names none may still start with a
  // flag the CLI layer wrote ("--pp 0: ..."), read back as its parameter.
  if (parameter.empty()) parameter = status.field();
  if (parameter.empty()) parameter = ParameterOfMessage(status.message());
  return Error(code, status.MessageFor(FieldSpelling::kParameter), std::move(parameter));
}

std::string ErrorJson(const ApiError& e) {
  JsonWriter w(0);
  w.BeginObject();
  w.Field("error", BoundedMessage(e.message));
  if (!e.parameter.empty()) w.Field("parameter", e.parameter);
  if (e.details) e.details(w);
  w.EndObject();
  return w.str();
}

Api::Api(ServerLimits limits, AccessPolicy policy)
    : limits_(std::move(limits)), policy_(std::move(policy)) {}

void Api::Register(Endpoint endpoint) {
  if (endpoint.upload) endpoint.body_is_data = true;
  endpoints_.push_back(std::move(endpoint));
}

size_t Api::MaxBodyBytes(std::string_view path) const {
  for (const Endpoint& e : endpoints_) {
    if (e.path == path && e.upload) return limits_.max_upload_bytes;
  }
  return limits_.max_body_bytes;
}

bool Api::IsLight(std::string_view path) const {
  if (path.rfind("/api/", 0) != 0) return true;  // an embedded page, or /api
  for (const Endpoint& e : endpoints_) {
    if (e.path == path) return e.light;
  }
  return true;  // a 404
}

std::vector<std::string> Api::UploadPaths() const {
  std::vector<std::string> out;
  for (const Endpoint& e : endpoints_) {
    if (e.upload) out.push_back(e.path);
  }
  return out;
}

HttpResponse Api::BodyTooLarge(std::string_view path, uint64_t bytes) const {
  const size_t limit = MaxBodyBytes(path);
  std::string what =
      fmt::format("request body of {} bytes exceeds the limit of {} bytes", bytes, limit);
  if (limit == limits_.max_upload_bytes && limit != limits_.max_body_bytes) {
    what +=
        fmt::format(" ({} MiB for all the files of one upload; the CLI has no limit)", limit >> 20);
  }
  return ErrorResponse(Error(413, std::move(what)));
}

HttpResponse Api::Handle(const HttpRequest& request) const {
  HttpResponse res;
  try {
    res = Dispatch(request);
  } catch (const std::bad_alloc&) {
    res = ErrorResponse(Error(503, "the server ran out of memory for this request"));
  } catch (const std::exception& e) {
    res = ErrorResponse(Error(500, fmt::format("internal error: {}", e.what())));
  }
  return WithSecurityHeaders(std::move(res));
}

std::optional<HttpResponse> Api::Refuse(const HttpRequest& request) const {
  std::optional<HttpResponse> refused = AccessError(request);
  if (refused) refused = WithSecurityHeaders(std::move(*refused));
  return refused;
}

HttpResponse Api::WithSecurityHeaders(HttpResponse res) {
  auto& h = res.headers;
  h.emplace_back("X-Content-Type-Options", "nosniff");
  h.emplace_back("Referrer-Policy", "no-referrer");
  h.emplace_back("X-Frame-Options", "DENY");
  h.emplace_back("Content-Security-Policy", std::string(kSecurityPolicy));
  h.emplace_back("Cross-Origin-Resource-Policy", "same-origin");
  h.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  bool has_cache =
      std::any_of(h.begin(), h.end(), [](const auto& kv) { return kv.first == "Cache-Control"; });
  if (!has_cache) h.emplace_back("Cache-Control", "no-store");
  return res;
}

std::optional<HttpResponse> Api::AccessError(const HttpRequest& req) const {
  // Who is asking: the Host header must name this server (DNS rebinding), and anything that
  // changes state must come from our own pages (no CORS; a cross-origin POST is refused).
  if (!policy_.allowed_hosts.empty() && !req.host.empty()) {
    std::string host = HostName(req.host);
    if (std::find(policy_.allowed_hosts.begin(), policy_.allowed_hosts.end(), host) ==
        policy_.allowed_hosts.end()) {
      return ErrorResponse(
          Error(403, fmt::format("Host '{}' is not served here (allowed: {})",
                                 Excerpt(req.host, 80), Join(policy_.allowed_hosts, ", "))));
    }
  }
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (!get && req.method != "POST") {
    return MethodNotAllowed(
        fmt::format("method {} is not allowed; the server answers GET, HEAD and POST",
                    Excerpt(req.method, 80)),
        "GET, HEAD, POST");
  }
  if (!get) {
    if (!req.origin.empty() && ToLower(req.origin) != "http://" + ToLower(req.host)) {
      return ErrorResponse(Error(
          403,
          fmt::format("cross-origin request refused: Origin '{}' is not this server (http://{})",
                      Excerpt(req.origin, 80), Excerpt(req.host, 80))));
    }
    const std::string site = ToLower(req.sec_fetch_site);
    if (!site.empty() && site != "same-origin" && site != "none") {
      return ErrorResponse(Error(
          403,
          fmt::format("cross-origin request refused (Sec-Fetch-Site: {})", Excerpt(site, 80))));
    }
  }
  return std::nullopt;
}

HttpResponse Api::Dispatch(const HttpRequest& req) const {
  if (std::optional<HttpResponse> refused = AccessError(req)) return *std::move(refused);
  const bool get = req.method == "GET" || req.method == "HEAD";
  const size_t q = req.target.find('?');
  const std::string_view raw_path = std::string_view(req.target).substr(0, q);
  const std::string_view raw_query =
      q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1);
  auto decoded = PercentDecode(raw_path, false);
  // The body limit depends on the endpoint (uploads take more); checked before anything else.
  const std::string_view limit_path = decoded ? std::string_view(*decoded) : raw_path;
  if (req.body.size() > MaxBodyBytes(limit_path)) {
    return BodyTooLarge(limit_path, req.body.size());
  }
  if (raw_path.empty() || raw_path.front() != '/') {
    return ErrorResponse(Error(
        400, fmt::format("request target '{}' must start with '/'", Excerpt(req.target, 80))));
  }
  if (!decoded) {
    return ErrorResponse(Error(400, "malformed %-escape in the path (or %00)"));
  }
  const std::string& path = *decoded;
  if (path == "/api" || path == "/api/") {
    if (!get) return MethodNotAllowed("/api answers GET", "GET, HEAD");
    return JsonResponse(EndpointIndexJson(endpoints_, limits_));
  }
  if (path.rfind("/api/", 0) == 0) return CallEndpoint(endpoints_, limits_, path, raw_query, req);
  if (!get) return MethodNotAllowed("pages answer GET and HEAD", "GET, HEAD");
  return ServeEmbeddedFile(path);
}

}  // namespace infralens::server
