// `infralens serve`: the Api behind an HTTP/1.1 listener (cpp-httplib, which only
// http_server.cc includes). Binds 127.0.0.1 unless told otherwise, bounds request bodies, read and
// write times, and runs requests on a fixed pool of threads with a bounded queue.
#ifndef INFRALENS_SERVER_HTTP_SERVER_H_
#define INFRALENS_SERVER_HTTP_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/api.h"

namespace infralens::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;        // 0 picks a free port
  int threads = 16;       // worker threads; connections beyond them wait in a bounded queue
  int queue = 64;         // connections accepted but not yet served; the listener waits when full
  int io_timeout_s = 10;  // reading a request / writing a response
  int keep_alive_s = 2;   // an idle kept-alive connection is closed after this (it holds a worker)
  ServerLimits limits;
  // Extra Host names to accept besides the loopback names and the bound address.
  std::vector<std::string> allow_hosts;
};

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
  // Serves until Stop() (from another thread). Call after Bind.
  Status Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_HTTP_SERVER_H_
