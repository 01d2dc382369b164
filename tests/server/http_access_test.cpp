// Who may use the server from a browser (issue 11, finding 7), and the connection limits that
// keep it answering (finding 5): the API key on every route but /health, JSON bodies only, CORS
// preflights against an allow-list, deadlines and the connection cap.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "raw_http.h"
#include "served.h"

namespace qwen35::server {
namespace {

using namespace std::chrono_literals;
using test::post_request;
using test::raw_exchange;
using test::RawConnection;
using test::RawResponse;
using test::ServedTiny;

const std::string kHello = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":2,"temperature":0})";

std::string error_code_of(const RawResponse& r) {
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") && j["error"]["code"].is_string() ? j["error"]["code"].get<std::string>()
                                                                               : "";
}

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n";
}

TEST(HttpAccess, MetricsNeedTheKeyHealthDoesNot) {
  ServerOptions o = ServedTiny::defaults();
  o.api_key = "sekrit";
  ServedTiny s(o);
  RawResponse r = raw_exchange(s.port(), get("/metrics"));
  EXPECT_EQ(r.status, 401) << r.raw;
  EXPECT_EQ(error_code_of(r), "invalid_api_key");
  r = raw_exchange(s.port(), get("/metrics", "Authorization: Bearer sekrit\r\n"));
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body.find("qwen35_model_loaded 1"), std::string::npos);
  EXPECT_EQ(raw_exchange(s.port(), get("/health")).status, 200);
  EXPECT_EQ(raw_exchange(s.port(), get("/")).status, 200);  // the page itself asks for the key
}

TEST(HttpAccess, GeneratingRoutesTakeOnlyJsonBodies) {
  ServedTiny s;
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kHello.size()) +
                      "\r\n" + (*type ? std::string("Content-Type: ") + type + "\r\n" : "") + "\r\n" + kHello;
    const RawResponse r = raw_exchange(s.port(), req);
    EXPECT_EQ(r.status, 415) << type << ": " << r.raw;
    EXPECT_EQ(error_code_of(r), "unsupported_media_type") << r.body;
  }
  const RawResponse ok = raw_exchange(
      s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: Application/JSON; charset=utf-8\r\n"
                "Content-Length: " + std::to_string(kHello.size()) + "\r\n\r\n" + kHello, 30s);
  EXPECT_EQ(ok.status, 200) << ok.raw << ok.body;
}

TEST(HttpAccess, NoCrossOriginUseByDefault) {
  ServedTiny s;
  // A preflight from some web page: refused, and nothing says it may go on.
  RawResponse r = raw_exchange(s.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n"
                                         "Access-Control-Request-Headers: content-type\r\n\r\n");
  EXPECT_EQ(r.status, 403) << r.raw;
  EXPECT_EQ(r.header("access-control-allow-origin"), "");
  // The request itself from that page (had the browser sent it anyway): refused before any work.
  r = raw_exchange(s.port(), post_request("/v1/chat/completions", kHello, "Origin: http://evil.example\r\n"));
  EXPECT_EQ(r.status, 403) << r.raw;
  EXPECT_EQ(error_code_of(r), "origin_not_allowed");
  // The server's own page is same-origin.
  const std::string self = "http://127.0.0.1:" + std::to_string(s.port());
  r = raw_exchange(s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
                                 "\r\nOrigin: " + self + "\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(kHello.size()) + "\r\n\r\n" + kHello, 30s);
  EXPECT_EQ(r.status, 200) << r.raw << r.body;
  // A plain OPTIONS (no preflight) says what the route allows.
  r = raw_exchange(s.port(), "OPTIONS /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.status, 204) << r.raw;
  EXPECT_NE(r.header("allow").find("GET"), std::string::npos);
}

TEST(HttpAccess, AllowListedOriginsGetCorsAnswers) {
  ServerOptions o = ServedTiny::defaults();
  o.cors_origins = {"http://app.example:3000"};
  o.api_key = "k";
  ServedTiny s(o);
  RawResponse r = raw_exchange(s.port(), "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Origin: http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\n"
                                         "Access-Control-Request-Headers: authorization, content-type, x-stainless-os\r\n\r\n");
  EXPECT_EQ(r.status, 204) << r.raw;
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example:3000");
  EXPECT_NE(r.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_NE(r.header("access-control-allow-headers").find("authorization"), std::string::npos);
  EXPECT_NE(r.header("vary").find("Origin"), std::string::npos);
  // The request: answered with the header that lets the page read it; the key is still needed.
  r = raw_exchange(s.port(), post_request("/v1/chat/completions", kHello,
                                          "Origin: http://app.example:3000\r\nAuthorization: Bearer k\r\n"), 30s);
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example:3000");
  r = raw_exchange(s.port(), post_request("/v1/chat/completions", kHello, "Origin: http://app.example:3000\r\n"));
  EXPECT_EQ(r.status, 401) << r.raw;
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example:3000");  // the page can show why
  // Other origins stay refused.
  r = raw_exchange(s.port(), "OPTIONS /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://other.example\r\n"
                             "Access-Control-Request-Method: GET\r\n\r\n");
  EXPECT_EQ(r.status, 403) << r.raw;
}

// Finding 5: deadlines for slow requests and idle connections.
TEST(HttpAccess, SlowHeadersGet408AndIdleConnectionsClose) {
  ServerOptions o = ServedTiny::defaults();
  o.header_timeout = 600ms;
  o.idle_timeout = 300ms;
  o.body_timeout = 600ms;
  ServedTiny s(o, /*load=*/false);
  {
    RawConnection c(s.port());
    c.send("GET /health HTTP/1.1\r\n");
    for (int i = 0; i < 20; ++i) {  // a byte every 100 ms: never finishes within the deadline
      if (!c.send("X")) break;
      std::this_thread::sleep_for(100ms);
    }
    const RawResponse r = c.read_response(3s);
    EXPECT_EQ(r.status, 408) << r.raw;
    EXPECT_EQ(error_code_of(r), "request_timeout");
    EXPECT_TRUE(c.wait_closed(3s));
  }
  {  // a body that stops halfway
    RawConnection c(s.port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
    const RawResponse r = c.read_response(3s);
    EXPECT_TRUE(r.status == 408 || r.status == 503) << r.raw;  // 503: the model is not loaded, refused up front
  }
  {  // keep-alive: after the answer, an idle connection is closed by the server
    RawConnection c(s.port());
    c.send(get("/health"));
    EXPECT_EQ(c.read_response(3s).status, 503);  // loading
    EXPECT_TRUE(c.wait_closed(3s));
  }
  {  // a connection that never sends anything
    RawConnection c(s.port());
    EXPECT_TRUE(c.wait_closed(3s));
  }
}

// Finding 5: at the connection cap the oldest connection that is not being answered makes room.
TEST(HttpAccess, TheConnectionCapEvictsIdleConnections) {
  ServerOptions o = ServedTiny::defaults();
  o.max_connections = 20;
  ServedTiny s(o);
  EXPECT_EQ(s.server().max_connections(), 20u);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 60; ++i) {
    idle.push_back(std::make_unique<RawConnection>(s.port()));
    idle.back()->send("GET /health HTTP/1.1\r\n");  // never finished
  }
  const RawResponse r = raw_exchange(s.port(), get("/health"), 5s);
  EXPECT_EQ(r.status, 200) << r.raw;
  int closed = 0;
  for (auto& c : idle) closed += c->wait_closed(10ms);
  EXPECT_GE(closed, 40);  // all but the newest ones were evicted
}

// Bodies in memory are bounded all together: beyond the budget a request is refused from its
// headers (503) before any of its body is read; the budget comes back when a request is done.
TEST(HttpAccess, BodiesInMemoryAreBoundedTogether) {
  ServerOptions o = ServedTiny::defaults();
  o.max_body_bytes = 1 << 20;
  o.max_body_bytes_in_flight = 3 << 20;
  ServedTiny s(o);
  auto head = [](size_t n) {
    return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(n) + "\r\n\r\n";
  };
  std::vector<std::unique_ptr<RawConnection>> uploads;
  for (int i = 0; i < 3; ++i) {
    uploads.push_back(std::make_unique<RawConnection>(s.port()));
    uploads.back()->send(head(1 << 20) + "{");  // a megabyte announced, a byte sent
  }
  std::this_thread::sleep_for(200ms);
  RawResponse r = raw_exchange(s.port(), head(1 << 20) + "{");
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_EQ(error_code_of(r), "server_busy");
  // Requests without a body are not affected.
  EXPECT_EQ(raw_exchange(s.port(), get("/health")).status, 200);
  uploads.pop_back();  // a client gives up: its share comes back
  std::this_thread::sleep_for(200ms);
  const std::string hello = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":2})";
  r = raw_exchange(s.port(), post_request("/v1/chat/completions", hello), 30s);
  EXPECT_EQ(r.status, 200) << r.raw << r.body;
}

}  // namespace
}  // namespace qwen35::server
