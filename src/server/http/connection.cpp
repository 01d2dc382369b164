#include "server/http/connection.h"

#include <algorithm>
#include <cstdio>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include "server/http/json_error.h"

namespace qwen35::server {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kLingerTime{2000};  // draining an unread body before closing
constexpr size_t kLingerBytes = size_t(64) << 20;

bool has_token(const std::string& list, std::string_view token) {
  size_t i = 0;
  while (i < list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    std::string_view t(list.data() + i, j - i);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (iequals(t, token)) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TransportState

std::list<std::weak_ptr<Connection>>::iterator TransportState::add(const std::shared_ptr<Connection>& c) {
  std::lock_guard<std::mutex> lock(mu);
  return live.insert(live.end(), c);
}

void TransportState::remove(std::list<std::weak_ptr<Connection>>::iterator it) {
  std::lock_guard<std::mutex> lock(mu);
  live.erase(it);
}

size_t TransportState::size() const {
  std::lock_guard<std::mutex> lock(mu);
  return live.size();
}

std::shared_ptr<const void> TransportState::reserve_body(size_t bytes) {
  size_t used = body_bytes.load();
  do {
    if (used + bytes > limits.max_body_bytes_in_flight && used > 0) return nullptr;
  } while (!body_bytes.compare_exchange_weak(used, used + bytes));
  // Released when the last holder (the connection, then the request) lets go.
  auto self = shared_from_this();
  return std::shared_ptr<const void>(static_cast<const void*>(this), [self, bytes](const void*) { self->body_bytes -= bytes; });
}

// ---------------------------------------------------------------------------------------------
// Exchange: the Responder of one request. Every call hops to the connection's strand; once the
// connection has moved on to another request (or closed), calls for this one do nothing.
// While the answer is being made it keeps the connection alive (nothing else may: with no read
// or write in flight, no handler holds it); the connection lets go when the answer ends.

struct Connection::Exchange final : Responder, std::enable_shared_from_this<Exchange> {
  Exchange(std::shared_ptr<Connection> c, Socket::executor_type ex) : conn(std::move(c)), executor(std::move(ex)) {}

  template <typename F>
  void on_connection(F f) {
    asio::post(executor, [self = shared_from_this(), f = std::move(f)]() mutable {
      const std::shared_ptr<Connection> c = self->conn;  // a copy: f may end the answer
      if (c && c->exchange_ == self && c->phase_ == Phase::kHandling) f(*c);
    });
  }

  void respond(HttpResponse r) override {
    if (started.exchange(true)) return;
    on_connection([r = std::move(r)](Connection& c) mutable { c.send_whole(std::move(r)); });
  }
  void start_stream(HttpResponse head, std::string heartbeat) override {
    if (started.exchange(true)) return;
    on_connection([h = std::move(head), b = std::move(heartbeat)](Connection& c) mutable {
      c.send_stream_head(std::move(h), std::move(b));
    });
  }
  void write(std::string data) override {
    on_connection([d = std::move(data)](Connection& c) mutable { c.send_stream_data(std::move(d)); });
  }
  void end_stream() override {
    on_connection([](Connection& c) { c.send_stream_end(); });
  }
  void post(std::function<void()> task) override { asio::post(executor, std::move(task)); }
  void on_gone(std::function<void()> f) override {
    asio::post(executor, [self = shared_from_this(), f = std::move(f)]() mutable {
      if (self->is_gone.load()) f();
      else self->gone_callback = std::move(f);
    });
  }
  bool gone() const override { return is_gone.load(); }

  // Strand only.
  void notify_gone() {
    if (is_gone.exchange(true)) return;
    if (gone_callback) std::exchange(gone_callback, nullptr)();
  }

  std::shared_ptr<Connection> conn;  // strand only; reset when the answer ends
  Socket::executor_type executor;
  std::atomic<bool> started{false};
  std::atomic<bool> is_gone{false};
  std::function<void()> gone_callback;  // strand only
};

// ---------------------------------------------------------------------------------------------
// Connection

Connection::Connection(Socket socket, std::shared_ptr<TransportState> state)
    : socket_(std::move(socket)),
      state_(std::move(state)),
      deadline_(socket_.get_executor()),
      write_deadline_(socket_.get_executor()),
      heartbeat_(socket_.get_executor()),
      buffer_(state_->limits.max_header_bytes + (size_t(16) << 10)) {}

Connection::~Connection() = default;

void Connection::start(bool reject) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), reject] {
    self->registry_it_ = self->state_->add(self);
    self->registered_ = true;
    if (!reject) return self->read_request();
    self->phase_ = Phase::kHandling;
    self->answer_error(503, "the server has too many open connections; try again later", "too_many_connections");
  });
}

bool Connection::evict_if_idle() {
  const Phase p = phase_.load();
  if (p != Phase::kWaiting && p != Phase::kReading) return false;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    const Phase now = self->phase_.load();
    if (now == Phase::kWaiting || now == Phase::kReading) self->close_now();
  });
  return true;
}

void Connection::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    const Phase p = self->phase_.load();
    if (p == Phase::kWaiting || p == Phase::kReading) self->close_now();
    else if (p == Phase::kHandling) self->close_after_ = true;
  });
}

void Connection::force_close() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close_now(); });
}

void Connection::arm(std::chrono::milliseconds after) {
  const uint64_t gen = ++deadline_gen_;
  deadline_.expires_after(after);
  deadline_.async_wait([weak = weak_from_this(), gen](error_code ec) {
    std::shared_ptr<Connection> self = weak.lock();
    if (ec || !self || gen != self->deadline_gen_) return;
    self->on_deadline();
  });
}

void Connection::on_deadline() {
  switch (phase_.load()) {
    case Phase::kWaiting:
      return close_now();  // an idle keep-alive connection: nothing to answer
    case Phase::kReading:
      timed_out_ = true;
      if (reading_) {
        error_code ignored;
        socket_.cancel(ignored);  // on_read answers 408
      } else {
        answer_error(408, "the request took too long to arrive", "request_timeout");
      }
      return;
    case Phase::kClosing:
      return close_now();
    case Phase::kHandling:
    case Phase::kClosed:
      return;
  }
}

// ---- Reading a request --------------------------------------------------------------------------

void Connection::read_request() {
  if (phase_ == Phase::kClosed) return;
  if (state_->stopping.load()) return close_now();
  parser_.emplace();
  parser_->header_limit(uint32_t(std::min<size_t>(state_->limits.max_header_bytes, UINT32_MAX)));
  parser_->body_limit(uint64_t(state_->limits.max_body_bytes));
  request_ = HttpRequest{};
  body_share_.reset();
  screened_ = timed_out_ = head_request_ = false;
  status_ = 0;
  recorded_ = true;
  streaming_ = chunked_ = answer_complete_ = false;
  release_exchange();
  const bool pipelined = buffer_.size() > 0;
  phase_ = pipelined ? Phase::kReading : Phase::kWaiting;
  const HttpLimits& l = state_->limits;
  arm(pipelined || first_request_ ? l.header_timeout : l.idle_timeout);
  first_request_ = false;
  parse_and_read();
}

// Parses what is buffered; reads more when the parser needs it.
void Connection::parse_and_read() {
  while (buffer_.size() > 0) {
    error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) break;
    if (ec) return on_parse_error(ec);
    if (parser_->is_header_done() && !screened_) {
      on_header();
      if (phase_ != Phase::kReading) return;  // refused, answered
    }
    if (parser_->is_done()) return on_request();
    if (used == 0) break;
  }
  const size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) return on_parse_error(http::error::header_limit);
  reading_ = true;
  // Small reads first, growing with what arrives: an idle or slow connection holds a few KiB.
  const size_t want = std::min<size_t>({room, 65536, std::max<size_t>(4096, buffer_.size())});
  socket_.async_read_some(buffer_.prepare(want),
                          [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(error_code ec, size_t bytes) {
  reading_ = false;
  buffer_.commit(bytes);
  if (phase_ == Phase::kClosed) return;
  if (timed_out_) return answer_error(408, "the request took too long to arrive", "request_timeout");
  if (ec == asio::error::eof) {
    if (phase_ == Phase::kWaiting && buffer_.size() == 0 && !parser_->got_some()) return close_now();
    error_code eof_ec;
    parser_->put_eof(eof_ec);
    if (!eof_ec && parser_->is_done()) return on_request();
    peer_done_ = true;
    return answer_error(400, "the connection ended in the middle of the request", "incomplete_request");
  }
  if (ec) return close_now();
  if (phase_ == Phase::kWaiting && bytes > 0) {
    phase_ = Phase::kReading;
    arm(state_->limits.header_timeout);
  }
  parse_and_read();
}

void Connection::on_parse_error(error_code ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
    return answer_error(431, "the request line and headers are larger than " +
                                 std::to_string(state_->limits.max_header_bytes) + " bytes",
                        "headers_too_large");
  if (ec == http::error::body_limit)
    return answer_error(413, "the request body is larger than the limit of " +
                                 std::to_string(state_->limits.max_body_bytes) + " bytes",
                        "request_too_large");
  answer_error(400, "malformed HTTP request: " + ec.message(), "bad_request");
}

void Connection::on_header() {
  screened_ = true;
  const auto& h = parser_->get();
  request_.method = std::string(h.method_string());
  request_.target = std::string(h.target());
  request_.path = request_.target.substr(0, request_.target.find('?'));
  request_.version = int(h.version());
  for (const auto& f : h) request_.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  head_request_ = request_.method == "HEAD";
  close_after_ = !h.keep_alive();
  if (state_->handlers.screen) {
    if (std::optional<HttpResponse> refusal = state_->handlers.screen(request_)) {
      // The body (if any) stays unread: the connection cannot carry another request.
      if (!parser_->is_done()) close_after_ = true;
      phase_ = Phase::kHandling;
      ++deadline_gen_;
      deadline_.cancel();
      recorded_ = false;
      return send_whole(std::move(*refusal));
    }
  }
  // The body's share of the memory for bodies in progress, held until the request is dropped.
  const uint64_t body = parser_->content_length().value_or(parser_->chunked() ? state_->limits.max_body_bytes : 0);
  if (body > 0 && !parser_->is_done()) {
    body_share_ = state_->reserve_body(size_t(body));
    if (!body_share_)
      return answer_error(503, "too many large requests are arriving at once; try again shortly", "server_busy");
  }
  arm(state_->limits.body_timeout);
  if (request_.version >= 11 && has_token(request_.header("Expect"), "100-continue") && !parser_->is_done())
    enqueue("HTTP/1.1 100 Continue\r\n\r\n");
}

void Connection::on_request() {
  ++deadline_gen_;  // no deadline while the answer is being made
  deadline_.cancel();
  HttpRequest request = request_;  // the head; the connection keeps its own for framing and logging
  request.body = std::move(parser_->get().body());
  request.hold = std::move(body_share_);
  parser_.reset();
  phase_ = Phase::kHandling;
  request_done_at_ = Clock::now();
  exchange_ = std::make_shared<Exchange>(shared_from_this(), socket_.get_executor());
  recorded_ = false;
  watch_client();
  if (state_->handlers.dispatch) state_->handlers.dispatch(std::move(request), exchange_);
  else exchange_->respond(json_error_response(404, "no route", "not_found"));
}

// While the answer is made, a read tells whether the client is still there. Bytes that arrive
// are the next (pipelined) request and stay in the buffer.
void Connection::watch_client() {
  if (peer_done_ || reading_) return;
  const size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) return;  // a full buffer of pipelined requests: read on after this answer
  reading_ = true;
  socket_.async_read_some(buffer_.prepare(std::min<size_t>(room, 16384)),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            self->reading_ = false;
                            self->buffer_.commit(n);
                            self->on_watch(ec);
                          });
}

void Connection::on_watch(error_code ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec == asio::error::eof) {
    peer_done_ = true;
    close_after_ = true;
    // Right after the request: a client that is done sending (HTTP/1.0 style). Later: gone.
    if (Clock::now() - request_done_at_ > kHalfCloseGrace && !answer_complete_) {
      client_gone();
      return close_now();
    }
  } else if (ec && ec != asio::error::operation_aborted) {
    client_gone();
    return close_now();
  }
  if (resume_after_read_) {
    resume_after_read_ = false;
    return after_answer();
  }
  if (!ec && phase_ == Phase::kHandling) watch_client();
}

// ---- Writing answers ------------------------------------------------------------------------------

std::string Connection::head_bytes(const HttpResponse& r, bool chunked, std::optional<size_t> content_length) const {
  std::string s = "HTTP/1.1 " + std::to_string(r.status) + " ";
  const boost::beast::string_view reason = http::obsolete_reason(http::int_to_status(unsigned(r.status)));
  s.append(reason.data(), reason.size());
  s += "\r\n";
  for (const auto& [k, v] : r.headers) s += k + ": " + v + "\r\n";
  if (chunked) s += "Transfer-Encoding: chunked\r\n";
  if (content_length) s += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  if (close_after_) s += "Connection: close\r\n";
  else if (request_.version == 10) s += "Connection: keep-alive\r\n";
  s += "\r\n";
  return s;
}

void Connection::answer_error(int status, const std::string& message, const std::string& code) {
  phase_ = Phase::kHandling;
  ++deadline_gen_;
  deadline_.cancel();
  close_after_ = true;
  recorded_ = false;
  send_whole(json_error_response(status, message, code));
}

void Connection::send_whole(HttpResponse r) {
  if (phase_ != Phase::kHandling) return;
  status_ = r.status;
  if (state_->stopping.load()) close_after_ = true;
  const bool bodiless = r.status == 204 || r.status == 304 || (r.status >= 100 && r.status < 200);
  std::string bytes = head_bytes(r, false, bodiless ? std::nullopt : std::optional<size_t>(r.body.size()));
  if (!head_request_ && !bodiless) bytes += r.body;
  answer_complete_ = true;
  enqueue(std::move(bytes));
  maybe_answer_done();
}

void Connection::send_stream_head(HttpResponse head, std::string heartbeat) {
  status_ = head.status;
  streaming_ = true;
  chunked_ = request_.version >= 11;
  if (!chunked_ || state_->stopping.load()) close_after_ = true;  // HTTP/1.0: the end of the body is the end of the connection
  heartbeat_bytes_ = std::move(heartbeat);
  enqueue(head_bytes(head, chunked_, std::nullopt));
  arm_heartbeat();
}

void Connection::send_stream_data(std::string data) {
  if (!streaming_ || answer_complete_ || data.empty()) return;
  if (chunked_) {
    char size[20];
    std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    data.insert(0, size);
    data += "\r\n";
  }
  enqueue(std::move(data));
}

void Connection::send_stream_end() {
  if (!streaming_ || answer_complete_) return;
  if (chunked_) enqueue("0\r\n\r\n");
  answer_complete_ = true;
  heartbeat_.cancel();
  maybe_answer_done();
}

void Connection::arm_heartbeat() {
  if (heartbeat_bytes_.empty()) return;
  heartbeat_.expires_after(state_->limits.stream_heartbeat);
  heartbeat_.async_wait([weak = weak_from_this()](error_code ec) {
    std::shared_ptr<Connection> self = weak.lock();
    if (ec || !self || self->phase_ != Phase::kHandling || self->answer_complete_) return;
    if (Clock::now() - self->last_write_ >= self->state_->limits.stream_heartbeat && !self->writing_)
      self->send_stream_data(self->heartbeat_bytes_);
    self->arm_heartbeat();
  });
}

void Connection::enqueue(std::string bytes) {
  if (phase_ == Phase::kClosed || bytes.empty()) return;
  out_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (out_bytes_ > state_->limits.max_pending_output) {  // the client does not read what it asked for
    client_gone();
    return close_now();
  }
  if (!writing_) write_queued();
}

void Connection::write_queued() {
  writing_ = true;
  write_buffers_.clear();
  writing_count_ = std::min<size_t>(out_.size(), 64);
  for (size_t i = 0; i < writing_count_; ++i) write_buffers_.push_back(asio::buffer(out_[i]));
  const uint64_t gen = ++write_gen_;
  write_deadline_.expires_after(state_->limits.write_timeout);
  write_deadline_.async_wait([weak = weak_from_this(), gen](error_code ec) {
    std::shared_ptr<Connection> self = weak.lock();
    if (ec || !self || !self->writing_ || gen != self->write_gen_) return;
    self->client_gone();
    self->close_now();
  });
  asio::async_write(socket_, write_buffers_, [self = shared_from_this()](error_code ec, size_t) {
    self->writing_ = false;
    self->write_deadline_.cancel();
    if (self->phase_ == Phase::kClosed) return;
    if (ec) {
      self->client_gone();
      return self->close_now();
    }
    for (size_t i = 0; i < self->writing_count_; ++i) {
      self->out_bytes_ -= self->out_.front().size();
      self->out_.pop_front();
    }
    self->last_write_ = Clock::now();
    if (!self->out_.empty()) return self->write_queued();
    self->maybe_answer_done();
  });
}

void Connection::maybe_answer_done() {
  if (answer_complete_ && !writing_ && out_.empty() && phase_ == Phase::kHandling) answer_done();
}

void Connection::record_answer() {
  if (recorded_) return;
  recorded_ = true;
  if (state_->handlers.answered) state_->handlers.answered(request_, status_ ? status_ : 499);
}

void Connection::answer_done() {
  record_answer();
  heartbeat_.cancel();
  release_exchange();
  if (reading_) {  // the watch read: let it end, then go on
    resume_after_read_ = true;
    error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  after_answer();
}

void Connection::after_answer() {
  if (close_after_ || peer_done_ || state_->stopping.load()) return linger_and_close();
  read_request();
}

// ---- Ending ---------------------------------------------------------------------------------------

void Connection::release_exchange() {
  if (exchange_) exchange_->conn.reset();
  exchange_.reset();
}

void Connection::client_gone() {
  if (exchange_) exchange_->notify_gone();
}

// Ends the sending side, then reads and drops whatever the client still sends for a moment, so
// the answer is not destroyed by a reset (closing with unread bytes sends one).
void Connection::linger_and_close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosing;
  error_code ignored;
  socket_.shutdown(asio::socket_base::shutdown_send, ignored);
  if (peer_done_) return close_now();
  arm(kLingerTime);
  discard_.resize(16384);
  lingered_ = 0;
  linger_read();
}

void Connection::linger_read() {
  reading_ = true;
  socket_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](error_code ec, size_t n) {
    self->reading_ = false;
    if (self->phase_ == Phase::kClosed) return;
    self->lingered_ += n;
    if (ec || self->lingered_ > kLingerBytes) return self->close_now();
    self->linger_read();
  });
}

void Connection::close_now() {
  if (phase_ == Phase::kClosed) return;
  if (exchange_ && !answer_complete_) client_gone();
  if (phase_ == Phase::kHandling) record_answer();
  phase_ = Phase::kClosed;
  error_code ignored;
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  socket_.close(ignored);
  ++deadline_gen_;
  deadline_.cancel();
  write_deadline_.cancel();
  heartbeat_.cancel();
  release_exchange();
  body_share_.reset();
  out_.clear();
  out_bytes_ = 0;
  if (registered_) {
    registered_ = false;
    state_->remove(registry_it_);
  }
}

}  // namespace qwen35::server
