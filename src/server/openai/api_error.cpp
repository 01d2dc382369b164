#include "server/openai/api_error.h"

namespace qwen35::server {

void bad_field(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, message, "invalid_request_error", param, code);
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
