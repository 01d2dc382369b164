// Token masks against the brute-force oracle (each token's bytes fed to the matcher): on the
// stand-in Qwen tokenizer's vocabulary and on synthetic vocabularies, in many grammar states.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "support/test_data.h"
#include "text/tokenizer.h"

namespace qwen35::grammar {
namespace {

std::vector<uint64_t> brute_force(GrammarMatcher& m, const TokenVocab& v) {
  std::vector<uint64_t> bits(v.words(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (m.advance(v.bytes(i))) {
      bits[size_t(v.id(i)) >> 6] |= uint64_t(1) << (v.id(i) & 63);
      m.rollback(1);
    }
  }
  return bits;
}

bool allowed(const std::vector<uint64_t>& bits, int32_t t) { return (bits[size_t(t) >> 6] >> (t & 63)) & 1; }

const char* kJsonGbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= [ \t\n]{0,4}
)";

TEST(TokenMask, QwenVocabularyMatchesBruteForceAlongAJsonText) {
  const Tokenizer tok = Tokenizer::from_file(test::tiny_model_dir());
  auto vocab = TokenVocab::from_tokenizer(tok);
  ASSERT_GT(vocab->size(), 100000u);
  auto g = compile_grammar(parse_gbnf(kJsonGbnf));
  GrammarMatcher m(g);
  TokenMasker masker(g, vocab);
  const std::string text = R"({"name": "Zoë \"Q\" 東京", "n": [1, -2.5e3, true, null], "o": {"k": {}}})";
  const std::vector<int32_t> ids = tok.encode(text);
  std::vector<uint64_t> bits(vocab->words());
  size_t checked = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    masker.fill(m, bits.data());
    if (i % 3 == 0 || i + 1 == ids.size()) {  // the oracle is slow: every third state
      const std::vector<uint64_t> want = brute_force(m, *vocab);
      ASSERT_EQ(bits, want) << "after " << i << " tokens";
      ++checked;
    }
    ASSERT_TRUE(allowed(bits, ids[i])) << "token " << i << " '" << tok.decode({&ids[i], 1}) << "'";
    ASSERT_TRUE(m.advance(vocab->token_bytes(ids[i])));
  }
  EXPECT_TRUE(m.can_finish());
  EXPECT_GE(checked, 8u);
  // Special tokens are never in a mask; the caller adds the stop token when can_finish().
  masker.fill(m, bits.data());
  for (const AddedToken& a : tok.added_tokens()) {
    if (a.special) {
      EXPECT_FALSE(allowed(bits, a.id)) << a.content;
    }
  }
}

TEST(TokenMask, MaskAfterRollbackIsTheMaskBefore) {
  const Tokenizer tok = Tokenizer::from_file(test::tiny_model_dir());
  auto vocab = TokenVocab::from_tokenizer(tok);
  auto g = compile_grammar(parse_gbnf(kJsonGbnf));
  GrammarMatcher m(g);
  TokenMasker masker(g, vocab);
  ASSERT_TRUE(m.advance("{\"a\": [1"));
  std::vector<uint64_t> before(vocab->words()), after(vocab->words());
  masker.fill(m, before.data());
  ASSERT_TRUE(m.advance(", 2"));
  ASSERT_TRUE(m.advance("]}"));
  masker.fill(m, after.data());
  EXPECT_NE(before, after);
  m.rollback(2);
  masker.fill(m, after.data());
  EXPECT_EQ(before, after);
  EXPECT_EQ(after, brute_force(m, *vocab));
}

// Random byte-string vocabularies over a small alphabet (so that tokens cross rule boundaries
// often) and random walks through several grammars: every mask equals the oracle's.
TEST(TokenMask, SyntheticVocabulariesMatchBruteForce) {
  const char* grammars[] = {
      kJsonGbnf,
      R"g(root ::= item ("," item){0,3}
item ::= "a" [bc]* "d" | "(" root ")" | "é"+)g",
      R"(root ::= ("ab" | "a" | "b")* "c" [0-9]{1,3})",
  };
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":, 0123456789abcdetrunlfs\\\xc3\xa9()";
  for (const char* text : grammars) {
    auto g = compile_grammar(parse_gbnf(text));
    std::vector<std::pair<int32_t, std::string>> tokens;
    for (int32_t id = 0; id < 3000; ++id) {
      if (id % 97 == 5) continue;  // holes in the id space
      std::string s;
      const int len = 1 + int(rng() % 5);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      tokens.emplace_back(id, s);
    }
    auto vocab = std::make_shared<const TokenVocab>(3100, tokens);
    TokenMasker masker(g, vocab);
    for (int walk = 0; walk < 20; ++walk) {
      GrammarMatcher m(g);
      std::vector<uint64_t> bits(vocab->words());
      for (int step = 0; step < 30; ++step) {
        masker.fill(m, bits.data());
        const std::vector<uint64_t> want = brute_force(m, *vocab);
        for (int32_t t = 0; t < vocab->vocab_size(); ++t)
          ASSERT_EQ(allowed(bits, t), allowed(want, t)) << "token " << t << " '" << vocab->token_bytes(t) << "' walk " << walk << " step " << step << " in " << text;
        std::vector<int32_t> ok;
        for (int32_t t = 0; t < vocab->vocab_size(); ++t)
          if (allowed(bits, t)) ok.push_back(t);
        if (ok.empty()) break;
        ASSERT_TRUE(m.advance(vocab->token_bytes(ok[rng() % ok.size()])));
      }
    }
  }
}

// The MaskBench shapes whose masks were slow (a bounded string beside an enum, as Snowplow sp_165;
// an object of numbers, as Glaive's calculate_area; a string with a pattern and nested objects):
// long lexemes that can end almost anywhere, so that most tokens are undecided, under a
// vocabulary of punctuation runs like the benchmarks' synthetic one. Every mask along a valid
// instance equals the oracle's.
TEST(TokenMask, SlowMaskBenchShapesMatchBruteForce) {
  const char* cases[][2] = {
      {R"({"additionalProperties": false, "properties": {"encryptedId": {"maxLength": 256, "type": "string"},
          "optout": {"enum": ["true", "false"]}}, "required": ["encryptedId", "optout"], "type": "object"})",
       R"({"encryptedId": "a-long, \"base64\" encoded: string}", "optout": "false"})"},
      {R"({"properties": {"dimensions": {"properties": {"base": {"type": "number"}, "height": {"type": "number"},
          "radius": {"type": "number"}}, "required": ["base", "height", "radius"], "type": "object"},
          "shape": {"type": "string"}}, "required": ["dimensions", "shape"], "type": "object"})",
       R"({"dimensions": {"base": 10.5, "height": -2e3, "radius": 0}, "shape": "rect, \"angle\": 3}"})"},
      {R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z0-9-]{1,20}$"},
          "tags": {"type": "array", "items": {"type": "integer"}, "maxItems": 5}}})",
       R"({"id": "ab-12", "tags": [1, 22, 333]})"},
  };
  std::mt19937 rng(11);
  const std::string punct = "{}[]\":,. \\-0123456789abtrue";
  std::vector<std::pair<int32_t, std::string>> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(b, std::string(1, char(b)));
  std::set<std::string> seen;
  for (auto& t : tokens) seen.insert(t.second);
  while (tokens.size() < 6000) {
    std::string s;
    const int len = 2 + int(rng() % 6);
    for (int k = 0; k < len; ++k) s += punct[rng() % punct.size()];
    if (seen.insert(s).second) tokens.emplace_back(int32_t(tokens.size()), s);
  }
  auto vocab = std::make_shared<const TokenVocab>(int32_t(tokens.size()), tokens);
  for (const auto& c : cases) {
    auto g = compile_grammar(json_schema_text_to_grammar(c[0]));
    GrammarMatcher m(g);
    TokenMasker masker(g, vocab);
    std::vector<uint64_t> bits(vocab->words());
    const std::string text = c[1];
    for (size_t p = 0; p < text.size();) {
      masker.fill(m, bits.data());
      ASSERT_EQ(bits, brute_force(m, *vocab)) << "after '" << text.substr(0, p) << "' in " << c[0];
      // The longest allowed token that continues the instance.
      int32_t best = -1;
      for (int32_t t = 0; t < vocab->vocab_size(); ++t) {
        const std::string_view b = vocab->token_bytes(t);
        if (allowed(bits, t) && text.compare(p, b.size(), b) == 0 && (best < 0 || b.size() > vocab->token_bytes(best).size())) best = t;
      }
      ASSERT_GE(best, 0) << "no token continues '" << text.substr(0, p) << "'";
      ASSERT_TRUE(m.advance(vocab->token_bytes(best)));
      p += vocab->token_bytes(best).size();
    }
    EXPECT_TRUE(m.can_finish());
  }
}

// The slices (tokens of JSON string text, of digits) taken whole when a lexeme state keeps every
// such text alive: strings bounded near the token length (states near the bound must walk the
// slice), multi-byte characters split across tokens, characters past U+FFFF (outside the text
// slice, and outside length-bounded strings), patterns, integer bounds over digit runs, and
// the trie's subtree skips. Random walks; every mask equals the oracle's.
TEST(TokenMask, SlicesMatchBruteForce) {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 6}, "b": {"type": "string"},
          "c": {"type": "string", "minLength": 2, "maxLength": 3}}, "required": ["a", "b", "c"], "additionalProperties": false})",
      R"({"type": "array", "items": {"anyOf": [{"type": "integer", "minimum": -5, "maximum": 12345},
          {"type": "string", "pattern": "^[a-z0-9]{2,9}$"}, {"type": "number"}]}, "maxItems": 4})",
      R"({"type": "object", "properties": {"s": {"type": "string", "format": "date"}, "t": {"enum": ["ab", "a\u00e9", 7]}},
          "additionalProperties": {"type": "string", "maxLength": 2}})",
  };
  std::mt19937 rng(5);
  const std::vector<std::string> atoms = {"a", "b", "z", "0", "1", "7", " ", "-", ".", "e", "\\", "\"", ":", ",", "{", "}", "[",
                                          "]", "\xc3\xa9", "\xe6\x9d\xb1", "\xf0\x9f\x98\x80", "\xc3", "\xa9", "\xe6\x9d", "\x7f", "\n"};
  std::vector<std::pair<int32_t, std::string>> tokens;
  std::set<std::string> seen;
  for (const std::string& a : atoms) {
    seen.insert(a);
    tokens.emplace_back(int32_t(tokens.size()), a);
  }
  while (tokens.size() < 5000) {
    std::string t;
    const int len = 1 + int(rng() % 6);
    const bool digits = rng() % 4 == 0, text = rng() % 2 == 0;
    for (int k = 0; k < len; ++k) {
      const std::string& a = atoms[rng() % atoms.size()];
      t += digits ? std::string(1, char('0' + rng() % 10)) : text && (a == "\"" || a == "\\" || a == "\n") ? "x" : a;
    }
    if (seen.insert(t).second) tokens.emplace_back(int32_t(tokens.size()), t);
  }
  auto vocab = std::make_shared<const TokenVocab>(int32_t(tokens.size()), tokens);
  ASSERT_EQ(vocab->slices().size(), 2u);
  for (const auto& sl : vocab->slices()) {
    ASSERT_GT(sl.rest.size(), 100u);
    ASSERT_LT(sl.rest.size(), vocab->size() - 100);
  }
  for (const char* text : schemas) {
    auto g = compile_grammar(json_schema_text_to_grammar(text));
    TokenMasker masker(g, vocab);
    for (int walk = 0; walk < 12; ++walk) {
      GrammarMatcher m(g);
      std::vector<uint64_t> bits(vocab->words());
      for (int step = 0; step < 25; ++step) {
        masker.fill(m, bits.data());
        ASSERT_EQ(bits, brute_force(m, *vocab)) << "walk " << walk << " step " << step << " in " << text;
        std::vector<int32_t> ok;
        for (int32_t t = 0; t < vocab->vocab_size(); ++t)
          if (allowed(bits, t)) ok.push_back(t);
        if (ok.empty()) break;
        ASSERT_TRUE(m.advance(vocab->token_bytes(ok[rng() % ok.size()])));
      }
    }
  }
}

// One mask's work is bounded: past the bound fill() throws a clear error (the request ends) and
// leaves the matcher as it was; a larger bound gives the oracle's mask.
TEST(TokenMask, WorkPastTheBoundIsAnError) {
  auto g = compile_grammar(parse_gbnf(kJsonGbnf));
  std::vector<std::pair<int32_t, std::string>> tokens;
  const char* words[] = {"1", "12", "1,", "1, ", "1]", "1}", "1, 2", "1,\"a\"", "\"", "\"a\":", "[", "{", "]", "}"};
  for (const char* w : words) tokens.emplace_back(int32_t(tokens.size()), w);
  auto vocab = std::make_shared<const TokenVocab>(int32_t(tokens.size()), tokens);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.advance("{\"a\": [1"));  // a number may end inside most tokens: they are undecided
  std::vector<uint64_t> bits(vocab->words());
  TokenMasker tight(g, vocab, 3);
  try {
    tight.fill(m, bits.data());
    FAIL() << "no error past the bound";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token mask needs more than 3 matcher steps"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m.steps(), 1u);
  TokenMasker ample(g, vocab);
  ample.fill(m, bits.data());
  EXPECT_EQ(bits, brute_force(m, *vocab));
  EXPECT_TRUE(allowed(bits, 2));   // "1,"
  EXPECT_TRUE(allowed(bits, 4));   // "1]"
  EXPECT_FALSE(allowed(bits, 5));  // "1}"
}

TEST(TokenMask, AppliedToLogits) {
  std::vector<uint64_t> bits(2, 0);
  bits[0] = 0b1010;
  bits[1] = uint64_t(1) << 3;  // token 67
  std::vector<float> logits(80, 1.0f);
  apply_token_mask(bits.data(), 70, logits.data(), int64_t(logits.size()));
  for (int i = 0; i < 80; ++i) EXPECT_EQ(std::isinf(logits[size_t(i)]), !(i == 1 || i == 3 || i == 67)) << i;
}

}  // namespace
}  // namespace qwen35::grammar
