// Shared helpers of the tokenizer tests: the bundled tokenizers, loaded once per test binary, and
// JSON Lines golden files.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_data.h"
#include "text/tokenizer.h"
#include "text/tokenizer_json.h"

namespace qwen35::test {

// The real Qwen3 tokenizer.json (Qwen2/Qwen3 split pattern) the text goldens were made with.
inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer t = Tokenizer::from_file(data_path("tokenizer/qwen3-fallback/tokenizer.json"));
  return t;
}

// The same file with its split pattern replaced by Qwen3.5's (the goldens' ids_qwen35_regex).
inline const Tokenizer& qwen3_tokenizer_with_qwen35_regex() {
  static const Tokenizer t = [] {
    TokenizerSpec spec = load_tokenizer_json(data_path("tokenizer/qwen3-fallback/tokenizer.json"));
    EXPECT_EQ(spec.split_patterns.size(), 1u);
    spec.split_patterns = {std::string(kQwen35SplitPattern)};
    return Tokenizer(spec);
  }();
  return t;
}

// The tiny model's stand-in tokenizer: Qwen3 vocabulary, Qwen3.5 pipeline and added-token ids.
inline const Tokenizer& tiny_tokenizer() {
  static const Tokenizer t = Tokenizer::from_file(tiny_model_dir());
  return t;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& relative) {
  std::ifstream in(data_path(relative));
  if (!in) throw std::runtime_error("cannot open " + data_path(relative));
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

}  // namespace qwen35::test
