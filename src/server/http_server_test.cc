// The server on a real loopback socket: the bytes a client sends, including ones a browser never
// would (a raw "/../../etc/passwd", a broken request line, an oversized body).
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "http_client.h"

namespace infralens::server {
namespace {

using ::infralens::testing::HttpClient;
using ::infralens::testing::RawResponse;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeOptions opt;
    opt.port = 0;
    opt.threads = 4;
    server_ = std::make_unique<HttpServer>(opt);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Run(); });
  }
  void TearDown() override {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  RawResponse Send(const std::string& raw) {
    HttpClient c(server_->port());
    RawResponse r;
    std::string err;
    EXPECT_TRUE(c.Exchange(raw, &r, &err)) << err;
    return r;
  }
  std::string Host() const { return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n"; }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, ServesPagesAndApiOverOneKeptAliveConnection) {
  HttpClient c(server_->port());
  RawResponse r;
  std::string err;
  ASSERT_TRUE(c.Request("GET", "/", "", {}, &r, &err)) << err;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<!doctype html>"), std::string::npos);
  ASSERT_TRUE(
      c.Request("GET", "/api/schedule?schedule=1f1b&pp=4&microbatches=8&f=1&b=1", "", {}, &r, &err))
      << err;
  ASSERT_EQ(r.status, 200);
  auto j = nlohmann::json::parse(r.body);
  EXPECT_DOUBLE_EQ(j["makespan"].get<double>(), 22);  // (m + P - 1)(F + B)
  ASSERT_TRUE(c.Request("GET", "/api/compare?pp=2&m=4", "", {}, &r, &err)) << err;
  EXPECT_EQ(r.status, 200);
  ASSERT_TRUE(c.Request("POST", "/api/import", "0F0,0B0\n1F0,1B0\n", {{"Content-Type", "text/csv"}},
                        &r, &err));
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(c.Request("HEAD", "/pipeline.html", "", {}, &r, &err)) << err;
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.headers["x-content-type-options"], "nosniff");
}

TEST_F(HttpServerTest, TraversalNeverReachesTheFilesystem) {
  for (const std::string path :
       {"/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
        "/./../etc/passwd", "/js/../../../../etc/passwd", "/etc/passwd"}) {
    RawResponse r = Send("GET " + path + " HTTP/1.1\r\n" + Host() + "\r\n");
    EXPECT_EQ(r.status, 404) << path;
    // A person's page, not the API's JSON.
    EXPECT_EQ(r.headers["content-type"], "text/html; charset=utf-8") << path;
    EXPECT_NE(r.body.find("<h1>No such page</h1>"), std::string::npos) << path;
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << path;
  }
}

TEST_F(HttpServerTest, ErrorCodes) {
  // A body over the limit: 413 with a JSON error, before the body is read.
  HttpClient c(server_->port());
  RawResponse r;
  std::string err;
  const std::string big((4u << 20) + 1, 'x');
  ASSERT_TRUE(c.Request("POST", "/api/import", big, {{"Content-Type", "text/csv"}}, &r, &err))
      << err;
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);
  // Malformed requests and input.
  EXPECT_EQ(Send("GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(Send("GET /api/schedule?pp=zero HTTP/1.1\r\n" + Host() + "\r\n").status, 400);
  RawResponse bad = Send("GET /api/schedule?pp=zero HTTP/1.1\r\n" + Host() + "\r\n");
  EXPECT_EQ(nlohmann::json::parse(bad.body)["parameter"], "pp");
  EXPECT_EQ(
      Send("POST /api/import HTTP/1.1\r\n" + Host() + "Content-Length: 7\r\n\r\n0F0,0X0").status,
      400);
  EXPECT_EQ(Send("DELETE /api/schedule HTTP/1.1\r\n" + Host() + "\r\n").status, 405);
  EXPECT_EQ(Send("POST /api/compare HTTP/1.1\r\n" + Host() +
                 "Origin: http://evil.example\r\n"
                 "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 4\r\n\r\npp=4")
                .status,
            403);
  // A foreign name on our port is refused by name (DNS rebinding); our name on another port
  // (a request meant for another server) by port.
  EXPECT_EQ(
      Send("GET / HTTP/1.1\r\nHost: rebind.example:" + std::to_string(server_->port()) + "\r\n\r\n")
          .status,
      403);
  EXPECT_EQ(
      Send("GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server_->port() + 1) + "\r\n\r\n")
          .status,
      421);
  EXPECT_EQ(Send("GET /nope HTTP/1.1\r\n" + Host() + "\r\n").status, 404);
  // Still answering after all that.
  EXPECT_EQ(Send("GET /api/compare HTTP/1.1\r\n" + Host() + "\r\n").status, 200);
}

TEST(HttpServerBindTest, LoopbackByDefaultAndBusyPortsReported) {
  EXPECT_EQ(ServeOptions{}.host, "127.0.0.1");
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  ServeOptions opt;
  opt.port = 0;
  HttpServer a(opt);
  ASSERT_TRUE(a.Bind().ok());
  opt.port = a.port();
  HttpServer b(opt);
  Status st = b.Bind();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(std::to_string(a.port())), std::string::npos) << st.message();
}

}  // namespace
}  // namespace infralens::server
