// A minimal HTTP/1.1 client over a loopback TCP socket, for the server tests and the load test.
// It sends bytes exactly as given (so a test can send "/../../etc/passwd" or a broken request
// line) and reads one response with Content-Length. Not for general use.
#ifndef INFRALENS_TESTS_HTTP_CLIENT_H_
#define INFRALENS_TESTS_HTTP_CLIENT_H_

#include <map>
#include <string>

namespace infralens::testing {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(int port, int timeout_ms = 10000) : port_(port), timeout_ms_(timeout_ms) {}
  ~HttpClient() { Close(); }
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `raw` (a whole request) and reads the response. Reconnects when the server closed the
  // kept-alive connection. False with `error` set on a transport failure.
  bool Exchange(const std::string& raw, RawResponse* out, std::string* error);
  // Builds a request: Host 127.0.0.1:port, Content-Length when there is a body.
  bool Request(const std::string& method, const std::string& target, const std::string& body,
               const std::map<std::string, std::string>& headers, RawResponse* out,
               std::string* error);
  void Close();

 private:
  bool Connect(std::string* error);
  bool ReadResponse(RawResponse* out, std::string* error);

  int port_;
  int timeout_ms_;
  int fd_ = -1;
  bool head_request_ = false;
  std::string buffer_;
};

}  // namespace infralens::testing

#endif  // INFRALENS_TESTS_HTTP_CLIENT_H_
