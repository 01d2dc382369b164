// HTTP requests and answers as the routes see them, independent of the library that reads the
// socket (transport.h). A Responder is the far end of one request: whoever holds it answers
// once, either whole (respond) or as a stream (start_stream, write, end_stream), from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qwen35::server {

// Case-insensitive ASCII comparison (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;   // "GET", "POST", ... as sent
  std::string target;   // as sent: path and query
  std::string path;     // target without the query
  int version = 11;     // 10 or 11
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
  std::string body;
  // Keeps the body's share of the transport's budget for bodies in memory until the request
  // (and so its body) is dropped.
  std::shared_ptr<const void> hold;

  // The first value of a header (names compare case-insensitively); "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type among them
  std::string body;

  void set_header(std::string name, std::string value);
  std::string header(std::string_view name) const;
};

class Responder {
 public:
  virtual ~Responder() = default;

  // The whole answer. Only the first answer counts; later calls are ignored.
  virtual void respond(HttpResponse response) = 0;
  // A streamed answer: `head` carries the status and headers (its body is ignored), then any
  // number of write() calls, then end_stream(). HTTP/1.1 clients get chunked encoding; HTTP/1.0
  // clients get the bytes as they are, delimited by the end of the connection. `heartbeat` (if
  // not empty) is written whenever the stream was silent for a while, so that proxies keep it
  // open and a client that is gone shows up as a failed write.
  virtual void start_stream(HttpResponse head, std::string heartbeat) = 0;
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;

  // Runs `task` on the thread that serves this connection, after what is already queued there.
  virtual void post(std::function<void()> task) = 0;
  // `on_gone` runs once (on the connection's thread) when the client goes away before the answer
  // is complete: it closed the connection, a write failed or timed out. At once if already gone.
  virtual void on_gone(std::function<void()> on_gone) = 0;
  virtual bool gone() const = 0;
};

}  // namespace qwen35::server
