#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace infralens::testing {

void HttpClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

bool HttpClient::Connect(std::string* error) {
  Close();
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = std::string("connect: ") + std::strerror(errno);
    Close();
    return false;
  }
  return true;
}

namespace {

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool HttpClient::ReadResponse(RawResponse* out, std::string* error) {
  auto fill = [&]() -> int {  // 1 data, 0 closed, -1 error/timeout
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, timeout_ms_);
    if (r <= 0) return -1;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return -1;
    if (n == 0) return 0;
    buffer_.append(buf, static_cast<size_t>(n));
    return 1;
  };
  size_t header_end;
  while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    int r = fill();
    if (r <= 0) {
      *error = r == 0 ? "connection closed before a response" : "timed out waiting for a response";
      return false;
    }
  }
  std::string head = buffer_.substr(0, header_end);
  buffer_.erase(0, header_end + 4);
  *out = RawResponse{};
  size_t line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) {
    *error = "bad status line: " + status_line;
    return false;
  }
  out->status = std::atoi(status_line.c_str() + 9);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    std::string line = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    out->headers[Lower(line.substr(0, colon))] = value;
  }
  if (out->status == 100) return ReadResponse(out, error);  // 100 Continue: the real answer follows
  size_t length = 0;
  if (head_request_)
    length = 0;  // HEAD: headers only
  else if (auto it = out->headers.find("content-length"); it != out->headers.end())
    length = std::stoul(it->second);
  while (buffer_.size() < length) {
    if (fill() <= 0) {
      *error = "connection closed inside the body";
      return false;
    }
  }
  out->body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  if (auto it = out->headers.find("connection");
      it != out->headers.end() && Lower(it->second) == "close")
    Close();
  return true;
}

bool HttpClient::Exchange(const std::string& raw, RawResponse* out, std::string* error) {
  head_request_ = raw.rfind("HEAD ", 0) == 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_ < 0 && !Connect(error)) return false;
    if (!SendAll(fd_, raw)) {
      Close();
      continue;  // the server closed a kept-alive connection: once more on a new one
    }
    std::string err;
    if (ReadResponse(out, &err)) return true;
    Close();
    if (attempt == 1 || err != "connection closed before a response") {
      *error = err;
      return false;
    }
  }
  *error = "could not send the request";
  return false;
}

bool HttpClient::Request(const std::string& method, const std::string& target,
                         const std::string& body, const std::map<std::string, std::string>& headers,
                         RawResponse* out, std::string* error) {
  std::string raw =
      method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  for (const auto& [k, v] : headers) raw += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST")
    raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  raw += "\r\n" + body;
  return Exchange(raw, out, error);
}

}  // namespace infralens::testing
