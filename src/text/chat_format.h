// The Qwen3.5 chat format, rendered natively: the output is byte for byte what the official
// chat_template.jinja (sha256 a4aee8af...f715) gives under transformers' Jinja2 setup, without a
// general Jinja engine. The template file is the specification; chat_format.cpp follows its steps
// in order and copies its literal strings.
//
// Inputs are HF/OpenAI-style messages (nlohmann::ordered_json, so key order survives into tojson):
//   {"role": "system"|"user"|"assistant"|"tool", "content": string | [parts] | null,
//    "reasoning_content"?: string, "tool_calls"?: [{"function": {"name", "arguments"}} | {"name", "arguments"}]}
// Parts: {"type": "text", "text"}; any part with key "image"/"image_url" or type "image" is an image;
// key "video" or type "video" is a video. Tool-call "arguments" may be an object or a JSON string
// holding one (OpenAI clients send strings); strings are parsed as a server does before templating.
//
// Errors: the template's raise_exception messages, word for word ("System message must be at the
// beginning.", "No user query found in messages.", ...), and malformed input, are thrown as
// qwen35::Error so a server can answer 400 with the message.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qwen35 {

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  bool enable_thinking = true;  // the template's default: only an explicit false closes the think block
  bool add_vision_id = false;   // "Picture N: " / "Video N: " before each image / video
  nlohmann::ordered_json tools = nullptr;  // array of tool definitions (rendered with json.dumps), or null
};

// Options from HF-style template variables, e.g. chat_template_kwargs {"enable_thinking": false}.
// Jinja semantics: add_generation_prompt / add_vision_id are Python-truthy, enable_thinking is off
// only for JSON false, "tools" is taken as is. Other keys are ignored (this template reads none).
ChatRenderOptions chat_options_from_kwargs(const nlohmann::ordered_json& kwargs, ChatRenderOptions base = {});

// The prompt for `messages`. Throws qwen35::Error. With `from_request`, also the byte ranges of
// the prompt that came from the request (message text, reasoning, tool names, arguments and
// definitions) rather than from the template: sorted, disjoint, [begin, end). Tokenizing the
// prompt with them (Tokenizer::encode_outside) keeps text a user typed as text, even when it
// spells <|im_end|> or <|image_pad|>.
std::string render_chat(const nlohmann::ordered_json& messages, const ChatRenderOptions& opts,
                        std::vector<std::pair<size_t, size_t>>* from_request = nullptr);

// The generation prompt render_chat appends when add_generation_prompt is set:
// "<|im_start|>assistant\n<think>\n", or "...<think>\n\n</think>\n\n" with thinking off.
std::string_view generation_prompt(bool enable_thinking);

// A model reply split into reasoning and visible content.
struct AssistantReply {
  std::string reasoning;
  std::string content;
};

// Splits generated text (what follows the generation prompt) at </think> the way the template
// splits a <think> block out of assistant content; reasoning is trimmed. With no </think>, the
// text is all reasoning if the prompt left a <think> block open (thinking on, reply cut short),
// otherwise all content.
AssistantReply split_reasoning(std::string_view generated, bool prompt_opened_think = true);

// The assistant message a client sends back next turn for that reply. reasoning_content is always
// set (even empty) so the template never re-splits content that happens to contain "</think>".
// tool_calls, when an array, is attached as is. Note the re-rendered turn keeps its reasoning only
// while no later user query follows it, so prefix reuse must stop at the end of the previous user turn.
nlohmann::ordered_json assistant_message(std::string_view reasoning, std::string_view content,
                                         const nlohmann::ordered_json& tool_calls = nullptr);

}  // namespace qwen35
