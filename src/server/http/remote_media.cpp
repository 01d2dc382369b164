#include "server/http/remote_media.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "core/error.h"

namespace qwen35::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Origin {
  bool https = false;
  std::string host;  // without brackets
  std::string port;
};

Origin parse_origin(const std::string& origin, const std::string& url) {
  Origin o;
  o.https = origin.rfind("https://", 0) == 0;
  std::string rest = origin.substr(o.https ? 8 : 7);
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) fail("URL '", url, "' has a malformed host");
    o.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') fail("URL '", url, "' has a malformed host");
    o.port = rest.empty() ? "" : rest.substr(1);
  } else {
    const size_t colon = rest.rfind(':');
    o.host = rest.substr(0, colon);
    o.port = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
  if (o.port.empty()) o.port = o.https ? "443" : "80";
  for (char c : o.port)
    if (c < '0' || c > '9') fail("URL '", url, "' has a malformed port");
  if (o.host.empty()) fail("URL '", url, "' has no host");
  return o;
}

const char* kind_name(MediaKind kind) { return kind == MediaKind::kVideo ? "video" : "image"; }

// One GET: the status, the Location of a redirect, or the body (at most max_bytes).
struct Answer {
  unsigned status = 0;
  std::string location;
  std::vector<uint8_t> body;
  std::string error;  // set when the download failed
};

template <typename Stream>
asio::awaitable<void> exchange(Stream& stream, beast::tcp_stream& tcp, const Origin& o, const std::string& target,
                               size_t max_bytes, MediaKind kind, const RemoteFetchLimits& limits, Answer& a) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, o.host);
  req.set(http::field::accept, kind == MediaKind::kVideo ? "video/*, image/gif, image/webp" : "image/*");
  req.set(http::field::user_agent, "qwen35");
  tcp.expires_after(std::chrono::seconds(limits.read_timeout_s));
  co_await http::async_write(stream, req, asio::use_awaitable);

  beast::flat_buffer buffer;
  http::response_parser<http::vector_body<uint8_t>> parser;
  parser.header_limit(16 << 10);
  parser.body_limit(boost::none);  // checked below, to say how large the image is
  tcp.expires_after(std::chrono::seconds(limits.read_timeout_s));
  co_await http::async_read_header(stream, buffer, parser, asio::use_awaitable);
  const auto& head = parser.get();
  a.status = head.result_int();
  if (a.status >= 300 && a.status < 400) {
    a.location = std::string(head[http::field::location]);
    co_return;
  }
  if (a.status != 200) co_return;
  if (const auto ce = head[http::field::content_encoding]; !ce.empty() && !beast::iequals(ce, "identity")) {
    a.error = "the server sent a compressed answer (" + std::string(ce) + ")";
    co_return;
  }
  if (const auto type = head[http::field::content_type]; !content_type_fits(std::string_view(type.data(), type.size()), kind)) {
    a.error = "the server sent " + std::string(type) + ", not " + (kind == MediaKind::kVideo ? "a video" : "an image");
    co_return;
  }
  if (const auto len = parser.content_length(); len && *len > max_bytes) {
    a.error = "the " + std::string(kind_name(kind)) + " is " + std::to_string(*len) + " bytes, over the limit of " +
              std::to_string(max_bytes);
    co_return;
  }
  parser.body_limit(max_bytes);
  while (!parser.is_done()) {
    tcp.expires_after(std::chrono::seconds(limits.read_timeout_s));
    boost::system::error_code ec;
    co_await http::async_read_some(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::body_limit) {
      a.error = "the " + std::string(kind_name(kind)) + " is larger than the limit of " + std::to_string(max_bytes) + " bytes";
      co_return;
    }
    if (ec) throw boost::system::system_error(ec);
  }
  a.body = std::move(parser.get().body());
}

asio::awaitable<void> get(const Origin& o, const std::string& target, size_t max_bytes, MediaKind kind,
                          const RemoteFetchLimits& limits, asio::ssl::context* tls, Answer& a) {
  auto ex = co_await asio::this_coro::executor;
  tcp::resolver resolver(ex);
  const auto endpoints = co_await resolver.async_resolve(o.host, o.port, asio::use_awaitable);
  if (!o.https) {
    beast::tcp_stream tcp(ex);
    tcp.expires_after(std::chrono::seconds(limits.connect_timeout_s));
    co_await tcp.async_connect(endpoints, asio::use_awaitable);
    co_await exchange(tcp, tcp, o, target, max_bytes, kind, limits, a);
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> tls_stream(ex, *tls);
  if (!SSL_set_tlsext_host_name(tls_stream.native_handle(), o.host.c_str()))
    throw boost::system::system_error(boost::system::error_code(int(::ERR_get_error()), asio::error::get_ssl_category()));
  tls_stream.set_verify_callback(asio::ssl::host_name_verification(o.host));
  beast::tcp_stream& tcp = beast::get_lowest_layer(tls_stream);
  tcp.expires_after(std::chrono::seconds(limits.connect_timeout_s));
  co_await tcp.async_connect(endpoints, asio::use_awaitable);
  tcp.expires_after(std::chrono::seconds(limits.connect_timeout_s));
  co_await tls_stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  co_await exchange(tls_stream, tcp, o, target, max_bytes, kind, limits, a);
}

}  // namespace

SplitUrl split_url(const std::string& url) {
  size_t scheme_end = 0;
  if (url.rfind("http://", 0) == 0) scheme_end = 7;
  else if (url.rfind("https://", 0) == 0) scheme_end = 8;
  else fail("URL '", url, "' is not http(s)");
  const size_t host_end = url.find_first_of("/?#", scheme_end);
  SplitUrl s;
  s.origin = url.substr(0, host_end);
  if (s.origin.size() == scheme_end) fail("URL '", url, "' has no host");
  for (char c : s.origin)
    if (c <= ' ' || c == '@' || c == '\\') fail("URL '", url, "' has a malformed host");
  std::string path = host_end == std::string::npos ? "/" : url.substr(host_end);
  if (const size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  if (path.empty() || path[0] != '/') path = "/" + path;
  for (char c : path)
    if (c <= ' ' || c == 0x7f) fail("URL '", url, "' has spaces or control characters in its path");
  s.path = path;
  return s;
}

bool content_type_fits(std::string_view content_type, MediaKind kind) {
  std::string type(content_type.substr(0, content_type.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  type.erase(0, std::min(type.find_first_not_of(" \t"), type.size()));
  for (char& c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
  // No type, or one that says nothing about the bytes: the decoder will tell.
  if (type.empty() || type == "application/octet-stream" || type == "binary/octet-stream") return true;
  if (kind == MediaKind::kImage) return type.rfind("image/", 0) == 0;
  return type.rfind("video/", 0) == 0 || type == "application/mp4" || type == "image/gif" || type == "image/webp";
}

std::vector<uint8_t> fetch_remote_media(const std::string& url, size_t max_bytes, MediaKind kind,
                                        const RemoteFetchLimits& limits) {
  const char* what = kind_name(kind);
  const auto deadline = Clock::now() + std::chrono::seconds(limits.total_timeout_s);
  std::string current = url;
  for (int hop = 0; hop <= limits.max_redirects; ++hop) {
    const SplitUrl u = split_url(current);
    const Origin o = parse_origin(u.origin, url);
    std::optional<asio::ssl::context> tls;
    if (o.https) {
      tls.emplace(asio::ssl::context::tls_client);
      tls->set_default_verify_paths();
      tls->set_verify_mode(asio::ssl::verify_peer);
    }
    asio::io_context ioc;
    Answer a;
    bool finished = false;
    std::string failure;
    asio::co_spawn(ioc, get(o, u.path, max_bytes, kind, limits, tls ? &*tls : nullptr, a), [&](std::exception_ptr ep) {
      finished = true;
      if (!ep) return;
      try {
        std::rethrow_exception(ep);
      } catch (const boost::system::system_error& e) {
        failure = e.code() == beast::error::timeout ? "no answer in time" : e.code().message();
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
    const auto left = deadline - Clock::now();
    if (left > Clock::duration::zero()) ioc.run_for(left);
    if (!finished)
      fail("cannot fetch ", what, " '", url, "': the download took longer than ", limits.total_timeout_s, " s");
    if (!failure.empty()) fail("cannot fetch ", what, " '", url, "': ", failure);
    if (!a.error.empty()) fail("cannot fetch ", what, " '", url, "': ", a.error);
    if (a.status >= 300 && a.status < 400 && !a.location.empty()) {
      std::string location = a.location;
      if (location.rfind("http://", 0) != 0 && location.rfind("https://", 0) != 0) {
        if (location[0] != '/') fail("cannot fetch ", what, " '", url, "': unsupported redirect to '", location, "'");
        location = u.origin + location;
      }
      current = location;
      continue;
    }
    if (a.status != 200) fail("cannot fetch ", what, " '", url, "': the server answered HTTP ", a.status);
    if (a.body.empty()) fail("cannot fetch ", what, " '", url, "': the response is empty");
    return std::move(a.body);
  }
  fail("cannot fetch ", what, " '", url, "': more than ", limits.max_redirects, " redirects");
}

}  // namespace qwen35::server
