// Shared engines for the runtime tests (loading once per binary keeps the suite fast).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"

namespace qwen35::test {

// The tiny model with native image sizes (image_size 0) or the seed's fixed 512x512.
const Engine& tiny_engine(int image_size = 0);
// The tiny mixture-of-experts model (tests/data/tiny-qwen35-moe), native image sizes.
const Engine& tiny_moe_engine();
// Both, for the invariance tests that must hold for every architecture.
std::vector<const Engine*> tiny_engines();

// Greedy, ignoring end-of-sequence tokens, with speculation `spec`.
SamplingParams greedy(int64_t max_tokens, SpecMode spec = SpecMode::kAuto);

// A chat request from the messages of a golden jsonl line; image parts {"type":"image","image":FILE}
// are read from image_dir.
ChatRequest request_from_golden(const nlohmann::ordered_json& line, const std::string& image_dir);

}  // namespace qwen35::test
