// A request turned into what the decoder consumes: expanded ids, cache keys, MRoPE positions,
// images (with their vision embeddings once computed) and the points worth a snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/image_processor.h"
#include "model/vision.h"
#include "qwen35/engine.h"
#include "runtime/engine_impl.h"

namespace qwen35 {

// One vision item of the prompt: an image, or one temporal pair of a video (an image of grid
// (1, h, w) whose tokens are <|video_pad|>; its time stamp is text before it).
struct PromptImage {
  int64_t start = 0;   // index of its first pad token in the prompt
  int64_t count = 0;   // its pad tokens
  int32_t pad_id = -1; // <|image_pad|> or <|video_pad|>
  uint64_t hash = 0;   // content hash (with the preprocessing settings)
  ProcessedImage processed;
  std::shared_ptr<VisionRun> vision;  // the vision tower's run while it is in progress
  std::vector<float> embeddings;      // [count, H], computed on demand
};

struct PromptPlan {
  std::vector<int32_t> ids;
  std::vector<uint64_t> keys;
  std::vector<int32_t> positions;  // [3, P]
  int64_t rope_delta = 0;
  std::vector<PromptImage> images;
  bool starts_in_reasoning = false;   // the prompt ends inside an open <think> block
  bool split_reasoning = true;        // chat: <think>...</think> goes to the reasoning channel;
                                      // raw completions keep the markers as text
  std::vector<int64_t> snapshot_points;  // prompt lengths after which to store a snapshot
  double load_images_ms = 0;

  int64_t size() const { return int64_t(ids.size()); }
};

// The prompt does not fit in the context (raised before images are turned into pixel arrays).
class ContextOverflow : public Error {
 public:
  using Error::Error;
};

// Renders, tokenizes and prepares a chat request. Throws qwen35::Error for bad input and
// ContextOverflow for a prompt longer than the context.
PromptPlan plan_chat(const EngineImpl& engine, const ChatRequest& request);
// A raw prompt of ids (no template, no images).
PromptPlan plan_completion(const EngineImpl& engine, const std::vector<int32_t>& ids);
// The rendered prompt text of a chat request (the template only). An assistant message last is
// continued (its turn is left open). With `from_request`, the byte ranges of the text that came
// from the request (see render_chat).
std::string render_request(const EngineImpl& engine, const ChatRequest& request,
                           std::vector<std::pair<size_t, size_t>>* from_request = nullptr);

}  // namespace qwen35
