// Remote images and videos (--allow-remote-images) against a local HTTP server: downloads,
// redirects, content types, size and time limits, errors; and chat requests that use them.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "core/error.h"
#include "server/http/remote_media.h"
#include "server/http_server.h"
#include "server_harness.h"
#include "support/test_data.h"
#include "support/video_test_encoders.h"

namespace qwen35::server {
namespace {

class MediaHost {
 public:
  MediaHost() {
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
    const std::vector<uint8_t> clip = test::encode_video(test::VideoSpec{});
    clip_.assign(clip.begin(), clip.end());
    svr_.Get("/clip.mp4", [this](const httplib::Request& req, httplib::Response& res) {
      accept_ = req.get_header_value("Accept");
      res.set_content(clip_, "video/mp4");
    });
    svr_.Get("/clip-untyped", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(clip_, "application/octet-stream");
    });
    svr_.Get("/clip-moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/clip.mp4"); });
    svr_.Get("/page", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("<html><body>Please log in</body></html>", "text/html; charset=utf-8");
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  ~MediaHost() {
    svr_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  const std::string& cat() const { return cat_; }
  const std::string& clip() const { return clip_; }
  std::string accept() const { return accept_; }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::string cat_;
  std::string clip_;
  std::string accept_;  // of the last /clip.mp4 request
};

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()));
  out.resize(size_t(n));
  return out;
}

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
  MediaHost host;
  std::vector<uint8_t> bytes = fetch_remote_media(host.url("/cat.png"), 1 << 20, MediaKind::kImage);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), host.cat());
  bytes = fetch_remote_media(host.url("/redirect"), 1 << 20, MediaKind::kImage);
  EXPECT_EQ(bytes.size(), host.cat().size());
}

TEST(RemoteImage, LimitsAndErrors) {
  MediaHost host;
  RemoteFetchLimits fast;
  fast.read_timeout_s = 1;
  fast.total_timeout_s = 2;
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/big"), 1 << 20, MediaKind::kImage); }).find("over the limit"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/chunked-big"), 1 << 20, MediaKind::kImage); }).find("larger than the limit"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/missing"), 1 << 20, MediaKind::kImage); }).find("HTTP 404"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/loop"), 1 << 20, MediaKind::kImage); }).find("redirects"), std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/empty"), 1 << 20, MediaKind::kImage); }).find("empty"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/slow"), 1 << 20, MediaKind::kImage, fast); }), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
  EXPECT_NE(error_of([&] { fetch_remote_media("http://127.0.0.1:1/nothing-listens.png", 1 << 20, MediaKind::kImage); }), "");
}

TEST(RemoteMedia, ContentTypesFitTheirKind) {
  for (const char* type : {"video/mp4", "video/webm; codecs=vp9", "VIDEO/QUICKTIME", "application/mp4", "image/gif",
                           "image/webp", "application/octet-stream", "binary/octet-stream", "", " video/x-matroska "})
    EXPECT_TRUE(content_type_fits(type, MediaKind::kVideo)) << type;
  for (const char* type : {"text/html", "text/html; charset=utf-8", "image/png", "application/json",
                           "application/vnd.apple.mpegurl", "audio/mpeg", "videos/mp4"})
    EXPECT_FALSE(content_type_fits(type, MediaKind::kVideo)) << type;
  for (const char* type : {"image/png", "Image/JPEG", "image/gif", "", "application/octet-stream"})
    EXPECT_TRUE(content_type_fits(type, MediaKind::kImage)) << type;
  for (const char* type : {"video/mp4", "text/html", "text/plain"}) EXPECT_FALSE(content_type_fits(type, MediaKind::kImage)) << type;
}

TEST(RemoteMedia, DownloadsVideosOfAVideoType) {
  MediaHost host;
  std::vector<uint8_t> bytes = fetch_remote_media(host.url("/clip.mp4"), 1 << 20, MediaKind::kVideo);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), host.clip());
  EXPECT_NE(host.accept().find("video/*"), std::string::npos) << host.accept();
  EXPECT_EQ(fetch_remote_media(host.url("/clip-moved"), 1 << 20, MediaKind::kVideo).size(), host.clip().size());
  EXPECT_EQ(fetch_remote_media(host.url("/clip-untyped"), 1 << 20, MediaKind::kVideo).size(), host.clip().size());
  // An HTML page served with 200 is neither; a video is no image and a PNG no video.
  std::string error = error_of([&] { fetch_remote_media(host.url("/page"), 1 << 20, MediaKind::kVideo); });
  EXPECT_NE(error.find("text/html"), std::string::npos) << error;
  EXPECT_NE(error.find("not a video"), std::string::npos) << error;
  error = error_of([&] { fetch_remote_media(host.url("/page"), 1 << 20, MediaKind::kImage); });
  EXPECT_NE(error.find("not an image"), std::string::npos) << error;
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/clip.mp4"), 1 << 20, MediaKind::kImage); }).find("not an image"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fetch_remote_media(host.url("/cat.png"), 1 << 20, MediaKind::kVideo); }).find("not a video"),
            std::string::npos);
  // The size limit holds for videos too, before the body is read.
  error = error_of([&] { fetch_remote_media(host.url("/clip.mp4"), host.clip().size() - 1, MediaKind::kVideo); });
  EXPECT_NE(error.find("the video is"), std::string::npos) << error;
  EXPECT_NE(error.find("over the limit"), std::string::npos) << error;
}

TEST(RemoteMedia, ChatRequestsWithAnHttpImageAndVideo) {
  MediaHost host;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.allow_remote_images = true;
  o.max_video_bytes = host.clip().size();
  o.worker.cache_bytes = size_t(64) << 20;
  HttpServer server(o);
  std::string error;
  ASSERT_TRUE(server.bind(&error)) << error;
  server.start();
  server.set_engine(test::load_small_engine(1024));
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60, 0);
  auto ask = [&](const std::string& type, const std::string& url) {
    nlohmann::json media = {{"type", type}, {type, {{"url", url}}}};
    nlohmann::json text = {{"type", "text"}, {"text", "What is it?"}};
    nlohmann::json message = {{"role", "user"}, {"content", nlohmann::json::array({media, text})}};
    nlohmann::json body = {{"max_tokens", 1}, {"messages", nlohmann::json::array({message})}};
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  };
  auto r = ask("image_url", host.url("/cat.png"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(nlohmann::json::parse(r->body)["usage"]["prompt_tokens"].get<int>(), 50);
  r = ask("image_url", host.url("/missing"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["param"], "messages[0].content[0].image_url.url");

  // The same clip as an http(s) URL and as a data: URL gives the same prompt.
  r = ask("video_url", host.url("/clip.mp4"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const int remote_tokens = nlohmann::json::parse(r->body)["usage"]["prompt_tokens"].get<int>();
  const std::string data_url = "data:video/mp4;base64," + base64(host.clip());
  r = ask("video_url", data_url);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["usage"]["prompt_tokens"].get<int>(), remote_tokens);
  EXPECT_GT(remote_tokens, 20);
  for (const char* path : {"/page", "/cat.png", "/missing"}) {
    r = ask("video_url", host.url(path));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["param"], "messages[0].content[0].video_url.url") << path;
  }
  server.stop();
}

}  // namespace
}  // namespace qwen35::server
