// Pre-tokenization: cutting normalized text into the pieces that BPE sees, with the split regex
// of the tokenizer file ("Split" with behaviour "Isolated": every match is a piece and so is every
// gap between matches).
//
// The reference runs these patterns on Oniguruma. We run them on PCRE2 (UTF + UCP, JIT when
// available), whose backtracking semantics are the same for these patterns (alternatives tried in
// order, leftmost match, `\s+(?!\S)` giving back one character, `(?i)` with Unicode simple case
// folding so `'ſ` matches `'s`). Two differences in the character classes are removed by
// rewriting the pattern before compiling it (translate_pattern):
//  * `\s`/`\S`: PCRE2's \s also matches U+180E (it counts it in \h); Oniguruma's \s is exactly
//    Unicode White_Space. Both are replaced by explicit White_Space ranges from ICU.
//  * `\p{..}`: PCRE2's property tables can be older than ICU's (PCRE2 10.42 has Unicode 14,
//    ICU 72 Unicode 15). Characters that ICU puts in the class but that were assigned after
//    PCRE2's Unicode version are added to the class as explicit ranges. (`\P{..}` is left as is.)
// Oniguruma-only escapes `\uHHHH` are turned into PCRE2's `\x{HHHH}`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qwen35 {

// The split pattern of Qwen3.5 (transformers' Qwen3_5 PRETOKENIZE_REGEX, llama.cpp pre "qwen35").
inline constexpr std::string_view kQwen35SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// The split pattern of Qwen2 and Qwen3 (llama.cpp pre "qwen2").
inline constexpr std::string_view kQwen2SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
// The pattern of the ByteLevel pre-tokenizer with use_regex = true (GPT-2).
inline constexpr std::string_view kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// The split pattern for a llama.cpp `tokenizer.ggml.pre` name, for loaders of GGUF metadata.
std::optional<std::string_view> split_pattern_for_pre_type(std::string_view pre);

// The PCRE2 pattern that behaves like `pattern` does on Oniguruma (see the file comment).
std::string translate_pattern(std::string_view pattern);

// One compiled split pattern. Immutable after construction; split() may run on many threads.
class RegexSplitter {
 public:
  // Throws qwen35::Error with PCRE2's message and offset when the pattern does not compile.
  explicit RegexSplitter(std::string_view pattern);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&& other) noexcept;
  RegexSplitter& operator=(RegexSplitter&& other) noexcept;
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` (views into it, never empty) to `pieces`: matches and the gaps
  // between them, in order, covering all of `text`. `text` must be well-formed UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// A chain of split patterns applied one after the other (each piece of one step is split again by
// the next), as a Sequence of Split pre-tokenizers does.
class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(const std::vector<std::string>& patterns);

  // Appends the pieces of `text` to `pieces`; with no pattern, `text` itself is the only piece.
  // `scratch` is reused between calls to avoid allocating.
  void split(std::string_view text, std::vector<std::string_view>& pieces, std::vector<std::string_view>& scratch) const;

 private:
  std::vector<RegexSplitter> steps_;
};

}  // namespace qwen35
