#include "server_harness.h"

#include <stdexcept>

#include "support/test_data.h"

namespace qwen35::test {

std::unique_ptr<Engine> load_small_engine(int64_t context_size) {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.threads = 2;
  o.context_size = context_size;
  Status st;
  std::unique_ptr<Engine> e = Engine::load(o, &st);
  if (!e) throw std::runtime_error("cannot load the tiny model: " + st.message);
  return e;
}

const Engine& small_engine() {
  static std::unique_ptr<Engine> engine = load_small_engine();
  return *engine;
}

SamplingParams greedy(int64_t max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

}  // namespace qwen35::test
