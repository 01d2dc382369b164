// The Qwen3.5 tool-call grammar: the text the chat template asks for, with declared names and
// parameters that fit their schemas; anything else refused byte by byte.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/tool_call_grammar.h"

namespace qwen35::grammar {
namespace {

using json = nlohmann::ordered_json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7},
                   "unit": {"type": "string", "enum": ["c", "f"]}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "noop"}}])");

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.can_finish();
}

std::string call(const std::string& name, const std::string& params) {
  return "<tool_call>\n<function=" + name + ">\n" + params + "</function>\n</tool_call>";
}

std::string param(const std::string& name, const std::string& value) {
  return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
}

TEST(ToolCallGrammar, AcceptsWellFormedCallsOnly) {
  auto g = compile_grammar(tool_call_grammar(kTools, "", true));
  const std::string weather = call("get_weather", param("city", "New York\n<b>a < b</b") + param("days", "3"));
  EXPECT_FALSE(accepts(g, weather));  // "</" inside a raw string would close the tag early
  const std::string ok = call("get_weather", param("city", "New York\nline two, a < b") + param("days", "3") +
                                                 param("tags", "[\"x\", \"y\"]"));
  EXPECT_TRUE(accepts(g, ok));
  EXPECT_TRUE(accepts(g, call("noop", "")));
  EXPECT_TRUE(accepts(g, ok + "\n" + call("noop", "")));  // parallel calls
  EXPECT_FALSE(accepts(g, call("get_weather", param("city", "x"))));                             // days required
  EXPECT_FALSE(accepts(g, call("get_weather", param("city", "x") + param("days", "8"))));        // out of range
  EXPECT_FALSE(accepts(g, call("get_weather", param("days", "2") + param("city", "x"))));        // order
  EXPECT_FALSE(accepts(g, call("get_weather", param("city", "x") + param("days", "2") + param("unit", "k"))));
  EXPECT_TRUE(accepts(g, call("get_weather", param("city", "x") + param("days", "2") + param("unit", "f"))));
  EXPECT_FALSE(accepts(g, call("get_weather", param("city", "x") + param("days", "2") + param("extra", "1"))));
  EXPECT_FALSE(accepts(g, call("other", "")));
  EXPECT_FALSE(accepts(g, call("noop", "") + "trailing"));
  auto single = compile_grammar(tool_call_grammar(kTools, "noop", false));
  EXPECT_TRUE(accepts(single, call("noop", "")));
  EXPECT_FALSE(accepts(single, ok));
  EXPECT_FALSE(accepts(single, call("noop", "") + "\n" + call("noop", "")));
}

TEST(ToolCallGrammar, StrictFunctionsRefuseWhatTheyCannotEnforce) {
  json tools = kTools;
  tools[0]["function"]["parameters"]["properties"]["days"]["multipleOf"] = 2;
  EXPECT_NO_THROW(tool_call_grammar(tools, "", true));  // not strict: ignored
  tools[0]["function"]["strict"] = true;
  try {
    tool_call_grammar(tools, "", true);
    ADD_FAILURE() << "compiled";
  } catch (const SchemaError& e) {
    EXPECT_EQ(e.keyword(), "multipleOf");
    EXPECT_EQ(e.pointer(), "/tools/0/function/parameters/properties/days");
  }
  EXPECT_THROW(tool_call_grammar(kTools, "missing", true), Error);
}

// Raw string parameters with lengths (zod's z.string().max(n) under strict: true) and const.
TEST(ToolCallGrammar, RawStringLengthsAndConst) {
  const json tools = json::parse(R"([{"type": "function", "strict": true, "function": {"name": "f", "strict": true,
    "parameters": {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 4},
                   "k": {"type": "string", "const": "fixed"}}, "required": ["s", "k"]}}}])");
  auto g = compile_grammar(tool_call_grammar(tools, "", false));
  for (const char* ok : {"ab", "abcd", "\xc3\xa9t\xc3\xa9", "a\nb"}) EXPECT_TRUE(accepts(g, call("f", param("s", ok) + param("k", "fixed")))) << ok;
  for (const char* bad : {"a", "abcde", "a<b", "a\xf0\x9f\x98\x80"}) EXPECT_FALSE(accepts(g, call("f", param("s", bad) + param("k", "fixed")))) << bad;
  EXPECT_FALSE(accepts(g, call("f", param("s", "ab") + param("k", "other"))));
  json with_pattern = tools;
  with_pattern[0]["function"]["parameters"]["properties"]["s"]["pattern"] = "^a";
  try {
    tool_call_grammar(with_pattern, "", false);
    ADD_FAILURE() << "compiled";
  } catch (const SchemaError& e) {
    EXPECT_EQ(e.keyword(), "pattern");
    EXPECT_EQ(e.pointer(), "/tools/0/function/parameters/properties/s");
  }
}

}  // namespace
}  // namespace qwen35::grammar
