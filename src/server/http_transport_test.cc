// The transport against the hostile clients of issue 13, on a real loopback socket: each probe
// asserts the status, that the server's memory stayed bounded, and that an ordinary request is
// still answered meanwhile. No test depends on timing beyond generous deadlines: a probe that
// must be cut off by a deadline runs with a short one, and "still served" means served before
// the hostile connections could have expired.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http_client.h"
#include "server/http_parser.h"
#include "server/http_server.h"

namespace infralens::server {
namespace {

using ::infralens::testing::HttpClient;
using ::infralens::testing::RawResponse;

// A size field of /proc/self/status ("VmHWM", "VmRSS", proc(5)) in bytes; 0 when /proc cannot
// tell.
int64_t ProcStatusBytes(std::string_view field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      return std::stoll(line.substr(field.size() + 1)) * 1024;
    }
  }
  return 0;
}
// Peak resident memory of this process since the last ResetPeakRss(), in bytes (Linux: writing 5
// to /proc/self/clear_refs resets VmHWM, proc(5)).
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }
int64_t PeakRssBytes() { return ProcStatusBytes("VmHWM"); }
int64_t RssBytes() { return ProcStatusBytes("VmRSS"); }

// A raw connection: send bytes as they are, read whatever comes back.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Raw() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  // Sends all of `data`; false once the server stopped taking it (closed, reset).
  bool Send(std::string_view data) {
    while (!data.empty()) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, 10000) <= 0) return false;
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until the server closes or `timeout_ms` passes; returns what arrived.
  std::string ReadAll(int timeout_ms = 15000) {
    return ReadUntil(timeout_ms, [](const std::string&) { return false; });
  }
  // Reads one whole response, its head and then Content-Length bytes of body, and returns it
  // without waiting for the server to close (a kept-alive connection stays open); what arrived
  // when the server closes or `timeout_ms` passes first.
  std::string ReadResponse(int timeout_ms = 15000) {
    return ReadUntil(timeout_ms, [](const std::string& got) {
      const size_t head_end = got.find("\r\n\r\n");
      if (head_end == std::string::npos) return false;
      std::string head = got.substr(0, head_end);
      std::ranges::transform(head, head.begin(), [](unsigned char c) { return std::tolower(c); });
      const size_t at = head.find("\r\ncontent-length:");
      return at != std::string::npos &&
             got.size() >= head_end + 4 + std::stoul(head.substr(at + 17));
    });
  }
  // Whether the server has closed this connection (a read sees EOF or a reset now).
  bool ClosedByServer() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char c;
    return recv(fd_, &c, 1, MSG_PEEK) <= 0;
  }

 private:
  // Reads until `complete(what arrived)` holds, the server closes or `timeout_ms` passes.
  template <typename Complete>
  std::string ReadUntil(int timeout_ms, Complete complete) {
    std::string got;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[65536];
    while (!complete(got)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            end - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }

  int fd_ = -1;
};

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

class TransportTest : public ::testing::Test {
 protected:
  void Start(ServeOptions opt) {
    opt.port = 0;
    server_ = std::make_unique<HttpServer>(opt);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Run(); });
  }
  void SetUp() override {
    ServeOptions opt;
    opt.threads = 4;
    Start(opt);
  }
  void TearDown() override {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string Host() const { return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n"; }
  int port() const { return server_->port(); }
  std::string Exchange(const std::string& raw) {
    Raw c(port());
    EXPECT_TRUE(c.ok());
    c.Send(raw);
    return c.ReadAll();
  }
  // An ordinary request on a fresh connection; its status (0 when it got no answer).
  int Ordinary() {
    HttpClient c(port());
    RawResponse r;
    std::string err;
    if (!c.Request("GET", "/api/compare?pp=2&m=4", "", {}, &r, &err)) return 0;
    return r.status;
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(TransportTest, RangeIsIgnoredSoOneRequestCannotAmplify) {
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 150; ++i) ranges += ",0-";
  const std::string plain = Exchange("GET / HTTP/1.1\r\n" + Host() + "Connection: close\r\n\r\n");
  ResetPeakRss();
  const int64_t before = RssBytes();
  const std::string ranged = Exchange("GET / HTTP/1.1\r\n" + Host() + "Range: " + ranges +
                                      "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusOf(ranged), 200);
  EXPECT_EQ(ranged.size(), plain.size());  // the same whole page, not 151 copies of it
  EXPECT_LT(PeakRssBytes() - before, 64 << 20);
}

TEST_F(TransportTest, CompressedRequestBodiesAreRefused) {
  const std::string r = Exchange("POST /api/import HTTP/1.1\r\n" + Host() +
                                 "Content-Type: text/csv\r\nContent-Encoding: gzip\r\n"
                                 "Content-Length: 4\r\n\r\nabcd");
  EXPECT_EQ(StatusOf(r), 415);
  EXPECT_EQ(Ordinary(), 200);
}

TEST_F(TransportTest, ContentLengthWithTransferEncodingIsRefused) {
  const std::string r = Exchange("POST /api/import HTTP/1.1\r\n" + Host() +
                                 "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "ffffffff\r\n");
  EXPECT_EQ(StatusOf(r), 400);
  EXPECT_NE(r.find("Content-Length and Transfer-Encoding"), std::string::npos);
  EXPECT_EQ(StatusOf(Exchange("POST /api/import HTTP/1.1\r\n" + Host() +
                              "Transfer-Encoding: gzip, chunked\r\n\r\n")),
            501);
}

TEST_F(TransportTest, HeadsAreBoundedInLinesFieldsAndBytes) {
  std::string many = "GET / HTTP/1.1\r\n" + Host();
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": a\r\n";
  EXPECT_EQ(StatusOf(Exchange(many + "\r\n")), 431);
  EXPECT_EQ(StatusOf(Exchange("GET / HTTP/1.1\r\n" + Host() + "X-Long: " + std::string(9000, 'a') +
                              "\r\n\r\n")),
            431);
  // 64 MiB of request line: answered 414 after the first 8 KiB; the rest is never buffered.
  ResetPeakRss();
  const int64_t before = RssBytes();
  Raw c(port());
  ASSERT_TRUE(c.ok());
  c.Send("GET /" + std::string(16 << 10, 'a'));
  const std::string chunk(1 << 20, 'a');
  for (int i = 0; i < 64 && c.Send(chunk); ++i) {
  }
  EXPECT_EQ(StatusOf(c.ReadAll()), 414);
  EXPECT_LT(PeakRssBytes() - before, 32 << 20);
  EXPECT_EQ(Ordinary(), 200);
}

TEST_F(TransportTest, SlowClientsHoldNoWorker) {
  // 32 connections (8x the 4 workers) each trickle a header; an ordinary request is still
  // answered while all of them are open. Their deadline is 10 s: had the ordinary request waited
  // for them, the client's own 10 s timeout would have failed it first.
  std::vector<std::unique_ptr<Raw>> slow;
  for (int i = 0; i < 32; ++i) {
    slow.push_back(std::make_unique<Raw>(port()));
    ASSERT_TRUE(slow.back()->ok());
    slow.back()->Send("GET / HTTP/1.1\r\n" + Host() + "X-Slow: ");
  }
  for (auto& s : slow) s->Send("a");
  EXPECT_EQ(Ordinary(), 200);
  int open = 0;
  for (auto& s : slow) open += s->ClosedByServer() ? 0 : 1;
  EXPECT_GT(open, 0);
}

TEST_F(TransportTest, RequestsWithoutAHostOrWithTwoAreRefused) {
  EXPECT_EQ(StatusOf(Exchange("GET / HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Exchange("GET / HTTP/1.1\r\n" + Host() + Host() + "\r\n")), 400);
  EXPECT_EQ(StatusOf(Exchange("POST /api/compare HTTP/1.1\r\n" + Host() +
                              "Origin: http://127.0.0.1:" + std::to_string(port()) +
                              "\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n")),
            400);
  // HTTP/1.0 has no Host requirement; it is answered and closed.
  EXPECT_EQ(StatusOf(Exchange("GET /api/compare?pp=2&m=4 HTTP/1.0\r\n\r\n")), 200);
}

TEST_F(TransportTest, ErrorsAreValidJsonWhateverTheBytes) {
  const std::string r = Exchange("GET /api/schedule?schedule=%FF%C0%AF HTTP/1.1\r\n" + Host() +
                                 "Connection: close\r\n\r\n");
  EXPECT_EQ(StatusOf(r), 400);
  const std::string body = r.substr(r.find("\r\n\r\n") + 4);
  EXPECT_TRUE(nlohmann::json::accept(body)) << body;
}

TEST_F(TransportTest, GzipWhenAskedAndTheSameBytesInflated) {
  HttpClient c(port());
  RawResponse plain, zipped;
  std::string err;
  const std::string target = "/api/schedule?schedule=1f1b&pp=8&microbatches=64";
  ASSERT_TRUE(c.Request("GET", target, "", {}, &plain, &err)) << err;
  ASSERT_TRUE(c.Request("GET", target, "", {{"Accept-Encoding", "gzip, br"}}, &zipped, &err))
      << err;
  ASSERT_EQ(zipped.status, 200);
  EXPECT_EQ(zipped.headers["content-encoding"], "gzip");
  EXPECT_EQ(plain.headers.count("content-encoding"), 0u);
  EXPECT_LT(zipped.body.size(), plain.body.size() / 3);
  // Inflate with zlib (windowBits 15 + 32 detects the gzip wrapper) and compare.
  std::string inflated(plain.body.size() + 1, '\0');
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 32), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(zipped.body.data());
  z.avail_in = static_cast<uInt>(zipped.body.size());
  z.next_out = reinterpret_cast<Bytef*>(inflated.data());
  z.avail_out = static_cast<uInt>(inflated.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  inflated.resize(inflated.size() - z.avail_out);
  inflateEnd(&z);
  EXPECT_EQ(inflated, plain.body);
}

TEST_F(TransportTest, PipelinedRequestsAreAnsweredInOrder) {
  const std::string r =
      Exchange("GET /api/compare?pp=2&m=4 HTTP/1.1\r\n" + Host() + "\r\nGET /nope HTTP/1.1\r\n" +
               Host() + "Connection: close\r\n\r\n");
  const size_t second = r.find("HTTP/1.1 404");
  EXPECT_EQ(StatusOf(r), 200);
  EXPECT_NE(second, std::string::npos);
}

TEST_F(TransportTest, ExpectContinueGetsItsInterimAnswer) {
  Raw c(port());
  ASSERT_TRUE(c.ok());
  c.Send("POST /api/import HTTP/1.1\r\n" + Host() +
         "Content-Type: text/csv\r\nContent-Length: 7\r\nExpect: 100-continue\r\n\r\n");
  // The interim answer comes before we send the body (ReadAll waits up to 2 s for more).
  const std::string got = c.ReadAll(2000);
  EXPECT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << got;
  c.Send("0F0,0X0");
  EXPECT_EQ(StatusOf(c.ReadAll(5000)), 400);  // the CSV itself is bad: the Api answered
  EXPECT_EQ(StatusOf(Exchange("GET / HTTP/1.1\r\n" + Host() + "Expect: magic\r\n\r\n")), 417);
}

class ShortDeadlineTest : public TransportTest {
 protected:
  void SetUp() override {
    ServeOptions opt;
    opt.threads = 2;
    opt.io_timeout_s = 1;
    opt.limits.upload_time_limit = std::chrono::milliseconds(1000);
    Start(opt);
  }
};

TEST_F(ShortDeadlineTest, TricklingAHeadLosesTheConnectionAtTheTotalDeadline) {
  Raw c(port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\n" + Host()));
  // One byte every 200 ms would keep a per-recv timeout alive forever; the total deadline (1 s)
  // ends it. The loop stops at 30 s whatever happens.
  std::string answer;
  for (int i = 0; i < 150 && answer.empty(); ++i) {
    if (!c.Send("X")) break;
    answer = c.ReadAll(200);
  }
  if (answer.empty()) answer = c.ReadAll(2000);
  EXPECT_EQ(StatusOf(answer), 408);
}

TEST_F(ShortDeadlineTest, ChunkedUploadsThatTrickleLoseTheirSlot) {
  // Both upload slots taken by uploads trickling a chunk-size line ...
  const std::string head = "POST /api/trace/analyze HTTP/1.1\r\n" + Host() +
                           "Content-Type: multipart/form-data; boundary=x\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";
  Raw a(port()), b(port());
  ASSERT_TRUE(a.Send(head + "1"));
  ASSERT_TRUE(b.Send(head + "1"));
  // ... are answered 408 at the upload deadline (1 s here), freeing the slots.
  std::string ra, rb;
  for (int i = 0; i < 150 && (ra.empty() || rb.empty()); ++i) {
    a.Send("0");
    b.Send("0");
    if (ra.empty()) ra = a.ReadAll(100);
    if (rb.empty()) rb = b.ReadAll(100);
  }
  EXPECT_EQ(StatusOf(ra), 408);
  EXPECT_EQ(StatusOf(rb), 408);
  // A new upload gets a slot (the Api then says what is wrong with its empty body), not a 503.
  const std::string r = Exchange("POST /api/trace/analyze HTTP/1.1\r\n" + Host() +
                                 "Content-Type: multipart/form-data; boundary=x\r\n"
                                 "Content-Length: 0\r\n\r\n");
  EXPECT_NE(StatusOf(r), 503);
  EXPECT_NE(StatusOf(r), 0);
}

// Issue 26: admission into lanes, cancellation, eviction. The server gets endpoints that block
// until the test releases them, so that "the worker is busy" is a fact, not a timing guess.
class AdmissionTest : public TransportTest {
 protected:
  void SetUp() override {}
  // A compute endpoint that holds its worker until Release() (or 20 s), recording whether it
  // saw its request cancelled; and one that only counts the times it ran.
  void StartWith(ServeOptions opt) {
    Endpoint block{"/api/test/block", {"GET"}, "blocks", {}, false, [this](ApiCall& call) {
                     ++entered_;
                     const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                     while (!released_ && std::chrono::steady_clock::now() < end) {
                       if (honour_expiry_ && call.Expired()) {
                         saw_cancel_ = true;
                         break;
                       }
                       std::this_thread::sleep_for(std::chrono::milliseconds(2));
                     }
                     return ApiResult(JsonResponse("{}"));
                   }};
    Endpoint count{"/api/test/count", {"GET"}, "counts", {}, false, [this](ApiCall&) {
                     ++counted_;
                     return ApiResult(JsonResponse("{}"));
                   }};
    opt.extra_endpoints = {block, count};
    Start(opt);
  }
  void TearDown() override {
    released_ = true;
    TransportTest::TearDown();
  }
  // Waits (at most 10 s: a guard against hangs, not a timing) until `done()` holds.
  template <typename Pred>
  static bool WaitUntil(Pred done) {
    for (int i = 0; i < 5000 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return done();
  }
  // Waits until `n` requests are inside the blocking endpoint.
  bool WaitEntered(int n) {
    return WaitUntil([&] { return entered_ >= n; });
  }
  // Opens `n` connections that say nothing, each handed to the server's kernel before the next.
  static void OpenSilent(int port, int n, std::vector<std::unique_ptr<Raw>>& out) {
    for (int i = 0; i < n; ++i) {
      out.push_back(std::make_unique<Raw>(port));
      ASSERT_TRUE(out.back()->ok());
    }
  }
  std::string Get(const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\n" + Host() + "Connection: close\r\n\r\n";
  }

  // Starts the server, blocks one compute request on `busy` and returns the answer to a second
  // computation asked meanwhile.
  std::string SecondWhileOneBlocks(const ServeOptions& opt, std::unique_ptr<Raw>& busy) {
    StartWith(opt);
    busy = std::make_unique<Raw>(port());
    if (!busy->Send(Get("/api/test/block")) || !WaitEntered(1)) return "";
    return Exchange(Get("/api/test/count"));
  }

  std::atomic<int> entered_{0}, counted_{0};
  std::atomic<bool> released_{false}, saw_cancel_{false}, honour_expiry_{true};
};

TEST_F(AdmissionTest, AFullComputeLaneAnswers503AtOnceWhileLightRequestsAreServed) {
  ServeOptions opt;
  opt.threads = 1;
  opt.queue = 0;
  std::unique_ptr<Raw> busy;
  // The only compute place is taken: the next computation is refused without waiting ...
  const std::string refused = SecondWhileOneBlocks(opt, busy);
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  EXPECT_NE(refused.find("\r\nRetry-After: "), std::string::npos) << refused;
  EXPECT_EQ(counted_, 0);
  // ... while the light lane still serves the presets and the pages.
  EXPECT_EQ(StatusOf(Exchange(Get("/api/presets"))), 200);
  EXPECT_EQ(StatusOf(Exchange(Get("/"))), 200);
  released_ = true;
  EXPECT_EQ(StatusOf(busy->ReadAll()), 200);
}

TEST_F(AdmissionTest, OneClientGetsItsShareOfTheComputeLaneNotAllOfIt) {
  ServeOptions opt;
  opt.threads = 2;
  opt.queue = 2;
  opt.per_client = 1;
  std::unique_ptr<Raw> first;
  // Every test connection comes from 127.0.0.1: one client, already at its share of one.
  const std::string refused = SecondWhileOneBlocks(opt, first);
  EXPECT_EQ(StatusOf(refused), 503);
  EXPECT_NE(refused.find("this client already has 1"), std::string::npos) << refused;
  released_ = true;
  EXPECT_EQ(StatusOf(first->ReadAll()), 200);
  EXPECT_EQ(StatusOf(Exchange(Get("/api/test/count"))), 200);  // its share is free again
}

TEST_F(AdmissionTest, AClientThatLeavesCancelsItsComputation) {
  ServeOptions opt;
  opt.threads = 1;
  opt.limits.time_limit = std::chrono::milliseconds(60000);  // only the hang-up can stop it
  StartWith(opt);
  {
    Raw gone(port());
    ASSERT_TRUE(gone.Send(Get("/api/test/block")));
    ASSERT_TRUE(WaitEntered(1));
  }  // closed here
  for (int i = 0; i < 5000 && !saw_cancel_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(saw_cancel_);
  EXPECT_EQ(StatusOf(Exchange(Get("/api/test/count"))), 200);  // the worker is free again
}

TEST_F(AdmissionTest, TheTimeLimitCountsFromArrivalSoAStaleQueuedRequestIsNotComputed) {
  ServeOptions opt;
  opt.threads = 1;
  opt.queue = 1;
  opt.per_client = 2;
  opt.limits.time_limit = std::chrono::milliseconds(200);
  honour_expiry_ = false;  // the blocked worker stays blocked past its own limit
  StartWith(opt);
  Raw busy(port()), queued(port());
  ASSERT_TRUE(busy.Send(Get("/api/test/block?")));
  ASSERT_TRUE(WaitEntered(1));
  ASSERT_TRUE(queued.Send(Get("/api/test/count")));
  // Its 200 ms pass while it waits behind the blocked worker.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  released_ = true;
  EXPECT_EQ(StatusOf(queued.ReadAll()), 503);
  EXPECT_EQ(counted_, 0);
}

// Issue 26: idle and half-open sockets must never keep a light request out. The states and
// counts below hold whatever the timing; the waits only guard against hangs.
TEST_F(AdmissionTest, SilentSocketsInEverySlotNeverKeepARequestOut) {
  ServeOptions opt;
  opt.max_connections = 8;
  opt.keep_alive_s = 60;  // only eviction closes a silent connection here
  StartWith(opt);
  std::vector<std::unique_ptr<Raw>> silent;
  OpenSilent(port(), 40, silent);  // five times the slots
  EXPECT_EQ(StatusOf(Exchange(Get("/api/presets"))), 200);
  // Every connection was accepted (the request last: the kernel's backlog is first in, first
  // out), and room was made by evicting silent ones, always the oldest: 41 connections through 8
  // slots is 33 evictions, and the 7 newest silent ones are left once the request has gone.
  ASSERT_TRUE(WaitUntil([&] {
    const HttpServer::Counters n = server_->counters();
    return n.accepted == 41 && n.evicted_silent == 33 && n.open == 7;
  }));
  EXPECT_EQ(server_->counters().evicted_other, 0u);
  for (int i = 0; i < 40; ++i) {
    if (i < 33) {
      EXPECT_TRUE(WaitUntil([&] { return silent[i]->ClosedByServer(); })) << i;
    } else {
      EXPECT_FALSE(silent[i]->ClosedByServer()) << i;
    }
  }
}

TEST_F(AdmissionTest, ARequestBehindSilentSocketsInTheBacklogIsAnsweredNotEvicted) {
  ServeOptions opt;
  opt.max_connections = 2;
  opt.threads = 2;
  opt.queue = 0;
  opt.per_client = 2;
  opt.keep_alive_s = 60;
  StartWith(opt);
  // Both slots hold a computation: the server stops accepting, so everything below waits in the
  // kernel's backlog, a request between two hundred silent sockets.
  const std::string kept_alive = "GET /api/test/block HTTP/1.1\r\n" + Host() + "\r\n";
  Raw busy1(port()), busy2(port());
  ASSERT_TRUE(busy1.Send(kept_alive) && busy2.Send(kept_alive));
  ASSERT_TRUE(WaitEntered(2));
  std::vector<std::unique_ptr<Raw>> silent;
  OpenSilent(port(), 100, silent);
  // Kept alive too, so that once answered it is one more silent connection (a connection
  // draining after a "close" could be evicted as another kind when no silent one is left).
  Raw request(port());
  ASSERT_TRUE(request.Send("GET /api/presets HTTP/1.1\r\n" + Host() + "\r\n"));
  OpenSilent(port(), 100, silent);
  EXPECT_EQ(server_->counters().accepted, 2u);
  released_ = true;
  // The computations are answered (never evicted while under way); then, two slots for 203
  // connections, the request is read when it is accepted and answered, not taken for silent.
  // (Each answer is read whole, without waiting for its connection, silent after it, to be
  // evicted: once the last connections are in, nothing would evict it.)
  EXPECT_EQ(StatusOf(busy1.ReadResponse()), 200);
  EXPECT_EQ(StatusOf(busy2.ReadResponse()), 200);
  EXPECT_EQ(StatusOf(request.ReadResponse()), 200);
  EXPECT_TRUE(silent.front()->ClosedByServer());
  // Accepting it took room from the 100 connections ahead of it, and only from silent ones.
  EXPECT_GE(server_->counters().evicted_silent, 100u);
  EXPECT_EQ(server_->counters().evicted_other, 0u);
}

TEST_F(AdmissionTest, SilentConnectionsAreEvictedBeforeAnUnfinishedHead) {
  ServeOptions opt;
  opt.max_connections = 3;
  opt.keep_alive_s = 60;
  StartWith(opt);
  Raw unfinished(port());
  ASSERT_TRUE(unfinished.Send("GET /api/presets HTTP/1.1\r\n"));
  ASSERT_TRUE(WaitUntil([&] { return server_->counters().accepted == 1; }));
  std::vector<std::unique_ptr<Raw>> silent;
  OpenSilent(port(), 2, silent);
  EXPECT_EQ(StatusOf(Exchange(Get("/api/presets"))), 200);
  // The older connection with half a head stays; the first silent one made room.
  EXPECT_TRUE(WaitUntil([&] { return silent[0]->ClosedByServer(); }));
  EXPECT_FALSE(silent[1]->ClosedByServer());
  EXPECT_FALSE(unfinished.ClosedByServer());
  EXPECT_EQ(server_->counters().evicted_silent, 1u);
  EXPECT_EQ(server_->counters().evicted_other, 0u);
  // And it can still finish its request.
  ASSERT_TRUE(unfinished.Send(Host() + "Connection: close\r\n\r\n"));
  EXPECT_EQ(StatusOf(unfinished.ReadAll()), 200);
}

TEST_F(TransportTest, ChunkExtensionsAreBoundedPerRequest) {
  std::string body;
  for (int i = 0; i < 40; ++i) body += "1;" + std::string(1000, 'x') + "\r\nx\r\n";
  const std::string r = Exchange("POST /api/trace/analyze HTTP/1.1\r\n" + Host() +
                                 "Content-Type: multipart/form-data; boundary=x\r\n"
                                 "Transfer-Encoding: chunked\r\n\r\n" +
                                 body + "0\r\n\r\n");
  EXPECT_EQ(StatusOf(r), 400) << r;
  EXPECT_NE(r.find("chunk extensions longer than 16384 bytes"), std::string::npos) << r;
}

TEST_F(TransportTest, AbsoluteFormTargetsAreAccepted) {
  const std::string self = "127.0.0.1:" + std::to_string(port());
  EXPECT_EQ(StatusOf(Exchange("GET http://" + self + "/api/presets?kind=gpus HTTP/1.1\r\n" +
                              Host() + "Connection: close\r\n\r\n")),
            200);
  // The target's authority, not the Host field, names the server: another name is refused.
  EXPECT_EQ(StatusOf(Exchange("GET http://evil.example:" + std::to_string(port()) +
                              "/ HTTP/1.1\r\n" + Host() + "Connection: close\r\n\r\n")),
            403);
}

TEST(HttpParserTest, AbsoluteFormBecomesOriginForm) {
  const HeadParse a = ParseRequestHead("GET HTTP://Example.org:81?q=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(a.state, HeadParse::State::kComplete);
  EXPECT_EQ(a.head.target, "/?q=1");
  EXPECT_EQ(a.head.Get("host"), "example.org:81");  // RFC 9112 sec. 3.2.2
  const HeadParse b = ParseRequestHead("GET http://h/a/b HTTP/1.0\r\n\r\n");
  ASSERT_EQ(b.state, HeadParse::State::kComplete);
  EXPECT_EQ(b.head.target, "/a/b");
  EXPECT_EQ(b.head.Get("host"), "h");
  EXPECT_EQ(ParseRequestHead("GET http:///x HTTP/1.1\r\n\r\n").error.status, 400);
  EXPECT_EQ(ParseRequestHead("GET http://u@h/ HTTP/1.1\r\n\r\n").error.status, 400);
  Framing f;  // HTTP/1.1 still needs its Host field (sec. 3.2)
  EXPECT_TRUE(FrameRequest(ParseRequestHead("GET http://h/ HTTP/1.1\r\n\r\n").head, &f));
}

TEST(HttpParserTest, ChunkExtensionsAndTrailersAreBoundedPerRequest) {
  std::string out;
  size_t used = 0;
  // 16 chunks with 1,000-byte extensions stay within 16 KiB; the 17th does not.
  std::string body;
  for (int i = 0; i < 17; ++i) body += "1;" + std::string(999, 'e') + "\r\nx\r\n";
  ChunkedDecoder d(1 << 20);
  EXPECT_EQ(d.Feed(body, out, &used), ChunkedDecoder::Result::kError);
  EXPECT_EQ(d.error().status, 400);
  EXPECT_EQ(out, std::string(16, 'x'));  // 16 x 1,000 = 16,000 <= 16,384 < 17,000
  HeadLimits small;
  small.max_head_bytes = 100;
  std::string trailers = "0\r\n";
  for (int i = 0; i < 5; ++i)
    trailers += "T" + std::to_string(i) + ": " + std::string(20, 'v') + "\r\n";
  ChunkedDecoder t(1 << 20, small);
  out.clear();
  EXPECT_EQ(t.Feed(trailers + "\r\n", out, &used), ChunkedDecoder::Result::kError);
  EXPECT_EQ(t.error().status, 431);  // five 26-byte lines: 130 > 100
}

TEST(HttpParserTest, HeadLimitsAndFraming) {
  HeadLimits small;
  small.max_line_bytes = 16;
  small.max_fields = 2;
  EXPECT_EQ(ParseRequestHead("GET /a HTTP/1.1\r\n", small).state, HeadParse::State::kIncomplete);
  EXPECT_EQ(ParseRequestHead("GET /aaaaaaaaaaaaaaaa", small).error.status, 414);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", small).error.status,
            431);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/2.0\r\n\r\n").error.status, 505);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n").error.status, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA b: 1\r\n\r\n").error.status, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: \x01\r\n\r\n").error.status, 400);
  const HeadParse ok = ParseRequestHead(
      "\r\nPOST /x?y=1 HTTP/1.1\r\nHost: h:80\r\n"
      "Content-Length: 12\r\n\r\nbody");
  ASSERT_EQ(ok.state, HeadParse::State::kComplete);
  EXPECT_EQ(ok.consumed, std::string_view("\r\nPOST /x?y=1 HTTP/1.1\r\nHost: h:80\r\n"
                                          "Content-Length: 12\r\n\r\n")
                             .size());
  Framing f;
  EXPECT_FALSE(FrameRequest(ok.head, &f).has_value());
  EXPECT_EQ(f.content_length, 12u);
  EXPECT_TRUE(f.keep_alive);
  EXPECT_EQ(SplitHostPort("[::1]:8080"), (std::pair<std::string, int>{"[::1]", 8080}));
  EXPECT_EQ(SplitHostPort("LocalHost"), (std::pair<std::string, int>{"localhost", -1}));
  EXPECT_EQ(SplitHostPort("h:99999").second, -2);
}

TEST(HttpParserTest, ChunkedDecodingIsBounded) {
  std::string out;
  size_t used = 0;
  ChunkedDecoder d(10);
  // "Wiki" + "pedia" in two chunks with an extension, then a trailer (RFC 9112 sec. 7.1).
  const std::string body = "4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT";
  EXPECT_EQ(d.Feed(body, out, &used), ChunkedDecoder::Result::kDone);
  EXPECT_EQ(out, "Wikipedia");
  EXPECT_EQ(body.substr(used), "NEXT");
  ChunkedDecoder over(10);
  out.clear();
  EXPECT_EQ(over.Feed("b\r\n", out, &used), ChunkedDecoder::Result::kError);
  EXPECT_EQ(over.error().status, 413);  // 11 > 10, refused before a byte is stored
  ChunkedDecoder huge(1 << 20);
  EXPECT_EQ(huge.Feed("1000000000000000\r\n", out, &used), ChunkedDecoder::Result::kError);
  ChunkedDecoder endless(1 << 20);
  EXPECT_EQ(endless.Feed(std::string(2000, '1'), out, &used), ChunkedDecoder::Result::kError);
}

}  // namespace
}  // namespace infralens::server
