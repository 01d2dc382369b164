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

// Tool calls streamed the way OpenAI streams them: per call, a first delta with its index, id,
// type and name (arguments ""), then argument fragments (one per parameter as it closes, then the
// closing brace) whose concatenation is the call's arguments JSON -- the same text
// parse_tool_calls gives. Fed the text from the first "<tool_call>" on, in pieces of any size.
class ToolCallStreamer {
 public:
  explicit ToolCallStreamer(nlohmann::ordered_json tools) : tools_(std::move(tools)) {}
  // Entries for delta.tool_calls, in order; empty when the new text completes nothing.
  std::vector<nlohmann::ordered_json> feed(const std::string& text);
  bool started() const { return calls_ > 0; }                        // some call's header was sent
  bool complete() const { return calls_ > 0 && state_ == kBetween; }  // every started call closed
  bool malformed() const { return state_ == kBad; }
  const std::string& text() const { return buf_; }  // everything fed

 private:
  enum State { kOpen, kFunction, kParams, kClose, kBetween, kBad };
  nlohmann::ordered_json tools_;
  std::string buf_;
  size_t pos_ = 0;
  State state_ = kOpen;
  int calls_ = 0, params_ = 0;
  std::string name_;
};

}  // namespace qwen35::server
