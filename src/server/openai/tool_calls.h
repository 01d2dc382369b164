// Tool calls in Qwen3.5's output format -> OpenAI tool_calls.
//
// The chat template asks the model to answer a call as
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// and renders earlier calls back the same way (a string VALUE as is, anything else as JSON).
// Parsing reverses that: a parameter whose schema type is "string" stays text; other values are
// read as JSON when they parse, as text otherwise. Text before the first <tool_call> stays the
// message content. Output that does not parse is left alone as plain content.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwen35::server {

struct ParsedToolCall {
  std::string id;              // "call_<hex>"
  std::string name;
  std::string arguments_json;  // a JSON object, as text
};

struct ToolCallSplit {
  std::string content;  // text before the first call (trailing whitespace removed)
  std::vector<ParsedToolCall> calls;
};

// `tools`: the request's OpenAI tools array (for parameter types); may be null.
// Returns no calls (and `content` unchanged) when there is no complete, well-formed call.
ToolCallSplit parse_tool_calls(const std::string& content, const nlohmann::ordered_json& tools);

// OpenAI's message.tool_calls array.
nlohmann::ordered_json tool_calls_json(const std::vector<ParsedToolCall>& calls);

inline constexpr const char* kToolCallOpen = "<tool_call>";

}  // namespace qwen35::server
