#include "server/http_server.h"

#include <chrono>

#include "server/api_handlers.h"
#include "server/http/json_error.h"
#include "server/http/remote_media.h"
#include "server/http/transport.h"
#include "server/job_answer.h"
#include "server/openai/api_error.h"
#include "server/openai/response.h"
#include "server/ui/assets.h"
#include "server/worker/request_pool.h"

namespace qwen35::server {
namespace {

using json = nlohmann::ordered_json;

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(body);
  r.set_header("Content-Type", "application/json");
  return r;
}

// "%41b" -> "Ab"; malformed escapes stay as they are.
std::string percent_decoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

HttpLimits limits_of(const ServerOptions& o) {
  HttpLimits l;
  l.max_header_bytes = o.max_header_bytes;
  l.max_body_bytes = o.max_body_bytes;
  l.max_body_bytes_in_flight = o.max_body_bytes_in_flight ? o.max_body_bytes_in_flight : 4 * o.max_body_bytes;
  l.header_timeout = o.header_timeout;
  l.body_timeout = o.body_timeout;
  l.idle_timeout = o.idle_timeout;
  l.write_timeout = o.write_timeout;
  l.max_connections = o.max_connections;
  return l;
}

}  // namespace

struct HttpServer::Api {
  ApiContext ctx;
};

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)),
      router_(AccessPolicy{options_.api_key, options_.cors_origins, [this] { return ready(); }}) {
  add_routes();
  HttpTransport::Handlers h;
  h.screen = [this](const HttpRequest& head) { return router_.screen(head); };
  h.dispatch = [this](HttpRequest request, std::shared_ptr<Responder> responder) {
    router_.dispatch(std::move(request), std::move(responder));
  };
  h.answered = [this](const HttpRequest& head, int status) { metrics_.count_request(router_.label(head), status); };
  transport_ = std::make_unique<HttpTransport>(limits_of(options_), std::move(h));
  // Waiting room: as many generating requests as the worker could take, and some more.
  const size_t waiting = size_t(std::max(1, options_.worker.parallel)) + options_.worker.max_queue + 16;
  pool_ = std::make_unique<RequestPool>(std::max(1, options_.request_threads), waiting);
}

HttpServer::~HttpServer() { stop(); }

size_t HttpServer::max_connections() const { return transport_->limits().max_connections; }

bool HttpServer::bind(std::string* error) {
  if (!transport_->bind(options_.host, options_.port, error)) return false;
  port_ = transport_->port();
  return true;
}

void HttpServer::start() { transport_->start(); }

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
  ctx.policy.reasoning_budget = options_.reasoning_budget;
  ctx.policy.max_tokens = options_.max_tokens;
  ctx.policy.images.max_image_bytes = options_.max_image_bytes;
  ctx.policy.max_videos = options_.max_videos;
  ctx.policy.images.max_video_bytes = options_.max_video_bytes;
  ctx.policy.images.max_video_frames = options_.max_video_frames;
  ctx.policy.images.video_caps.max_tokens = options_.video_max_tokens;
  ctx.policy.images.allow_remote = options_.allow_remote_images;
  if (options_.allow_remote_images)
    ctx.policy.images.fetch_remote = [](const std::string& url, size_t max_bytes, bool video) {
      return fetch_remote_media(url, max_bytes, video ? MediaKind::kVideo : MediaKind::kImage);
    };
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ready_.store(true, std::memory_order_release);
}

void HttpServer::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (worker_) worker_->stop();  // running streams end with an error event, queued requests with 503
  pool_->stop();                 // requests being parsed find the worker stopped: 503
  transport_->stop();            // answers in progress are written, then every connection closes
}

void HttpServer::run_generating(HttpRequest request, std::shared_ptr<Responder> responder, bool chat) {
  auto task = [this, request = std::move(request), responder, chat] {
    try {
      if (chat) handle_chat_completions(api_->ctx, request, responder);
      else handle_completions(api_->ctx, request, responder);
    } catch (const ApiError& e) {
      responder->respond(error_response(e));
    } catch (const std::exception& e) {
      responder->respond(error_response(ApiError(500, e.what(), "server_error", "", "internal_error")));
    }
  };
  if (!pool_->submit(std::move(task)))
    responder->respond(error_response(
        ApiError(503, "the server is busy; try again later", "unavailable_error", "", "queue_full")));
}

void HttpServer::add_routes() {
  using Route = Router::Route;
  auto route = [&](std::string path, std::vector<std::string> methods, bool guarded, bool needs_model, bool json_body,
                   Router::Handler handler, bool prefix = false, std::string label = "") {
    Route r;
    r.label = label.empty() ? path : label;
    r.path = std::move(path);
    r.prefix = prefix;
    r.methods = std::move(methods);
    r.guarded = guarded;
    r.needs_model = needs_model;
    r.json_body = json_body;
    r.handler = std::move(handler);
    router_.add(std::move(r));
  };

  route("/health", {"GET"}, false, false, false, [this](HttpRequest, std::shared_ptr<Responder> res) {
    if (ready()) return res->respond(json_response(200, json{{"status", "ok"}}));
    json body = error_json(503, "the model is still loading", "unavailable_error", "", "model_loading");
    body["status"] = "loading";
    HttpResponse r = json_response(503, body);
    r.set_header("Retry-After", "1");
    res->respond(std::move(r));
  });

  route("/metrics", {"GET"}, true, false, false, [this](HttpRequest, std::shared_ptr<Responder> res) {
    MetricGauges g;
    g.model_loaded = ready();
    g.parallel = options_.worker.parallel;
    if (g.model_loaded && worker_) {
      g.queue_length = int64_t(worker_->queue_length());
      g.active_generations = int64_t(worker_->active());
      g.batched_passes = int64_t(worker_->batched_passes());
      g.batched_rows = int64_t(worker_->batched_rows());
      const PrefixCache& c = worker_->cache();
      g.cache_hits = c.hits();
      g.cache_misses = c.misses();
      g.cache_bytes = int64_t(c.bytes());
      g.cache_budget_bytes = int64_t(c.budget());
      g.cache_entries = int64_t(c.entries());
    }
    HttpResponse r;
    r.body = metrics_.render(g);
    r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    res->respond(std::move(r));
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
  route("/v1/models", {"GET"}, true, true, false, [model_json](HttpRequest, std::shared_ptr<Responder> res) {
    res->respond(json_response(200, json{{"object", "list"}, {"data", json::array({model_json()})}}));
  });
  route(
      "/v1/models/", {"GET"}, true, true, false,
      [this, model_json](HttpRequest req, std::shared_ptr<Responder> res) {
        const std::string id = percent_decoded(req.path.substr(std::string("/v1/models/").size()));
        if (id != engine_->info().name)
          return res->respond(error_response(ApiError(404, "The model '" + id + "' does not exist",
                                                      "invalid_request_error", "model", "model_not_found")));
        res->respond(json_response(200, model_json()));
      },
      /*prefix=*/true, "/v1/models/{id}");
  route("/v1/chat/completions", {"POST"}, true, true, true, [this](HttpRequest req, std::shared_ptr<Responder> res) {
    run_generating(std::move(req), std::move(res), /*chat=*/true);
  });
  route("/v1/completions", {"POST"}, true, true, true, [this](HttpRequest req, std::shared_ptr<Responder> res) {
    run_generating(std::move(req), std::move(res), /*chat=*/false);
  });

  // The web UI: exact embedded names only (no file system, so no traversal).
  auto asset = [](HttpRequest req, std::shared_ptr<Responder> res) {
    const UiAsset* a = find_ui_asset(req.path);
    HttpResponse r;
    r.body = std::string(a->data);
    r.set_header("Content-Type", std::string(a->content_type));
    r.set_header("Cache-Control", "no-cache");
    r.set_header("X-Content-Type-Options", "nosniff");
    res->respond(std::move(r));
  };
  route("/", {"GET"}, false, false, false, asset, false, "ui");
  for (std::string_view path : ui_asset_paths()) route(std::string(path), {"GET"}, false, false, false, asset, false, "ui");
}

}  // namespace qwen35::server
