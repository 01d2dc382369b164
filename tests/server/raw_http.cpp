#include "raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace qwen35::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

RawConnection::RawConnection(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "cannot connect to port " << port << ": errno " << errno;
    ::close(fd_);
    fd_ = -1;
    return;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawConnection::~RawConnection() { close(); }

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawConnection::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

void RawConnection::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

bool RawConnection::fill(Clock::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, int(left)) <= 0) return false;
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(buf, size_t(n));
  return true;
}

RawResponse RawConnection::read_response(std::chrono::milliseconds timeout, bool to_head) {
  RawResponse r;
  const auto deadline = Clock::now() + timeout;
  size_t head_end;
  while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
    if (!fill(deadline)) {
      r.raw = buffer_;
      r.closed = eof_;
      return r;
    }
  const std::string head = buffer_.substr(0, head_end);
  size_t pos = head.find("\r\n");
  const std::string status_line = head.substr(0, pos);
  r.version = status_line.substr(0, status_line.find(' '));
  if (status_line.size() >= 12) r.status = std::atoi(status_line.c_str() + 9);
  while (pos != std::string::npos && pos < head.size()) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    if (const size_t colon = line.find(':'); colon != std::string::npos)
      r.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    pos = next;
  }
  size_t body_start = head_end + 4;
  const bool no_body = to_head || (r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304;
  if (no_body) {
    r.complete = true;
  } else if (lower(r.header("transfer-encoding")).find("chunked") != std::string::npos) {
    r.chunked = true;
    size_t p = body_start;
    for (;;) {
      size_t eol;
      while ((eol = buffer_.find("\r\n", p)) == std::string::npos)
        if (!fill(deadline)) break;
      if (eol == std::string::npos) break;
      const size_t size = std::strtoul(buffer_.substr(p, eol - p).c_str(), nullptr, 16);
      while (buffer_.size() < eol + 2 + size + 2)
        if (!fill(deadline)) break;
      if (buffer_.size() < eol + 2 + size + 2) break;
      r.body.append(buffer_, eol + 2, size);
      p = eol + 2 + size + 2;
      if (size == 0) {
        r.complete = true;
        body_start = p;
        break;
      }
    }
    if (!r.complete) body_start = buffer_.size();
  } else if (!r.header("content-length").empty()) {
    const size_t n = std::strtoul(r.header("content-length").c_str(), nullptr, 10);
    while (buffer_.size() < body_start + n)
      if (!fill(deadline)) break;
    r.complete = buffer_.size() >= body_start + n;
    r.body = buffer_.substr(body_start, std::min(n, buffer_.size() - body_start));
    body_start = std::min(buffer_.size(), body_start + n);
  } else {  // delimited by the end of the connection (HTTP/1.0 style)
    while (fill(deadline)) {
    }
    r.complete = eof_;
    r.body = buffer_.substr(body_start);
    body_start = buffer_.size();
  }
  r.raw = buffer_.substr(0, body_start);
  buffer_.erase(0, body_start);
  if (buffer_.empty() && !eof_) {  // a closed connection right behind the response
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) fill(Clock::now() + std::chrono::milliseconds(50));
  }
  r.closed = eof_ && buffer_.empty();
  return r;
}

bool RawConnection::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!eof_ && Clock::now() < deadline) {
    buffer_.clear();
    fill(deadline);
  }
  return eof_;
}

RawResponse raw_exchange(int port, const std::string& request, std::chrono::milliseconds timeout) {
  RawConnection c(port);
  if (!c.connected()) return {};
  c.send(request);
  return c.read_response(timeout, request.rfind("HEAD ", 0) == 0);
}

std::string post_request(const std::string& path, const std::string& body, const std::string& extra) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

size_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return size_t(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
  return 0;
}

}  // namespace qwen35::test
