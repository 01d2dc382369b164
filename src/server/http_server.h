// The HTTP side of `qwen35 serve`: httplib setup, limits, API-key check, error answers, routes,
// the embedded web UI, /health and /metrics.
//
// Life cycle: bind() and start() listen at once; set_engine() hands over the loaded model later
// (until then /health answers 503 {"status":"loading"} and /v1/* answers 503), so a client can
// watch a big model load. stop() finishes the running generations and joins every thread.
//
// Routes
//   GET  /health                 200 {"status":"ok"} | 503 loading
//   GET  /metrics                Prometheus text
//   GET  /v1/models[/{id}]       the one served model (id = model folder name, with meta)
//   POST /v1/chat/completions    OpenAI chat (stream, usage, logprobs, images, tools, thinking)
//   POST /v1/completions         raw prompt (string or token ids)
//   GET  /, /<asset>             the embedded web UI (exact names only), Cache-Control: no-cache
// Everything else is 404; every error is {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "qwen35/engine.h"
#include "server/metrics.h"
#include "server/worker.h"

namespace httplib {
class Server;
}

namespace qwen35::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                                 // 0: any free port (see port())
  std::string api_key;                             // "": no key required
  WorkerOptions worker;
  size_t max_body_bytes = size_t(32) << 20;
  size_t max_image_bytes = size_t(20) << 20;       // one decoded image file
  size_t max_images = 16;                          // per request
  bool allow_remote_images = false;                // fetch http(s) image URLs
  int http_threads = 0;                            // 0: parallel + max_queue + 8
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port; false with a reason in *error when it cannot.
  bool bind(std::string* error);
  int port() const { return port_; }
  // Serves in a background thread (after bind()).
  void start();
  // From now on the model is served. Creates the worker (its sessions and prefix cache).
  void set_engine(std::unique_ptr<Engine> engine);
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // Ends the running generations, stops listening and joins every thread. Idempotent.
  void stop();

  Metrics& metrics() { return metrics_; }
  const ServerOptions& options() const { return options_; }

 private:
  void setup_routes();

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = -1;
  Metrics metrics_;
  std::mutex stop_mu_;
  bool stopped_ = false;

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Worker> worker_;
  std::atomic<bool> ready_{false};
  int64_t created_ = 0;  // unix time the model became ready
  struct Api;
  std::unique_ptr<Api> api_;  // the handlers' context, set with the engine
};

// Constant-time comparison of a presented key with the configured one.
bool api_key_matches(const std::string& presented, const std::string& expected);

}  // namespace qwen35::server
