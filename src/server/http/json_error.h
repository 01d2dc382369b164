// The error shape of every answer this server gives, from the transport's 431 to a model's
// context overflow: OpenAI's {"error": {"message", "type", "param", "code"}}. It lives with
// HTTP, not with the OpenAI layer, because the transport and the routes refuse requests before
// any API code runs, and they must answer in the same shape.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/http/message.h"

namespace qwen35::server {

// The error type OpenAI uses for an HTTP status (400 -> invalid_request_error, 401 ->
// authentication_error, 404 -> not_found_error, 503 -> unavailable_error, ...).
const char* error_type_for(int status);

// The error object; an empty `type` is error_type_for(status), an empty `param` or `code` null.
nlohmann::ordered_json error_json(int status, const std::string& message, const std::string& type,
                                  const std::string& param = "", const std::string& code = "");

// The error answer of the transport and the routes: {"error": {...}} as application/json.
HttpResponse json_error_response(int status, const std::string& message, const std::string& code);

}  // namespace qwen35::server
