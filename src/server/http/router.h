// The route table and the checks every request passes before its body is read:
//   unknown path                       404
//   OPTIONS                            CORS preflight: 204 for an allowed origin, else 403;
//                                      without an Origin: 204 with Allow
//   method the route does not take     405 with Allow (HEAD goes wherever GET does)
//   guarded route (/v1/*, /metrics):
//     Origin neither this server nor in the allow-list   403
//     no or wrong API key (when one is set)               401
//   Content-Encoding other than identity                  415 (bodies are never inflated)
//   Transfer-Encoding other than chunked                  501
//   model still loading (routes that need it)             503
//   JSON route whose body is not application/json         415 (a plain form or text/plain
//                                                         body is how a foreign web page posts
//                                                         without a preflight)
// Answers to an allowed cross-origin request carry Access-Control-Allow-Origin.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http/message.h"

namespace qwen35::server {

struct AccessPolicy {
  std::string api_key;                    // "": no key required
  std::vector<std::string> cors_origins;  // "scheme://host[:port]" or "*"; empty: none
  std::function<bool()> ready;            // the model is loaded
};

class Router {
 public:
  using Handler = std::function<void(HttpRequest request, std::shared_ptr<Responder> responder)>;

  struct Route {
    std::string path;             // exact, or a prefix when `prefix` (e.g. "/v1/models/")
    bool prefix = false;
    std::vector<std::string> methods;  // "GET" also allows HEAD
    bool guarded = false;         // origin and API-key checks
    bool needs_model = false;     // 503 while loading
    bool json_body = false;       // requires Content-Type: application/json
    std::string label;            // for metrics: a fixed name whatever the client sent
    Handler handler;              // runs on the io thread: hand long work elsewhere
  };

  explicit Router(AccessPolicy policy) : policy_(std::move(policy)) {}

  // Routes are tried in the order they were added.
  void add(Route route);
  // Before the body: the refusal for this request, if any.
  std::optional<HttpResponse> screen(const HttpRequest& head) const;
  // After the body (screen() let it through): runs the route's handler.
  void dispatch(HttpRequest request, std::shared_ptr<Responder> responder) const;
  // The route's label, "/v1/other" for other /v1 paths, "other" for the rest.
  std::string label(const HttpRequest& head) const;

  // Whether a page from `origin` may use the guarded routes: this server itself (the Host the
  // request was sent to) or an origin in the allow-list.
  bool origin_allowed(const HttpRequest& head, const std::string& origin) const;
  bool key_ok(const HttpRequest& head) const;

 private:
  const Route* find(const std::string& path) const;
  static bool allows(const Route& r, const std::string& method);
  static std::string allow_header(const Route& r);
  void add_cors(const HttpRequest& head, HttpResponse& r) const;

  AccessPolicy policy_;
  std::vector<Route> routes_;
};

// Constant-time comparison of a presented key with the configured one.
bool api_key_matches(const std::string& presented, const std::string& expected);

}  // namespace qwen35::server
