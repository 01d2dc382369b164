#include "server/http/router.h"

#include <algorithm>
#include <exception>

#include "server/http/json_error.h"

namespace qwen35::server {
namespace {

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

bool is_api_path(const std::string& path) { return path == "/v1" || path.rfind("/v1/", 0) == 0; }

// A Responder that adds the CORS headers of an allowed cross-origin request to its answer.
class CorsResponder final : public Responder {
 public:
  CorsResponder(std::shared_ptr<Responder> inner, std::string origin)
      : inner_(std::move(inner)), origin_(std::move(origin)) {}
  void respond(HttpResponse r) override { inner_->respond(decorate(std::move(r))); }
  void start_stream(HttpResponse head, std::string heartbeat) override {
    inner_->start_stream(decorate(std::move(head)), std::move(heartbeat));
  }
  void write(std::string data) override { inner_->write(std::move(data)); }
  void end_stream() override { inner_->end_stream(); }
  void post(std::function<void()> task) override { inner_->post(std::move(task)); }
  void on_gone(std::function<void()> f) override { inner_->on_gone(std::move(f)); }
  bool gone() const override { return inner_->gone(); }

 private:
  HttpResponse decorate(HttpResponse r) const {
    r.set_header("Access-Control-Allow-Origin", origin_);
    r.set_header("Vary", "Origin");
    return r;
  }
  std::shared_ptr<Responder> inner_;
  std::string origin_;
};

}  // namespace

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

void Router::add(Route route) { routes_.push_back(std::move(route)); }

const Router::Route* Router::find(const std::string& path) const {
  for (const Route& r : routes_)
    if (r.prefix ? path.size() > r.path.size() && path.rfind(r.path, 0) == 0 : path == r.path) return &r;
  return nullptr;
}

bool Router::allows(const Route& r, const std::string& method) {
  for (const std::string& m : r.methods)
    if (m == method || (m == "GET" && method == "HEAD")) return true;
  return false;
}

std::string Router::allow_header(const Route& r) {
  std::string s;
  for (const std::string& m : r.methods) s += (s.empty() ? "" : ", ") + m + (m == "GET" ? ", HEAD" : "");
  return s + ", OPTIONS";
}

std::string Router::label(const HttpRequest& head) const {
  if (const Route* r = find(head.path); r && !r->label.empty()) return r->label;
  return is_api_path(head.path) ? "/v1/other" : "other";
}

bool Router::origin_allowed(const HttpRequest& head, const std::string& origin) const {
  const std::string host = head.header("Host");
  if (!host.empty() && (iequals(origin, "http://" + host) || iequals(origin, "https://" + host))) return true;
  for (const std::string& o : policy_.cors_origins)
    if (o == "*" || iequals(o, origin)) return true;
  return false;
}

bool Router::key_ok(const HttpRequest& head) const {
  if (policy_.api_key.empty()) return true;
  const std::string auth = head.header("Authorization");
  const bool bearer = auth.size() > 7 && iequals(std::string_view(auth).substr(0, 7), "bearer ");
  return api_key_matches(bearer ? trimmed(std::string_view(auth).substr(7)) : std::string(), policy_.api_key);
}

void Router::add_cors(const HttpRequest& head, HttpResponse& r) const {
  const std::string origin = head.header("Origin");
  if (origin.empty() || !origin_allowed(head, origin)) return;
  r.set_header("Access-Control-Allow-Origin", origin);
  r.set_header("Vary", "Origin");
}

std::optional<HttpResponse> Router::screen(const HttpRequest& head) const {
  const Route* route = find(head.path);
  if (!route) {
    HttpResponse r = json_error_response(404, "no route for " + head.method + " " + head.path, "not_found");
    add_cors(head, r);
    return r;
  }
  const std::string origin = head.header("Origin");
  if (head.method == "OPTIONS") {
    HttpResponse r;
    r.status = 204;
    r.set_header("Allow", allow_header(*route));
    const std::string wanted = head.header("Access-Control-Request-Method");
    if (origin.empty() || wanted.empty()) return r;  // not a CORS preflight
    if (!origin_allowed(head, origin) || !allows(*route, wanted)) {
      HttpResponse no = json_error_response(
          403, "cross-origin requests from " + origin + " are not allowed (start the server with --cors-origin " +
                   origin + " to allow them)",
          "origin_not_allowed");
      no.set_header("Vary", "Origin");
      return no;
    }
    r.set_header("Access-Control-Allow-Origin", origin);
    r.set_header("Access-Control-Allow-Methods", allow_header(*route));
    const std::string asked = head.header("Access-Control-Request-Headers");
    r.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
    r.set_header("Access-Control-Max-Age", "600");
    r.set_header("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    return r;
  }
  if (!allows(*route, head.method)) {
    HttpResponse r = json_error_response(405, head.method + " is not allowed on " + head.path + " (allowed: " +
                                                  allow_header(*route) + ")",
                                         "method_not_allowed");
    r.set_header("Allow", allow_header(*route));
    add_cors(head, r);
    return r;
  }
  if (route->guarded) {
    if (!origin.empty() && !origin_allowed(head, origin))
      return json_error_response(403, "cross-origin requests from " + origin + " are not allowed", "origin_not_allowed");
    if (!key_ok(head)) {
      HttpResponse r = json_error_response(
          401, head.header("Authorization").empty() ? "missing API key: send the header 'Authorization: Bearer <key>'"
                                                    : "incorrect API key",
          "invalid_api_key");
      r.set_header("WWW-Authenticate", "Bearer");
      add_cors(head, r);
      return r;
    }
  }
  auto refuse = [&](int status, const std::string& message, const std::string& code) {
    HttpResponse r = json_error_response(status, message, code);
    add_cors(head, r);
    return r;
  };
  if (const std::string ce = trimmed(head.header("Content-Encoding")); !ce.empty() && !iequals(ce, "identity")) {
    HttpResponse r = refuse(415, "Content-Encoding '" + ce + "' is not accepted: send the body uncompressed",
                            "unsupported_content_encoding");
    r.set_header("Accept-Encoding", "identity");
    return r;
  }
  if (const std::string te = trimmed(head.header("Transfer-Encoding")); !te.empty() && !iequals(te, "chunked"))
    return refuse(501, "Transfer-Encoding '" + te + "' is not supported (only chunked)", "unsupported_transfer_encoding");
  if (route->needs_model && policy_.ready && !policy_.ready())
    return refuse(503, "the model is still loading", "model_loading");
  if (route->json_body) {
    const std::string ct = head.header("Content-Type");
    if (!iequals(trimmed(std::string_view(ct).substr(0, ct.find(';'))), "application/json"))
      return refuse(415, "the request body must be sent as Content-Type: application/json" +
                             (ct.empty() ? std::string() : " (got '" + ct + "')"),
                    "unsupported_media_type");
  }
  return std::nullopt;
}

void Router::dispatch(HttpRequest request, std::shared_ptr<Responder> responder) const {
  const Route* route = find(request.path);
  if (!route || !route->handler) {
    responder->respond(json_error_response(404, "no route for " + request.method + " " + request.path, "not_found"));
    return;
  }
  const std::string origin = request.header("Origin");
  if (!origin.empty() && origin_allowed(request, origin))
    responder = std::make_shared<CorsResponder>(std::move(responder), origin);
  try {
    route->handler(std::move(request), responder);
  } catch (const std::exception& e) {
    responder->respond(json_error_response(500, e.what(), "internal_error"));
  }
}

}  // namespace qwen35::server
