// A bounded load test of `infralens serve` on loopback: N requests of mixed kinds (pages, each API
// endpoint, gzip-accepting requests, bad input, a traversal attempt, hostile framing: Range
// lists, compressed bodies, Content-Length with Transfer-Encoding) over C kept-alive connections,
// each answer checked for its expected status, while S slow clients trickle request heads a byte
// at a time. Prints throughput and latency percentiles; fails on any error or when the server
// stops answering. Only 127.0.0.1 is ever contacted.
//
//   serve_load [--requests 5000] [--connections 32] [--slow 16] [--port P] [--max-seconds 120]
//              [--warmup-seconds 600]
// Without --port it starts the server in-process, with the default options, on a free port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_client.h"
#include "server/http_server.h"

namespace {

using Clock = std::chrono::steady_clock;
using infralens::testing::HttpClient;
using infralens::testing::RawResponse;

struct Kind {
  const char* name;
  const char* method;
  std::string target;
  std::string body;
  int expect;
  std::map<std::string, std::string> headers = {};
};

// A slowloris client: a request head sent one byte every 100 ms until the server answers or
// closes, or `stop` is set; then again on a new connection.
void Trickle(int port, const std::atomic<bool>& stop) {
  const std::string head = "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                           "\r\nX-Slow: " + std::string(4096, 'a');
  while (!stop.load()) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      for (char c : head) {
        if (stop.load() || send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    close(fd);
  }
}

// Stops and joins the in-process server on every path out of main.
struct ServerGuard {
  std::unique_ptr<infralens::server::HttpServer> server;
  std::thread thread;
  ~ServerGuard() {
    if (server) server->Stop();
    if (thread.joinable()) thread.join();
  }
};

std::string Csv1F1B() {
  // 1F1B, P = 4, m = 8, in PyTorch's CSV: warm-up forwards, then one forward one backward.
  std::string out;
  const int P = 4, m = 8;
  for (int r = 0; r < P; ++r) {
    std::vector<std::string> cells;
    int f = 0, b = 0;
    for (int k = 0; k < std::min(P - r, m); ++k)
      cells.push_back(std::to_string(r) + "F" + std::to_string(f++));
    while (b < m) {
      cells.push_back(std::to_string(r) + "B" + std::to_string(b++));
      if (f < m) cells.push_back(std::to_string(r) + "F" + std::to_string(f++));
    }
    for (size_t k = 0; k < cells.size(); ++k) out += (k ? "," : "") + cells[k];
    out += "\n";
  }
  return out;
}

int Arg(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = Arg(argc, argv, "--requests", 5000);
  const int connections = Arg(argc, argv, "--connections", 32);
  const int max_seconds = Arg(argc, argv, "--max-seconds", 120);
  const int slow = Arg(argc, argv, "--slow", 16);
  // The scenario answers take a second here, tens of seconds under the sanitizers and longer on a
  // busy machine: the warm-up has its own, generous budget, separate from the timed run's.
  const int warmup_seconds = Arg(argc, argv, "--warmup-seconds", 600);
  int port = Arg(argc, argv, "--port", 0);
  if (requests < 1 || connections < 1 || connections > 256 || max_seconds < 1 || slow < 0 ||
      slow > 64 || warmup_seconds < 1) {
    std::fprintf(stderr,
                 "serve_load: --requests >= 1, --connections 1..256, --slow 0..64, --max-seconds "
                 ">= 1, --warmup-seconds >= 1\n");
    return 2;
  }
  ServerGuard guard;
  auto& server = guard.server;
  auto& server_thread = guard.thread;
  if (port == 0) {
    infralens::server::ServeOptions opt;
    opt.port = 0;
    server = std::make_unique<infralens::server::HttpServer>(opt);
    if (auto st = server->Bind(); !st.ok()) {
      std::fprintf(stderr, "serve_load: %s\n", st.message().c_str());
      return 1;
    }
    port = server->port();
    server_thread = std::thread([&] { (void)server->Run(); });
  }

  const std::vector<Kind> kinds = {
      {"page /", "GET", "/", "", 200},
      {"script", "GET", "/js/pipeline.js", "", 200},
      {"schedule json", "GET", "/api/schedule?schedule=1f1b&pp=4&microbatches=8&dependencies=1", "",
       200},
      {"compare", "GET", "/api/compare?pp=4&microbatches=8", "", 200},
      {"import csv", "POST", "/api/import?f=1&b=2", Csv1F1B(), 200},
      {"schedule svg", "GET", "/api/schedule?schedule=zbv&pp=8&microbatches=32&format=svg", "",
       200},
      {"topology", "GET", "/api/topology?nodes=8&tp=8&dp=4&pp=2", "", 200},
      {"memory", "GET", "/api/memory?model=llama3-8b&tp=2&pp=2&dp=2&global_batch=64", "", 200},
      {"export one layout", "GET",
       "/api/export?model=llama3-8b&gpus=16&global_batch=64&tp=2&pp=2&format=megatron", "", 200},
      {"scenarios", "GET", "/api/scenarios", "", 200},
      {"bad parameter", "GET", "/api/schedule?pp=0", "", 400},
      {"traversal", "GET", "/../../etc/passwd", "", 404},
      {"schedule json gzip",
       "GET",
       "/api/schedule?schedule=interleaved-1f1b&pp=8&vpp=2&microbatches=64&dependencies=1",
       "",
       200,
       {{"Accept-Encoding", "gzip"}}},
      // The pages and the lab answers as a browser asks for them: compressed.
      {"page / gzip", "GET", "/", "", 200, {{"Accept-Encoding", "gzip, deflate, br"}}},
      {"script gzip", "GET", "/js/design.js", "", 200, {{"Accept-Encoding", "gzip, deflate, br"}}},
      {"topology gzip",
       "GET",
       "/api/topology?nodes=8&tp=8&dp=4&pp=2&coordinates=1",
       "",
       200,
       {{"Accept-Encoding", "gzip, deflate, br"}}},
      {"range list", "GET", "/", "", 200, {{"Range", "bytes=0-,0-,0-,0-,0-,0-,0-,0-,0-,0-"}}},
      {"gzip body",
       "POST",
       "/api/import?f=1&b=2",
       Csv1F1B(),
       415,
       {{"Content-Type", "text/csv"}, {"Content-Encoding", "gzip"}}},
      {"length and chunked",
       "POST",
       "/api/import?f=1&b=2",
       Csv1F1B(),
       400,
       {{"Content-Type", "text/csv"}, {"Transfer-Encoding", "chunked"}}},
  };
  // Warm-up, not timed: the scenario answers are computed once per server (a second here, tens
  // of seconds under the sanitizers), then served from memory; until then the server answers 503.
  {
    HttpClient warm(port, 30000);
    const auto until = Clock::now() + std::chrono::seconds(warmup_seconds);
    for (;;) {
      RawResponse r;
      std::string err;
      if (warm.Request("GET", "/api/scenarios", "", {}, &r, &err) && r.status == 200) break;
      if (Clock::now() > until) {
        std::fprintf(stderr, "serve_load: /api/scenarios not ready after %d s: %s\n",
                     warmup_seconds, err.empty() ? r.body.substr(0, 200).c_str() : err.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::atomic<int> shed{0};  // 503 + Retry-After answers, retried
  std::mutex mu;
  std::vector<double> latencies_ms;
  std::vector<std::string> error_samples;
  latencies_ms.reserve(requests);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(max_seconds);
  std::atomic<bool> stop_slow{false};
  std::vector<std::thread> slow_clients;
  for (int i = 0; i < slow; ++i) slow_clients.emplace_back([&] { Trickle(port, stop_slow); });
  std::vector<std::thread> workers;
  for (int c = 0; c < connections; ++c) {
    workers.emplace_back([&] {
      HttpClient client(port, 30000);
      std::vector<double> mine;
      for (int k; (k = next.fetch_add(1)) < requests && Clock::now() < deadline;) {
        const Kind& kind = kinds[k % kinds.size()];
        RawResponse r;
        std::string err;
        auto t0 = Clock::now();
        std::map<std::string, std::string> headers = kind.headers;
        if (!kind.body.empty()) headers.emplace("Content-Type", "text/csv");
        bool ok = client.Request(kind.method, kind.target, kind.body, headers, &r, &err);
        // A full compute lane answers 503 with Retry-After at once (docs/workbench.md, "Under
        // abuse"): a polite client comes back. Bounded: at most 50 tries of 100 ms each.
        for (int retry = 0;
             ok && r.status == 503 && kind.expect != 503 && r.headers.contains("retry-after") &&
             retry < 50 && Clock::now() < deadline;
             ++retry) {
          ++shed;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          ok = client.Request(kind.method, kind.target, kind.body, headers, &r, &err);
        }
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        // A request that accepts gzip gets it (every such kind here answers more than 1 KiB).
        const bool gzip_asked = kind.headers.contains("Accept-Encoding") && kind.expect == 200;
        if (ok && gzip_asked && r.headers["content-encoding"] != "gzip") {
          ok = false;
          err = std::string("not compressed: Content-Encoding '") + r.headers["content-encoding"] +
                "'";
        }
        if (!ok || r.status != kind.expect) {
          ++errors;
          std::lock_guard<std::mutex> lock(mu);
          if (error_samples.size() < 5) {
            error_samples.push_back(
                std::string(kind.name) + ": " +
                (ok ? "status " + std::to_string(r.status) + " " + r.body.substr(0, 200) : err));
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : workers) t.join();
  stop_slow = true;
  for (auto& t : slow_clients) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // Afterwards the server still answers.
  HttpClient check(port, 10000);
  RawResponse after;
  std::string err;
  const bool alive =
      check.Request("GET", "/api/compare?pp=4&microbatches=8", "", {}, &after, &err) &&
      after.status == 200;

  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    if (latencies_ms.empty()) return 0.0;
    size_t i =
        std::min(latencies_ms.size() - 1, static_cast<size_t>(p * (latencies_ms.size() - 1) + 0.5));
    return latencies_ms[i];
  };
  const int done = static_cast<int>(latencies_ms.size());
  std::printf(
      "serve_load: %d requests (%zu kinds, mixed) over %d connections, %d slow clients beside, in "
      "%.2f s: %.0f requests/s\n",
      done, kinds.size(), connections, slow, seconds, done / seconds);
  std::printf("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", pct(0.5), pct(0.9), pct(0.99),
              latencies_ms.empty() ? 0.0 : latencies_ms.back());
  std::printf("shed (503 with Retry-After, retried): %d\n", shed.load());
  for (const auto& s : error_samples) std::printf("error: %s\n", s.c_str());
  std::printf("server answers afterwards: %s\n", alive ? "yes" : ("no: " + err).c_str());
  const bool complete = done == requests;
  if (!complete)
    std::printf("only %d of %d requests done within %d s\n", done, requests, max_seconds);
  const int failed = errors.load() + (alive ? 0 : 1) + (complete ? 0 : 1);
  std::printf("%d passed, %d failed\n", done - errors.load() + (alive ? 1 : 0), failed);

  return failed == 0 ? 0 : 1;
}
