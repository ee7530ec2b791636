// InfraLens's HTTP/1.1 transport. Why not cpp-httplib (which served until 2026-11): Debian 12
// ships 0.11.4, whose Range handling amplifies one request into gigabytes
// (yhirose/cpp-httplib#1766), which inflates Content-Encoding bodies past the payload limit, reads
// chunked bodies without a bound when Content-Length is also sent, bounds neither the header count
// nor the request line before buffering them, and times out per recv() while each connection holds
// a worker thread (slowloris). None of that is configurable there. This transport is small because
// it does little: one epoll thread owns every socket (reading heads and bodies, writing answers,
// enforcing total deadlines), http_parser.h decides the framing, and a fixed pool of workers runs
// Api::Handle on complete requests. Everything the Api needs stays in api.h.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/strings.h"
#include "server/params.h"

namespace infralens::server {

namespace {

using Clock = std::chrono::steady_clock;

// A fixed pool of workers. The queue is bounded by the caller: the I/O thread counts what it
// submitted to each lane and answers 503 instead of submitting beyond the lane's places.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { Work(); });
  }
  ~WorkerPool() { Shutdown(); }

  void Submit(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(fn));
    }
    ready_.notify_one();
  }
  // Runs what is queued, then joins every worker.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool shutdown_ = false;
};

// Uploads being received or analysed at once.
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

HttpResponse JsonError(int status, std::string message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = ErrorJson(ApiError{status, std::move(message), "", nullptr});
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

bool Compressible(const std::string& content_type) {
  const std::string t = ToLower(content_type);
  return t.rfind("text/", 0) == 0 || t.rfind("application/json", 0) == 0 ||
         t.rfind("application/javascript", 0) == 0 || t.rfind("image/svg+xml", 0) == 0;
}

constexpr size_t kMinCompressBytes = 1024;

// The bytes of a response. `head_only`: HEAD (Content-Length of the body, no body).
std::string Serialize(HttpResponse r, bool head_only, bool keep_alive, bool gzip_ok) {
  const bool compressible = Compressible(r.content_type);
  bool gzipped = false;
  if (gzip_ok && !head_only && compressible && r.body.size() >= kMinCompressBytes &&
      r.body.size() <= 0xffffffffu) {
    if (std::optional<std::string> z = Gzip(r.body)) {
      r.body = std::move(*z);
      gzipped = true;
    }
  }
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", r.status, ReasonPhrase(r.status));
  if (!r.content_type.empty()) out += fmt::format("Content-Type: {}\r\n", r.content_type);
  out += fmt::format("Content-Length: {}\r\n", r.body.size());
  if (gzipped) out += "Content-Encoding: gzip\r\n";
  if (compressible) out += "Vary: Accept-Encoding\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) {
    // Names and values come from our own code; a CR or LF would still split the response.
    if (k.find_first_of("\r\n") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos)
      continue;
    out += fmt::format("{}: {}\r\n", k, v);
  }
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

AccessPolicy PolicyFor(const ServeOptions& o) {
  AccessPolicy p;
  if (o.host == "0.0.0.0" || o.host == "::" || o.host == "[::]" || o.host.empty()) {
    p.allowed_hosts.clear();  // every interface: any Host name may reach us
    return p;
  }
  std::string h = ToLower(o.host);
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  std::vector<std::string> extra;
  for (const auto& a : o.allow_hosts) extra.push_back(SplitHostPort(a).first);
  extra.push_back(h);
  for (const auto& name : extra) {
    if (!name.empty() &&
        std::find(p.allowed_hosts.begin(), p.allowed_hosts.end(), name) == p.allowed_hosts.end()) {
      p.allowed_hosts.push_back(name);
    }
  }
  return p;
}

enum class Phase {
  kHead,     // reading a request head (idle: not a byte of it yet)
  kBody,     // reading its body
  kWorking,  // a worker computes the answer; nothing is read meanwhile
  kWriting,  // writing the answer
  kLinger,   // answer written, write side shut: draining what the client still sends, then close
};

enum Lane { kLight = 0, kCompute = 1, kUpload = 2, kLanes = 3 };
constexpr const char* kLaneNames[kLanes] = {"light", "compute", "upload"};

struct Conn {
  int fd = -1;
  std::string peer;  // the client's address, for its share of the compute lane
  Phase phase = Phase::kHead;
  bool idle = true;
  Clock::time_point deadline;
  Clock::time_point last_active;  // the last byte read or written: eviction takes the oldest
  // Its place in the queue of silent connections (Impl::silent), 0 while it has a request under
  // way: set when it is accepted, and again each time it waits idle between kept-alive requests.
  uint64_t silent_stamp = 0;
  // Raised when the client leaves while a worker computes its answer.
  std::shared_ptr<CancelToken> cancel;
  std::string in;  // received, not yet consumed (a head in progress, body bytes, pipelined data)
  // The request being read.
  Framing framing;
  HttpRequest request;
  bool head_only = false;
  uint64_t body_limit = 0;
  std::optional<ChunkedDecoder> chunked;
  std::string path;  // decoded, without the query
  bool holds_upload_slot = false;
  // The answer being written.
  std::string out;
  size_t out_offset = 0;
  bool close_after = false;
  size_t lingered = 0;
  int served = 0;
};

struct Done {
  uint64_t id;
  std::string bytes;
  bool close_after;
  Lane lane;
  std::string peer;
};

// A request's or answer's size past which the worker hands freed memory back to the system
// (malloc_trim): glibc keeps what a thread freed in that thread's arena, so without it every
// large upload left the server at its peak (1.9 GB to 7.7 GB over repeated 210 MB uploads,
// issue 26). Trimming costs about a millisecond per hundred MB of heap; small requests skip it.
constexpr size_t kTrimAfterBytes = size_t{8} << 20;

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;

}  // namespace

std::optional<std::string> Gzip(std::string_view in) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper (zlib.h, deflateInit2).
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

int DefaultComputeThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct HttpServer::Impl {
  explicit Impl(ServeOptions o)
      : options(std::move(o)),
        api(options.limits, PolicyFor(options)),
        uploads(options.limits.max_concurrent_uploads) {
    lane_threads[kLight] = std::max(1, options.light_threads);
    lane_threads[kCompute] = std::max(1, options.threads);
    lane_threads[kUpload] = uploads.max();
    lane_places[kLight] = lane_threads[kLight] + std::max(0, options.light_queue);
    lane_places[kCompute] = lane_threads[kCompute] + std::max(0, options.queue);
    // Uploads hold a slot from their head on, so their lane is never full, except for analyses
    // whose client left and that have not reached their next cancellation point yet.
    lane_places[kUpload] = 2 * lane_threads[kUpload];
    per_client = options.per_client > 0 ? options.per_client
                                        : lane_threads[kCompute] + std::max(0, options.queue) / 2;
    RegisterAllEndpoints(api);
    for (Endpoint& e : options.extra_endpoints) api.Register(std::move(e));
    options.extra_endpoints.clear();
    upload_paths = api.UploadPaths();
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (wake_fd >= 0) close(wake_fd);
  }

  ServeOptions options;
  Api api;
  UploadSlots uploads;
  std::vector<std::string> upload_paths;
  int listen_fd = -1;
  int wake_fd = -1;
  int epoll_fd = -1;
  int port = -1;
  std::atomic<bool> stop{false};
  std::atomic<bool> running{false};

  // Owned by the I/O thread.
  std::unordered_map<uint64_t, Conn> conns;
  uint64_t next_id = 2;
  bool listening = false;
  std::unique_ptr<WorkerPool> pools[kLanes];
  int lane_threads[kLanes] = {};
  int lane_places[kLanes] = {};     // workers + queue
  int lane_in_flight[kLanes] = {};  // submitted, answer not yet collected
  int per_client = 1;               // compute requests one peer may have in flight
  uint64_t loop_turn = 0;           // turns of the I/O loop, for eviction
  // Connections with no request under way (connected and silent, or kept alive between
  // requests), in the order they fell silent: eviction takes the front. An entry whose
  // connection has closed or spoken since (its stamp no longer matches) is skipped when met.
  struct Silent {
    uint64_t id;
    uint64_t stamp;
    uint64_t turn;  // the loop turn it fell silent in
  };
  std::deque<Silent> silent;
  uint64_t silent_seq = 0;
  // When accept() last failed for want of descriptors: listening resumes a moment later.
  std::optional<Clock::time_point> listen_again_at;
  // For counters() (written by the I/O thread only).
  std::atomic<uint64_t> accepted_total{0}, evicted_silent{0}, evicted_other{0};
  std::atomic<int> open_now{0};
  std::unordered_map<std::string, int> client_in_flight;  // compute lane, by peer address

  // Answers handed back by the workers.
  std::mutex done_mu;
  std::vector<Done> done;

  Status Bind();
  Status Run();
  void Wake() {
    if (wake_fd < 0) return;
    const uint64_t one = 1;
    ssize_t unused = write(wake_fd, &one, sizeof(one));
    (void)unused;
  }

 private:
  void SetInterest(uint64_t id, Conn& c, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
  }
  void Listen(bool on) {
    if (on) listen_again_at.reset();
    if (on == listening) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    epoll_ctl(epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd, &ev);
    listening = on;
  }
  void Accept();
  void MarkSilent(uint64_t id, Conn& c);
  uint64_t Victim();
  uint64_t OldestUnfinished() const;
  void Close(uint64_t id);
  void OnReadable(uint64_t id);
  void Process(uint64_t id);
  void StartBody(uint64_t id, Conn& c, const std::string& path, bool upload);
  void Dispatch(uint64_t id, Conn& c);
  void Answer(uint64_t id, Conn& c, HttpResponse r, bool close_after);
  void StartWriting(uint64_t id, Conn& c, std::string bytes, bool close_after);
  void TryWrite(uint64_t id);
  void CollectDone();
  void Expire();
  int WaitMs() const;
  std::optional<HttpError> CheckHostPort(const RequestHead& head) const;
};

Status HttpServer::Impl::Bind() {
  std::string host = options.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options.port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return IoError(
        fmt::format("cannot listen on {}: not an address of this machine", options.host));
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind the same port and silently
    // take half the connections.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, kListenBacklog) != 0 ||
        !SetNonBlocking(fd)) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return IoError(
        fmt::format("cannot listen on {}:{} (address in use, or not an address of this machine)",
                    options.host, options.port));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  listen_fd = fd;
  return Status::Ok();
}

std::optional<HttpError> HttpServer::Impl::CheckHostPort(const RequestHead& head) const {
  if (head.Count("host") == 0) return std::nullopt;  // HTTP/1.0 without Host
  const std::string value = ToLower(head.Get("host"));
  const auto [name, host_port] = SplitHostPort(value);
  // No port means the scheme's default, 80 (RFC 9110 sec. 4.2.1); browsers send any other.
  const int asked = host_port < 0 ? 80 : host_port;
  if (asked == port) return std::nullopt;
  for (const auto& a : options.allow_hosts) {
    if (ToLower(a) == value) return std::nullopt;
  }
  return HttpError{421, fmt::format("Host port {} is not this server's port {}", asked, port)};
}

void HttpServer::Impl::MarkSilent(uint64_t id, Conn& c) {
  c.idle = true;
  c.silent_stamp = ++silent_seq;
  silent.push_back({id, c.silent_stamp, loop_turn});
  // Entries of connections that spoke or closed are dropped when they reach the front; a queue
  // that grew past twice the connections (kept-alive clients going idle and busy again, no
  // eviction to pop them) is compacted so that it stays bounded.
  if (silent.size() > 2 * conns.size() + 64) {
    std::erase_if(silent, [this](const Silent& e) {
      auto it = conns.find(e.id);
      return it == conns.end() || it->second.silent_stamp != e.stamp;
    });
  }
}

// The connection to close to make room for a new one, 0 when none may go. First the silent ones
// (connected and not a byte yet, or kept alive between requests), the longest silent first; a
// silent one is read once more before it goes, so that a request that arrived since the loop
// last looked is served rather than evicted. None that fell silent in this turn of the loop:
// every connection gets at least one turn's look for its first bytes (a client that connected
// and sent at once is read when accepted, so this is for one whose bytes trail its handshake).
// Then, only when no connection is silent, the oldest of those draining after their answer or
// with an unfinished head (OldestUnfinished). Connections whose request is being read, computed
// or answered are never evicted. Reading the candidate may close it (the client had left): then
// a slot is free and 0 is returned too; the caller looks at the count again.
uint64_t HttpServer::Impl::Victim() {
  while (!silent.empty()) {
    const Silent front = silent.front();
    auto it = conns.find(front.id);
    if (it == conns.end() || it->second.silent_stamp != front.stamp) {
      silent.pop_front();
      continue;
    }
    if (front.turn == loop_turn) return 0;  // the rest fell silent in this turn too
    OnReadable(front.id);
    it = conns.find(front.id);
    if (it == conns.end()) return 0;  // it had closed: its slot is free
    if (it->second.silent_stamp == front.stamp) return front.id;
    // It spoke: its request goes on; the next one is looked at.
  }
  return OldestUnfinished();
}

// Of the connections draining after their answer, then those with an unfinished head (half-open
// or trickling), the one whose last byte is oldest; 0 when there is none. A scan: it is reached
// only when no connection is silent.
uint64_t HttpServer::Impl::OldestUnfinished() const {
  uint64_t victim = 0;
  int victim_rank = 3;
  Clock::time_point victim_time = Clock::time_point::max();
  for (const auto& [id, c] : conns) {
    int rank = 3;
    if (c.phase == Phase::kLinger) rank = 1;
    if (c.phase == Phase::kHead && !c.idle) rank = 2;
    if (rank < victim_rank || (rank == victim_rank && rank < 3 && c.last_active < victim_time)) {
      victim = id;
      victim_rank = rank;
      victim_time = c.last_active;
    }
  }
  return victim_rank == 3 ? 0 : victim;
}

// Called once per turn of the loop, after every other event of the turn was handled (so that a
// connection whose bytes arrived is read before it could be taken for a silent one). Accepts
// what the kernel's backlog holds until it is empty or no room can be made: a connection beyond
// the slots evicts one that was there before this turn (Victim), so a turn accepts at most as
// many as there are slots, and with silent connections in the slots a client waits behind at
// most (backlog ahead of it) / slots short turns. Each connection is read at once: a request
// sent with the connection is never taken for silence.
void HttpServer::Impl::Accept() {
  const size_t max = static_cast<size_t>(std::max(1, options.max_connections));
  for (;;) {
    uint64_t victim = 0;
    while (conns.size() >= max && (victim = Victim()) == 0) {
      if (conns.size() < max) continue;  // the candidate had closed: look again
      // No room this turn. When nothing is silent, unfinished or draining (every connection
      // has a request under way), further connections wait in the kernel's backlog until one
      // closes (Close listens again); otherwise the next turn evicts this turn's silent ones.
      if (silent.empty() && OldestUnfinished() == 0) Listen(false);
      return;
    }
    sockaddr_storage addr{};
    socklen_t addr_len = sizeof(addr);
    const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &addr_len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listening socket would stay readable and spin the loop.
        // Listening resumes when a connection closes, or in 100 ms.
        Listen(false);
        listen_again_at = Clock::now() + std::chrono::milliseconds(100);
      }
      return;  // EAGAIN: the backlog is empty
    }
    if (victim != 0) {
      auto v = conns.find(victim);
      ++(v != conns.end() && v->second.silent_stamp != 0 ? evicted_silent : evicted_other);
      Close(victim);
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    const uint64_t id = next_id++;
    Conn& c = conns[id];
    c.fd = fd;
    char name[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, name, sizeof(name));
    } else if (addr.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, name, sizeof(name));
    }
    c.peer = name;
    c.last_active = Clock::now();
    c.deadline = c.last_active + std::chrono::seconds(options.keep_alive_s);
    ++accepted_total;
    open_now = static_cast<int>(conns.size());
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      Close(id);
      continue;
    }
    MarkSilent(id, c);
    OnReadable(id);  // a request sent with the connection is already here
  }
}

void HttpServer::Impl::Close(uint64_t id) {
  auto it = conns.find(id);
  if (it == conns.end()) return;
  Conn& c = it->second;
  close(c.fd);  // which also takes it out of the epoll set (never dup'ed)
  // A worker still computing for this connection stops at its next cancellation point.
  if (c.cancel) c.cancel->Cancel();
  if (c.holds_upload_slot) uploads.Release();
  conns.erase(it);
  open_now = static_cast<int>(conns.size());
  if (!stop.load()) Listen(true);
}

void HttpServer::Impl::OnReadable(uint64_t id) {
  char buf[16384];
  // At most kReadBudgetPerTurn bytes, then the other connections get their turn: the socket is
  // level-triggered, so what is left is read at the next turn of the loop. Without the budget
  // one fast client (a chunk-extension flood) held the I/O thread for seconds.
  for (size_t budget = kReadBudgetPerTurn; budget > 0;) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    if (c.phase != Phase::kHead && c.phase != Phase::kBody && c.phase != Phase::kLinger) return;
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n == 0) {
      Close(id);  // the client closed: whatever it had not finished is dropped
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      Close(id);
      return;
    }
    budget -= std::min(budget, static_cast<size_t>(n));
    c.last_active = Clock::now();
    if (c.phase == Phase::kLinger) {
      c.lingered += static_cast<size_t>(n);
      if (c.lingered > (size_t{16} << 20)) {
        Close(id);
        return;
      }
      continue;
    }
    c.in.append(buf, static_cast<size_t>(n));
    Process(id);
  }
}

void HttpServer::Impl::Process(uint64_t id) {
  auto it = conns.find(id);
  if (it == conns.end()) return;
  Conn& c = it->second;
  const auto now = Clock::now();
  if (c.phase == Phase::kHead) {
    if (c.in.empty()) return;
    if (c.idle) {
      c.idle = false;
      c.silent_stamp = 0;
      c.deadline = now + std::chrono::seconds(options.io_timeout_s);
    }
    HeadParse p = ParseRequestHead(c.in, options.head_limits);
    if (p.state == HeadParse::State::kIncomplete) return;
    if (p.state == HeadParse::State::kError) {
      Answer(id, c, JsonError(p.error.status, p.error.message), true);
      return;
    }
    c.in.erase(0, p.consumed);
    if (std::optional<HttpError> e = FrameRequest(p.head, &c.framing)) {
      Answer(id, c, JsonError(e->status, e->message), true);
      return;
    }
    if (std::optional<HttpError> e = CheckHostPort(p.head)) {
      Answer(id, c, JsonError(e->status, e->message), true);
      return;
    }
    RequestHead& h = p.head;
    c.request = HttpRequest{};
    c.request.method = h.method;
    c.request.target = h.target;
    c.request.content_type = h.Get("content-type");
    c.request.host = h.Get("host");
    c.request.origin = h.Get("origin");
    c.request.sec_fetch_site = h.Get("sec-fetch-site");
    c.head_only = h.method == "HEAD";
    const std::string_view raw_path = std::string_view(h.target).substr(0, h.target.find('?'));
    const std::string path = PercentDecode(raw_path, false).value_or(std::string(raw_path));
    const bool upload =
        std::find(upload_paths.begin(), upload_paths.end(), path) != upload_paths.end();
    c.path = path;
    if (c.framing.chunked || c.framing.content_length > 0 || upload) {
      StartBody(id, c, path, upload);
      return;
    }
    Dispatch(id, c);
    return;
  }
  if (c.phase != Phase::kBody) return;
  if (c.chunked) {
    size_t consumed = 0;
    const ChunkedDecoder::Result r = c.chunked->Feed(c.in, c.request.body, &consumed);
    c.in.erase(0, consumed);
    if (r == ChunkedDecoder::Result::kError) {
      const HttpError& e = c.chunked->error();
      Answer(id, c,
             e.status == 413 ? api.BodyTooLarge(c.path, c.body_limit + 1)
                             : JsonError(e.status, e.message),
             true);
      return;
    }
    if (r == ChunkedDecoder::Result::kDone) Dispatch(id, c);
    return;
  }
  const uint64_t want = c.framing.content_length - c.request.body.size();
  const size_t take = static_cast<size_t>(std::min<uint64_t>(want, c.in.size()));
  c.request.body.append(c.in, 0, take);
  c.in.erase(0, take);
  if (c.request.body.size() == c.framing.content_length) Dispatch(id, c);
}

void HttpServer::Impl::StartBody(uint64_t id, Conn& c, const std::string& path, bool upload) {
  // What Handle would answer before looking at the body (Host, method, cross-origin) is answered
  // before a byte of the body is read.
  if (std::optional<HttpResponse> refused = api.Refuse(c.request)) {
    Answer(id, c, *std::move(refused), true);
    return;
  }
  c.body_limit = api.MaxBodyBytes(path);
  if (c.framing.chunked && !upload) {
    Answer(id, c,
           JsonError(411, fmt::format("send the body with a Content-Length (at most {} bytes); "
                                      "chunked bodies are taken by uploads only",
                                      c.body_limit)),
           true);
    return;
  }
  if (!c.framing.chunked && c.framing.content_length > c.body_limit) {
    Answer(id, c, api.BodyTooLarge(path, c.framing.content_length), true);
    return;
  }
  if (upload) {
    if (!uploads.TryAcquire()) {
      HttpResponse busy = JsonError(
          503, fmt::format("the server is already reading {} uploads; try again in a moment",
                           uploads.max()));
      busy.headers.emplace_back("Retry-After", "2");
      Answer(id, c, std::move(busy), true);
      return;
    }
    c.holds_upload_slot = true;
    // The whole upload, chunked or not, within its own time limit from the end of its head.
    c.deadline = Clock::now() + options.limits.upload_time_limit;
  }
  if (c.framing.chunked) c.chunked.emplace(c.body_limit, options.head_limits);
  // Reserve what was announced, up to 16 MiB: a client that announces 256 MiB and sends nothing
  // costs nothing.
  c.request.body.reserve(
      static_cast<size_t>(std::min<uint64_t>(c.framing.content_length, uint64_t{16} << 20)));
  c.phase = Phase::kBody;
  if (c.framing.expect_continue) {
    // 25 bytes on a socket with an empty send buffer; if it does not go, the client sends the
    // body after its own wait anyway (RFC 9110 sec. 10.1.1).
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ssize_t unused = send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
    (void)unused;
  }
  if (c.framing.chunked || c.framing.content_length > 0) {
    Process(id);
  } else {
    Dispatch(id, c);  // an upload path with an empty body: the Api says what is missing
  }
}

void HttpServer::Impl::Dispatch(uint64_t id, Conn& c) {
  const bool keep_alive =
      c.framing.keep_alive && c.served + 1 < std::max(1, options.max_keep_alive_requests);
  const Lane lane = c.holds_upload_slot ? kUpload : api.IsLight(c.path) ? kLight : kCompute;
  const bool over_share = lane == kCompute && client_in_flight[c.peer] >= per_client;
  if (lane_in_flight[lane] >= lane_places[lane] || over_share) {
    // Full: said at once, never queued past what the workers can finish in time. Retry-After:
    // a compute place frees within one time limit at the latest.
    const int64_t retry_s =
        lane == kCompute ? std::max<int64_t>(1, (options.limits.time_limit.count() + 999) / 1000)
                         : 1;
    HttpResponse busy = JsonError(
        503, over_share ? fmt::format("this client already has {} computations running or queued; "
                                      "wait for their answers",
                                      per_client)
                        : fmt::format("the server is busy ({} requests running or queued in its {} "
                                      "lane); try again in {} s",
                                      lane_places[lane], kLaneNames[lane], retry_s));
    busy.headers.emplace_back("Retry-After", std::to_string(retry_s));
    if (lane == kCompute && client_in_flight[c.peer] == 0) client_in_flight.erase(c.peer);
    Answer(id, c, std::move(busy), !keep_alive);
    return;
  }
  ++lane_in_flight[lane];
  if (lane == kCompute) ++client_in_flight[c.peer];
  c.phase = Phase::kWorking;
  // Only the hang-up is watched while a worker computes: a client that leaves cancels its work.
  SetInterest(id, c, EPOLLRDHUP);
  const bool head_only = c.head_only, gzip_ok = c.framing.accepts_gzip;
  const Api* a = &api;
  c.cancel = std::make_shared<CancelToken>();
  auto request = std::make_shared<HttpRequest>(std::move(c.request));
  request->arrival = Clock::now();
  request->cancel = c.cancel.get();
  c.request = HttpRequest{};
  pools[lane]->Submit([this, a, id, request, head_only, gzip_ok, keep_alive, lane,
                       cancel = c.cancel, peer = c.peer]() mutable {
    std::string bytes;
    size_t large = request->body.size();
    if (cancel->CancelRequested()) {
      bytes.clear();  // the client left while this waited: nobody reads an answer
    } else {
      try {
        bytes = Serialize(a->Handle(*request), head_only, keep_alive, gzip_ok);
      } catch (...) {
        bytes = Serialize(JsonError(500, "internal error"), head_only, false, false);
      }
    }
    request.reset();  // an upload's body is freed before the answer waits to be written
    large = std::max(large, bytes.size());
    if (large >= kTrimAfterBytes) malloc_trim(0);
    {
      std::lock_guard<std::mutex> lock(done_mu);
      done.push_back({id, std::move(bytes), !keep_alive, lane, std::move(peer)});
    }
    Wake();
  });
}

void HttpServer::Impl::Answer(uint64_t id, Conn& c, HttpResponse r, bool close_after) {
  StartWriting(id, c, Serialize(std::move(r), c.head_only, !close_after, false), close_after);
}

void HttpServer::Impl::StartWriting(uint64_t id, Conn& c, std::string bytes, bool close_after) {
  c.out = std::move(bytes);
  c.out_offset = 0;
  c.close_after = close_after;
  c.phase = Phase::kWriting;
  c.deadline = Clock::now() + std::chrono::seconds(options.io_timeout_s);
  TryWrite(id);
}

void HttpServer::Impl::TryWrite(uint64_t id) {
  auto it = conns.find(id);
  if (it == conns.end()) return;
  Conn& c = it->second;
  if (c.phase != Phase::kWriting) return;
  while (c.out_offset < c.out.size()) {
    const ssize_t n =
        send(c.fd, c.out.data() + c.out_offset, c.out.size() - c.out_offset, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        SetInterest(id, c, EPOLLOUT);
        return;
      }
      Close(id);
      return;
    }
    c.out_offset += static_cast<size_t>(n);
    c.last_active = Clock::now();
  }
  c.out.clear();
  c.out.shrink_to_fit();
  if (c.holds_upload_slot) {
    uploads.Release();
    c.holds_upload_slot = false;
  }
  c.chunked.reset();
  // Answered, the connection may be evicted again: if the server stopped accepting because
  // every connection had a request under way, it accepts again.
  if (!stop.load()) Listen(true);
  if (c.close_after) {
    // Whatever the client still sends (a body we refused to read) is drained for a moment so
    // that our answer is not lost to a TCP reset, then the connection closes.
    shutdown(c.fd, SHUT_WR);
    c.phase = Phase::kLinger;
    c.deadline = Clock::now() + std::chrono::seconds(1);
    SetInterest(id, c, EPOLLIN | EPOLLRDHUP);
    return;
  }
  ++c.served;
  c.phase = Phase::kHead;
  c.framing = Framing{};
  c.head_only = false;
  if (c.in.empty()) {
    MarkSilent(id, c);
  } else {
    c.idle = false;
    c.silent_stamp = 0;
  }
  c.deadline =
      Clock::now() + std::chrono::seconds(c.idle ? options.keep_alive_s : options.io_timeout_s);
  SetInterest(id, c, EPOLLIN | EPOLLRDHUP);
  if (!c.in.empty()) Process(id);  // a pipelined request already received
}

void HttpServer::Impl::CollectDone() {
  std::vector<Done> ready;
  {
    std::lock_guard<std::mutex> lock(done_mu);
    ready.swap(done);
  }
  for (Done& d : ready) {
    --lane_in_flight[d.lane];
    if (d.lane == kCompute) {
      auto share = client_in_flight.find(d.peer);
      if (share != client_in_flight.end() && --share->second <= 0) client_in_flight.erase(share);
    }
    auto it = conns.find(d.id);
    if (it == conns.end()) continue;  // closed meanwhile
    it->second.cancel.reset();
    StartWriting(d.id, it->second, std::move(d.bytes), d.close_after);
  }
}

void HttpServer::Impl::Expire() {
  const auto now = Clock::now();
  std::vector<uint64_t> expired;
  for (auto& [id, c] : conns) {
    if (c.phase != Phase::kWorking && c.deadline <= now) expired.push_back(id);
  }
  for (uint64_t id : expired) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    Conn& c = it->second;
    if ((c.phase == Phase::kHead && !c.idle) || c.phase == Phase::kBody) {
      // A request that did not arrive in time: say so, then close (the client loses its place).
      const bool upload = c.holds_upload_slot;
      Answer(id, c,
             JsonError(408, upload ? fmt::format("the upload took longer than {} ms to arrive",
                                                 options.limits.upload_time_limit.count())
                                   : fmt::format("the request took longer than {} s to arrive",
                                                 options.io_timeout_s)),
             true);
      continue;
    }
    Close(id);  // idle keep-alive, a stalled write, or the end of a linger
  }
}

int HttpServer::Impl::WaitMs() const {
  auto next = Clock::now() + std::chrono::seconds(1);
  for (const auto& [id, c] : conns) {
    if (c.phase != Phase::kWorking) next = std::min(next, c.deadline);
  }
  if (listen_again_at) next = std::min(next, *listen_again_at);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

Status HttpServer::Impl::Run() {
  if (listen_fd < 0) return Internal("HttpServer::Run before Bind");
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0) return IoError("cannot create the event loop (epoll/eventfd)");
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = kWakeId;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &wake);
  for (int lane = 0; lane < kLanes; ++lane) {
    pools[lane] = std::make_unique<WorkerPool>(lane_threads[lane]);
  }
  // glibc makes up to 8 malloc arenas per core, each keeping what its threads freed; two hold
  // the heap of this server's few workers without contention that shows (measured in
  // bench/soak.py, docs/workbench.md "Under abuse"), and malloc_trim after large requests
  // returns the rest.
  mallopt(M_ARENA_MAX, 2);
  running = true;
  Listen(true);
  std::vector<epoll_event> events(256);
  while (!stop.load()) {
    ++loop_turn;
    const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), WaitMs());
    if (n < 0 && errno != EINTR) break;
    bool pending = false;  // connections wait in the backlog
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      const uint32_t ev = events[i].events;
      if (id == kListenId) {
        pending = true;  // accepted after the rest of this turn's events (Accept)
      } else if (id == kWakeId) {
        uint64_t count;
        ssize_t unused = read(wake_fd, &count, sizeof(count));
        (void)unused;
        CollectDone();
      } else {
        auto it = conns.find(id);
        if (it == conns.end()) continue;
        const Phase phase = it->second.phase;
        if (phase == Phase::kWorking && (ev & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))) {
          // The client is gone (or has shut its side: it cannot be waiting for an answer it
          // will read, as nginx also judges): its work is cancelled and the worker's answer will
          // find no connection.
          Close(id);
        } else if (phase == Phase::kWriting && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
          TryWrite(id);
        } else if (phase != Phase::kWorking && phase != Phase::kWriting &&
                   (ev & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))) {
          OnReadable(id);
        }
      }
    }
    Expire();
    if (listen_again_at && Clock::now() >= *listen_again_at) Listen(true);
    if (pending && listening) Accept();
  }
  // Stop: close every connection, let the workers finish what they hold, and join them.
  Listen(false);
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : conns) ids.push_back(id);
  for (uint64_t id : ids) Close(id);
  for (auto& pool : pools) {
    pool->Shutdown();
    pool.reset();
  }
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done.clear();
  }
  close(epoll_fd);
  epoll_fd = -1;
  running = false;
  return Status::Ok();
}

HttpServer::HttpServer(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Bind() { return impl_->Bind(); }

int HttpServer::port() const { return impl_->port; }

HttpServer::Counters HttpServer::counters() const {
  return {impl_->accepted_total.load(), impl_->evicted_silent.load(), impl_->evicted_other.load(),
          impl_->open_now.load()};
}

Status HttpServer::Run() { return impl_->Run(); }

void HttpServer::Stop() {
  impl_->stop = true;
  impl_->Wake();
}

}  // namespace infralens::server
