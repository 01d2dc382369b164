// The byte-level BPE tokenizer of Qwen3.5 (and of any tokenizer.json of the same kind), matching the
// Hugging Face `tokenizers` library id for id.
//
// encode(text):
//   1. Input that is not well-formed UTF-8 is first repaired: each maximal ill-formed subsequence
//      becomes U+FFFD (exactly what String::from_utf8_lossy does; lone surrogates spelled in UTF-8
//      such as ED A0 80 are ill-formed and become three U+FFFD). The reference cannot receive such
//      input at all (its API takes Unicode strings), so this is our choice, and it never throws.
//   2. Added tokens are found in the raw text (leftmost, longest first; see AddedTokenMatcher).
//   3. The text between them is normalized (NFC for Qwen), split by the pre-tokenizer patterns,
//      and each piece is BPE-encoded on its bytes.
//   No BOS/EOS is added.
// decode(ids): the bytes of each token, concatenated, then read as UTF-8 with every maximal
//   ill-formed subsequence replaced by U+FFFD. Ids that name no token (e.g. the embedding padding
//   rows 248077..248319 of Qwen3.5) are dropped, as the reference does.
//
// Thread contract: a Tokenizer is immutable after construction; every const method may be called
// from many threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_spec.h"

namespace qwen35 {

// How encode() treats added tokens written in the text.
enum class AddedTokenMode {
  kMatchAll,      // every added token becomes its id (the reference's default)
  kSplitSpecial,  // special ones stay plain text, the others (<think>, <tool_call>) still match
                  // (the reference's split_special_tokens=True)
  kPlainText,     // none is matched: the whole text is BPE-encoded ("ordinary" encoding)
};

class Tokenizer {
 public:
  // Throws qwen35::Error on inconsistent data (duplicate ids, merges naming unknown tokens, ...).
  explicit Tokenizer(const TokenizerSpec& spec);

  // `path`: a tokenizer.json file, a model directory containing one, or a GGUF model file (its
  // tokenizer.ggml.* metadata). Throws qwen35::Error.
  static Tokenizer from_file(const std::string& path);

  // Lookup tables hold views into the tokenizer's own arenas: movable, not copyable.
  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, AddedTokenMode mode = AddedTokenMode::kMatchAll) const;
  // Appends the ids of `text` to `out`.
  void encode(std::string_view text, AddedTokenMode mode, std::vector<int32_t>& out) const;

  // encode(text) for a prompt whose `plain` byte ranges (sorted, disjoint, [begin, end)) are text
  // to be read as it is: added tokens are matched only outside them, so what a user typed stays
  // text even when it spells <|im_end|>. Where no added token's text falls inside a plain range
  // the ids are exactly encode(text)'s. (Added tokens that match after normalization are not
  // searched in a gap that touches a plain range; Qwen's have none.)
  std::vector<int32_t> encode_outside(std::string_view text, const std::vector<std::pair<size_t, size_t>>& plain) const;

  // `skip_special` drops added tokens marked special (not <think>, <tool_call>, ...).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // The pre-tokenizer's pieces of `text` (normalized, added tokens not matched), spelled in the
  // byte-level alphabet. For tests and diagnostics.
  std::vector<std::string> pretokenize(std::string_view text) const;

  // One past the largest id (BPE vocabulary and added tokens together).
  int32_t vocab_size() const { return int32_t(flags_.size()); }
  bool is_valid_id(int32_t id) const { return id >= 0 && id < vocab_size() && (flags_[id] & kPresent); }
  bool is_special(int32_t id) const { return is_valid_id(id) && (flags_[id] & kSpecial); }
  bool is_added(int32_t id) const { return is_valid_id(id) && (flags_[id] & kAdded); }

  // Added tokens first, then the BPE vocabulary (byte-level spelling, e.g. "Ġthe").
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's spelling in the file ("Ġthe", "<|im_end|>"); empty for an invalid id.
  std::string_view id_to_token(int32_t id) const;
  // The raw bytes the token stands for (" the"); may be a fragment of a UTF-8 character.
  std::string_view token_bytes(int32_t id) const;

  const std::vector<AddedToken>& added_tokens() const { return added_; }

 private:
  enum : uint8_t { kPresent = 1, kAdded = 2, kSpecial = 4 };

  struct Scratch;
  void encode_segment(std::string_view raw, AddedTokenMode mode, Scratch& s, std::vector<int32_t>& out) const;
  void encode_normalized(std::string_view text, Scratch& s, std::vector<int32_t>& out) const;

  // Per-id data, packed: spellings and bytes live in two arenas indexed by offsets.
  std::vector<uint8_t> flags_;
  std::vector<char> spelling_arena_, bytes_arena_;  // vectors keep their buffer when moved
  std::vector<uint32_t> spelling_offsets_, bytes_offsets_;  // vocab_size() + 1 entries each
  std::unordered_map<std::string_view, int32_t> added_by_content_, vocab_by_spelling_;
  std::unordered_map<std::string_view, int32_t> vocab_by_bytes_;  // only with ignore_merges

  std::vector<AddedToken> added_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized = false
  AddedTokenMatcher normalized_matcher_;  // ... with normalized = true (matched after NFC)
  unicode::NormalForm normal_form_ = unicode::NormalForm::kNFC;
  bool add_prefix_space_ = false;
  bool ignore_merges_ = false;
  PreTokenizer pre_tokenizer_;
  BpeModel bpe_;
};

}  // namespace qwen35
