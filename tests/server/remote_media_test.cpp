// Remote images (--allow-remote-images) against a local HTTP server: downloads, redirects, size
// and time limits, errors; and a chat request that uses one.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/http/remote_image.h"
#include "server/http_server.h"
#include "server_harness.h"
#include "support/test_data.h"

namespace qwen35::server {
namespace {

class ImageHost {
 public:
  ImageHost() {
    signal(SIGPIPE, SIG_IGN);
    cat_ = test::read_text_file(test::data_path("tiny-qwen35/chelsea.png"));
    svr_.Get("/cat.png", [this](const httplib::Request&, httplib::Response& res) { res.set_content(cat_, "image/png"); });
    svr_.Get("/redirect", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/cat.png"); });
    svr_.Get("/loop", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/loop"); });
    svr_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(3 << 20, 'x'), "image/png");
    });
    svr_.Get("/chunked-big", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("image/png", [](size_t offset, httplib::DataSink& sink) {
        if (offset >= (size_t(3) << 20)) {
          sink.done();
          return true;
        }
        const std::string block(64 << 10, 'y');
        return sink.write(block.data(), block.size());
      });
    });
    svr_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      res.set_content("late", "image/png");
    });
    svr_.Get("/empty", [](const httplib::Request&, httplib::Response& res) { res.set_content("", "image/png"); });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  ~ImageHost() {
    svr_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  const std::string& cat() const { return cat_; }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::string cat_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RemoteImage, SplitsUrls) {
  SplitUrl s = split_url("https://example.com:8443/a/b.png?x=1#frag");
  EXPECT_EQ(s.origin, "https://example.com:8443");
  EXPECT_EQ(s.path, "/a/b.png?x=1");
  s = split_url("http://example.com");
  EXPECT_EQ(s.origin, "http://example.com");
  EXPECT_EQ(s.path, "/");
  s = split_url("http://example.com?q");
  EXPECT_EQ(s.path, "/?q");
  EXPECT_NE(error_of([] { split_url("ftp://example.com/a"); }), "");
  EXPECT_NE(error_of([] { split_url("http:///a"); }), "");
  EXPECT_NE(error_of([] { split_url("http://user@evil.com/a"); }), "");
  EXPECT_NE(error_of([] { split_url("http://example.com/a b"); }), "");
}

TEST(RemoteImage, DownloadsAndFollowsRedirects) {
  ImageHost host;
  std::vector<uint8_t> bytes = fetch_remote_image(host.url("/cat.png"), 1 << 20);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), host.cat());
  bytes = fetch_remote_image(host.url("/redirect"), 1 << 20);
  EXPECT_EQ(bytes.size(), host.cat().size());
}

TEST(RemoteImage, LimitsAndErrors) {
  ImageHost host;
  RemoteImageLimits fast;
  fast.read_timeout_s = 1;
  fast.total_timeout_s = 2;
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/big"), 1 << 20); }).find("over the limit"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/chunked-big"), 1 << 20); }).find("larger than the limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/missing"), 1 << 20); }).find("HTTP 404"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/loop"), 1 << 20); }).find("redirects"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/empty"), 1 << 20); }).find("empty"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { fetch_remote_image(host.url("/slow"), 1 << 20, fast); }), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
  EXPECT_NE(error_of([&] { fetch_remote_image("http://127.0.0.1:1/nothing-listens.png", 1 << 20); }), "");
}

TEST(RemoteImage, ChatRequestWithAnHttpImage) {
  ImageHost host;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.allow_remote_images = true;
  o.worker.cache_bytes = size_t(64) << 20;
  HttpServer server(o);
  std::string error;
  ASSERT_TRUE(server.bind(&error)) << error;
  server.start();
  server.set_engine(test::load_small_engine(1024));
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);
  auto ask = [&](const std::string& url) {
    nlohmann::json image = {{"type", "image_url"}, {"image_url", {{"url", url}}}};
    nlohmann::json text = {{"type", "text"}, {"text", "What is it?"}};
    nlohmann::json message = {{"role", "user"}, {"content", nlohmann::json::array({image, text})}};
    nlohmann::json body = {{"max_tokens", 1}, {"messages", nlohmann::json::array({message})}};
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  };
  auto r = ask(host.url("/cat.png"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(nlohmann::json::parse(r->body)["usage"]["prompt_tokens"].get<int>(), 50);
  r = ask(host.url("/missing"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["param"], "messages[0].content[0].image_url.url");
  server.stop();
}

}  // namespace
}  // namespace qwen35::server
