// libFuzzer target: a GBNF grammar or a JSON Schema from any bytes, compiled with their bounds,
// then the matcher run over the input's tail with a rollback now and then. The first byte picks
// the kind and where the text ends. A bad grammar or schema must be a qwen35::Error; nothing may
// crash, hang or grow without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qwen35;
  using namespace qwen35::grammar;
  if (size < 2) return 0;
  const bool schema = data[0] & 1;
  const size_t split = 1 + (size - 1) * (data[0] >> 1) / 128;
  const std::string text(reinterpret_cast<const char*>(data + 1), split - 1);
  const std::string input(reinterpret_cast<const char*>(data + split), size - split);
  try {
    GrammarLimits limits;
    limits.max_total_dfa_states = 4000;  // keeps each run fast; the bounds themselves are what is tested
    limits.lexeme.max_dfa_states = 2000;
    std::shared_ptr<const Grammar> g =
        compile_grammar(schema ? json_schema_text_to_grammar(text) : parse_gbnf(text), limits);
    GrammarMatcher m(g);
    for (size_t i = 0; i < input.size(); ++i) {
      if (!m.advance_byte(uint8_t(input[i])) && m.steps() > 0 && (input[i] & 3) == 0) m.rollback(1);
    }
    (void)m.can_finish();
  } catch (const Error&) {
  }
  return 0;
}
