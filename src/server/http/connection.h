// One client connection of HttpTransport (internal to it): the request/answer state machine of
// transport.h on one socket. Everything here runs on the connection's strand; the public
// methods post there and may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/http/transport.h"

namespace qwen35::server {

class Connection;

// What the acceptor and all connections share; outlives every connection.
struct TransportState : std::enable_shared_from_this<TransportState> {
  HttpLimits limits;
  HttpTransport::Handlers handlers;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;
  std::list<std::weak_ptr<Connection>> live;  // oldest first

  std::list<std::weak_ptr<Connection>>::iterator add(const std::shared_ptr<Connection>& c);
  void remove(std::list<std::weak_ptr<Connection>>::iterator it);
  size_t size() const;

  // A share of the memory for request bodies in progress (limits.max_body_bytes_in_flight);
  // nullptr when it is spent (a body larger than the budget still gets it when nothing else
  // holds any). Released when the returned handle is.
  std::shared_ptr<const void> reserve_body(size_t bytes);
  std::atomic<size_t> body_bytes{0};
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::strand<boost::asio::io_context::executor_type>>;

  Connection(Socket socket, std::shared_ptr<TransportState> state);
  ~Connection();

  // Starts reading requests (or, with `reject`, answers 503 and closes).
  void start(bool reject = false);
  // Closes it now if no request of it is being answered; returns whether it was such a one at
  // the time of the call (the close itself happens on its strand).
  bool evict_if_idle();
  // The server stops: idle connections close, the answer in progress finishes first.
  void shutdown();
  // Closes at once, whatever it is doing.
  void force_close();

  // For the Responder of the request in progress (see connection.cpp).
  struct Exchange;

 private:
  enum class Phase { kWaiting, kReading, kHandling, kClosing, kClosed };

  void read_request();
  void parse_and_read();
  void on_read(boost::system::error_code ec, size_t bytes);
  void on_parse_error(boost::system::error_code ec);
  void on_header();
  void on_request();
  void watch_client();
  void on_watch(boost::system::error_code ec);
  void after_answer();
  void on_deadline();

  void answer_error(int status, const std::string& message, const std::string& code);
  void send_whole(HttpResponse r);
  void send_stream_head(HttpResponse head, std::string heartbeat);
  void send_stream_data(std::string data);
  void send_stream_end();
  std::string head_bytes(const HttpResponse& r, bool chunked, std::optional<size_t> content_length) const;
  void enqueue(std::string bytes);
  void write_queued();
  void maybe_answer_done();
  void answer_done();
  void record_answer();
  void arm_heartbeat();
  void client_gone();
  void release_exchange();
  void linger_and_close();
  void linger_read();
  void close_now();
  void arm(std::chrono::milliseconds after);

  Socket socket_;
  std::shared_ptr<TransportState> state_;
  std::list<std::weak_ptr<Connection>>::iterator registry_it_;
  bool registered_ = false;
  boost::asio::steady_timer deadline_;        // idle, header, body and linger deadlines
  uint64_t deadline_gen_ = 0;                 // tells a stale expiry from the armed one
  boost::asio::steady_timer write_deadline_;  // a write the client does not take
  uint64_t write_gen_ = 0;
  boost::asio::steady_timer heartbeat_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;

  std::atomic<Phase> phase_{Phase::kWaiting};
  bool first_request_ = true;
  bool timed_out_ = false;
  bool reading_ = false;            // a read (request, watch or linger) is outstanding
  bool resume_after_read_ = false;  // the answer is done: go on once the watch read ends
  bool screened_ = false;
  HttpRequest request_;             // head (and body once complete) of the request in progress
  std::shared_ptr<const void> body_share_;  // its body's share of the memory budget
  bool head_request_ = false;       // HEAD: answers carry no body
  bool close_after_ = false;        // close once the answer is written
  bool peer_done_ = false;          // the client half-closed after its request
  std::chrono::steady_clock::time_point request_done_at_;
  std::shared_ptr<Exchange> exchange_;
  int status_ = 0;                  // of the answer in progress (0: none begun)
  bool recorded_ = true;            // the answer in progress was reported to handlers.answered
  bool streaming_ = false;
  bool chunked_ = false;
  bool answer_complete_ = false;    // everything of the answer is queued
  std::string heartbeat_bytes_;
  std::chrono::steady_clock::time_point last_write_;

  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  size_t writing_count_ = 0;        // entries of out_ in the write in flight
  std::vector<boost::asio::const_buffer> write_buffers_;
  bool writing_ = false;
  std::vector<char> discard_;       // lingering: bytes read and dropped
  size_t lingered_ = 0;
};

}  // namespace qwen35::server
