// Everything that defines a byte-level BPE tokenizer, as plain data. Loaders fill it and Tokenizer
// is built from it: tokenizer.json today (tokenizer_json.h); GGUF metadata later, mapping
// tokenizer.ggml.tokens to `vocab` (index = id), tokenizer.ggml.merges ("a b" strings) to `merges`,
// token_type CONTROL / USER_DEFINED to added tokens (special / not special), and
// tokenizer.ggml.pre ("qwen35") to `split_patterns` via split_pattern_for_pre_type().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/unicode.h"

namespace qwen35 {

// A token matched in the text before normalization and splitting, never split by BPE.
struct AddedToken {
  int32_t id = -1;
  std::string content;       // the literal text (also its spelling for decoding)
  bool special = false;      // dropped by decode(skip_special); plain text in kSplitSpecial mode
  bool normalized = false;   // matched in the normalized text instead of the raw text
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // only matched when not inside a word
};

struct TokenizerSpec {
  // The BPE vocabulary: byte-level spelled token -> id (ids need not be contiguous).
  std::vector<std::pair<std::string, int32_t>> vocab;
  // Merges in rank order, as byte-level spelled pairs.
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<AddedToken> added_tokens;

  unicode::NormalForm normal_form = unicode::NormalForm::kNFC;
  // Split patterns (Oniguruma flavour, behaviour "Isolated"), applied in order.
  std::vector<std::string> split_patterns;
  // Prepend ' ' to each text segment that does not start with one (ByteLevel add_prefix_space).
  bool add_prefix_space = false;
  // A piece found whole in the vocabulary is one token without merging (Llama 3 style).
  bool ignore_merges = false;
  // Token used for bytes missing from the vocabulary; without it they are dropped.
  std::optional<std::string> unk_token;
};

}  // namespace qwen35
