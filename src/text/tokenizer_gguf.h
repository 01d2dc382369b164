// The tokenizer in GGUF metadata (gguf.md section 5), both ways.
//
// Reading maps tokenizer.ggml.tokens (index = id) by token_type: NORMAL (1) and BYTE (6) to the
// BPE vocabulary in byte-level spelling, CONTROL (3) to special added tokens, USER_DEFINED (4) to
// non-special ones, UNUSED (5; the [PAD<id>] rows) to nothing; merges "a b" to rank-ordered pairs;
// tokenizer.ggml.pre to the split pattern. The file carries no normalizer, so NFC is applied as
// Qwen's tokenizer.json does (llama.cpp does not normalize at all, gguf.md D6). llama.cpp's
// converter marks every <|...|> token CONTROL although tokenizer.json has six of them non-special
// (<|fim_prefix|> ... <|file_sep|>); those get their tokenizer.json flag back, so the ids (and
// which tokens skip_special drops) equal what tokenizer.json gives.
//
// Writing produces what llama.cpp's converter writes for the same tokenizer.json: one entry per
// embedding row, [PAD<id>] / UNUSED for ids without a token, CONTROL for special or <|...|>
// tokens, USER_DEFINED for the other added tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "text/tokenizer_spec.h"

namespace qwen35 {

class GgufFile;
class GgufWriter;

// llama.cpp's token types.
enum class GgufTokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Throws qwen35::Error naming the key for a tokenizer this engine cannot reproduce (another model
// type, an unknown pre-tokenizer, malformed merges).
TokenizerSpec tokenizer_spec_from_gguf(const GgufFile& file);

struct GgufTokenizerKeys {
  int64_t vocab_size = 0;  // entries written: the model's embedding rows
  std::optional<int64_t> bos_id, eos_id, pad_id;
  bool add_bos = false;
  std::string pre;            // empty: named after the spec's split pattern ("qwen35")
  std::string chat_template;  // empty: not written
};

// The special ids, add_bos and chat template of a Hugging Face folder as llama.cpp's converter
// takes them: tokenizer_config.json's bos/eos/pad tokens first, then config.json's *_token_id (top
// level, then text_config); the chat template from tokenizer_config.json, else chat_template.jinja.
GgufTokenizerKeys tokenizer_keys_from_hf(const std::string& model_dir, const TokenizerSpec& spec, int64_t vocab_size);

// Copies every tokenizer.* key of `src` to `w` (requantizing a GGUF keeps its tokenizer as is).
void copy_tokenizer_keys(const GgufFile& src, GgufWriter& w);

// Adds the tokenizer.* keys for `spec` to `w`.
void write_tokenizer_gguf(const TokenizerSpec& spec, const GgufTokenizerKeys& keys, GgufWriter& w);

}  // namespace qwen35
