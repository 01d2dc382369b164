// The HTTP side of `qwen35 serve`: the transport (event-driven, bounded; http/transport.h), the
// route table and its access checks (http/router.h), the embedded web UI, /health and /metrics.
//
// Threads: one io thread moves every byte of every connection; a small request pool parses,
// validates and prepares generating requests; the worker runs the model. Slow or idle clients
// cost no thread.
//
// Life cycle: bind() and start() listen at once; set_engine() hands over the loaded model later
// (until then /health answers 503 {"status":"loading"} and /v1/* answers 503), so a client can
// watch a big model load. stop() ends the running generations and joins every thread.
//
// Routes
//   GET  /health                 200 {"status":"ok"} | 503 loading (never needs the key)
//   GET  /metrics                Prometheus text (needs the key when one is set)
//   GET  /v1/models[/{id}]       the one served model (id = model folder name, with meta)
//   POST /v1/chat/completions    OpenAI chat (stream, usage, logprobs, images, tools, thinking)
//   POST /v1/completions         raw prompt (string or token ids)
//   GET  /, /<asset>             the embedded web UI (exact names only), Cache-Control: no-cache
// Unknown paths are 404, other methods on known paths 405; every error is
// {"error": {"message", "type", "param", "code"}}. See http/router.h for the checks before a body is
// read and http/transport.h for the limits.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "qwen35/engine.h"
#include "server/http/router.h"
#include "server/worker/metrics.h"
#include "server/worker/worker.h"

namespace qwen35::server {

class HttpTransport;
class RequestPool;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                                 // 0: any free port (see port())
  std::string api_key;                             // "": no key required
  std::vector<std::string> cors_origins;           // origins whose pages may call the API ("*": any)
  WorkerOptions worker;
  size_t max_body_bytes = size_t(32) << 20;
  size_t max_body_bytes_in_flight = 0;             // bodies arriving or waiting, together; 0: 4 x max_body_bytes
  size_t max_header_bytes = size_t(32) << 10;      // request line and headers together
  size_t max_image_bytes = size_t(20) << 20;       // one encoded image file
  size_t max_images = 16;                          // per request
  size_t max_video_bytes = size_t(64) << 20;       // one encoded video file
  size_t max_videos = 4;                           // per request
  size_t max_video_frames = 768;                   // images of one video given as frames
  // The most <|video_pad|> tokens of one video (the processor's budget is lowered to fit; a request
  // may ask for fewer). The official budget (25165824 pixels over T frames) gives at most 12288
  // tokens for an even T and 12288 (T + 1) / T for an odd one (the last pair is padded), so 16384
  // leaves every clip of 3 frames or more as the official processor makes it; a minute of video
  // (12390 tokens at most) fits the default context of 32768 with room to talk about it.
  int64_t video_max_tokens = 16384;
  bool allow_remote_images = false;                // fetch http(s) image and video URLs
  int64_t reasoning_budget = -1;                   // chats' default thought budget (-1: unlimited)
  int64_t max_tokens = 8192;                       // chats' default answer length (-1: up to the context)
  size_t max_connections = 512;
  std::chrono::milliseconds header_timeout{10'000};  // a request's line and headers
  std::chrono::milliseconds body_timeout{120'000};   // its whole body
  std::chrono::milliseconds idle_timeout{10'000};    // keep-alive between requests
  std::chrono::milliseconds write_timeout{30'000};   // a client that stops reading
  int request_threads = 4;                         // parsing, image decoding, remote fetches
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
  // Serves in background threads (after bind()).
  void start();
  // From now on the model is served. Creates the worker (its sessions and prefix cache).
  void set_engine(std::unique_ptr<Engine> engine);
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // Ends the running generations, stops listening and joins every thread. Idempotent.
  void stop();

  Metrics& metrics() { return metrics_; }
  const ServerOptions& options() const { return options_; }
  // The connection cap in force (lower than asked when the open-file limit is lower).
  size_t max_connections() const;

 private:
  void add_routes();
  void run_generating(HttpRequest request, std::shared_ptr<Responder> responder, bool chat);

  ServerOptions options_;
  Metrics metrics_;
  Router router_;
  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<RequestPool> pool_;
  int port_ = -1;
  std::mutex stop_mu_;
  bool stopped_ = false;

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Worker> worker_;
  std::atomic<bool> ready_{false};
  int64_t created_ = 0;  // unix time the model became ready
  struct Api;
  std::unique_ptr<Api> api_;  // the handlers' context, set with the engine
};

}  // namespace qwen35::server
