// OpenAI request bodies -> public request types. Every problem is an ApiError naming the field
// (param) with code "invalid_json", "invalid_type", "invalid_value", "missing_field",
// ...; unknown extra fields are ignored, as OpenAI-compatible servers do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"
#include "server/openai/chat_json.h"

namespace qwen35::server {

struct RequestPolicy {
  std::string model_id;         // the one served model: answers name it whatever `model` said
  ImageSourcePolicy images;     // data: URLs always; http(s) with --allow-remote-images
  size_t max_images = 16;       // images per request
  size_t max_videos = 4;        // videos per request
  size_t max_stop = 16;         // stop strings per request
  int64_t reasoning_budget = -1;  // chats' thought budget when a request names none (-1: unlimited)
  int64_t max_tokens = -1;        // a chat answer's tokens when the request names none (-1: up to the context)
};

// reasoning_effort -> SamplingParams::reasoning_budget: the thought tokens each effort allows.
constexpr int64_t kReasoningEffortLow = 512;
constexpr int64_t kReasoningEffortMedium = 2048;
constexpr int64_t kReasoningEffortHigh = 8192;

struct ChatCompletionRequest {
  ChatRequest chat;
  nlohmann::ordered_json tools;  // the tools offered (null: none), for parsing calls in the answer
  SamplingParams params;
  bool stream = false;
  bool include_usage = false;   // stream_options.include_usage
};

struct CompletionRequest {
  bool prompt_is_text = true;
  std::string prompt_text;          // tokenized without a template by the caller
  std::vector<int32_t> prompt_ids;  // a prompt given as token ids
  SamplingParams params;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;                // prepend the prompt text to the answer
};

// Values (of any kind) a request body may hold: a long conversation or a prompt of token ids
// fits many times over; what a body costs in memory after parsing stays a small multiple of it.
constexpr size_t kMaxBodyValues = size_t(1) << 20;

// Parses a request body as JSON with key order kept (tool arguments reach the template as
// written), in time linear in its size, nested at most 64 deep, at most 4096 keys per object
// and kMaxBodyValues values; throws 400 "invalid_json" otherwise or when it is not an object.
nlohmann::ordered_json parse_json_body(const std::string& body);

// `model` may name anything (a single-model server serves its model under any name, as
// llama-server and ollama do); only a `model` that is not a string is 400.
void check_model(const nlohmann::ordered_json& body, const std::string& model_id);

// POST /v1/chat/completions. `defaults` are the model's sampling defaults.
ChatCompletionRequest parse_chat_completion(const nlohmann::ordered_json& body, const SamplingParams& defaults,
                                            const RequestPolicy& policy);

// POST /v1/completions (max_tokens defaults to 16, as in OpenAI's API).
CompletionRequest parse_completion(const nlohmann::ordered_json& body, const SamplingParams& defaults,
                                   const RequestPolicy& policy);

}  // namespace qwen35::server
