// The grammar IR: named rules whose bodies are expressions over Unicode text. What the GBNF parser
// and the JSON Schema compiler produce, and what compile_grammar() turns into a matchable Grammar.
//
// An expression is a sequence, an alternative, a bounded repetition, a literal (UTF-8 bytes), a
// character class (code point ranges, matched as their UTF-8 encodings) or a reference to a rule
// (recursion allowed, left recursion not). Parts of a rule that reference no rule are regular:
// the compiler turns each run of them into one lexeme (a DFA over bytes), so a JSON string or a
// number is one automaton step per byte instead of a stack of rules.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qwen35::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;
inline constexpr int kUnbounded = -1;

struct Expr {
  enum class Kind { kSeq, kAlt, kRepeat, kLiteral, kClass, kRef };
  Kind kind = Kind::kSeq;
  std::vector<Expr> kids;                             // kSeq, kAlt; kRepeat: exactly one
  int min = 0, max = 0;                               // kRepeat: max = kUnbounded for no bound
  std::string bytes;                                  // kLiteral (UTF-8)
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // kClass: inclusive code point ranges
  int rule = -1;                                      // kRef

  static Expr seq(std::vector<Expr> kids = {});  // the empty sequence matches ""
  static Expr alt(std::vector<Expr> kids);
  static Expr repeat(Expr kid, int min, int max);
  static Expr literal(std::string utf8);
  // `ranges` need not be sorted or disjoint; `negated` takes the complement over all code points
  // (surrogates never match: they have no UTF-8 form).
  static Expr cls(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated = false);
  static Expr any_char() { return cls({{0, kMaxCodepoint}}); }
  static Expr ref(int rule);
  static Expr opt(Expr kid) { return repeat(std::move(kid), 0, 1); }
  static Expr star(Expr kid) { return repeat(std::move(kid), 0, kUnbounded); }
  static Expr plus(Expr kid) { return repeat(std::move(kid), 1, kUnbounded); }

  bool has_refs() const;
};

struct GrammarIR {
  std::vector<std::string> names;  // rule id -> name
  std::vector<Expr> bodies;        // rule id -> body (defined when set)
  std::vector<bool> defined;
  int root = -1;

  // The id of rule `name`, declared (undefined) when new.
  int rule(const std::string& name);
  // A new rule with a unique name made from `hint`.
  int fresh(const std::string& hint);
  void define(int id, Expr body);
  int find(const std::string& name) const;  // -1 when absent

 private:
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<std::string, int> next_suffix_;  // fresh(): the next number to try per hint
};

// Sorted, disjoint, merged, surrogates removed; `negated` complements over [0, kMaxCodepoint].
std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negated);

}  // namespace qwen35::grammar
