// Reading a Hugging Face tokenizer.json into a TokenizerSpec.
//
// Supported (everything Qwen2/Qwen3/Qwen3.5 and other byte-level BPE files use): model BPE
// (byte_fallback false, no subword prefix/suffix; dropout ignored), normalizer null / NFC / NFD /
// NFKC / NFKD or a Sequence of at most one of them, pre-tokenizer Split (Regex or String pattern,
// behaviour Isolated) and ByteLevel (use_regex, add_prefix_space) alone or in a Sequence, decoder
// ByteLevel. Anything else is rejected with a qwen35::Error naming the field, rather than
// tokenizing differently from the reference. The post-processor is ignored (for these models it
// adds no tokens).
#pragma once

#include <string>
#include <string_view>

#include "text/tokenizer_spec.h"

namespace qwen35 {

// Parses the text of a tokenizer.json. `origin` names it in error messages.
TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& origin = "tokenizer.json");

// Reads `path`: a tokenizer.json file, or a model directory containing one.
TokenizerSpec load_tokenizer_json(const std::string& path);

}  // namespace qwen35
