// libFuzzer target: any bytes sent to the server's HTTP layer on a real socket, as a client would
// send them: Beast's parser with the server's limits, the connection's state machine
// (pipelining, 100-continue, half-close, errors that close), the route table's checks, and for
// a JSON route the body's parse and OpenAI field checks. Whatever arrives, the server answers
// and closes the connection; it must not crash, hang or leak.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "server/http/json_error.h"
#include "server/http/router.h"
#include "server/http/transport.h"
#include "server/openai/api_error.h"
#include "server/openai/request.h"

namespace {

using namespace qwen35::server;

HttpResponse ok_json(const std::string& body) {
  HttpResponse r;
  r.body = body;
  r.set_header("Content-Type", "application/json");
  return r;
}

// The server's routes and checks, with handlers that stop after parsing (no model here).
struct Server {
  Server() : router(AccessPolicy{"", {"http://app.example"}, [] { return true; }}) {
    auto route = [&](std::string path, std::string method, bool guarded, bool json, bool prefix = false) {
      Router::Route r;
      r.path = std::move(path);
      r.methods = {std::move(method)};
      r.guarded = guarded;
      r.needs_model = guarded;
      r.json_body = json;
      r.prefix = prefix;
      r.handler = [json](HttpRequest req, std::shared_ptr<Responder> res) {
        if (!json) return res->respond(ok_json("{\"status\":\"ok\"}"));
        try {
          const nlohmann::ordered_json doc = parse_json_body(req.body);
          RequestPolicy policy;
          policy.images.max_image_bytes = 1 << 16;
          (void)parse_chat_completion(doc, qwen35::SamplingParams{}, policy);
          res->respond(ok_json("{}"));
        } catch (const ApiError& e) {
          res->respond(json_error_response(e.status, e.what(), e.code));
        } catch (const qwen35::Error& e) {
          res->respond(json_error_response(400, e.what(), "invalid_value"));
        }
      };
      router.add(std::move(r));
    };
    route("/health", "GET", false, false);
    route("/v1/models", "GET", true, false);
    route("/v1/models/", "GET", true, false, true);
    route("/v1/chat/completions", "POST", true, true);
    route("/", "GET", false, false);
    HttpLimits limits;
    limits.max_header_bytes = 8 << 10;
    limits.max_body_bytes = 256 << 10;
    limits.header_timeout = std::chrono::milliseconds(500);
    limits.body_timeout = std::chrono::milliseconds(500);
    limits.idle_timeout = std::chrono::milliseconds(200);
    limits.max_connections = 64;
    HttpTransport::Handlers h;
    h.screen = [this](const HttpRequest& head) { return router.screen(head); };
    h.dispatch = [this](HttpRequest req, std::shared_ptr<Responder> res) { router.dispatch(std::move(req), std::move(res)); };
    transport = std::make_unique<HttpTransport>(limits, std::move(h));
    std::string error;
    if (!transport->bind("127.0.0.1", 0, &error)) __builtin_trap();
    transport->start();
  }
  Router router;
  std::unique_ptr<HttpTransport> transport;
};

Server& server() {
  static Server* s = new Server();  // lives until the process ends
  return *s;
}

// libFuzzer's timeout alarm interrupts system calls (connect above all, slow with tens of
// thousands of TIME_WAIT sockets at a thousand runs a second): those are retried, not failures.
int connect_to_server(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) __builtin_trap();
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    const int err = errno;
    close(fd);
    if (err != EINTR && err != EADDRNOTAVAIL && err != EAGAIN) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(err == EINTR ? 0 : 10));
  }
  __builtin_trap();  // the server stopped accepting
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = connect_to_server(server().transport->port());
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server answered and closed early (a limit)
    sent += size_t(n);
  }
  shutdown(fd, SHUT_WR);
  // The server answers what it can and closes; it has a few seconds (its own deadlines are 0.5 s).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) __builtin_trap();  // the connection was never closed
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  close(fd);
  return 0;
}
