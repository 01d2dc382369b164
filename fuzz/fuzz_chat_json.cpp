// libFuzzer target: a chat request body from any bytes, as the server takes it: the JSON parse
// with its limits, the OpenAI field checks (messages, data: images, tools, sampling), then the
// chat template on the messages. A bad body must be an ApiError or qwen35::Error; the template's
// request-text ranges must be sorted, disjoint and inside the prompt.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "server/openai/api_error.h"
#include "server/openai/request.h"
#include "text/chat_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qwen35;
  const std::string body(reinterpret_cast<const char*>(data), size);
  server::RequestPolicy policy;
  policy.model_id = "fuzz";
  policy.images.max_image_bytes = 1 << 16;
  try {
    const nlohmann::ordered_json doc = server::parse_json_body(body);
    try {
      (void)server::parse_completion(doc, SamplingParams{}, policy);
    } catch (const server::ApiError&) {
    }
    const server::ChatCompletionRequest r = server::parse_chat_completion(doc, SamplingParams{}, policy);
    ChatRenderOptions opts;
    opts.add_generation_prompt = true;
    opts.enable_thinking = r.chat.enable_thinking.value_or(true);
    opts.add_vision_id = r.chat.add_vision_id;
    if (!r.tools.is_null()) opts.tools = r.tools;
    std::vector<std::pair<size_t, size_t>> spans;
    const std::string prompt = render_chat(doc["messages"], opts, &spans);
    size_t end = 0;
    for (const auto& [a, b] : spans) {
      if (a < end || b <= a || b > prompt.size()) __builtin_trap();
      end = b;
    }
  } catch (const server::ApiError&) {
  } catch (const Error&) {
  }
  return 0;
}
