#include "runtime_harness.h"

#include <map>

#include "server/openai/chat_json.h"
#include "support/test_data.h"

namespace qwen35::test {

const Engine& tiny_engine(int image_size) {
  static std::map<int, std::unique_ptr<Engine>> engines;
  auto& e = engines[image_size];
  if (!e) {
    EngineOptions o;
    o.model_dir = tiny_model_dir();
    o.threads = 2;
    o.context_size = 4096;
    o.image_size = image_size;
    Status st;
    e = Engine::load(o, &st);
    if (!e) throw std::runtime_error("cannot load the tiny model: " + st.message);
  }
  return *e;
}

const Engine& tiny_moe_engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineOptions o;
    o.model_dir = tiny_moe_model_dir();
    o.threads = 2;
    o.context_size = 4096;
    Status st;
    auto engine = Engine::load(o, &st);
    if (!engine) throw std::runtime_error("cannot load the tiny MoE model: " + st.message);
    return engine;
  }();
  return *e;
}

std::vector<const Engine*> tiny_engines() { return {&tiny_engine(), &tiny_moe_engine()}; }

SamplingParams greedy(int64_t max_tokens, SpecMode spec) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.speculative.mode = spec;
  p.ignore_eos = true;
  return p;
}

ChatRequest request_from_golden(const nlohmann::ordered_json& line, const std::string& image_dir) {
  nlohmann::ordered_json messages = line["messages"];
  for (auto& m : messages) {
    if (!m["content"].is_array()) continue;
    for (auto& part : m["content"])
      if (part.contains("image") && part["image"].is_string()) part["image"] = image_dir + "/" + part["image"].get<std::string>();
  }
  server::ImageSourcePolicy policy;
  policy.allow_local_files = true;
  ChatRequest req;
  req.messages = server::parse_messages(messages, policy);
  const auto& kw = line["chat_template_kwargs"];
  if (kw.contains("enable_thinking")) req.enable_thinking = kw["enable_thinking"].get<bool>();
  return req;
}

}  // namespace qwen35::test
