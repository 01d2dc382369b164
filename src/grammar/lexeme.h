// Lexemes: the regular parts of a grammar as deterministic automata over bytes.
//
// A character class is matched as its UTF-8 encodings (code point ranges split into byte-range
// sequences), so a lexeme never accepts ill-formed UTF-8. Construction is Thompson's NFA and the
// subset construction, both bounded (LexemeLimits): a pattern whose automaton would grow past
// the bound is an error, not a stall.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

struct LexemeLimits {
  int max_nfa_states = 400000;
  int max_dfa_states = 20000;  // per lexeme
};

struct Lexeme {
  static constexpr int32_t kDead = -1;
  int states = 0;
  std::vector<int32_t> next;        // [states * 256]: target state or kDead (no way to finish)
  std::vector<uint8_t> accepting;   // [states]
  std::vector<uint8_t> live;        // [states]: some byte leads on

  int32_t step(int32_t s, uint8_t b) const { return next[size_t(s) * 256 + b]; }
  // False when the language is empty (the start state cannot reach an accepting one).
  bool nonempty() const { return states > 0; }
  bool nullable() const { return states > 0 && accepting[0]; }
};

// `parts`: ref-free expressions matched one after the other. Throws qwen35::Error past the limits.
Lexeme build_lexeme(const std::vector<const Expr*>& parts, const LexemeLimits& limits);

}  // namespace qwen35::grammar
