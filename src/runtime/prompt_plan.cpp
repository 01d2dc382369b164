#include "runtime/prompt_plan.h"

#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_parse.h"
#include "io/image.h"
#include "model/mrope_positions.h"
#include "model/video_processor.h"
#include "runtime/sequence.h"
#include "runtime/video_source.h"
#include "text/chat_format.h"
#include "text/chat_template_check.h"

namespace qwen35 {
namespace {

using ojson = nlohmann::ordered_json;

ojson to_template_messages(const ChatRequest& request) {
  ojson messages = ojson::array();
  for (const ChatMessage& m : request.messages) {
    ojson msg = ojson::object();
    msg["role"] = m.role;
    const bool only_text = m.content.size() == 1 && m.content[0].type == ContentPart::Type::kText;
    if (only_text) {
      msg["content"] = m.content[0].text;
    } else if (m.content.empty()) {
      msg["content"] = m.tool_calls.empty() ? ojson("") : ojson(nullptr);
    } else {
      ojson parts = ojson::array();
      for (const ContentPart& p : m.content) {
        if (p.type == ContentPart::Type::kText) parts.push_back({{"type", "text"}, {"text", p.text}});
        else if (p.type == ContentPart::Type::kVideo) parts.push_back({{"type", "video"}});
        else parts.push_back({{"type", "image"}});
      }
      msg["content"] = parts;
    }
    if (m.reasoning_content) msg["reasoning_content"] = *m.reasoning_content;
    if (!m.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const ToolCall& c : m.tool_calls) {
        ojson call = {{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}};
        if (!c.id.empty()) call["id"] = c.id;
        calls.push_back(call);
      }
      msg["tool_calls"] = calls;
    }
    if (!m.tool_call_id.empty()) msg["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(msg));
  }
  return messages;
}

// Identity of an image for the prefix cache, shared by every client of a server: a
// cryptographic hash, so nobody can craft a picture that reuses another one's cached state.
uint64_t image_hash(const std::vector<uint8_t>& bytes, const ImageGrid& g, int image_size) {
  std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  key += "|" + std::to_string(g.t) + "," + std::to_string(g.h) + "," + std::to_string(g.w) + "," +
         std::to_string(image_size);
  return std::stoull(sha256_hex(key).substr(0, 16), nullptr, 16);
}

// Identity of one temporal pair of a video for the prefix cache: the pixels the vision tower sees
// (the sampled frames after resizing and normalising) and their grid.
uint64_t video_pair_hash(const ProcessedImage& pair) {
  const std::string_view pixels(reinterpret_cast<const char*>(pair.pixel_values.data()),
                                pair.pixel_values.size() * sizeof(float));
  const std::string key = sha256_hex(pixels) + "|video pair|" + std::to_string(pair.grid.h) + "," +
                          std::to_string(pair.grid.w);
  return std::stoull(sha256_hex(key).substr(0, 16), nullptr, 16);
}

// Tokens a video adds to the prompt, from its frame count and size alone (before any frame is
// decoded): per pair a stamp (at least one token), <|vision_start|>, the pads and <|vision_end|>,
// in place of the placeholder's three tokens. A lower bound: a stamp is several tokens.
int64_t video_tokens_at_least(const VideoFrameSource& source, const VideoProcessorConfig& c) {
  const int64_t pairs =
      (int64_t(sample_frame_indices(source.frames, source.fps, c).size()) + c.temporal_patch_size - 1) /
      c.temporal_patch_size;
  return video_pad_tokens(source, c) + pairs * 3 - 3;
}

// The byte offsets of the video placeholders the template wrote: request text that spells one
// stays text (it lies inside a from_request range).
std::vector<size_t> template_video_tags(const std::string& text, const std::vector<std::pair<size_t, size_t>>& from_request) {
  constexpr std::string_view kTag = "<|vision_start|><|video_pad|><|vision_end|>";
  std::vector<size_t> tags;
  size_t range = 0;
  for (size_t at = text.find(kTag); at != std::string::npos; at = text.find(kTag, at + 1)) {
    while (range < from_request.size() && from_request[range].second <= at) ++range;
    const bool inside = range < from_request.size() && from_request[range].first < at + kTag.size();
    if (!inside) tags.push_back(at);
  }
  return tags;
}

// Replaces the template's video placeholders (at `tags`) by their expansions, in order, and moves
// the request's byte ranges with the text around them (no range overlaps a placeholder).
std::string expand_video_tags(const std::string& text, const std::vector<size_t>& tags,
                              const std::vector<std::string>& expansions,
                              std::vector<std::pair<size_t, size_t>>& from_request) {
  constexpr size_t kTagSize = std::string_view("<|vision_start|><|video_pad|><|vision_end|>").size();
  std::string out;
  size_t prev = 0, next_range = 0;
  int64_t shift = 0;
  const auto move_ranges_before = [&](size_t end) {
    for (; next_range < from_request.size() && from_request[next_range].first < end; ++next_range) {
      from_request[next_range].first = size_t(int64_t(from_request[next_range].first) + shift);
      from_request[next_range].second = size_t(int64_t(from_request[next_range].second) + shift);
    }
  };
  for (size_t k = 0; k < tags.size(); ++k) {
    move_ranges_before(tags[k]);
    out.append(text, prev, tags[k] - prev);
    out += expansions[k];
    prev = tags[k] + kTagSize;
    shift += int64_t(expansions[k].size()) - int64_t(kTagSize);
  }
  move_ranges_before(text.size() + 1);
  out.append(text, prev, std::string::npos);
  return out;
}

// Image tokens of a decoded picture, from its size alone (before any float pixel array exists).
int64_t image_tokens(const EngineImpl& engine, const RgbImage& rgb) {
  const ImageProcessorConfig& c = engine.image_config;
  const int64_t side = engine.options.image_size;
  const ResizedSize r = side > 0 ? smart_resize(side, side, c.factor(), c.min_pixels, c.max_pixels)
                                 : smart_resize(rgb.height, rgb.width, c.factor(), c.min_pixels, c.max_pixels);
  return (r.height / c.patch_size) * (r.width / c.patch_size) / (int64_t(c.merge_size) * c.merge_size);
}

// Prompt lengths right after each "<|im_end|>\n": the end of every message, where a later
// request's render agrees with this one.
std::vector<int64_t> message_ends(const EngineImpl& engine, const std::vector<int32_t>& ids) {
  std::vector<int64_t> ends;
  const auto im_end = engine.tokenizer->token_to_id("<|im_end|>");
  const auto newline = engine.tokenizer->encode("\n");
  if (!im_end || newline.size() != 1) return ends;
  for (size_t i = 0; i + 1 < ids.size(); ++i)
    if (ids[i] == *im_end && ids[i + 1] == newline[0]) ends.push_back(int64_t(i + 2));
  return ends;
}

// Expands each <|image_pad|> to its image's tokens (video pads are expanded in the text already),
// finds every vision item's tokens (images and video pairs, in prompt order) and positions them.
void finish_plan(const EngineImpl& engine, PromptPlan& plan) {
  const int merge = engine.image_config.merge_size;
  std::vector<ImageGrid> grids, image_grids;
  for (const PromptImage& img : plan.images) {
    grids.push_back(img.processed.grid);
    if (img.pad_id == engine.image_pad_id) image_grids.push_back(img.processed.grid);
  }
  if (!image_grids.empty()) plan.ids = expand_image_tokens(plan.ids, engine.image_pad_id, image_grids, merge);
  plan.keys.assign(plan.ids.begin(), plan.ids.end());
  size_t image = 0;
  for (int64_t i = 0; i < plan.size(); ++i) {
    const int32_t id = plan.ids[size_t(i)];
    if ((id != engine.image_pad_id && id != engine.video_pad_id) || plan.images.empty()) continue;
    if (image >= plan.images.size()) fail("more image and video tokens in the prompt than images and video frames");
    PromptImage& img = plan.images[image];
    if (id != img.pad_id) fail("the prompt's image and video tokens are not in the order of the request's parts");
    if (img.count == 0) img.start = i;
    plan.keys[size_t(i)] = image_token_key(img.hash, img.count);
    if (++img.count == img.processed.num_tokens) ++image;
  }
  MropePositions mp = get_rope_index(plan.ids, VisionPads{engine.image_pad_id, engine.video_pad_id}, grids, merge);
  plan.positions = std::move(mp.positions);
  plan.rope_delta = mp.rope_delta;
}

}  // namespace

std::string render_request(const EngineImpl& engine, const ChatRequest& request,
                           std::vector<std::pair<size_t, size_t>>* from_request) {
  ChatRenderOptions opts;
  // An assistant message last is the start of the reply (prefill): its turn stays open and the
  // model continues it, instead of a new turn after it.
  const bool prefill = !request.messages.empty() && request.messages.back().role == "assistant";
  opts.add_generation_prompt = !prefill;
  opts.enable_thinking = request.enable_thinking.value_or(true);
  opts.add_vision_id = request.add_vision_id;
  if (!request.tools_json.empty()) {
    opts.tools = parse_json_limited<ojson>(request.tools_json);
    if (!opts.tools.is_array()) fail("tools must be an array");
  }
  std::string text = render_chat(to_template_messages(request), opts, from_request);
  constexpr std::string_view kTurnEnd = "<|im_end|>\n";
  if (prefill && text.ends_with(kTurnEnd)) text.resize(text.size() - kTurnEnd.size());
  return text;
}

PromptPlan plan_chat(const EngineImpl& engine, const ChatRequest& request) {
  PromptPlan plan;
  std::vector<std::pair<size_t, size_t>> from_request;
  std::string text = render_request(engine, request, &from_request);
  // What the request says is text, whatever it spells: only the template writes control tokens
  // and image placeholders.
  plan.ids = engine.tokenizer->encode_outside(text, from_request);
  plan.starts_in_reasoning = text.size() >= 8 && text.compare(text.size() - 8, 8, "<think>\n") == 0;

  const auto t0 = std::chrono::steady_clock::now();
  int64_t total = int64_t(plan.ids.size()) + 1;  // the prompt plus the first generated token
  auto check_fits = [&] {
    if (total > engine.context_size)
      throw ContextOverflow(str("the prompt (with its images) has at least ", total - 1,
                                " tokens but the context is ", engine.context_size, " tokens"));
  };
  check_fits();
  // Vision items in prompt order: each image, and each temporal pair of each video.
  std::vector<std::string> video_texts;  // what each video placeholder becomes
  for (const ChatMessage& m : request.messages) {
    for (const ContentPart& p : m.content) {
      if (p.type == ContentPart::Type::kText) continue;
      if (!engine.model->vision())
        fail("this model has no vision tower: ", p.type == ContentPart::Type::kVideo ? "videos" : "images",
             " are not supported");
      if (p.type == ContentPart::Type::kVideo) {
        const RequestVideo video_in(p.video);
        const VideoFrameSource& source = video_in.source();
        const VideoProcessorConfig config =
            video_config_for(engine.video_config, p.video.sampling, source.frames, source.height, source.width, source.fps);
        const int64_t pads = video_pad_tokens(source, config);
        if (p.video.sampling.max_tokens > 0 && pads > p.video.sampling.max_tokens)
          fail("the video needs ", pads, " tokens at its smallest size, over its limit of ",
               p.video.sampling.max_tokens, " (sample fewer frames: a lower fps or max_frames)");
        total += video_tokens_at_least(source, config);
        check_fits();
        ProcessedVideo video = preprocess_video(source, config);
        video_texts.push_back(expand_video_placeholder(video.timestamps, video.tokens_per_pair));
        for (ProcessedImage& pair : video.pairs) {
          PromptImage img;
          img.pad_id = engine.video_pad_id;
          img.hash = video_pair_hash(pair);
          img.processed = std::move(pair);
          plan.images.push_back(std::move(img));
        }
        continue;
      }
      PromptImage img;
      img.pad_id = engine.image_pad_id;
      ImageDecodeOptions decode;
      decode.max_pixels = std::max<int64_t>(engine.image_config.max_pixels * 4, int64_t(64) << 20);
      RgbImage rgb = decode_image(p.image_bytes, decode);
      total += image_tokens(engine, rgb) - 1;  // its pad tokens replace one placeholder
      check_fits();
      img.processed = preprocess_image(rgb, engine.image_config, engine.options.image_size);
      img.hash = image_hash(p.image_bytes, img.processed.grid, engine.options.image_size);
      plan.images.push_back(std::move(img));
    }
  }
  plan.load_images_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int64_t pads = 0, images = 0;
  for (int32_t id : plan.ids) pads += id == engine.image_pad_id;
  for (const PromptImage& img : plan.images) images += img.pad_id == engine.image_pad_id;
  if (pads != images)
    fail("the prompt has ", pads, " image placeholders but the request has ", images, " images");
  if (!video_texts.empty()) {
    // The processor expands a video in the text, not in the ids: a stamp is ordinary text and may
    // merge with the text before it ("...:<" is one token), so the expanded text is tokenized anew.
    const std::vector<size_t> tags = template_video_tags(text, from_request);
    if (tags.size() != video_texts.size())
      fail("the prompt has ", tags.size(), " video placeholders but the request has ", video_texts.size(), " videos");
    text = expand_video_tags(text, tags, video_texts, from_request);
    plan.ids = engine.tokenizer->encode_outside(text, from_request);
    total = int64_t(plan.ids.size()) + 1;
    for (const PromptImage& img : plan.images)
      if (img.pad_id == engine.image_pad_id) total += img.processed.num_tokens - 1;
    check_fits();
  }
  finish_plan(engine, plan);

  // Snapshots: after the first message (a shared system prompt) and after the last message
  // before the generation prompt (where the next turn's render still agrees).
  std::vector<int64_t> ends = message_ends(engine, plan.ids);
  if (!ends.empty()) {
    plan.snapshot_points.push_back(ends.front());
    if (ends.back() != ends.front()) plan.snapshot_points.push_back(ends.back());
  }
  return plan;
}

PromptPlan plan_completion(const EngineImpl& engine, const std::vector<int32_t>& ids) {
  PromptPlan plan;
  plan.split_reasoning = false;
  for (int32_t id : ids)
    if (id < 0 || id >= engine.text_config().vocab_size)
      fail("token id ", id, " is outside the vocabulary [0, ", engine.text_config().vocab_size, ")");
  plan.ids = ids;
  for (int32_t id : ids)
    if (id == engine.image_pad_id || id == engine.video_pad_id)
      fail("raw prompts cannot contain image or video placeholder tokens");
  finish_plan(engine, plan);
  std::vector<int64_t> ends = message_ends(engine, plan.ids);
  if (!ends.empty()) plan.snapshot_points.push_back(ends.back());
  return plan;
}

}  // namespace qwen35
