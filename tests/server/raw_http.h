// A deliberately primitive HTTP client on raw sockets, for the tests that need to send what real
// clients never send (no newline, conflicting lengths, half-closed sockets, byte-a-second
// headers) and to see exactly what comes back, framing included.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace qwen35::test {

struct RawResponse {
  bool complete = false;   // a whole response arrived (status line, headers, framed body)
  int status = 0;
  std::string version;     // "HTTP/1.1"
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;        // de-chunked when the response was chunked
  bool chunked = false;
  bool closed = false;     // the server closed the connection after it
  std::string raw;         // every byte received

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

class RawConnection {
 public:
  explicit RawConnection(int port);  // connects to 127.0.0.1:port (fails the test when it cannot)
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends every byte; false once the peer refuses more (reset or closed).
  bool send(const std::string& bytes);
  void shutdown_write();
  void close();

  // Reads one response, waiting at most `timeout` in all. Bytes after it stay buffered. The
  // answer to a HEAD request has no body whatever its Content-Length says.
  RawResponse read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10), bool to_head = false);
  // True when the server closes the connection (EOF or reset) within `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout);

 private:
  // Reads more bytes into buffer_; false on EOF, error or timeout (eof_ tells which).
  bool fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// One request on a fresh connection.
RawResponse raw_exchange(int port, const std::string& request,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

// "POST <path> HTTP/1.1" with Host, Content-Type application/json, Content-Length and `extra`
// header lines (each ending in \r\n).
std::string post_request(const std::string& path, const std::string& body, const std::string& extra = "");

// This process's resident set size in bytes (from /proc/self/status).
size_t resident_bytes();

}  // namespace qwen35::test
