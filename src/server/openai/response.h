// Public result types -> OpenAI response JSON: chat.completion, chat.completion.chunk (SSE),
// text_completion, usage (with prompt_tokens_details: cached, image and video tokens), llama.cpp-style timings and
// the "meta" of a /v1/models entry.
//
// The stream writers turn a generation's events into the exact bytes of a Server-Sent Events
// stream, so the HTTP layer only moves strings and the format is testable without a socket.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"
#include "server/openai/api_error.h"
#include "server/openai/tool_calls.h"

namespace qwen35::server {

struct ResponseMeta {
  std::string id;       // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// The text of a token id (for top_logprobs alternatives); injectable so tests need no tokenizer.
using TokenText = std::function<std::string(int32_t)>;

// A fresh meta with a random id ("<prefix>-<24 hex digits>") and the current time.
ResponseMeta new_response_meta(const std::string& prefix, const std::string& model);

// "stop" (end of sequence, stop string), "length" (max_tokens, context full); null otherwise.
nlohmann::ordered_json finish_reason_json(StopReason r);

// {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details: {cached_tokens,
//  image_tokens, video_tokens}, completion_tokens_details: {reasoning_tokens}}. The image and video
// tokens are their pads among the prompt tokens (the names of OpenAI's realtime usage details).
nlohmann::ordered_json usage_json(const GenerationResult& r);
// {prompt_n, prompt_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_second, cached_n, vision_ms}
nlohmann::ordered_json timings_json(const GenerationResult& r);

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
nlohmann::ordered_json chat_logprobs_json(const std::vector<TokenLogprob>& lps, int top_n, const TokenText& text);
// Legacy completion logprobs: {tokens, token_logprobs, top_logprobs, text_offset}.
nlohmann::ordered_json completion_logprobs_json(const std::vector<TokenLogprob>& lps, int top_n, const TokenText& text,
                                        size_t text_offset);

// Non-streaming answers. `lps` is null when logprobs were not asked for. With `tools` (the
// request's tools array) tool calls in the answer become message.tool_calls, finish_reason
// "tool_calls".
nlohmann::ordered_json chat_completion_json(const ResponseMeta& meta, const GenerationResult& r,
                                    const std::vector<TokenLogprob>* lps, int top_n, const TokenText& text,
                                    const nlohmann::ordered_json& tools = nullptr);
nlohmann::ordered_json text_completion_json(const ResponseMeta& meta, const std::string& text, const GenerationResult& r,
                                    const std::vector<TokenLogprob>* lps, int top_n, const TokenText& token_text,
                                    size_t text_offset);

// The "meta" object of a /v1/models entry: what the server runs (file format and type, sizes,
// context, vision, MTP), built from the engine's ModelInfo.
nlohmann::json model_meta(const ModelInfo& info);

// JSON text, with invalid UTF-8 (a token's raw bytes can end mid-character) replaced.
std::string dump_json(const nlohmann::ordered_json& j);
// One SSE event: "data: <json>\n\n".
std::string sse_data(const nlohmann::ordered_json& j);
inline const char* sse_done() { return "data: [DONE]\n\n"; }

// SSE for /v1/chat/completions: a role chunk, one chunk per event (reasoning in
// delta.reasoning_content, answer text in delta.content), a finish chunk, the usage chunk (with
// timings) when include_usage is set, then [DONE].
//
// With tools, answer text from a "<tool_call>" on goes out as delta.tool_calls the way OpenAI
// streams calls (ToolCallStreamer: id and name first, then argument fragments; finish_reason
// "tool_calls" once every call closed), or as content at the end when no call header parses.
class ChatStream {
 public:
  ChatStream(ResponseMeta meta, bool include_usage, bool logprobs, int top_n, TokenText text);
  void enable_tool_calls(nlohmann::ordered_json tools) { tools_ = std::move(tools); }
  std::string start();
  std::string event(const GenerationEvent& ev);  // "" when the event carries nothing
  std::string finish(const GenerationResult& r);
  std::string error(const ApiError& e);  // an error event, then [DONE]

 private:
  nlohmann::ordered_json chunk(nlohmann::ordered_json delta, nlohmann::ordered_json finish_reason, nlohmann::ordered_json logprobs) const;
  // Content that may be sent now (tools: everything before a possible "<tool_call>").
  std::string releasable_content(const std::string& text);

  ResponseMeta meta_;
  bool include_usage_, logprobs_;
  int top_n_;
  TokenText text_;
  nlohmann::ordered_json tools_;  // null: no tool-call parsing
  std::string held_;              // content held back (what may grow into "<tool_call>")
  std::optional<ToolCallStreamer> calls_;  // from the first "<tool_call>" on
  std::vector<nlohmann::ordered_json> pending_;  // tool_calls deltas to send with this event
};

// SSE for /v1/completions: one text_completion chunk per event, a finish chunk, the usage chunk
// when include_usage is set, then [DONE]. With echo the prompt text comes first.
class CompletionStream {
 public:
  CompletionStream(ResponseMeta meta, bool include_usage, bool logprobs, int top_n, TokenText text);
  std::string start(const std::string& echo_text);
  std::string event(const GenerationEvent& ev);
  std::string finish(const GenerationResult& r);
  std::string error(const ApiError& e);

 private:
  nlohmann::ordered_json chunk(const std::string& text, nlohmann::ordered_json finish_reason, nlohmann::ordered_json logprobs) const;

  ResponseMeta meta_;
  bool include_usage_, logprobs_;
  int top_n_;
  TokenText text_;
  size_t offset_ = 0;  // characters sent so far (text_offset of the next token)
};

}  // namespace qwen35::server
