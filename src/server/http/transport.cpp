#include "server/http/transport.h"

#include <sys/resource.h>

#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "server/http/connection.h"

namespace qwen35::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr size_t kSpareDescriptors = 64;  // for the model files, the listener, logging

// The connection cap must fit the open-file limit: raise the soft limit when it is lower, else
// lower the cap to what it allows.
size_t connection_cap(size_t wanted) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return wanted;
  const rlim_t need = rlim_t(wanted + kSpareDescriptors);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? need : std::min(need, lim.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return wanted;
  return std::max<size_t>(8, size_t(lim.rlim_cur) > kSpareDescriptors ? size_t(lim.rlim_cur) - kSpareDescriptors : 8);
}

}  // namespace

struct HttpTransport::Impl {
  Impl(HttpLimits limits, Handlers handlers, int threads) : io_threads(std::max(1, threads)) {
    state = std::make_shared<TransportState>();
    limits.max_connections = connection_cap(std::max<size_t>(1, limits.max_connections));
    state->limits = limits;
    state->handlers = std::move(handlers);
  }

  void accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, Connection::Socket socket) {
      if (ec == asio::error::operation_aborted || state->stopping.load()) return;
      if (ec) {
        // Out of descriptors (or a transient failure): make room and try again shortly, so the
        // loop neither spins nor stops accepting.
        evict_oldest_idle();
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](error_code e) {
          if (!e) accept();
        });
        return;
      }
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // streams are many small writes
      auto c = std::make_shared<Connection>(std::move(socket), state);
      bool reject = false;
      if (state->size() >= state->limits.max_connections) reject = !evict_oldest_idle();
      c->start(reject);
      accept();
    });
  }

  // Closes the oldest connection that is not being answered; false when every one is.
  bool evict_oldest_idle() {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      for (auto& w : state->live)
        if (auto c = w.lock()) live.push_back(std::move(c));
    }
    for (auto& c : live)
      if (c->evict_if_idle()) return true;
    return false;
  }

  std::vector<std::shared_ptr<Connection>> connections() {
    std::vector<std::shared_ptr<Connection>> live;
    std::lock_guard<std::mutex> lock(state->mu);
    for (auto& w : state->live)
      if (auto c = w.lock()) live.push_back(std::move(c));
    return live;
  }

  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer retry{ioc};
  std::shared_ptr<TransportState> state;
  std::vector<std::thread> threads;
  int io_threads;
  int port = -1;
  bool started = false;
  bool stopped = false;
};

HttpTransport::HttpTransport(HttpLimits limits, Handlers handlers, int io_threads)
    : impl_(std::make_unique<Impl>(limits, std::move(handlers), io_threads)) {}

HttpTransport::~HttpTransport() { stop(); }

bool HttpTransport::bind(const std::string& host, int port, std::string* error) {
  Impl& m = *impl_;
  auto failed = [&](const std::string& why) {
    if (error)
      *error = "cannot listen on " + host + ":" + std::to_string(port) + ": " + why +
               " (address in use, not permitted, or not an address of this machine)";
    error_code ignored;
    m.acceptor.close(ignored);
    return false;
  };
  error_code ec;
  tcp::resolver resolver(m.ioc);
  const auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) return failed(ec ? ec.message() : "no such address");
  const tcp::endpoint ep = endpoints.begin()->endpoint();
  m.acceptor.open(ep.protocol(), ec);
  if (ec) return failed(ec.message());
  // SO_REUSEADDR only (no SO_REUSEPORT): a second server on the same port must fail, not share it.
  m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  m.acceptor.bind(ep, ec);
  if (ec) return failed(ec.message());
  m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return failed(ec.message());
  m.port = m.acceptor.local_endpoint(ec).port();
  return !ec || failed(ec.message());
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::start() {
  Impl& m = *impl_;
  if (m.started || m.stopped || !m.acceptor.is_open()) return;
  m.started = true;
  m.accept();
  for (int i = 0; i < m.io_threads; ++i) m.threads.emplace_back([&m] { m.ioc.run(); });
}

void HttpTransport::stop(std::chrono::milliseconds drain) {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  m.state->stopping.store(true);
  if (!m.started) {
    error_code ignored;
    m.acceptor.close(ignored);
    return;
  }
  asio::post(m.ioc, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
    m.retry.cancel();
  });
  // Idle connections close now; answers in progress get `drain` to finish, then everything closes.
  for (auto& c : m.connections()) c->shutdown();
  auto wait_empty = [&](std::chrono::milliseconds within) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (m.state->size() > 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  wait_empty(drain);
  for (auto& c : m.connections()) c->force_close();
  wait_empty(std::chrono::milliseconds(1000));
  m.ioc.stop();
  for (std::thread& t : m.threads) t.join();
  m.threads.clear();
}

size_t HttpTransport::open_connections() const { return impl_->state->size(); }

const HttpLimits& HttpTransport::limits() const { return impl_->state->limits; }

}  // namespace qwen35::server
