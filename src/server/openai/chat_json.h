// OpenAI-style chat JSON -> public request types, shared by the server and the CLI.
// Every problem is a qwen35::Error whose message names the offending field
// ("messages[2].content[1].image_url.url: ..."), suitable for a 400 answer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"

namespace qwen35::server {

struct ImageSourcePolicy {
  bool allow_local_files = false;   // plain paths and file:// URLs (CLI only)
  bool allow_remote = false;        // http(s) URLs (--allow-remote-images)
  size_t max_image_bytes = size_t(20) << 20;
  size_t max_video_bytes = size_t(64) << 20;  // one encoded video file
  size_t max_video_frames = 768;              // images of one video given as a list of frames
  // The most a video may ask for, and what it gets when it asks for nothing: max_tokens is the
  // server's --video-max-tokens (0: the processor's own budget), max_frames the frames sampled.
  VideoSampling video_caps;
  // Fetches an http(s) URL of an image (video false) or a video into bytes; throws qwen35::Error.
  // Required when allow_remote.
  std::function<std::vector<uint8_t>(const std::string& url, size_t max_bytes, bool video)> fetch_remote;
};

// Parses `messages` (an array of {role, content, reasoning_content?, tool_calls?, tool_call_id?}).
// Content: a string, null, or parts {"type":"text","text"} / {"type":"image_url","image_url":{"url"}}
// (also "image_url" as a plain string, and {"type":"image","image": url}), and videos:
//   {"type":"video_url","video_url":{"url"}}              an encoded file (data: URL, or http(s) as images are)
//   {"type":"input_video","input_video":{"data","format"}} an encoded file in base64 (llama.cpp)
//   {"type":"video","video": url | [image url, ...]}       a file, or its frames as images (vLLM, qwen-vl-utils)
// with optional keys on the part (or inside video_url / input_video): "fps" (frames sampled per
// second, default 2), "max_frames" and "max_tokens" (within the policy's caps), and for a list of
// frames "frame_rate" (the frames' own rate; default 2, so every frame is used).
// Takes ordered_json: tool-call arguments keep their key order into the template.
std::vector<ChatMessage> parse_messages(const nlohmann::ordered_json& messages, const ImageSourcePolicy& policy);

// Image parts in `messages`, counted without loading any (so a limit can be checked before
// remote images are fetched or data: URLs decoded).
size_t count_image_parts(const nlohmann::ordered_json& messages);
// Video parts in `messages`, counted the same way.
size_t count_video_parts(const nlohmann::ordered_json& messages);

// Decodes standard base64 (padding optional, whitespace ignored); throws on bad input.
std::vector<uint8_t> decode_base64(const std::string& text);

// "data:image/png;base64,...." -> bytes; throws when not a base64 data URI.
std::vector<uint8_t> decode_data_uri(const std::string& uri);

}  // namespace qwen35::server
