// `infralens serve`: the Api behind InfraLens's own HTTP/1.1 transport (http_server.cc, framing
// rules in http_parser.h). Binds 127.0.0.1 unless told otherwise. One I/O thread reads and writes
// every connection without blocking, so a slow or silent client holds no worker; a complete request
// goes to a fixed pool of workers. Every request has a total deadline for its head and body, a
// bounded head, a bounded body, and at most `max_connections` connections are open at once. See
// docs/workbench.md ("The transport") for why it is not cpp-httplib.
#ifndef INFRALENS_SERVER_HTTP_SERVER_H_
#define INFRALENS_SERVER_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/api.h"
#include "server/http_parser.h"

namespace infralens::server {

// The cores this machine has (at least 1).
int DefaultComputeThreads();

// Bytes one connection's socket is read per turn of the I/O loop before the others get theirs.
inline constexpr size_t kReadBudgetPerTurn = 64 * 1024;

// Connections the kernel completes and holds for the server to accept (listen(2)'s backlog;
// Linux caps it at net.core.somaxconn, 4096 by default since 5.4). With room for only 256, a
// thousand silent sockets reconnecting as they were evicted kept it full, and a new client's
// SYN was dropped (retried by its kernel after 1 s).
inline constexpr int kListenBacklog = 4096;

// Requests are admitted into one of three lanes, each with its own workers and queue, so that
// one kind of work never waits behind another:
//  - light: the pages, /api and the endpoints marked light (Endpoint::light), a table lookup or
//    one formula each; a few workers of their own;
//  - compute: every other API request (searches, simulations), as many workers as cores, since
//    more only share the same cores and make every answer later;
//  - upload: uploads whose body has arrived, one worker per upload slot.
// A request that finds its lane (workers and queue) full, or its client over its share of the
// compute lane, is answered 503 with Retry-After at once. Its time limit counts from its arrival,
// so time in a queue is part of it; a request whose limit passed while queued is not computed,
// and one whose client has gone is abandoned at its next cancellation point.
struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 picks a free port
  // Compute-lane workers (searches and simulations computed at once): the cores there are.
  int threads = DefaultComputeThreads();
  // Compute requests waiting for a worker; beyond it a request gets 503 with Retry-After.
  int queue = 16;
  // Compute requests (running or queued) one client (one peer address) may have at once;
  // 0: threads + queue / 2, so that one client cannot take every place.
  int per_client = 0;
  int light_threads = 2;  // light-lane workers
  int light_queue = 64;   // light requests waiting for a worker
  // Open connections. When every slot is taken, a new connection evicts the one silent the
  // longest (connected without a byte, or kept alive between requests; read once more before it
  // goes, and never one that fell silent in the same turn of the I/O loop); only when none is
  // silent, the oldest draining after its answer or with an unfinished head. When every
  // connection has a request under way, new ones wait in the kernel's listen backlog.
  int max_connections = 256;
  // Total time to receive one request's head and (non-upload) body, from its first byte; a
  // client that has not finished by then gets 408 and loses its connection. Also the total time
  // to write one response.
  int io_timeout_s = 10;
  int keep_alive_s = 5;               // an idle kept-alive connection is closed after this
  int max_keep_alive_requests = 100;  // requests on one connection before it is closed
  HeadLimits head_limits;
  ServerLimits limits;
  // Extra Host names to accept besides the loopback names and the bound address. "name:port"
  // also accepts that port (an ssh tunnel's local port, say); a bare name accepts only ours.
  std::vector<std::string> allow_hosts;
  // Endpoints served besides the workbench's own (tests register ones that block or count).
  std::vector<Endpoint> extra_endpoints;
};

// `in` gzip-compressed at level 1, as the server sends a compressible response to a client that
// accepts it: JSON of schedules compresses about 8x at a few hundred MB/s, where brotli's highest
// quality (cpp-httplib's default) took 16.6 s for a 20 MB answer. nullopt on a zlib error (the
// body then goes uncompressed).
std::optional<std::string> Gzip(std::string_view in);

// Loopback addresses and names: 127.0.0.0/8, ::1, localhost.
bool IsLoopbackHost(const std::string& host);

class HttpServer {
 public:
  explicit HttpServer(ServeOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; IoError when the address is taken or invalid.
  Status Bind();
  // The bound port (after Bind).
  int port() const;
  // Serves until Stop() (from another thread). Call after Bind. Joins every worker before it
  // returns.
  Status Run();
  // Thread-safe; Run returns soon after. Safe before Run and more than once.
  void Stop();

  // What the I/O loop has done with connections so far (thread-safe; for tests and the soak).
  struct Counters {
    uint64_t accepted = 0;
    // Closed to make room for a new connection: silent ones (connected without a byte, or kept
    // alive between requests), and the others (draining after an answer, an unfinished head).
    uint64_t evicted_silent = 0;
    uint64_t evicted_other = 0;
    int open = 0;  // connections open now
  };
  Counters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_HTTP_SERVER_H_
