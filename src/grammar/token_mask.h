// Token masks: which tokens of a vocabulary the grammar allows next, as a bit set.
//
// TokenVocab holds the tokens' bytes sorted, with each token's common prefix length with the one
// before: walking that list is walking a trie over the vocabulary, and a dead prefix skips its
// whole subtree.
//
// TokenMasker computes, once per (lexeme, DFA state) and lazily, which tokens that state accepts
// on its own (the token's bytes stay inside the lexeme, or end exactly where it may end: since
// every rule of a compiled grammar can finish, such a token is allowed whatever the stack below),
// and which are undecided (the lexeme may end inside the token, so the rest depends on the
// stack). A mask is then the OR of those sets over the state's nodes, plus the undecided tokens
// checked against the full stack, walked as a trie in sorted order (GrammarMatcher::probe_*): a
// prefix shared by many tokens is stepped once, and a dead one skips every token under it. Masks are also
// cached by state (a matcher's serial and its sorted node ids are an exact key). A state that
// keeps every token of a slice alive (TokenVocab::Slice: JSON string text, digits) takes the
// slice as one precomputed bit set and walks only the other tokens. This is the
// split llguidance and XGrammar publish (context-independent tokens precomputed,
// context-dependent ones checked at run time).
//
// Stop tokens are not in the vocabulary: the caller allows them when the matcher can_finish().
//
// Thread contract: TokenVocab is immutable and shared; a TokenMasker belongs to one generation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace qwen35 {
class Tokenizer;
}

namespace qwen35::grammar {

class TokenVocab {
 public:
  // Sorted token positions walked as a trie: entry i's common prefix with entry i - 1, and for
  // each trie node first entered at entry i (its depths lcp + 1 .. length) the entry its subtree
  // ends before, so that a dead prefix skips its whole subtree in one step.
  struct Trie {
    std::vector<int32_t> pos;          // sorted positions in the vocabulary
    std::vector<uint16_t> lcp;
    std::vector<uint32_t> first_end;   // [size() + 1]: entry i's nodes are ends[first_end[i] ..]
    std::vector<int32_t> ends;
    size_t size() const { return pos.size(); }
    // The first entry past the subtree of entry i's first `depth` bytes (lcp[i] < depth <= its length).
    size_t end(size_t i, size_t depth) const { return size_t(ends[first_end[i] + depth - lcp[i] - 1]); }
  };
  // The tokens whose bytes begin UTF-8 text over one set of code points (what a JSON string holds
  // unescaped; digits): a lexeme state that every such text of up to max_bytes keeps alive
  // accepts all of them at once, and only `rest` is walked (llguidance's slices).
  struct Slice {
    std::vector<uint8_t> ascii;   // [128]: the ASCII bytes allowed
    bool bmp = false;             // code points U+0080..U+FFFF allowed too
    std::vector<uint64_t> bits;   // its tokens
    size_t max_bytes = 0;         // its longest token
    Trie rest;                    // every other token
  };

  // `tokens`: (id, bytes) for every token a grammar may produce; ids < vocab_size; empty byte
  // strings are left out.
  TokenVocab(int32_t vocab_size, const std::vector<std::pair<int32_t, std::string>>& tokens);
  // Every token but the special ones and `exclude` (e.g. <think> and </think>, which the output
  // stream reads as markers rather than text).
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok, const std::vector<int32_t>& exclude = {});

  int32_t vocab_size() const { return vocab_size_; }
  size_t words() const { return (size_t(vocab_size_) + 63) / 64; }
  size_t size() const { return ids_.size(); }  // tokens in sorted order
  size_t max_bytes() const { return max_bytes_; }  // the longest token's length
  int32_t id(size_t i) const { return ids_[i]; }
  uint16_t lcp(size_t i) const { return lcp_[i]; }  // common prefix with sorted token i - 1
  std::string_view bytes(size_t i) const { return {bytes_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]}; }
  // Bytes of token `id` ("" when it is not in the vocabulary).
  std::string_view token_bytes(int32_t id) const;
  const Trie& trie() const { return trie_; }          // every token
  const std::vector<Slice>& slices() const { return slices_; }  // largest first

 private:
  int32_t vocab_size_ = 0;
  std::vector<int32_t> ids_;
  std::vector<uint16_t> lcp_;
  std::vector<uint32_t> offsets_;
  std::string bytes_;
  std::vector<int32_t> sorted_index_;  // id -> sorted position, -1 when absent
  size_t max_bytes_ = 0;
  Trie trie_;
  std::vector<Slice> slices_;

  Trie make_trie(std::vector<int32_t> pos) const;
};

// A mask that would cost more than the masker's bound: the grammar, not the engine, is at fault,
// so the request that gave it gets a 400 (runtime/output_constraint.h: failure_status).
class MaskWorkExceeded : public Error {
 public:
  using Error::Error;
};

class TokenMasker {
 public:
  // One mask's check of undecided tokens against the stack visits at most this many matcher
  // nodes; past it fill() throws (the request ends with that error) rather than stall.
  static constexpr uint64_t kMaxMaskWork = 20'000'000;

  TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> vocab,
              uint64_t max_mask_work = kMaxMaskWork);

  // bits[vocab.words()]: bit t set when token t may come next in `m`'s state. Does not set
  // stop tokens. Throws MaskWorkExceeded past max_mask_work.
  void fill(GrammarMatcher& m, uint64_t* bits);

  const TokenVocab& vocab() const { return *vocab_; }

 private:
  struct Entry {
    std::vector<uint64_t> bits;      // accepted tokens, when many
    std::vector<int32_t> accepted;   // ... or their ids, when few
    // Tokens to check against the stack: their sorted positions in the vocabulary, and each
    // one's common prefix length with the undecided token before it.
    std::vector<int32_t> undecided;
    std::vector<uint16_t> undecided_lcp;
  };
  const Entry& entry(int32_t lexeme, int32_t dstate);
  Entry build(const Lexeme& lx, int32_t dstate) const;
  // The lexeme's states grouped by what a token can see of them: two states whose paths of up to
  // max_bytes() bytes die and accept alike have the same entry (a string of at most 256 code
  // points has one entry for all its counts but the last few, not one per count).
  const std::vector<int32_t>& classes(int32_t lexeme);

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenVocab> vocab_;
  uint64_t max_mask_work_;
  std::unordered_map<uint64_t, Entry> entries_;  // by (lexeme, class of the DFA state)
  std::unordered_map<int32_t, std::vector<int32_t>> classes_;
  size_t entry_bytes_ = 0;
  std::unordered_map<std::string, std::vector<uint64_t>> by_state_;
  std::string key_;                 // fill()'s scratch: the state's cache key
  std::vector<const Entry*> es_;    // fill()'s scratch: the entries of the state's nodes
};

// logits[i] = -inf for every i < n whose bit is clear (ids past the vocabulary included).
void apply_token_mask(const uint64_t* bits, int32_t vocab_size, float* logits, int64_t n);

}  // namespace qwen35::grammar
