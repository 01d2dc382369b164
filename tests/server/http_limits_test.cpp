// The HTTP layer against hostile but legitimate clients, on raw sockets (issue 11): compressed
// bodies, unbounded request lines and headers, unread bodies after an error, slow connections,
// Content-Length edge cases, methods, HTTP/1.0 streams and half-closed sockets.
#include <gtest/gtest.h>

#include <zlib.h>

#include <chrono>
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

void expect_json_error(const RawResponse& r, int status, const std::string& code = "") {
  ASSERT_TRUE(r.complete) << "no complete answer: " << r.raw;
  EXPECT_EQ(r.status, status) << r.raw << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json") << r.raw;
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
  if (!code.empty()) {
    EXPECT_EQ(j["error"]["code"], code) << r.body;
  }
}

std::string gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void expect_healthy(int port) {
  const RawResponse h = raw_exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 5s);
  EXPECT_TRUE(h.complete);
  EXPECT_EQ(h.status, 200) << h.raw;
}

// Finding 1: a small gzip body that inflates far past the body limit is never inflated.
TEST(HttpLimits, CompressedBodiesAreRefusedWith415) {
  ServedTiny s;
  const std::string inflated = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"pad":")" +
                               std::string(size_t(64) << 20, 'a') + "\"}";
  const std::string bomb = gzip(inflated);
  ASSERT_LT(bomb.size(), size_t(1) << 20);
  const size_t rss_before = test::resident_bytes();
  for (const char* encoding : {"gzip", "deflate", "br", "gzip, identity"}) {
    const RawResponse r = raw_exchange(
        s.port(), post_request("/v1/chat/completions", bomb, std::string("Content-Encoding: ") + encoding + "\r\n"));
    expect_json_error(r, 415, "unsupported_content_encoding");
  }
  // Far less than the 64 MiB the body would inflate to (the server runs in this process).
  EXPECT_LT(test::resident_bytes(), rss_before + (size_t(48) << 20));
  // identity is no encoding at all.
  const RawResponse ok =
      raw_exchange(s.port(), post_request("/v1/chat/completions", kHello, "Content-Encoding: identity\r\n"), 30s);
  EXPECT_EQ(ok.status, 200) << ok.raw << ok.body;
  expect_healthy(s.port());
}

// Finding 2: a request line that never ends is cut at the header limit, not buffered forever.
TEST(HttpLimits, EndlessRequestLineIs431AndClosed) {
  ServedTiny s;
  RawConnection c(s.port());
  c.send("GET /");
  // Far more than any limit; the server answers and closes long before it has read all of it.
  const std::string chunk(64 << 10, 'a');
  for (int i = 0; i < 16 && c.send(chunk); ++i) {
  }
  const RawResponse r = c.read_response(5s);
  ASSERT_TRUE(r.complete) << r.raw;
  EXPECT_TRUE(r.status == 431 || r.status == 414) << r.raw;
  EXPECT_TRUE(c.wait_closed(3s));
  expect_healthy(s.port());
}

TEST(HttpLimits, OversizedHeadersAre431) {
  ServedTiny s;
  // One enormous header line.
  RawResponse r = raw_exchange(s.port(), "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 << 10, 'b') +
                                             "\r\n\r\n", 5s);
  expect_json_error(r, 431, "headers_too_large");
  EXPECT_TRUE(r.closed);
  // Many small ones.
  std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 2000; ++i) many += "X-H" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  r = raw_exchange(s.port(), many + "\r\n", 5s);
  expect_json_error(r, 431, "headers_too_large");
  expect_healthy(s.port());
}

// Finding 2: the unread body of a refused request is never parsed as the next request, and the
// connection is closed after the answer.
TEST(HttpLimits, AnUnauthenticatedBodyIsNotReadAsTheNextRequest) {
  ServerOptions o = ServedTiny::defaults();
  o.api_key = "k";
  ServedTiny s(o);
  RawConnection c(s.port());
  const size_t declared = size_t(30) << 20;
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(declared) + "\r\n\r\n");
  // The body looks like more requests; none of them may be answered.
  std::string fake;
  while (fake.size() < (size_t(1) << 20)) fake += "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  c.send(fake);
  const RawResponse r = c.read_response(5s);
  expect_json_error(r, 401, "invalid_api_key");
  EXPECT_EQ(r.header("connection"), "close");
  const RawResponse next = c.read_response(3s);
  EXPECT_FALSE(next.complete) << "a second answer came: " << next.raw.substr(0, 200);
  EXPECT_TRUE(c.wait_closed(5s));
  expect_healthy(s.port());
}

// Finding 5: slow connections cost no thread: with many connections that never finish their
// headers open, everyone else is still answered.
TEST(HttpLimits, SlowConnectionsDoNotStarveOthers) {
  ServedTiny s;
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 200; ++i) {
    slow.push_back(std::make_unique<RawConnection>(s.port()));
    slow.back()->send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& c : slow) c->send("z");
    expect_healthy(s.port());
    const RawResponse r = raw_exchange(s.port(), post_request("/v1/chat/completions", kHello), 30s);
    EXPECT_EQ(r.status, 200) << r.raw << r.body;
  }
}

// Finding 6: Content-Length is read strictly, and an impossible one is refused at once.
TEST(HttpLimits, ContentLengthIsStrict) {
  ServedTiny s;
  auto with_length = [&](const std::string& lengths) {
    return raw_exchange(s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                                      lengths + "\r\n" + kHello, 5s);
  };
  expect_json_error(with_length("Content-Length: abc\r\n"), 400);
  expect_json_error(with_length("Content-Length: 12\r\nContent-Length: 13\r\n"), 400);
  expect_json_error(with_length("Content-Length: -1\r\n"), 400);
  expect_json_error(with_length("Content-Length: 1e3\r\n"), 400);
  // Far over the body limit: answered from the headers alone, without waiting for the body.
  const RawResponse huge = raw_exchange(
      s.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                "99999999999999\r\n\r\n", 5s);
  expect_json_error(huge, 413, "request_too_large");
  // Chunked bodies count against the same limit.
  ServerOptions small = ServedTiny::defaults();
  small.max_body_bytes = 4096;
  ServedTiny t(small);
  RawConnection c(t.port());
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n");
  const std::string piece(1000, ' ');
  for (int i = 0; i < 8; ++i) c.send("3e8\r\n" + piece + "\r\n");
  expect_json_error(c.read_response(5s), 413, "request_too_large");
  expect_healthy(s.port());
}

// Finding 6: known routes answer other methods with 405 and say which ones they take.
TEST(HttpLimits, WrongMethodsAre405) {
  ServedTiny s;
  for (const char* method : {"PUT", "DELETE", "PATCH", "GET"}) {
    const RawResponse r = raw_exchange(s.port(), std::string(method) + " /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                                                       "Content-Length: 0\r\n\r\n", 5s);
    expect_json_error(r, 405, "method_not_allowed");
    EXPECT_NE(r.header("allow").find("POST"), std::string::npos) << method << ": " << r.raw;
  }
  RawResponse r = raw_exchange(s.port(), "DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", 5s);
  expect_json_error(r, 405, "method_not_allowed");
  EXPECT_NE(r.header("allow").find("GET"), std::string::npos) << r.raw;
  r = raw_exchange(s.port(), "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 5s);
  expect_json_error(r, 405, "method_not_allowed");
  // Unknown paths stay 404; HEAD works where GET does.
  expect_json_error(raw_exchange(s.port(), "PUT /v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 5s), 404);
  r = raw_exchange(s.port(), "HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n", 5s);
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(r.body.empty());
}

// Finding 6: an HTTP/1.0 client cannot read chunked encoding: its stream ends with the connection.
TEST(HttpLimits, Http10StreamsAreNotChunked) {
  ServedTiny s;
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"stream":true})";
  const RawResponse r = raw_exchange(s.port(), "POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
                                               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, 30s);
  ASSERT_TRUE(r.complete) << r.raw;
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_FALSE(r.chunked) << r.raw;
  EXPECT_EQ(r.header("transfer-encoding"), "");
  EXPECT_EQ(r.body.rfind("data: {", 0), 0u) << r.body;
  EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
  EXPECT_TRUE(r.closed);
  // A plain answer to HTTP/1.0 has a length.
  const RawResponse h = raw_exchange(s.port(), "GET /health HTTP/1.0\r\n\r\n", 5s);
  EXPECT_EQ(h.status, 200);
  EXPECT_FALSE(h.chunked);
  EXPECT_EQ(h.header("content-length"), std::to_string(h.body.size()));
}

// Finding 6: shutting down the sending side after the request means "done sending", not "gone".
TEST(HttpLimits, AHalfClosedClientStillGetsItsAnswer) {
  ServedTiny s;
  {
    RawConnection c(s.port());
    c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    c.shutdown_write();
    const RawResponse r = c.read_response(5s);
    EXPECT_EQ(r.status, 200) << r.raw;
  }
  for (bool stream : {false, true}) {
    RawConnection c(s.port());
    const std::string body = std::string(R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":)") +
                             (stream ? "true" : "false") + "}";
    c.send(post_request("/v1/chat/completions", body));
    c.shutdown_write();
    const RawResponse r = c.read_response(30s);
    ASSERT_TRUE(r.complete) << r.raw;
    EXPECT_EQ(r.status, 200) << r.raw;
    if (stream) {
      EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos) << r.body;
    } else {
      EXPECT_EQ(nlohmann::json::parse(r.body)["usage"]["completion_tokens"], 4) << r.body;
    }
  }
}

// Finding 3: 100k keys in one object (1.5 MB) used to hold a thread for seconds in a quadratic
// insertion before the request was even looked at; now the parse is linear and the object is
// refused by its key count.
TEST(HttpLimits, AnObjectWithTooManyKeysIsRefused) {
  ServedTiny s;
  std::string body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1)";
  for (int i = 0; i < 100000; ++i) body += ",\"k" + std::to_string(i) + "\":0";
  body += "}";
  const RawResponse r = raw_exchange(s.port(), post_request("/v1/chat/completions", body), 10s);
  expect_json_error(r, 400, "invalid_json");
  EXPECT_NE(r.body.find("more than 4096 keys"), std::string::npos) << r.body;
  // The same shape within the limit is an ordinary request.
  std::string fine = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1)";
  for (int i = 0; i < 4000; ++i) fine += ",\"k" + std::to_string(i) + "\":0";
  const RawResponse ok = raw_exchange(s.port(), post_request("/v1/chat/completions", fine + "}"), 30s);
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// Keep-alive still works: several requests on one connection, in order.
TEST(HttpLimits, KeepAliveAndPipelining) {
  ServedTiny s;
  RawConnection c(s.port());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" +
         post_request("/v1/chat/completions", kHello));
  RawResponse a = c.read_response(5s), b = c.read_response(5s), d = c.read_response(30s);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(b.status, 200);
  EXPECT_NE(b.body.find("tiny-qwen35"), std::string::npos);
  EXPECT_EQ(d.status, 200) << d.raw << d.body;
  EXPECT_FALSE(d.closed);
}

}  // namespace
}  // namespace qwen35::server
