// The grammar IR, its compiler and the matcher, through GBNF text: what is accepted byte by byte,
// what is rejected, rollback, and the grammars the compiler must refuse.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace qwen35::grammar {
namespace {

std::shared_ptr<const Grammar> gbnf(const std::string& text) { return compile_grammar(parse_gbnf(text)); }

// The whole string is a sentence of the grammar, advanced one byte at a time.
bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  for (char c : s)
    if (!m.advance_byte(uint8_t(c))) return false;
  return m.can_finish();
}

// Some prefix of a sentence (every byte taken), not necessarily complete.
bool prefix_ok(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.advance(s);
}

std::string error_of(const std::string& text) {
  try {
    gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsAlternativesAndSequences) {
  auto g = gbnf(R"(root ::= "ab" ("c" | "de") tail
tail ::= "!" | "")");
  EXPECT_TRUE(accepts(g, "abc"));
  EXPECT_TRUE(accepts(g, "abde!"));
  EXPECT_FALSE(accepts(g, "ab"));
  EXPECT_FALSE(accepts(g, "abd"));
  EXPECT_FALSE(accepts(g, "abcx"));
  EXPECT_TRUE(prefix_ok(g, "abd"));
  EXPECT_FALSE(prefix_ok(g, "ax"));
}

TEST(Gbnf, BoundedRepetitionIsExact) {
  auto g = gbnf(R"(root ::= [0-9]{2,4} "-" ("x" item){1,2}
item ::= [a-c])");
  EXPECT_FALSE(accepts(g, "1-xa"));
  EXPECT_TRUE(accepts(g, "12-xa"));
  EXPECT_TRUE(accepts(g, "1234-xaxb"));
  EXPECT_FALSE(accepts(g, "12345-xa"));
  EXPECT_FALSE(accepts(g, "12-xaxbxc"));
  EXPECT_FALSE(accepts(g, "12-"));
  auto open = gbnf(R"(root ::= "a"{3,} "b"? "c"+ "d"*)");
  EXPECT_FALSE(accepts(open, "aac"));
  EXPECT_TRUE(accepts(open, "aaac"));
  EXPECT_TRUE(accepts(open, "aaaaaabccdd"));
  EXPECT_FALSE(accepts(open, "aaabbc"));
}

TEST(Gbnf, Utf8CharacterClasses) {
  auto g = gbnf(R"(root ::= [^"\\\x00-\x1f]* "|" [α-ω] [\u4e00-\u9fff] . "\U0001F600")");
  EXPECT_TRUE(accepts(g, "héllo 世界|β中é😀"));
  EXPECT_TRUE(accepts(g, "|ω\u4e00\x7f😀"));
  EXPECT_FALSE(accepts(g, "a\"b|β中é😀"));      // excluded from the negated class
  EXPECT_FALSE(accepts(g, "\n|β中é😀"));          // control character
  EXPECT_FALSE(accepts(g, "|a中é😀"));            // not Greek
  // Ill-formed UTF-8 is never accepted, even by a negated class or '.'.
  EXPECT_FALSE(prefix_ok(g, "\xC3("));
  EXPECT_FALSE(prefix_ok(g, "\xED\xA0\x80"));  // a surrogate spelled in UTF-8
  EXPECT_FALSE(prefix_ok(g, "\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(prefix_ok(g, "\xC0\x80"));      // overlong
  EXPECT_TRUE(prefix_ok(g, "\xE4\xB8"));       // a character cut in the middle is still a prefix
}

TEST(Gbnf, RecursionAndNesting) {
  auto g = gbnf(R"(
# balanced brackets with values
root  ::= value
value ::= "[" ws ( value ( "," ws value )* )? "]" ws | [0-9]+ ws
ws    ::= [ ]*
)");
  EXPECT_TRUE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, "[1, [2,[3 ]], []]"));
  EXPECT_TRUE(accepts(g, std::string(200, '[') + std::string(200, ']')));
  EXPECT_FALSE(accepts(g, "[1,]"));
  EXPECT_FALSE(accepts(g, "[[1]"));
  EXPECT_FALSE(accepts(g, "[1]]"));
}

TEST(Gbnf, JsonGrammarOfLlamaCpp) {
  // The shape of llama.cpp's grammars/json.gbnf, multi-line rules included.
  auto g = gbnf(R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)");
  EXPECT_TRUE(accepts(g, R"({"a": [1, 2.5, -3e7, true, null], "b\n\u00e9": {"c": "x"}})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, R"({"a": 01})"));
  EXPECT_FALSE(accepts(g, R"({"a" 1})"));
  EXPECT_FALSE(accepts(g, R"({"a": "\x"})"));
  EXPECT_FALSE(accepts(g, "[1]"));
}

TEST(Matcher, RollbackRestoresEveryStep) {
  auto g = gbnf(R"(root ::= "{" ("\"a\":" [0-9]+ | "\"b\":" "true") "}")");
  GrammarMatcher m(g);
  ASSERT_TRUE(m.advance("{\"a"));
  ASSERT_TRUE(m.advance("\":12"));
  EXPECT_FALSE(m.advance("x"));        // refused: nothing changes
  EXPECT_EQ(m.steps(), 2u);
  ASSERT_TRUE(m.advance("3}"));
  EXPECT_TRUE(m.can_finish());
  EXPECT_TRUE(m.must_finish());
  m.rollback(2);
  EXPECT_EQ(m.steps(), 1u);
  EXPECT_FALSE(m.advance("\":t"));     // still inside "a", so "b"'s value is refused
  m.rollback(1);
  ASSERT_TRUE(m.advance("{\"b\":true}"));
  EXPECT_TRUE(m.can_finish());
  EXPECT_THROW(m.rollback(3), Error);
  m.reset();
  EXPECT_EQ(m.steps(), 0u);
  EXPECT_FALSE(m.can_finish());
  EXPECT_TRUE(m.advance("{\"a\":7}"));
}

TEST(Matcher, AmbiguityDoesNotMultiplyStates) {
  // Many ways to split the same text: hash-consed nodes keep the state small.
  auto g = gbnf(R"(root ::= ("a" | "aa" | "aaa")* "b")");
  GrammarMatcher m(g);
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(m.advance_byte('a'));
  EXPECT_LE(m.tops().size(), 8u);
  EXPECT_TRUE(m.advance_byte('b'));
  EXPECT_TRUE(m.can_finish());
}

TEST(Gbnf, EqualLexemesAreStoredOnce) {
  auto g = gbnf("root ::= \"{\" k1 \"}\" | \"(\" k2 \")\"\nk1 ::= [a-z]+ \"=\" [0-9]+\nk2 ::= [a-z]+ \"=\" [0-9]+");
  EXPECT_EQ(g->lexemes.size(), 5u);  // {, }, (, ) and one for both keys
  EXPECT_TRUE(accepts(g, "{ab=12}"));
  EXPECT_TRUE(accepts(g, "(b=1)"));
  EXPECT_FALSE(accepts(g, "{ab=}"));
  EXPECT_FALSE(accepts(g, "(ab=1}"));
  // 200 copies of a 300-state automaton are one lexeme against the bound on states (40,000).
  std::string text = "root ::=";
  for (int i = 0; i < 200; ++i) text += " r" + std::to_string(i);
  for (int i = 0; i < 200; ++i) text += "\nr" + std::to_string(i) + " ::= [a-z]{1,300} \";\"";
  auto many = gbnf(text);
  EXPECT_EQ(many->lexemes.size(), 1u);
  std::string ok;
  for (int i = 0; i < 200; ++i) ok += std::string(size_t(1 + i), 'x') + ";";
  EXPECT_TRUE(accepts(many, ok));
  EXPECT_FALSE(accepts(many, ok.substr(1)));
}

// The compiler builds a repeated run of ref-free parts once and reuses what it made of it: a
// lexeme, "matches nothing" (the alternative is dropped) or "matches only the empty string" (no
// element). Each outcome must come out the same the second time as the first.
TEST(Gbnf, RepeatedRunsKeepTheirOutcome) {
  GrammarIR ir;
  const int root = ir.rule("root"), r = ir.rule("r");
  const Expr dead = Expr::cls({});            // no character at all
  const Expr empty = Expr::opt(Expr::cls({}));  // only ""
  const Expr key = Expr::seq({Expr::literal("k"), Expr::plus(Expr::cls({{'0', '9'}}))});
  ir.define(root, Expr::alt({Expr::seq({dead, Expr::ref(r)}), Expr::seq({empty, Expr::ref(r), key}),
                             Expr::seq({dead, Expr::ref(r)}), Expr::seq({empty, Expr::ref(r), key, Expr::ref(r)})}));
  ir.define(r, Expr::literal("q"));
  ir.root = root;
  auto g = compile_grammar(ir);
  ASSERT_EQ(g->alts[size_t(root)].size(), 2u);  // both dead alternatives dropped, both empty runs kept
  for (int32_t first : g->alts[size_t(root)]) EXPECT_EQ(g->elems[size_t(first)].kind, Elem::kRef);  // no lexeme for ""
  EXPECT_EQ(g->elems[size_t(g->alts[size_t(root)][0]) + 1].arg, g->elems[size_t(g->alts[size_t(root)][1]) + 1].arg);
  EXPECT_EQ(g->lexemes.size(), 2u);  // "q" and the key
  EXPECT_TRUE(accepts(g, "qk12"));
  EXPECT_TRUE(accepts(g, "qk7q"));
  EXPECT_FALSE(accepts(g, "q"));
  EXPECT_FALSE(accepts(g, "qk"));
}

TEST(Gbnf, RefusesBrokenGrammars) {
  EXPECT_NE(error_of("root ::= a\na ::= a \"x\" | \"y\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= b | \"z\"\nb ::= \"\"? root \"x\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\" root").find("never finish"), std::string::npos);
  EXPECT_NE(error_of("root ::= missing").find("'missing'"), std::string::npos);
  EXPECT_NE(error_of("start ::= \"x\"").find("root"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\nroot2 ::= \"y\"").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("root ::= [b-a]").find("out of order"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\"\nroot ::= \"y\"").find("twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"x\"").find("')'"), std::string::npos);
  // Bounded: a repetition whose automaton would explode is refused, not built.
  EXPECT_NE(error_of("root ::= ([a-z] | [a-m][0-9]){9000}[a-z]{9000}").find("automaton states"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"x\"{100000}").find("repetition count"), std::string::npos);
  const std::string deep = error_of("root ::= " + std::string(300, '(') + "\"x\"" + std::string(300, ')'));
  EXPECT_NE(deep.find("too deep"), std::string::npos) << deep;
  // An alternative that can never finish is dropped, the rest still works.
  auto g = gbnf("root ::= \"a\" | loop\nloop ::= \"b\" loop");
  EXPECT_TRUE(accepts(g, "a"));
  EXPECT_FALSE(prefix_ok(g, "b"));
}

}  // namespace
}  // namespace qwen35::grammar
