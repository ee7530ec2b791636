// The only file that includes httplib.h: it turns httplib requests into server::HttpRequest and
// back, and sets the connection-level limits. Everything else is in api.cc.
#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "base/strings.h"

namespace infralens::server {

namespace {

// A fixed pool of workers with a bounded queue: when the queue is full, enqueue (called by the
// listening thread) waits, so further connections wait in the kernel's backlog instead of
// memory.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(int threads, int capacity) : capacity_(static_cast<size_t>(std::max(1, capacity))) {
    for (int i = 0; i < std::max(1, threads); ++i) {
      workers_.emplace_back([this] { Work(); });
    }
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [this] { return jobs_.size() < capacity_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;  // shut down and drained
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      space_.notify_one();
      fn();
    }
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool shutdown_ = false;
};

// httplib hands a handler a const Request, but the object is the server's own mutable one (a
// local of its request loop). Two behaviours need a header changed before httplib acts on it:
// "Connection: close" after an early answer (the body is not read, so the connection must not
// be reused), and the Content-Type of an upload (see the upload route below).
void SetRequestHeader(const httplib::Request& req, const std::string& name,
                      const std::string& value) {
  auto& headers = const_cast<httplib::Headers&>(req.headers);
  headers.erase(name);
  headers.emplace(name, value);
}

// An answer given before the body was read: the connection is closed after it.
void EarlyAnswer(const httplib::Request& req, httplib::Response& res, const HttpResponse& out) {
  SetRequestHeader(req, "Connection", "close");
  res.status = out.status;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(out.body, out.content_type.c_str());
}

HttpResponse JsonError(int status, std::string message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = ErrorJson(ApiError{status, std::move(message), "", nullptr});
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

HttpRequest ToApiRequest(const httplib::Request& req) {
  HttpRequest r;
  r.method = req.method;
  r.target = req.target;
  r.content_type = req.get_header_value("Content-Type");
  r.host = req.get_header_value("Host");
  r.origin = req.get_header_value("Origin");
  r.sec_fetch_site = req.get_header_value("Sec-Fetch-Site");
  return r;
}

void ToHttplibResponse(HttpResponse out, httplib::Response& res) {
  res.status = out.status;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(std::move(out.body), out.content_type.c_str());
}

// Uploads being read or analysed at once.
class UploadSlots {
 public:
  explicit UploadSlots(int max) : max_(std::max(1, max)) {}
  bool TryAcquire() {
    if (in_use_.fetch_add(1) < max_) return true;
    in_use_.fetch_sub(1);
    return false;
  }
  void Release() { in_use_.fetch_sub(1); }
  int max() const { return max_; }

 private:
  const int max_;
  std::atomic<int> in_use_{0};
};

AccessPolicy PolicyFor(const ServeOptions& o) {
  AccessPolicy p;
  if (o.host == "0.0.0.0" || o.host == "::" || o.host == "[::]" || o.host.empty()) {
    p.allowed_hosts.clear();  // every interface: any Host name may reach us
    return p;
  }
  std::string h = ToLower(o.host);
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  std::vector<std::string> extra = o.allow_hosts;
  extra.push_back(h);
  for (const auto& a : extra) {
    std::string name = ToLower(a);
    if (std::find(p.allowed_hosts.begin(), p.allowed_hosts.end(), name) == p.allowed_hosts.end()) {
      p.allowed_hosts.push_back(name);
    }
  }
  return p;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct HttpServer::Impl {
  explicit Impl(ServeOptions o) : options(std::move(o)), api(options.limits, PolicyFor(options)) {
    RegisterAllEndpoints(api);
  }

  ServeOptions options;
  Api api;
  httplib::Server server;
  UploadSlots uploads{options.limits.max_concurrent_uploads};
  int port = -1;
};

HttpServer::HttpServer(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  const ServeOptions& o = impl_->options;
  httplib::Server& svr = impl_->server;
  const int threads = o.threads, queue = o.queue;
  svr.new_task_queue = [threads, queue] { return new BoundedPool(threads, queue); };
  // httplib's own bound is the largest any endpoint takes; each path's limit is checked against
  // Content-Length before the body is read (the pre-routing handler below).
  svr.set_payload_max_length(std::max(o.limits.max_body_bytes, o.limits.max_upload_bytes));
  svr.set_read_timeout(o.io_timeout_s, 0);
  svr.set_write_timeout(o.io_timeout_s, 0);
  svr.set_keep_alive_timeout(o.keep_alive_s);
  svr.set_keep_alive_max_count(20);
  svr.set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let a second server
  // bind the same port and silently take half the connections.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });

  const Api* api = &impl_->api;
  auto handler = [api](const httplib::Request& req, httplib::Response& res) {
    HttpRequest r = ToApiRequest(req);
    r.body = req.body;
    ToHttplibResponse(api->Handle(r), res);
  };
  // Before any body is read: a Content-Length over the path's limit is refused (413), and so is a
  // chunked body to an endpoint that is not an upload (411), which could otherwise make httplib
  // read up to the upload limit for it.
  const std::vector<std::string> upload_paths = api->UploadPaths();
  svr.set_pre_routing_handler([api, upload_paths](const httplib::Request& req,
                                                  httplib::Response& res) {
    const bool upload =
        std::find(upload_paths.begin(), upload_paths.end(), req.path) != upload_paths.end();
    if (req.has_header("Content-Length")) {
      const uint64_t length = req.get_header_value<uint64_t>("Content-Length");
      if (length > api->MaxBodyBytes(req.path)) {
        EarlyAnswer(req, res, api->BodyTooLarge(req.path, length));
        return httplib::Server::HandlerResponse::Handled;
      }
    } else if (!upload && ToLower(req.get_header_value("Transfer-Encoding")).find("chunked") !=
                              std::string::npos) {
      EarlyAnswer(req, res,
                  JsonError(411, fmt::format("send the body with a Content-Length (at most {} "
                                             "bytes); chunked bodies are taken by uploads only",
                                             api->MaxBodyBytes(req.path))));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Uploads (trace files): httplib would parse a multipart/form-data body itself and hand over
  // only its parts, so the route reads the raw body (the Api's own bounded parser splits it),
  // after taking one of the few upload slots: at most max_concurrent_uploads bodies of up to
  // max_upload_bytes are held at once, and a request beyond them gets 503 before its body is read.
  UploadSlots* slots = &impl_->uploads;
  const auto read_limit = o.limits.upload_time_limit;
  for (const std::string& path : upload_paths) {
    svr.Post(path, [api, slots, read_limit](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) {
      // The access checks first: a cross-origin page gets its 403 without a byte being read.
      HttpRequest r = ToApiRequest(req);
      if (std::optional<HttpResponse> refused = api->Refuse(r)) {
        EarlyAnswer(req, res, *refused);
        return;
      }
      if (!slots->TryAcquire()) {
        HttpResponse busy = JsonError(
            503, fmt::format("the server is already reading {} uploads; try again in a moment",
                             slots->max()));
        busy.headers.emplace_back("Retry-After", "2");
        EarlyAnswer(req, res, busy);
        return;
      }
      struct Release {
        UploadSlots* s;
        ~Release() { s->Release(); }
      } release{slots};
      // Keeps httplib from parsing the multipart body (it checks the header when reading).
      SetRequestHeader(req, "Content-Type", "application/octet-stream");
      const size_t limit = api->MaxBodyBytes(req.path);
      if (req.has_header("Content-Length"))
        r.body.reserve(std::min<uint64_t>(limit, req.get_header_value<uint64_t>("Content-Length")));
      const auto deadline = std::chrono::steady_clock::now() + read_limit;
      bool too_large = false, too_slow = false;
      const bool ok = reader([&](const char* data, size_t n) {
        if (r.body.size() + n > limit) {
          too_large = true;
          return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
          return false;
        }
        r.body.append(data, n);
        return true;
      });
      if (!ok) {
        HttpResponse e =
            too_large ? api->BodyTooLarge(req.path, r.body.size() + 1)
            : too_slow
                ? JsonError(408, fmt::format("the upload took longer than {} ms to arrive",
                                             read_limit.count()))
                : JsonError(res.status == 413 ? 413 : 400,
                            res.status == 413 ? "request body too large"
                                              : "the request body could not be read");
        EarlyAnswer(req, res, e);
        return;
      }
      ToHttplibResponse(api->Handle(r), res);
    });
  }
  // One catch-all route per method; the Api does the routing.
  svr.Get(".*", handler);
  svr.Post(".*", handler);
  svr.Put(".*", handler);
  svr.Patch(".*", handler);
  svr.Delete(".*", handler);
  svr.Options(".*", handler);
  // Errors httplib produces itself (413 for a body over the limit, 414, 400 for a request it
  // cannot parse) get the same JSON shape as the API's.
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message;
    switch (res.status) {
      case 413:
        message = "request body too large";
        break;
      case 414:
        message = "request target too long";
        break;
      case 404:
        message = "not found";
        break;
      case 400:
        message = "malformed HTTP request (a POST needs Content-Length or chunked encoding)";
        break;
      default:
        message = fmt::format("HTTP {}", res.status);
    }
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-store");
    ApiError e{res.status, message, "", nullptr};
    res.set_content(ErrorJson(e), "application/json");
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                               std::exception_ptr) {
    res.status = 500;
    res.set_content(ErrorJson(ApiError{500, "internal error", "", nullptr}), "application/json");
  });
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Bind() {
  const ServeOptions& o = impl_->options;
  std::string host = o.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (o.port == 0) {
    impl_->port = impl_->server.bind_to_any_port(host);
    if (impl_->port < 0) return IoError(fmt::format("cannot bind {} on any port", o.host));
  } else {
    if (!impl_->server.bind_to_port(host, o.port)) {
      return IoError(
          fmt::format("cannot listen on {}:{} (address in use, or not an address of this machine)",
                      o.host, o.port));
    }
    impl_->port = o.port;
  }
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::Run() {
  if (impl_->port < 0) return Internal("HttpServer::Run before Bind");
  if (!impl_->server.listen_after_bind()) return IoError("the listening socket failed");
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_->server.is_running()) impl_->server.stop();
}

}  // namespace infralens::server
