// Shared pieces of the server tests: one tiny engine per binary, greedy params, an HTTP server
// on a free port.
#pragma once

#include <memory>

#include "qwen35/engine.h"

namespace qwen35::test {

// The bundled tiny model with a 1024-token context and 2 threads, loaded once.
const Engine& small_engine();
// A fresh engine (HttpServer takes ownership of its engine).
std::unique_ptr<Engine> load_small_engine(int64_t context_size = 1024);

// Greedy, ignoring end-of-sequence, so lengths are exact.
SamplingParams greedy(int64_t max_tokens);

}  // namespace qwen35::test
