#include "server/api_error.h"

namespace qwen35::server {

void bad_field(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, message, "invalid_request_error", param, code);
}

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

nlohmann::ordered_json error_json(int status, const std::string& message, const std::string& type, const std::string& param,
                          const std::string& code) {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type.empty() ? error_type_for(status) : type;
  e["param"] = param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param);
  e["code"] = code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(code);
  return nlohmann::ordered_json{{"error", e}};
}

nlohmann::ordered_json error_json(const ApiError& e) { return error_json(e.status, e.what(), e.type, e.param, e.code); }

ApiError api_error_from(const Status& status) {
  switch (status.code) {
    case StatusCode::kOk:
      return ApiError(500, "no error", "server_error");
    case StatusCode::kInvalidArgument:
      return ApiError(400, status.message, "invalid_request_error", "", "invalid_value");
    case StatusCode::kContextOverflow:
      return ApiError(400, status.message + ": shorten the conversation or start the server with a larger --ctx",
                      "invalid_request_error", "messages", "context_length_exceeded");
    case StatusCode::kNotFound:
      return ApiError(404, status.message, "not_found_error", "", "not_found");
    case StatusCode::kCancelled:
      return ApiError(499, status.message.empty() ? "the request was cancelled" : status.message,
                      "invalid_request_error", "", "cancelled");
    case StatusCode::kUnavailable:
      return ApiError(503, status.message, "unavailable_error", "", "unavailable");
    case StatusCode::kInternal:
      break;
  }
  return ApiError(500, status.message, "server_error", "", "internal_error");
}

}  // namespace qwen35::server
