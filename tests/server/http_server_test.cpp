// The HTTP layer end to end on a free port with the tiny model: loading state, routes, errors,
// limits, API key, web UI, SSE, metrics and cancellation when a client goes away.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <regex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/ui/assets.h"
#include "server_harness.h"

namespace qwen35::server {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class Served {
 public:
  explicit Served(ServerOptions o, bool load = true, int64_t context = 256) : server_(prepare(std::move(o))) {
    std::string error;
    EXPECT_TRUE(server_.bind(&error)) << error;
    server_.start();
    if (load) server_.set_engine(test::load_small_engine(context));
  }
  ~Served() { server_.stop(); }

  HttpServer& server() { return server_; }
  httplib::Client client(int read_timeout_s = 30) {
    httplib::Client c("127.0.0.1", server_.port());
    c.set_read_timeout(read_timeout_s, 0);
    return c;
  }
  // Polls /metrics until `needle` shows up (counters are updated after the answer is sent).
  bool metrics_contain(const std::string& needle, std::chrono::milliseconds within = 5s) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
      auto r = client().Get("/metrics");
      if (r && r->body.find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

 private:
  static ServerOptions prepare(ServerOptions o) {
    signal(SIGPIPE, SIG_IGN);
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }
  HttpServer server_;
};

ServerOptions options(int parallel = 2, size_t max_queue = 8) {
  ServerOptions o;
  o.worker.parallel = parallel;
  o.worker.max_queue = max_queue;
  o.worker.cache_bytes = size_t(64) << 20;
  return o;
}

void expect_error(const httplib::Result& r, int status, const std::string& code = "") {
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, status) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  if (!code.empty()) {
    EXPECT_EQ(j["error"]["code"], code) << r->body;
  }
}

const char* kHello = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"temperature":0})";

TEST(HttpServer, HealthIs503UntilTheModelIsReady) {
  Served s(options(), /*load=*/false);
  auto c = s.client();
  auto h = c.Get("/health");
  expect_error(h, 503, "model_loading");
  EXPECT_EQ(json::parse(h->body)["status"], "loading");
  expect_error(c.Get("/v1/models"), 503, "model_loading");
  expect_error(c.Post("/v1/chat/completions", kHello, "application/json"), 503, "model_loading");
  EXPECT_EQ(c.Get("/")->status, 200);  // the UI is there while loading
  s.server().set_engine(test::load_small_engine(256));
  h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
}

TEST(HttpServer, APortInUseIsAnError) {
  Served s(options(), /*load=*/false);
  ServerOptions o = options();
  o.host = "127.0.0.1";
  o.port = s.server().port();
  HttpServer second(o);
  std::string error;
  EXPECT_FALSE(second.bind(&error));
  EXPECT_NE(error.find(std::to_string(o.port)), std::string::npos) << error;
}

TEST(HttpServer, ModelsListsTheServedModel) {
  Served s(options());
  auto c = s.client();
  auto r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "tiny-qwen35");
  EXPECT_EQ(j["data"][0]["meta"]["context_size"], 256);
  EXPECT_EQ(j["data"][0]["meta"]["has_vision"], true);
  r = c.Get("/v1/models/tiny-qwen35");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  expect_error(c.Get("/v1/models/gpt-4"), 404, "model_not_found");
}

TEST(HttpServer, UnknownRoutesAre404Objects) {
  Served s(options());
  auto c = s.client();
  expect_error(c.Get("/v1/nothing"), 404, "not_found");
  expect_error(c.Post("/v1/nothing", "{}", "application/json"), 404, "not_found");
  expect_error(c.Post("/", "{}", "application/json"), 405, "method_not_allowed");  // "/" is the UI: GET only
  expect_error(c.Get("/no-such-file.js"), 404, "not_found");
  expect_error(c.Get("/../../etc/passwd"), 404);
  expect_error(c.Get("/%2e%2e/%2e%2e/etc/passwd"), 404);
  expect_error(c.Get("/v1/chat/completions"), 405, "method_not_allowed");  // a known route: 405, not 404
}

TEST(HttpServer, ServesTheEmbeddedUi) {
  Served s(options());
  auto c = s.client();
  auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(r->body, std::string(find_ui_asset("/index.html")->data));
  for (std::string_view path : ui_asset_paths()) {
    auto a = c.Get(std::string(path));
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 200) << path;
    EXPECT_EQ(a->get_header_value("Content-Type"), std::string(find_ui_asset(path)->content_type)) << path;
  }
}

TEST(HttpServer, BadRequestsGetErrorObjectsAndTheServerStaysHealthy) {
  Served s(options());
  auto c = s.client();
  expect_error(c.Post("/v1/chat/completions", "{\"messages\": [", "application/json"), 400, "invalid_json");
  expect_error(c.Post("/v1/chat/completions", R"({"messages":"hi"})", "application/json"), 400);
  expect_error(c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})",
                      "application/json"),
               400, "invalid_value");
  expect_error(c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"temperature":"x"})",
                      "application/json"),
               400, "invalid_type");
  const std::string broken_image =
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAAAAAAAAAA"}}]}]})";
  expect_error(c.Post("/v1/chat/completions", broken_image, "application/json"), 400);
  std::string many_words;
  for (int i = 0; i < 400; ++i) many_words += " word" + std::to_string(i);
  expect_error(c.Post("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":")" + many_words + R"("}],"max_tokens":1})",
                      "application/json"),
               400, "context_length_exceeded");
  expect_error(c.Post("/v1/completions", R"({"prompt":[1,2,999999999]})", "application/json"), 400, "invalid_value");
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto ok = c.Post("/v1/chat/completions", kHello, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(HttpServer, BodyLimitIs413) {
  ServerOptions o = options();
  o.max_body_bytes = 64 << 10;
  Served s(o);
  auto c = s.client();
  const std::string big = R"({"messages":[{"role":"user","content":")" + std::string(100 << 10, 'a') + R"("}]})";
  expect_error(c.Post("/v1/chat/completions", big, "application/json"), 413, "request_too_large");
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST(HttpServer, ApiKeyIsRequiredOnV1Only) {
  ServerOptions o = options();
  o.api_key = "sekrit-key";
  Served s(o);
  auto c = s.client();
  expect_error(c.Get("/v1/models"), 401, "invalid_api_key");
  expect_error(c.Get("/v1/models", {{"Authorization", "Bearer wrong"}}), 401, "invalid_api_key");
  expect_error(c.Get("/v1/models", {{"Authorization", "Bearer sekrit-ke"}}), 401, "invalid_api_key");
  expect_error(c.Get("/v1/models", {{"Authorization", "sekrit-key"}}), 401, "invalid_api_key");
  expect_error(c.Post("/v1/chat/completions", kHello, "application/json"), 401, "invalid_api_key");
  auto r = c.Get("/v1/models", {{"Authorization", "Bearer sekrit-key"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
}

TEST(HttpServer, ApiKeyComparison) {
  EXPECT_TRUE(api_key_matches("abc", "abc"));
  EXPECT_FALSE(api_key_matches("abd", "abc"));
  EXPECT_FALSE(api_key_matches("ab", "abc"));
  EXPECT_FALSE(api_key_matches("abcd", "abc"));
  EXPECT_FALSE(api_key_matches("", ""));  // an empty key never matches (no key means no check)
}

TEST(HttpServer, ChatAndCompletionAnswers) {
  Served s(options());
  auto c = s.client();
  auto r = c.Post("/v1/chat/completions", kHello, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(j["timings"].is_object());
  r = c.Post("/v1/completions", R"({"prompt":"Once upon","max_tokens":3,"temperature":0,"logprobs":2,"echo":true})",
             "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"].get<std::string>().rfind("Once upon", 0), 0u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"][0], 9);
}

TEST(HttpServer, StreamsServerSentEvents) {
  Served s(options());
  auto c = s.client();
  auto r = c.Post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":5,"stream":true,
                      "stream_options":{"include_usage":true}})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const std::string& sse = r->body;
  EXPECT_EQ(sse.rfind("data: {", 0), 0u);
  EXPECT_EQ(sse.substr(sse.size() - 14), "data: [DONE]\n\n");
  EXPECT_NE(sse.find("\"usage\":{\"prompt_tokens\""), std::string::npos);
  EXPECT_NE(sse.find("\"timings\":{"), std::string::npos);
  // A request that cannot start is a plain error answer, not a stream.
  std::string many_words;
  for (int i = 0; i < 400; ++i) many_words += " w" + std::to_string(i);
  expect_error(c.Post("/v1/chat/completions",
                      R"({"stream":true,"messages":[{"role":"user","content":")" + many_words + R"("}]})",
                      "application/json"),
               400, "context_length_exceeded");
}

TEST(HttpServer, QueueFullIs503) {
  Served s(options(/*parallel=*/1, /*max_queue=*/0));
  auto c = s.client();
  std::thread busy([&] {
    auto c2 = s.client(5);
    c2.Post("/v1/completions", R"({"prompt":"x","max_tokens":100000,"ignore_eos":true,"temperature":0})",
            "application/json");  // runs until the context is full
  });
  for (int i = 0; i < 200 && !s.metrics_contain("qwen35_active_generations 1", 10ms); ++i) {
  }
  auto r = c.Post("/v1/chat/completions", kHello, "application/json");
  expect_error(r, 503, "queue_full");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  busy.join();
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST(HttpServer, AClientThatLeavesCancelsItsGeneration) {
  Served s(options(1, 8), true, /*context=*/2048);  // uncancelled, each request would run for seconds
  // Streaming: read a few chunks, then hang up.
  httplib::Client c("127.0.0.1", s.server().port());
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt":"y","max_tokens":100000,"ignore_eos":true,"temperature":0,"stream":true})";
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);
  c.stop();
  EXPECT_TRUE(s.metrics_contain("qwen35_generations_total{outcome=\"cancelled\"} 1"));
  // Non-streaming: the client gives up waiting.
  {
    auto impatient = s.client();
    impatient.set_read_timeout(0, 300000);
    auto r = impatient.Post("/v1/completions", R"({"prompt":"z","max_tokens":100000,"ignore_eos":true,"temperature":0})",
                            "application/json");
    EXPECT_FALSE(r);
  }
  EXPECT_TRUE(s.metrics_contain("qwen35_generations_total{outcome=\"cancelled\"} 2"));
  auto ok = s.client().Post("/v1/chat/completions", kHello, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, MetricsCountRequests) {
  Served s(options());
  auto c = s.client();
  c.Post("/v1/chat/completions", kHello, "application/json");
  c.Get("/v1/nothing");
  EXPECT_TRUE(s.metrics_contain("qwen35_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1"));
  EXPECT_TRUE(s.metrics_contain("qwen35_requests_total{endpoint=\"/v1/other\",status=\"404\"} 1"));
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  for (const char* name : {"qwen35_prompt_tokens_total", "qwen35_generated_tokens_total", "qwen35_prefill_tokens_per_second",
                           "qwen35_decode_tokens_per_second", "qwen35_prefix_cache_hits_total",
                           "qwen35_prefix_cache_misses_total", "qwen35_prefix_cache_bytes", "qwen35_queue_length",
                           "qwen35_active_generations", "qwen35_model_loaded 1"})
    EXPECT_NE(m->body.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace qwen35::server
