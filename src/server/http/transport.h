// The event-driven HTTP/1.1 side of the server: accepts connections, reads requests with hard
// limits and deadlines, and writes answers, all on a small io thread pool (Boost.Asio; Beast's
// parser reads the requests). No thread ever waits for a client: an idle, slow or stalled
// connection costs a socket and a few kilobytes, never a worker.
//
// A request's life on a connection:
//   waiting  (keep-alive, or a new connection)  up to idle_timeout for its first byte
//   reading  request line + headers             up to header_timeout from its first byte,
//                                               at most max_header_bytes (431)
//            -> screen(head): an answer here refuses the request before its body is read
//            body                               up to body_timeout, at most max_body_bytes (413)
//   handling dispatch(request, responder)       answered whole or streamed, from any thread
// A refused request whose body was not read closes the connection after the answer (the unread
// bytes are drained for a moment and dropped, never parsed as a request). Errors answer with
// the error object {"error": {...}} and close the connection.
//
// Connections are capped (max_connections). At the cap a new connection closes the oldest one
// that is not being answered (idle or still sending its request); when every connection is busy
// being answered, the newcomer gets 503.
//
// A client that half-closes its socket right after its request (within kHalfCloseGrace) still
// gets its answer; one whose connection ends later has gone away, and the responder says so.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http/message.h"

namespace qwen35::server {

struct HttpLimits {
  size_t max_header_bytes = size_t(32) << 10;  // request line and headers together
  size_t max_body_bytes = size_t(32) << 20;
  // Bodies being received or waiting to be parsed, all connections together; a request that
  // would go over gets 503 before its body is read.
  size_t max_body_bytes_in_flight = size_t(128) << 20;
  std::chrono::milliseconds header_timeout{10'000};  // from a request's first byte to its last header
  std::chrono::milliseconds body_timeout{120'000};   // the whole body
  std::chrono::milliseconds idle_timeout{10'000};    // waiting for a connection's next request
  std::chrono::milliseconds write_timeout{30'000};   // a write the client does not take
  std::chrono::milliseconds stream_heartbeat{10'000};  // silence on a stream before a heartbeat
  size_t max_connections = 512;
  size_t max_pending_output = size_t(8) << 20;  // bytes queued for a client that does not read
};

constexpr std::chrono::milliseconds kHalfCloseGrace{100};

class HttpTransport {
 public:
  struct Handlers {
    // The request's headers are complete and its body is not read yet. An answer refuses it.
    std::function<std::optional<HttpResponse>(const HttpRequest& head)> screen;
    // The complete request. Answer through the responder, now or later, from any thread; it must
    // not block (the io thread runs it).
    std::function<void(HttpRequest request, std::shared_ptr<Responder> responder)> dispatch;
    // After each answer (whole or streamed) was sent or abandoned, with the status it had.
    std::function<void(const HttpRequest& head, int status)> answered;
  };

  HttpTransport(HttpLimits limits, Handlers handlers, int io_threads = 1);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds and listens; false with a reason when it cannot. port 0: any free port.
  bool bind(const std::string& host, int port, std::string* error);
  int port() const;
  // Starts the io threads (after bind()).
  void start();
  // Stops accepting, lets answers in progress finish for up to `drain`, closes every connection
  // and joins the io threads. Idempotent.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(2000));

  size_t open_connections() const;
  const HttpLimits& limits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qwen35::server
