// GBNF (llama.cpp's grammar format) -> GrammarIR.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"      # rules; the start rule is `root`
//   pair   ::= [a-z]+ ":" ws ( num | "null" )
//   num    ::= "-"? [0-9]{1,10}
//   ws     ::= [ \t\n]*
//
// Literals "..." and classes [...] / [^...] (ranges a-z) with the escapes \n \r \t \\ \" \' \[ \]
// \- \/ \xHH \uHHHH \UHHHHHHHH (code points, UTF-8 encoded); `.` is any character; grouping ( );
// postfix * + ? {m} {m,} {m,n}; # comments to the end of the line. A rule ends at the end of its
// line, except after `::=` or `|` and inside parentheses. Errors name the line and column.
#pragma once

#include <string_view>

#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

struct GbnfLimits {
  size_t max_bytes = 1 << 20;
  int max_repeat = 10000;  // m, n in {m,n}
  int max_depth = 200;     // nested parentheses
};

// Throws qwen35::Error.
GrammarIR parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace qwen35::grammar
