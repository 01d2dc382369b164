#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>

#include <httplib.h>

#include "server/api_error.h"
#include "server/api_handlers.h"
#include "server/model_card.h"
#include "server/connection_watch.h"
#include "server/openai_response.h"
#include "server/remote_image.h"
#include "server/ui_assets.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

void send_json(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(Response& res, const ApiError& e) {
  send_json(res, e.status, error_json(e));
  if (e.status == 503) res.set_header("Retry-After", "1");
}

bool is_api_path(const std::string& path) { return path == "/v1" || path.rfind("/v1/", 0) == 0; }

// A fixed label per route, so /metrics has a bounded set of series whatever clients request.
std::string endpoint_label(const Request& req) {
  const std::string& p = req.path;
  for (const char* known : {"/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions"})
    if (p == known) return p;
  if (p.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (is_api_path(p)) return "/v1/other";
  if (req.method == "GET" && find_ui_asset(p)) return "ui";
  return "other";
}

const char* default_message(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "the request body is too large";
    case 414: return "the request URI is too long";
    default: return status >= 500 ? "internal server error" : "request failed";
  }
}

const char* default_code(int status) {
  switch (status) {
    case 404: return "not_found";
    case 413: return "request_too_large";
    default: return "";
  }
}

}  // namespace

struct HttpServer::Api {
  ApiContext ctx;
};

bool api_key_matches(const std::string& presented, const std::string& expected) {
  // Same work whatever the first difference: every byte of the longer string is compared.
  const size_t n = std::max(presented.size(), expected.size());
  unsigned diff = presented.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    const unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff |= unsigned(a ^ b);
  }
  return diff == 0 && !expected.empty();
}

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  const size_t threads = options_.http_threads > 0
                             ? size_t(options_.http_threads)
                             : size_t(std::max(1, options_.worker.parallel)) + options_.worker.max_queue + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT would let a second server bind the same
  // port and silently share its connections.
  http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(30, 0);   // a large image body on a slow link
  http_->set_write_timeout(30, 0);  // a stalled reader fails the write, which cancels its stream
  http_->set_keep_alive_timeout(5);
  setup_routes();
}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::bind(std::string* error) {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    if (error)
      *error = "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
               " (address in use, not permitted, or not an address of this machine)";
    return false;
  }
  return true;
}

void HttpServer::start() {
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() does nothing before the listener runs; wait so that a stop() right after
  // start() cannot leave the listener blocked in accept().
  for (int i = 0; i < 5000 && !http_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::set_engine(std::unique_ptr<Engine> engine) {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  engine_ = std::move(engine);
  worker_ = std::make_unique<Worker>(*engine_, options_.worker, &metrics_);
  api_ = std::make_unique<Api>();
  ApiContext& ctx = api_->ctx;
  ctx.engine = engine_.get();
  ctx.worker = worker_.get();
  ctx.policy.model_id = engine_->info().name;
  ctx.policy.max_images = options_.max_images;
  ctx.policy.images.max_image_bytes = options_.max_image_bytes;
  ctx.policy.images.allow_remote = options_.allow_remote_images;
  if (options_.allow_remote_images)
    ctx.policy.images.fetch_remote = [](const std::string& url, size_t max_bytes) {
      return fetch_remote_image(url, max_bytes);
    };
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ready_.store(true, std::memory_order_release);
}

void HttpServer::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (worker_) worker_->stop();  // running streams end with an error event, queued requests with 503
  http_->stop();
  // Threads idle in keep-alive would otherwise wait for their timeout before the join returns.
  if (port_ > 0) end_idle_connections(port_);
  if (listener_.joinable()) listener_.join();
}

void HttpServer::setup_routes() {
  httplib::Server& s = *http_;

  // Runs before the body is read: a request without the key costs no upload.
  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    if (!is_api_path(req.path)) return HandlerResponse::Unhandled;
    if (!options_.api_key.empty()) {
      const std::string auth = req.get_header_value("Authorization");
      const bool bearer = auth.size() > 7 && (auth.rfind("Bearer ", 0) == 0 || auth.rfind("bearer ", 0) == 0);
      if (!api_key_matches(bearer ? auth.substr(7) : std::string(), options_.api_key)) {
        send_error(res, ApiError(401,
                                 auth.empty() ? "missing API key: send the header 'Authorization: Bearer <key>'"
                                              : "incorrect API key",
                                 "invalid_request_error", "", "invalid_api_key"));
        return HandlerResponse::Handled;
      }
    }
    if (!ready()) {
      send_error(res, ApiError(503, "the model is still loading", "unavailable_error", "", "model_loading"));
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  });

  // Fills an empty error answer (unknown route, body over the limit, malformed HTTP) with the
  // error object; answers that already have a body are left alone.
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const Request& req, Response& res) {
    if (!res.body.empty() || res.status < 400) return HandlerResponse::Unhandled;
    std::string message = default_message(res.status);
    if (res.status == 404) message = "no route for " + req.method + " " + req.path;
    send_json(res, res.status, error_json(res.status, message, "", "", default_code(res.status)));
    return HandlerResponse::Handled;
  }));

  s.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, what, "server_error", "", "internal_error"));
  });

  s.set_logger([this](const Request& req, const Response& res) { metrics_.count_request(endpoint_label(req), res.status); });

  s.Get("/health", [this](const Request&, Response& res) {
    if (ready()) return send_json(res, 200, json{{"status", "ok"}});
    json body = error_json(503, "the model is still loading", "unavailable_error", "", "model_loading");
    body["status"] = "loading";
    send_json(res, 503, body);
    res.set_header("Retry-After", "1");
  });

  s.Get("/metrics", [this](const Request&, Response& res) {
    MetricGauges g;
    g.model_loaded = ready();
    g.parallel = options_.worker.parallel;
    if (g.model_loaded && worker_) {
      g.queue_length = int64_t(worker_->queue_length());
      g.active_generations = int64_t(worker_->active());
      const PrefixCache& c = worker_->cache();
      g.cache_hits = c.hits();
      g.cache_misses = c.misses();
      g.cache_bytes = int64_t(c.bytes());
      g.cache_budget_bytes = int64_t(c.budget());
      g.cache_entries = int64_t(c.entries());
    }
    res.set_content(metrics_.render(g), "text/plain; version=0.0.4; charset=utf-8");
  });

  auto model_json = [this] {
    const ModelInfo& info = engine_->info();
    json meta = model_meta(info);
    meta["parallel"] = options_.worker.parallel;
    return json{{"id", info.name},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "qwen35"},
                {"meta", std::move(meta)}};
  };
  s.Get("/v1/models", [model_json](const Request&, Response& res) {
    send_json(res, 200, json{{"object", "list"}, {"data", json::array({model_json()})}});
  });
  s.Get(R"(/v1/models/(.+))", [this, model_json](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    if (id != engine_->info().name)
      return send_error(res, ApiError(404, "The model '" + id + "' does not exist", "invalid_request_error", "model",
                                      "model_not_found"));
    send_json(res, 200, model_json());
  });

  auto guarded = [](auto handler) {
    return [handler](const Request& req, Response& res) {
      try {
        handler(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, e.what(), "server_error", "", "internal_error"));
      }
    };
  };
  s.Post("/v1/chat/completions",
         guarded([this](const Request& req, Response& res) { handle_chat_completions(api_->ctx, req, res); }));
  s.Post("/v1/completions", guarded([this](const Request& req, Response& res) { handle_completions(api_->ctx, req, res); }));

  // The web UI: exact embedded names only (no file system, so no traversal).
  s.Get(R"(/.*)", [](const Request& req, Response& res) {
    if (!is_api_path(req.path)) {
      if (const UiAsset* a = find_ui_asset(req.path)) {
        res.set_content(std::string(a->data), std::string(a->content_type));
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Content-Type-Options", "nosniff");
        return;
      }
    }
    send_error(res, ApiError(404, "no route for GET " + req.path, "invalid_request_error", "", "not_found"));
  });
}

}  // namespace qwen35::server
