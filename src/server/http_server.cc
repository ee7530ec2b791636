// The only file that includes httplib.h: it turns httplib requests into server::HttpRequest and
// back, and sets the connection-level limits. Everything else is in api.cc.
#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
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
  int port = -1;
};

HttpServer::HttpServer(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  const ServeOptions& o = impl_->options;
  httplib::Server& svr = impl_->server;
  const int threads = o.threads, queue = o.queue;
  svr.new_task_queue = [threads, queue] { return new BoundedPool(threads, queue); };
  svr.set_payload_max_length(o.limits.max_body_bytes);
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
    HttpRequest r;
    r.method = req.method;
    r.target = req.target;
    r.body = req.body;
    r.content_type = req.get_header_value("Content-Type");
    r.host = req.get_header_value("Host");
    r.origin = req.get_header_value("Origin");
    r.sec_fetch_site = req.get_header_value("Sec-Fetch-Site");
    HttpResponse out = api->Handle(r);
    res.status = out.status;
    for (const auto& [k, v] : out.headers) res.set_header(k, v);
    res.set_content(std::move(out.body), out.content_type.c_str());
  };
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
