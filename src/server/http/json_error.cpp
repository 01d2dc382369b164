#include "server/http/json_error.h"

namespace qwen35::server {

const char* error_type_for(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "invalid_request_error";
    case 422: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::ordered_json error_json(int status, const std::string& message, const std::string& type,
                                  const std::string& param, const std::string& code) {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type.empty() ? error_type_for(status) : type;
  e["param"] = param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param);
  e["code"] = code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(code);
  return nlohmann::ordered_json{{"error", e}};
}

HttpResponse json_error_response(int status, const std::string& message, const std::string& code) {
  HttpResponse r;
  r.status = status;
  r.body =
      error_json(status, message, "", "", code).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  r.set_header("Content-Type", "application/json");
  if (status == 503) r.set_header("Retry-After", "1");
  return r;
}

}  // namespace qwen35::server
