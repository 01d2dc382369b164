// OpenAI-style API errors: {"error": {"message", "type", "param", "code"}} with an HTTP status.
// Request parsing throws ApiError; the HTTP layer turns it into the answer, so a bad request never
// reaches the worker and never takes the server down.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"
#include "server/http/json_error.h"

namespace qwen35::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}

  int status;
  std::string type;   // "invalid_request_error", "authentication_error", "server_error", ...
  std::string param;  // the offending request field ("" -> null)
  std::string code;   // machine-readable reason ("" -> null)
};

// 400 for a request field: `param` names the field, `code` is "invalid_type", "invalid_value", ...
[[noreturn]] void bad_field(const std::string& param, const std::string& message, const std::string& code);

// The error object for an ApiError (any status/message pair: http/json_error.h).
nlohmann::ordered_json error_json(const ApiError& e);

// A failed Status from the engine as an API error: invalid input -> 400, context overflow -> 400
// "context_length_exceeded", unavailable -> 503, internal -> 500.
ApiError api_error_from(const Status& status);

}  // namespace qwen35::server
