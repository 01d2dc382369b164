// qwen35 public API, the values a conversation exchanges: requests (messages, images, tools),
// sampling and speculation parameters, and what comes back (events, results, status). Included
// by qwen35/engine.h; nothing here runs anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qwen35 {

// ---------------------------------------------------------------------------------------------
// Errors

enum class StatusCode {
  kOk,
  kInvalidArgument,     // bad request content: malformed messages, broken image, bad params
  kContextOverflow,     // the prompt does not fit in the context
  kNotFound,            // missing file or model
  kCancelled,
  kUnavailable,         // not ready / shutting down
  kInternal,
};

struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;

  bool ok() const { return code == StatusCode::kOk; }
  static Status Ok() { return {}; }
  static Status Error(StatusCode c, std::string m) { return {c, std::move(m)}; }
};

// ---------------------------------------------------------------------------------------------
// Requests

// A video as decoded frames: every frame (all the same size) and the stream's frame rate.
struct VideoFrames {
  int width = 0;
  int height = 0;
  int frames = 0;
  double fps = 0;            // average frame rate of the stream; 0 = unknown (24 is assumed, as the reference does)
  std::vector<uint8_t> rgb;  // [frames, height, width, 3]: packed RGB, rows top to bottom, frame after frame
};

// How one video is sampled, within what the official processor does (0 keeps its choice).
struct VideoSampling {
  double fps = 0;          // frames sampled per second of the clip; 0: the processor's (2)
  int64_t max_frames = 0;  // most frames sampled; 0: the processor's (768)
  // Most <|video_pad|> tokens: the processor's pixel budget for the whole clip is lowered so the
  // frames come out smaller (its `size.longest_edge`); a clip that cannot fit even so is refused.
  // 0: the processor's budget alone (about 12k tokens).
  int64_t max_tokens = 0;
};

// A video. The engine samples and encodes it as the official Qwen3-VL video processor does:
// 2 frames per second of the clip (at least 4 frames, at most 768; a shorter clip uses all), one
// common size for them, pairs of frames, and a "<t seconds>" stamp per pair in the prompt. Frames
// must be at least 32 x 32 pixels. Only the sampled frames are ever decoded: an encoded file costs
// what its sampled frames cost (a seek to each), not its length.
struct VideoInput {
  enum class Source {
    kFile,    // an encoded file: MP4/MOV, Matroska/WebM, AVI, MPEG-TS/PS, FLV (H.264, HEVC, VP8/9, AV1, ...)
    kImages,  // the frames as encoded images (JPEG, PNG, ...), in order, all the same size
    kFrames,  // decoded RGB frames
  };
  Source source = Source::kFrames;
  std::vector<uint8_t> file;                 // kFile
  std::vector<std::vector<uint8_t>> images;  // kImages
  double images_fps = 0;                     // kImages: their frame rate; 0 = unknown (24 is assumed)
  VideoFrames frames;                        // kFrames
  VideoSampling sampling;

  static VideoInput File(std::vector<uint8_t> bytes, VideoSampling s = {}) {
    VideoInput v;
    v.source = Source::kFile;
    v.file = std::move(bytes);
    v.sampling = s;
    return v;
  }
  static VideoInput Images(std::vector<std::vector<uint8_t>> images, double fps, VideoSampling s = {}) {
    VideoInput v;
    v.source = Source::kImages;
    v.images = std::move(images);
    v.images_fps = fps;
    v.sampling = s;
    return v;
  }
  static VideoInput Frames(VideoFrames frames, VideoSampling s = {}) {
    VideoInput v;
    v.frames = std::move(frames);
    v.sampling = s;
    return v;
  }
};

struct ContentPart {
  enum class Type { kText, kImage, kVideo };
  Type type = Type::kText;
  std::string text;                  // kText
  std::vector<uint8_t> image_bytes;  // kImage: an encoded file (JPEG, PNG, WebP, GIF, BMP)
  VideoInput video;                  // kVideo

  static ContentPart Text(std::string t) { return {Type::kText, std::move(t), {}, {}}; }
  static ContentPart Image(std::vector<uint8_t> bytes) { return {Type::kImage, {}, std::move(bytes), {}}; }
  static ContentPart Video(VideoInput video) { return {Type::kVideo, {}, {}, std::move(video)}; }
  static ContentPart Video(VideoFrames frames) { return Video(VideoInput::Frames(std::move(frames))); }
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;  // a JSON object, as text
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::vector<ContentPart> content;
  std::optional<std::string> reasoning_content;  // assistant turns
  std::vector<ToolCall> tool_calls;              // assistant turns
  std::string tool_call_id;                      // tool turns

  static ChatMessage Text(std::string role, std::string text) {
    ChatMessage m;
    m.role = std::move(role);
    m.content.push_back(ContentPart::Text(std::move(text)));
    return m;
  }
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::string tools_json;                // OpenAI-style tools array as JSON text; empty = none
  std::optional<bool> enable_thinking;   // chat_template_kwargs.enable_thinking; unset = template default (on)
  bool add_vision_id = false;            // chat_template_kwargs.add_vision_id
};

// Speculative decoding: cheap guesses of the next tokens (drafts), checked by the model in one
// block. It never changes the output: greedy requests get exactly the plain greedy tokens, and
// sampled requests exactly the tokens plain sampling draws with the same seed.
enum class SpecMode {
  kAuto,  // per step: the draft source and length that pay, from the measured cost of verifying
          // k tokens against one decode step and the running acceptance; no draft when none pays
  kMtp,   // always draft_max tokens from the model's multi-token-prediction head
  kPld,   // prompt lookup only (drafts copied from earlier in the conversation)
  kOff,
};
const char* spec_mode_name(SpecMode m);                      // "auto", "mtp", "pld", "off"
bool parse_spec_mode(const std::string& text, SpecMode* out);  // false for anything else

struct SpeculativeParams {
  static constexpr int kMaxDraft = 16;
  SpecMode mode = SpecMode::kAuto;
  int draft_max = 8;  // most draft tokens verified per step, 1 .. kMaxDraft
};

// Constrained decoding: what the answer must be. Sampling draws from the model's distribution with
// every token the format does not allow next removed, so the answer always parses (unless
// max_tokens or the context cuts it). With thinking on, the thought is free and the format
// applies to the answer after </think> (the stop token is refused inside the thought).
struct CompiledOutputFormat;  // the runtime's compiled grammar (opaque)
struct OutputFormat {
  enum class Kind {
    kNone,
    kJsonObject,  // any JSON object
    kJsonSchema,  // a JSON value valid against `schema`
    kGrammar,     // GBNF text (llama.cpp's format), start rule `root`
    kToolCalls,   // Qwen3.5 tool calls to the functions of `tools_json`
  };
  Kind kind = Kind::kNone;
  std::string schema;      // kJsonSchema: the schema, JSON text
  bool strict = true;      // kJsonSchema: false ignores keywords that cannot be enforced exactly
  std::string grammar;     // kGrammar
  std::string tools_json;  // kToolCalls: the OpenAI tools array
  std::string tool_name;   // kToolCalls: the one function to call; "" = any of them
  bool lazy = false;       // kToolCalls: free text until the model writes <tool_call> (tool_choice auto)
  bool parallel = true;    // kToolCalls: more than one call
  // Set by Engine::compile_output_format (on any thread); when empty, starting the generation
  // compiles it.
  std::shared_ptr<const CompiledOutputFormat> compiled;
};

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;
  int top_k = 0;             // 0 = off
  float min_p = 0.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  std::optional<uint64_t> seed;  // unset: random
  int64_t max_tokens = -1;       // -1: until a stop or the end of the context
  std::vector<std::string> stop; // stop strings (matched across tokens, not emitted)
  bool logprobs = false;
  int top_logprobs = 0;          // 0..20 alternatives per token
  SpeculativeParams speculative;
  bool ignore_eos = false;
  // Chats: the most tokens generated inside thoughts (<think> ... </think>, all of an answer's
  // together); then the engine closes the thought with kThoughtClosing (forced, not sampled) and
  // the model answers. -1: unlimited; 0: closed at once. Raw completions have no thoughts.
  int64_t reasoning_budget = -1;
  OutputFormat format;
};

// What the engine writes to end a thought over its budget, the way Qwen documents thinking
// budgets for Qwen3: a sentence that tells the model to answer now, then </think>.
inline constexpr const char* kThoughtClosing =
    "\n\nConsidering the limited time by the user, I have to give the solution based on the thinking directly "
    "now.\n</think>\n\n";

// ---------------------------------------------------------------------------------------------
// Output

enum class Channel { kContent, kReasoning };
enum class StopReason { kNone, kEos, kStopString, kMaxTokens, kContextFull, kCancelled };
const char* stop_reason_name(StopReason r);  // "eos", "stop", "length", "context", "cancelled"

struct TokenLogprob {
  int32_t token = -1;
  std::string text;  // the token's text ("" when it ends mid-character)
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely alternatives, best first
};

struct GenerationEvent {
  Channel channel = Channel::kContent;
  std::string text;                       // newly completed text on `channel` (may be empty)
  std::vector<TokenLogprob> logprobs;     // tokens this event covers, when logprobs were asked
};

struct Timings {
  double load_images_ms = 0;  // decode + preprocess
  double vision_ms = 0;       // vision tower
  double prefill_ms = 0;
  int64_t prefill_tokens = 0; // tokens actually processed (prompt minus cached)
  double decode_ms = 0;
  int64_t decode_tokens = 0;
  double draft_ms = 0;        // part of decode_ms spent drafting with the MTP head
};

struct GenerationResult {
  std::string content;
  std::string reasoning;
  std::vector<int32_t> tokens;  // generated ids (stop token excluded)
  StopReason stop_reason = StopReason::kNone;
  int64_t prompt_tokens = 0;    // after image expansion
  int64_t cached_tokens = 0;    // prompt tokens reused from a cache
  // Of the prompt tokens, the images' and videos' <|image_pad|> / <|video_pad|> tokens (the vision
  // tower's outputs; a video's time stamps and the <|vision_start|> / <|vision_end|> around each
  // pad run are text and not counted).
  int64_t image_tokens = 0;
  int64_t video_tokens = 0;
  int64_t completion_tokens = 0;
  // Of those, the ones generated inside a thought (after <think>, before </think>; the markers
  // not counted), the forced closing sentence of a reasoning budget included.
  int64_t reasoning_tokens = 0;
  int64_t pld_drafted = 0;      // prompt lookup: tokens proposed
  int64_t pld_accepted = 0;     // ... and accepted
  int64_t mtp_drafted = 0;      // MTP head: tokens proposed
  int64_t mtp_accepted = 0;     // ... and accepted
  int64_t drafted() const { return pld_drafted + mtp_drafted; }
  int64_t accepted() const { return pld_accepted + mtp_accepted; }
  Timings timings;
};

// Called for every new piece of output. Return false to cancel the generation.
using EventCallback = std::function<bool(const GenerationEvent&)>;

}  // namespace qwen35
