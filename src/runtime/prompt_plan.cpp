#include "runtime/prompt_plan.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_parse.h"
#include "io/image.h"
#include "model/mrope_positions.h"
#include "runtime/sequence.h"
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

void finish_plan(const EngineImpl& engine, PromptPlan& plan, const std::vector<ImageGrid>& grids) {
  const int merge = engine.image_config.merge_size;
  if (!grids.empty()) plan.ids = expand_image_tokens(plan.ids, engine.image_pad_id, grids, merge);
  plan.keys.assign(plan.ids.begin(), plan.ids.end());
  size_t image = 0;
  for (int64_t i = 0; i < plan.size(); ++i) {
    if (plan.ids[size_t(i)] != engine.image_pad_id || grids.empty()) continue;
    if (image >= plan.images.size()) fail("more image tokens in the prompt than images");
    PromptImage& img = plan.images[image];
    if (img.count == 0) img.start = i;
    plan.keys[size_t(i)] = image_token_key(img.hash, img.count);
    if (++img.count == img.processed.num_tokens) ++image;
  }
  MropePositions mp = get_rope_index(plan.ids, engine.image_pad_id, grids, merge);
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
  const std::string text = render_request(engine, request, &from_request);
  // What the request says is text, whatever it spells: only the template writes control tokens
  // and image placeholders.
  plan.ids = engine.tokenizer->encode_outside(text, from_request);
  plan.starts_in_reasoning = text.size() >= 8 && text.compare(text.size() - 8, 8, "<think>\n") == 0;

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ImageGrid> grids;
  int64_t total = int64_t(plan.ids.size()) + 1;  // the prompt plus the first generated token
  auto check_fits = [&] {
    if (total > engine.context_size)
      throw ContextOverflow(str("the prompt (with its images) has at least ", total - 1,
                                " tokens but the context is ", engine.context_size, " tokens"));
  };
  check_fits();
  for (const ChatMessage& m : request.messages) {
    for (const ContentPart& p : m.content) {
      if (p.type != ContentPart::Type::kImage) continue;
      if (!engine.model->vision()) fail("this model has no vision tower: images are not supported");
      PromptImage img;
      ImageDecodeOptions decode;
      decode.max_pixels = std::max<int64_t>(engine.image_config.max_pixels * 4, int64_t(64) << 20);
      RgbImage rgb = decode_image(p.image_bytes, decode);
      total += image_tokens(engine, rgb) - 1;  // its pad tokens replace one placeholder
      check_fits();
      img.processed = preprocess_image(rgb, engine.image_config, engine.options.image_size);
      img.hash = image_hash(p.image_bytes, img.processed.grid, engine.options.image_size);
      grids.push_back(img.processed.grid);
      plan.images.push_back(std::move(img));
    }
  }
  plan.load_images_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int64_t pads = 0;
  for (int32_t id : plan.ids) pads += id == engine.image_pad_id;
  if (pads != int64_t(plan.images.size()))
    fail("the prompt has ", pads, " image placeholders but the request has ", plan.images.size(), " images");
  finish_plan(engine, plan, grids);

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
    if (id == engine.image_pad_id) fail("raw prompts cannot contain image placeholder tokens");
  finish_plan(engine, plan, {});
  std::vector<int64_t> ends = message_ends(engine, plan.ids);
  if (!ends.empty()) plan.snapshot_points.push_back(ends.back());
  return plan;
}

}  // namespace qwen35
