// Token-mask cost over a whole vocabulary: per case, the grammar's compile time and the time to
// compute the mask for every token of a valid instance, walked token by token (p50/p90/p99/max per
// token, 1 thread). Each case starts from a fresh TokenMasker (no precomputed state), so the
// first masks include the lazy per-lexeme-state work.
//
//   ninja -C build grammar_bench && build/bin/grammar_bench [--tokenizer PATH] [--repeat N] > grammar.json
//
// Vocabulary: by default a synthetic one of 248,320 ids (every single byte, then byte strings of 2
// to 12 bytes drawn from English-like words with and without a leading space, digits, JSON
// punctuation runs and UTF-8 text, seeded); --tokenizer takes a tokenizer.json (or model folder)
// instead. Instances are split into tokens by greedy longest match over the vocabulary.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "synthetic_vocab.h"
#include "text/tokenizer.h"

namespace {

using namespace qwen35;
using namespace qwen35::grammar;
using Clock = std::chrono::steady_clock;
using bench::greedy_split;
using bench::synthetic_vocab;

struct Case {
  const char* name;
  const char* kind;  // "gbnf" or "schema"
  const char* text;
  const char* instance;
};

const Case kCases[] = {
    {"json_gbnf", "gbnf", R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= [ \t\n]{0,20})",
     R"({"name": "The quick brown fox", "tags": ["alpha", "beta", "gamma"], "count": 1234, "ratio": -0.25e3, "nested": {"ok": true, "none": null, "text": "jumps over the lazy dog\n"}})"},
    {"schema_person", "schema", R"({"type": "object", "properties": {
       "name": {"type": "string", "minLength": 1, "maxLength": 40},
       "age": {"type": "integer", "minimum": 0, "maximum": 150},
       "email": {"type": "string", "format": "email"},
       "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
       "address": {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                   "required": ["street"], "additionalProperties": false}},
       "required": ["name", "age"], "additionalProperties": false})",
     R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "tags": ["math", "poetry"], "address": {"street": "12 St James's Square", "zip": "10001"}})"},
    {"schema_recursive", "schema", R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "number"},
       "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"]}}, "$ref": "#/$defs/node"})",
     R"({"value": 1, "children": [{"value": 2.5, "children": []}, {"value": -3, "children": [{"value": 4e2}]}]})"},
};

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
      tokenizer = argv[++i];
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: grammar_bench [--tokenizer PATH] [--repeat N]\n");
      return 2;
    }
  }
  std::vector<std::pair<int32_t, std::string>> tokens;
  int32_t vocab_size = bench::kSyntheticVocabSize;
  if (tokenizer.empty()) {
    tokens = synthetic_vocab(vocab_size);
  } else {
    const Tokenizer tok = Tokenizer::from_file(tokenizer);
    vocab_size = tok.vocab_size();
    for (int32_t id = 0; id < vocab_size; ++id)
      if (tok.is_valid_id(id) && !tok.is_special(id)) tokens.emplace_back(id, std::string(tok.token_bytes(id)));
  }
  auto vocab = std::make_shared<const TokenVocab>(vocab_size, tokens);
  std::unordered_map<std::string, int32_t> by_bytes;
  for (const auto& [id, b] : tokens) by_bytes.emplace(b, id);

  std::printf("{\n  \"vocab_size\": %d,\n  \"vocabulary\": \"%s\",\n  \"threads\": 1,\n  \"cases\": [", vocab_size,
              tokenizer.empty() ? "synthetic" : "tokenizer");
  bool first = true;
  for (const Case& c : kCases) {
    std::vector<double> compile_ms, mask_us;
    size_t n_tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = Clock::now();
      std::shared_ptr<const Grammar> g = !std::strcmp(c.kind, "gbnf") ? compile_grammar(parse_gbnf(c.text))
                                                                      : compile_grammar(json_schema_text_to_grammar(c.text));
      compile_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      GrammarMatcher m(g);
      TokenMasker masker(g, vocab);
      std::vector<uint64_t> bits(vocab->words());
      const std::vector<int32_t> ids = greedy_split(c.instance, by_bytes);
      n_tokens = ids.size();
      for (int32_t id : ids) {
        const auto t1 = Clock::now();
        masker.fill(m, bits.data());
        mask_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t1).count());
        if (!((bits[size_t(id) >> 6] >> (id & 63)) & 1) || !m.advance(vocab->token_bytes(id))) {
          std::fprintf(stderr, "grammar_bench: %s: the instance's token %d is refused\n", c.name, id);
          return 1;
        }
      }
      if (!m.can_finish()) {
        std::fprintf(stderr, "grammar_bench: %s: the instance does not finish the grammar\n", c.name);
        return 1;
      }
    }
    std::printf("%s\n    {\"name\": \"%s\", \"tokens\": %zu, \"repeats\": %d, \"compile_ms_p50\": %.3f, "
                "\"mask_us_p50\": %.1f, \"mask_us_p90\": %.1f, \"mask_us_p99\": %.1f, \"mask_us_max\": %.1f}",
                first ? "" : ",", c.name, n_tokens, repeat, pct(compile_ms, 0.5), pct(mask_us, 0.5),
                pct(mask_us, 0.9), pct(mask_us, 0.99), pct(mask_us, 1.0));
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
