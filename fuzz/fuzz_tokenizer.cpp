// libFuzzer target: the tokenizer (the bundled model's tokenizer.json) on any bytes, in every
// added-token mode, with the request-text ranges of a chat prompt taken from the input too.
// Invariants: ids are valid; text that is all plain is encoded as plain text; decoding never fails.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace {

const qwen35::Tokenizer* g_tokenizer = nullptr;

}  // namespace

// Loading the 10 MB tokenizer.json takes seconds with the sanitizers: once, before any input
// (so it does not count against the time limit of one).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_tokenizer = new qwen35::Tokenizer(qwen35::Tokenizer::from_file(QWEN35_FUZZ_TOKENIZER));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const qwen35::Tokenizer& tok = *g_tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (qwen35::AddedTokenMode mode : {qwen35::AddedTokenMode::kMatchAll, qwen35::AddedTokenMode::kSplitSpecial,
                                      qwen35::AddedTokenMode::kPlainText}) {
    const std::vector<int32_t> ids = tok.encode(text, mode);
    for (int32_t id : ids)
      if (!tok.is_valid_id(id)) __builtin_trap();
    (void)tok.decode(ids);
    (void)tok.decode(ids, /*skip_special=*/true);
  }
  if (size > 0 && tok.encode_outside(text, {{0, size}}) != tok.encode(text, qwen35::AddedTokenMode::kPlainText))
    __builtin_trap();
  // Plain ranges from the input's own bytes: a range starts at every '<' and ends at every '>'.
  std::vector<std::pair<size_t, size_t>> plain;
  size_t start = std::string_view::npos;
  for (size_t i = 0; i < size; ++i) {
    if (text[i] == '<' && start == std::string_view::npos) start = i;
    if (text[i] == '>' && start != std::string_view::npos) {
      plain.emplace_back(start, i + 1);
      start = std::string_view::npos;
    }
  }
  for (int32_t id : tok.encode_outside(text, plain))
    if (!tok.is_valid_id(id)) __builtin_trap();
  // Arbitrary ids decode (unknown ones are dropped).
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 4 <= size && raw.size() < 256; i += 4) {
    int32_t v;
    __builtin_memcpy(&v, data + i, 4);
    raw.push_back(v);
  }
  (void)tok.decode(raw);
  return 0;
}
