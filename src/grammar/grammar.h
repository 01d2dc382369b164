// A compiled grammar: rules as alternatives of element sequences over lexemes and rule
// references, ready for GrammarMatcher.
//
// compile_grammar() lowers the IR: in every alternative, each run of ref-free items becomes one
// lexeme (lexeme.h); an alternative or repetition that contains references becomes a rule of its
// own (x{m,n}: m copies, then n - m nested optionals; x*: R ::= x R | ""). It then checks, and
// rejects with an error naming the rule:
//   - references to rules never defined;
//   - rules that can never finish (no base case: "a ::= "x" a"); alternatives through them are
//     dropped, and a grammar whose root cannot finish is an error -- so whatever prefix the matcher
//     accepts can always be completed, which the token mask relies on;
//   - left recursion (a rule reaching itself without consuming a byte), which a top-down matcher
//     cannot run;
//   - sizes past GrammarLimits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"
#include "grammar/lexeme.h"

namespace qwen35::grammar {

struct GrammarLimits {
  int max_rules = 20000;
  int max_elements = 200000;
  int max_total_dfa_states = 40000;  // all lexemes together (256 transitions each)
  LexemeLimits lexeme;
};

struct Elem {
  enum Kind : int32_t { kLexeme, kRef, kEnd };
  Kind kind;
  int32_t arg;  // lexeme or rule id
};

struct Grammar {
  std::vector<Elem> elems;                    // every alternative, each closed by kEnd
  std::vector<std::vector<int32_t>> alts;     // rule -> first element of each alternative
  std::vector<Lexeme> lexemes;
  std::vector<std::string> rule_names;
  int32_t root = 0;
};

// Throws qwen35::Error.
std::shared_ptr<const Grammar> compile_grammar(const GrammarIR& ir, const GrammarLimits& limits = {});

}  // namespace qwen35::grammar
