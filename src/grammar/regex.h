// An ECMAScript regular expression subset -> grammar IR, for JSON Schema's `pattern`.
//
// Supported: alternation, groups ( ) and (?: ), quantifiers * + ? {n} {n,} {n,m} (lazy forms
// match the same strings), classes [...] [^...] with ranges, `.` (any character but line
// terminators), the escapes \d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{H...} and escaped
// punctuation, ^ at the start and $ at the end. Not supported, and an error naming the construct:
// backreferences, lookaround, named groups, \b, anchors elsewhere, flags. A pattern is unanchored
// (JSON Schema searches), so a missing ^ or $ becomes "any characters" on that side.
#pragma once

#include <string_view>

#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

struct RegexLimits {
  size_t max_bytes = 4096;
  int max_repeat = 1000;
  int max_depth = 100;
};

// The code points the pattern matches (anywhere-search semantics turned into a whole match).
// Throws qwen35::Error.
Expr regex_to_expr(std::string_view pattern, const RegexLimits& limits = {});

// `text` (an expression over code points, no references) as the inside of a JSON string:
// characters that JSON must escape become their escape, the others stay as they are.
Expr json_string_chars(const Expr& text);

}  // namespace qwen35::grammar
