// JSON Schema -> grammar: instances accepted or rejected byte by byte, keyword errors with their
// pointers, and a sample of MaskBench's real-world schemas (tests/data/grammar/README.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "support/test_data.h"
#include "text/tokenizer.h"

namespace qwen35::grammar {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> schema_grammar(const std::string& schema, bool strict = true) {
  JsonSchemaOptions o;
  o.strict = strict;
  return compile_grammar(json_schema_text_to_grammar(schema, o));
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  for (char c : text)
    if (!m.advance_byte(uint8_t(c))) return false;
  return m.can_finish();
}

std::string schema_error(const std::string& schema) {
  try {
    schema_grammar(schema);
  } catch (const SchemaError& e) {
    return e.keyword() + " " + e.pointer();
  } catch (const Error& e) {
    return std::string("other: ") + e.what();
  }
  return "";
}

TEST(JsonSchema, TypesEnumConstNullable) {
  auto g = schema_grammar(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(accepts(g, R"("a\"b\u00e9\n")"));
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_FALSE(accepts(g, "1"));
  EXPECT_FALSE(accepts(g, R"("a\x")"));
  EXPECT_FALSE(accepts(g, "\"a\nb\""));       // a raw control character
  EXPECT_FALSE(accepts(g, R"("\ud800")"));  // a lone surrogate escape
  auto e = schema_grammar(R"({"enum": ["red", 2, null, {"a": [1]}], "nullable": true})");
  EXPECT_TRUE(accepts(e, R"("red")"));
  EXPECT_TRUE(accepts(e, "2"));
  EXPECT_TRUE(accepts(e, R"({"a":[1]})"));
  EXPECT_FALSE(accepts(e, R"("blue")"));
  EXPECT_FALSE(accepts(e, "2.0"));
  auto c = schema_grammar(R"({"const": "x", "type": "string"})");
  EXPECT_TRUE(accepts(c, R"("x")"));
  EXPECT_FALSE(accepts(c, R"("y")"));
  auto n = schema_grammar(R"({"type": "number"})");
  for (const char* ok : {"0", "-1.5", "3e10", "2.5E-3", "-0.0"}) EXPECT_TRUE(accepts(n, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "+1", "1e", "NaN", "--1"}) EXPECT_FALSE(accepts(n, bad)) << bad;
  auto b = schema_grammar("true");
  EXPECT_TRUE(accepts(b, R"({"x": [1, "y", {"z": null}], "w": false})"));
  EXPECT_NE(schema_error("false").find("other: grammar"), std::string::npos);  // nothing is valid
}

TEST(JsonSchema, IntegerBoundsAreExact) {
  auto g = schema_grammar(R"({"type": "integer", "minimum": -17, "maximum": 1234})");
  for (int v = -40; v <= 1300; ++v)
    EXPECT_EQ(accepts(g, std::to_string(v)), v >= -17 && v <= 1234) << v;
  EXPECT_FALSE(accepts(g, "-0"));
  EXPECT_FALSE(accepts(g, "007"));
  auto x = schema_grammar(R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 101})");
  for (int v = 0; v <= 120; ++v) EXPECT_EQ(accepts(x, std::to_string(v)), v > 9 && v < 101) << v;
  auto d4 = schema_grammar(R"({"type": "integer", "minimum": 5, "exclusiveMinimum": true})");
  EXPECT_FALSE(accepts(d4, "5"));
  EXPECT_TRUE(accepts(d4, "6"));
  EXPECT_TRUE(accepts(d4, "99999999"));
  auto open = schema_grammar(R"({"type": "integer", "maximum": -3})");
  EXPECT_TRUE(accepts(open, "-3"));
  EXPECT_TRUE(accepts(open, "-123456"));
  EXPECT_FALSE(accepts(open, "-2"));
  EXPECT_FALSE(accepts(open, "0"));
}

// Decimal bounds against the validator's reading (a double): every spelling we try is accepted
// exactly when it is in range and within the written form (no exponent, <= 15 digits).
TEST(JsonSchema, DecimalBoundsAreExact) {
  const char* bounds[] = {"-12.5", "-1", "-0.001", "0", "0.1", "0.30000000000000004", "1", "3.14159", "7.25", "100", "1e-7"};
  std::mt19937 rng(7);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  int checked = 0, accepted = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bool has_lo = pick(4) != 0, has_hi = pick(4) != 0;
    const char* lo = bounds[pick(11)];
    const char* hi = bounds[pick(11)];
    const bool lo_x = pick(2), hi_x = pick(2);
    json schema = {{"type", "number"}};
    if (has_lo) schema[lo_x ? "exclusiveMinimum" : "minimum"] = json::parse(lo);
    if (has_hi) schema[hi_x ? "exclusiveMaximum" : "maximum"] = json::parse(hi);
    std::shared_ptr<const Grammar> g;
    try {
      g = compile_grammar(json_schema_to_grammar(schema));
    } catch (const Error& e) {  // an empty range has no instance
      EXPECT_TRUE(has_lo && has_hi) << schema.dump() << ": " << e.what();
      continue;
    }
    auto in_range = [&](double v) {
      if (has_lo && (lo_x ? !(v > std::strtod(lo, nullptr)) : !(v >= std::strtod(lo, nullptr)))) return false;
      if (has_hi && (hi_x ? !(v < std::strtod(hi, nullptr)) : !(v <= std::strtod(hi, nullptr)))) return false;
      return true;
    };
    std::vector<std::string> texts;
    for (const char* b : bounds) {  // the bounds themselves, and neighbours in the last digit
      const std::string t = json::parse(b).dump();
      texts.push_back(t);
      if (t.find('.') != std::string::npos) texts.push_back(t + "1");
      if (t.find('.') == std::string::npos && t.find('e') == std::string::npos) texts.push_back(t + ".0");
    }
    for (int i = 0; i < 300; ++i) {
      std::string t = pick(2) ? "-" : "";
      t += std::to_string(pick(3) == 0 ? pick(200) : pick(15));
      if (pick(3)) {
        t += ".";
        for (int d = 1 + pick(7); d > 0; --d) t += char('0' + pick(10));
      }
      texts.push_back(t);
    }
    for (const std::string& t : texts) {
      const double v = std::strtod(t.c_str(), nullptr);
      const bool ok = accepts(g, t);
      size_t digit_count = 0;
      for (char c : t) digit_count += c >= '0' && c <= '9';
      if (ok) {
        EXPECT_TRUE(in_range(v)) << schema.dump() << " accepts " << t;
      }
      // Inside the written form (no exponent, <= 15 digits, no "-0"), everything in range is accepted.
      if (t.find('e') != std::string::npos || digit_count > 15 || (v == 0 && t[0] == '-')) continue;
      ++checked;
      accepted += ok;
      EXPECT_EQ(ok, in_range(v)) << schema.dump() << " " << t;
    }
    if (has_lo || has_hi) {  // (unbounded numbers take exponents and longer forms)
      EXPECT_FALSE(accepts(g, "1e0"));
      EXPECT_FALSE(accepts(g, "0.0000000000000001"));  // 17 digits
    }
  }
  EXPECT_GT(accepted, checked / 4);
  // Integers, decimals and what the form leaves out.
  auto g = schema_grammar(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 2.5})");
  for (const char* ok : {"0.1", "1", "2.5", "2.50", "0.000000000001", "2.4999999999999"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"0", "0.0", "-0.5", "2.5000000000001", "3", "01", "1.", ".5", "25e-1"}) EXPECT_FALSE(accepts(g, bad)) << bad;
  auto d4 = schema_grammar(R"({"type": "number", "minimum": -1.5, "exclusiveMinimum": true})");
  EXPECT_FALSE(accepts(d4, "-1.5"));
  EXPECT_TRUE(accepts(d4, "-1.4999"));
  EXPECT_TRUE(accepts(d4, "123456789012345"));
  EXPECT_FALSE(accepts(d4, "1234567890123456"));  // 16 digits
  auto frac = schema_grammar(R"({"type": "number", "not": {"type": "integer"}})");
  for (const char* ok : {"1.5", "-0.25", "10.01"}) EXPECT_TRUE(accepts(frac, ok)) << ok;
  for (const char* bad : {"1", "1.0", "-3.00", "1e1"}) EXPECT_FALSE(accepts(frac, bad)) << bad;
  EXPECT_EQ(schema_error(R"({"type": "number", "not": {"type": "integer"}, "minimum": 1})"), "minimum ");
  EXPECT_EQ(schema_error(R"({"type": "number", "maximum": "1"})"), "maximum ");
}

TEST(JsonSchema, ObjectsFollowPropertyOrder) {
  auto g = schema_grammar(R"({"type": "object", "properties": {
      "id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["name"], "additionalProperties": false})");
  EXPECT_TRUE(accepts(g, R"({"name": "a"})"));
  EXPECT_TRUE(accepts(g, R"({"id": 1, "name": "a", "tags": ["x", "y"]})"));
  EXPECT_TRUE(accepts(g, "{\n  \"id\" : 1 ,\n  \"name\":\"a\"\n}"));
  EXPECT_FALSE(accepts(g, R"({"id": 1})"));                    // required missing
  EXPECT_FALSE(accepts(g, R"({"name": "a", "id": 1})"));       // out of order
  EXPECT_FALSE(accepts(g, R"({"name": "a", "other": 1})"));    // additional
  EXPECT_FALSE(accepts(g, R"({"name": "a", "name": "b"})"));   // repeated
  EXPECT_FALSE(accepts(g, R"({"name": "a",})"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"a\"" + std::string(17, ' ') + "}"));  // bounded whitespace
  // additionalProperties defaults to true; extra keys never repeat a listed one.
  auto open = schema_grammar(R"({"properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}}})");
  EXPECT_TRUE(accepts(open, R"({"a": 1, "b": "x", "abc": null, "": 2})"));
  EXPECT_TRUE(accepts(open, "{}"));
  EXPECT_TRUE(accepts(open, "[1]"));  // no type: any other value is valid too
  EXPECT_FALSE(accepts(open, R"({"x": 1, "a": 2})"));
  EXPECT_FALSE(accepts(open, R"({"a": "no"})"));
  // Required keys that properties does not list come after, in the order of required.
  auto req = schema_grammar(R"({"type": "object", "properties": {"m": {}}, "required": ["zeta", "alpha"]})");
  EXPECT_TRUE(accepts(req, R"({"zeta": 1, "alpha": 2})"));
  EXPECT_TRUE(accepts(req, R"({"m": 0, "zeta": 1, "alpha": 2, "other": 3})"));
  EXPECT_FALSE(accepts(req, R"({"alpha": 2, "zeta": 1})"));
  auto typed = schema_grammar(R"({"type": "object", "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(accepts(typed, R"({"x": true, "y": false})"));
  EXPECT_FALSE(accepts(typed, R"({"x": 1})"));
}

TEST(JsonSchema, ArraysAndStrings) {
  auto g = schema_grammar(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                              "items": {"type": "boolean"}, "minItems": 1, "maxItems": 4})");
  EXPECT_TRUE(accepts(g, "[1]"));
  EXPECT_TRUE(accepts(g, R"([1, "a", true, false])"));
  EXPECT_FALSE(accepts(g, "[]"));
  EXPECT_FALSE(accepts(g, R"([1, "a", true, false, true])"));
  EXPECT_FALSE(accepts(g, R"(["a"])"));
  EXPECT_FALSE(accepts(g, R"([1, "a", 3])"));
  auto d7 = schema_grammar(R"({"items": [{"const": 1}], "additionalItems": false})");
  EXPECT_TRUE(accepts(d7, "[1]"));
  EXPECT_TRUE(accepts(d7, "[]"));
  EXPECT_FALSE(accepts(d7, "[1, 1]"));
  auto bounded = schema_grammar(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_FALSE(accepts(bounded, "[1]"));
  EXPECT_TRUE(accepts(bounded, "[1,2]"));
  EXPECT_TRUE(accepts(bounded, "[1,2,3]"));
  EXPECT_FALSE(accepts(bounded, "[1,2,3,4]"));
  auto s = schema_grammar(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(accepts(s, R"("é")"));
  EXPECT_TRUE(accepts(s, R"("é\n")"));   // two code points, one escaped
  EXPECT_TRUE(accepts(s, R"("東京都")"));
  EXPECT_FALSE(accepts(s, R"("東京都市")"));
  // Bounded strings stay in the BMP (JavaScript counts UTF-16 units); unbounded ones do not.
  EXPECT_FALSE(accepts(s, "\"a\xf0\x9f\x98\x80\""));
  EXPECT_TRUE(accepts(schema_grammar(R"({"type": "string"})"), "\"a\xf0\x9f\x98\x80\""));
  auto p = schema_grammar(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?$"})");
  EXPECT_TRUE(accepts(p, R"("AB-123")"));
  EXPECT_TRUE(accepts(p, R"("AB-123yz")"));
  EXPECT_FALSE(accepts(p, R"("AB-12")"));
  EXPECT_FALSE(accepts(p, R"("ab-123")"));
  auto search = schema_grammar(R"({"type": "string", "pattern": "a\"b"})");  // unanchored: a search
  EXPECT_TRUE(accepts(search, R"("xx a\"b yy")"));
  EXPECT_FALSE(accepts(search, R"("ab")"));
  EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "(a)\\1"})"), "pattern ");
  EXPECT_EQ(schema_error(R"j({"type": "string", "pattern": "(?=a)"})j"), "pattern ");
}

TEST(JsonSchema, Formats) {
  struct F {
    const char* format;
    std::vector<const char*> ok, bad;
  };
  const F cases[] = {
      {"date",
       {"2024-02-29", "2000-02-29", "1900-02-28", "0001-01-31", "2023-04-30", "2023-12-31"},
       {"2024-13-01", "2024-1-01", "24-01-01", "2022-02-31", "2023-02-29", "1900-02-29", "2023-04-31", "0000-01-01",
        "2023-00-10", "2023-01-00"}},
      {"time", {"23:59:59Z", "08:30:00.123+05:30"}, {"24:00:00Z", "08:30:00", "23:59:60Z"}},
      {"date-time", {"2024-05-01T12:00:00Z", "2024-05-01t12:00:00.5-01:00", "2400-02-29T00:00:00Z"},
       {"2024-05-01 12:00:00Z", "2100-02-29T00:00:00Z", "2022-02-31T12:00:00Z"}},
      {"email", {"a.b+c@example.co.uk"}, {"a@b", "@example.com", "a..b@example.com"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000"}, {"123e4567e89b12d3a456426614174000"}},
      {"uri", {"https://example.com/a?b=c#d", "urn:isbn:0451450523"}, {"example.com", "http://a b"}},
      {"ipv4", {"192.168.0.1", "0.0.0.0"}, {"256.1.1.1", "1.2.3", "01.2.3.4"}},
      {"ipv6", {"::1", "2001:db8::8a2e:370:7334", "fe80:0:0:0:0:0:0:1"}, {"2001:db8:::1", "12345::1"}},
  };
  for (const F& f : cases) {
    auto g = schema_grammar(std::string(R"({"type": "string", "format": ")") + f.format + "\"}");
    for (const char* v : f.ok) EXPECT_TRUE(accepts(g, json(v).dump())) << f.format << " " << v;
    for (const char* v : f.bad) EXPECT_FALSE(accepts(g, json(v).dump())) << f.format << " " << v;
  }
  // A format of the specification we do not enforce is refused; other names are annotations.
  EXPECT_EQ(schema_error(R"({"type": "string", "format": "uri-template"})"), "format ");
  EXPECT_TRUE(accepts(schema_grammar(R"({"type": "string", "format": "hostname-ish"})"), R"("any thing")"));
}

TEST(JsonSchema, CombinatorsAndReferences) {
  auto any = schema_grammar(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})");
  EXPECT_TRUE(accepts(any, "5"));
  EXPECT_TRUE(accepts(any, R"("a")"));
  EXPECT_FALSE(accepts(any, R"("ab")"));
  auto one = schema_grammar(R"({"oneOf": [{"type": "integer"}, {"type": "null"}]})");
  EXPECT_TRUE(accepts(one, "null"));
  EXPECT_EQ(schema_error(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})"), "oneOf ");
  // Branches that cannot meet by their values, or by a required discriminator's values.
  auto tagged = schema_grammar(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
      {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}, "y": {"type": "string"}}, "required": ["kind"]}]})");
  EXPECT_TRUE(accepts(tagged, R"({"kind": "a", "x": 1})"));
  EXPECT_TRUE(accepts(tagged, R"({"kind": "c", "y": "s"})"));
  EXPECT_FALSE(accepts(tagged, R"({"kind": "d"})"));
  EXPECT_FALSE(accepts(tagged, R"({"kind": "a", "x": "s"})"));
  EXPECT_TRUE(accepts(schema_grammar(R"({"oneOf": [{"enum": ["x", 1]}, {"enum": ["y", 2]}]})"), "2"));
  EXPECT_EQ(schema_error(R"({"oneOf": [{"enum": ["x", 1]}, {"enum": ["y", 1]}]})"), "oneOf ");
  EXPECT_EQ(schema_error(R"({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]},
                                       {"type": "object", "properties": {"k": {"const": 2}}}]})"),
            "oneOf ");  // k not required in both: {} matches both
  // (additionalProperties applies to the properties its own schema lists: here both are listed.)
  auto all = schema_grammar(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                          {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
                                "properties": {"a": true, "b": true}, "additionalProperties": false})");
  EXPECT_TRUE(accepts(all, R"({"a": 1, "b": "x"})"));
  EXPECT_FALSE(accepts(all, R"({"a": 1})"));
  EXPECT_FALSE(accepts(all, R"({"a": 1, "b": "x", "c": 2})"));
  EXPECT_EQ(schema_error(R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})"), "allOf /allOf/1");
  auto rec = schema_grammar(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"], "additionalProperties": false}}})");
  EXPECT_TRUE(accepts(rec, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  EXPECT_FALSE(accepts(rec, R"({"v": 1, "kids": [{"kids": []}]})"));
  auto d7 = schema_grammar(R"({"definitions": {"pos": {"type": "integer", "minimum": 1}},
      "type": "array", "items": {"$ref": "#/definitions/pos"}})");
  EXPECT_TRUE(accepts(d7, "[1, 22]"));
  EXPECT_FALSE(accepts(d7, "[0]"));
  auto self = schema_grammar(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})");
  EXPECT_TRUE(accepts(self, "[[], [[]]]"));
  EXPECT_FALSE(accepts(self, "[1]"));
  // A recursion without a base case: no finite instance exists.
  EXPECT_NE(schema_error(R"({"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]})").find("never finish"),
            std::string::npos);
  EXPECT_EQ(schema_error(R"({"$ref": "other.json#/a"})"), "$ref ");
  EXPECT_EQ(schema_error(R"({"$ref": "#/$defs/missing"})"), "$ref ");
}

TEST(JsonSchema, PropertyCounts) {
  auto g = schema_grammar(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                              "minProperties": 2, "maxProperties": 3})");
  for (const char* ok : {R"({"a": 1, "b": 2})", R"({"a": 1, "x": 2})", R"({"x": 1, "y": 2, "z": 3})", R"({"a": 1, "b": 2, "c": 3})"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"{}", R"({"a": 1})", R"({"x": 1})", R"({"a": 1, "b": 2, "c": 3, "d": 4})", R"({"w": 1, "x": 2, "y": 3, "z": 4})"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
  auto closed = schema_grammar(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false,
                                   "minProperties": 1, "maxProperties": 1})");
  EXPECT_TRUE(accepts(closed, R"({"b": null})"));
  EXPECT_FALSE(accepts(closed, "{}"));
  EXPECT_FALSE(accepts(closed, R"({"a": 1, "c": 2})"));
  auto open = schema_grammar(R"({"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1})");
  EXPECT_TRUE(accepts(open, R"({"k": "v", "l": "w"})"));
  EXPECT_FALSE(accepts(open, "{}"));
  EXPECT_FALSE(accepts(open, R"({"k": 1})"));
}

TEST(JsonSchema, PatternPropertiesAndPropertyNames) {
  auto g = schema_grammar(R"({"type": "object", "properties": {"name": {"type": "string"}},
                              "patternProperties": {"^x-[a-z]+$": {"type": "integer"}, "^[0-9]+$": {"type": "string"}},
                              "additionalProperties": false})");
  for (const char* ok : {R"({"name": "a", "x-foo": 1, "12": "s"})", R"({"x-a": 2})", "{}", R"({"7": "", "x-b": 0})"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {R"({"x-foo": "s"})", R"({"12": 1})", R"({"other": 1})", R"({"x-": 1})", R"({"name": "a", "name": "b"})"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
  // A listed key matching a pattern takes both schemas (here false: the key is forbidden).
  auto both = schema_grammar(R"({"type": "object", "properties": {"n1": {"type": "integer"}, "n2": {}},
                                 "patternProperties": {"2$": false}, "additionalProperties": false})");
  EXPECT_TRUE(accepts(both, R"({"n1": 7})"));
  EXPECT_FALSE(accepts(both, R"({"n2": 1})"));
  EXPECT_FALSE(accepts(both, R"({"n1": 7, "n2": 1})"));
  // With strict: false the listed key still takes both schemas, but the pattern's extra keys may
  // then spell it too (so {"n1": 4} passes as an extra member).
  auto lax = schema_grammar(R"({"type": "object", "properties": {"n1": {"type": "integer", "minimum": 5}},
                                "patternProperties": {"^n": {"type": "integer", "maximum": 10}}, "additionalProperties": false})",
                            false);
  EXPECT_TRUE(accepts(lax, R"({"n1": 7})"));
  EXPECT_FALSE(accepts(lax, R"({"n1": 11})"));
  EXPECT_TRUE(accepts(lax, R"({"n1": 4})"));
  // Where an extra key could repeat a listed one or meet two patterns, or fall to
  // additionalProperties beside a pattern: refused, with the pattern's pointer.
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}, "properties": {"id": {}},
                             "additionalProperties": false})"),
            "patternProperties /patternProperties/^[a-z]+$");
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"^a": {}, "b$": {"type": "integer"}}, "additionalProperties": false})"),
            "patternProperties /patternProperties/b$");
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"^x": {"type": "integer"}}})"), "patternProperties ");
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"(": {}}, "additionalProperties": false})"),
            "patternProperties /patternProperties/(");
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"^x-": {}}})"), "");  // no constraint at all

  auto names = schema_grammar(R"({"type": "object", "propertyNames": {"pattern": "^[a-z]{1,8}$"}, "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(accepts(names, R"({"abc": 1, "z": 2})"));
  EXPECT_FALSE(accepts(names, R"({"ABC": 1})"));
  EXPECT_FALSE(accepts(names, R"({"abcdefghi": 1})"));
  EXPECT_FALSE(accepts(names, R"({"abc": "x"})"));
  // A listed property that is not a valid name can never appear; a required one makes nothing valid.
  auto dropped = schema_grammar(R"({"type": "object", "properties": {"LongName": {}, "ok": {}}, "propertyNames": {"maxLength": 3},
                                    "additionalProperties": false})");
  EXPECT_TRUE(accepts(dropped, R"({"ok": 1})"));
  EXPECT_FALSE(accepts(dropped, R"({"LongName": 1})"));
  EXPECT_NE(schema_error(R"({"type": "object", "properties": {"LongName": {}}, "required": ["LongName"],
                             "propertyNames": {"maxLength": 3}})").find("never finish"),
            std::string::npos);
  EXPECT_EQ(schema_error(R"({"type": "object", "properties": {"ok": {}}, "propertyNames": {"maxLength": 3}})"), "propertyNames /propertyNames");
  auto none = schema_grammar(R"({"type": "object", "propertyNames": false})");
  EXPECT_TRUE(accepts(none, "{}"));
  EXPECT_FALSE(accepts(none, R"({"a": 1})"));
}

TEST(JsonSchema, NotOfTypesAndValues) {
  auto t = schema_grammar(R"({"not": {"type": ["string", "object"]}})");
  for (const char* ok : {"1", "null", "[1]", "true", "-2.5"}) EXPECT_TRUE(accepts(t, ok)) << ok;
  for (const char* bad : {R"("a")", "{}"}) EXPECT_FALSE(accepts(t, bad)) << bad;
  auto v = schema_grammar(R"({"type": ["string", "boolean", "null"], "not": {"enum": ["a", "b\u00e9", false, null]}})");
  for (const char* ok : {R"("c")", R"("ab")", R"("")", "true"}) EXPECT_TRUE(accepts(v, ok)) << ok;
  for (const char* bad : {R"("a")", "\"b\xc3\xa9\"", R"("\u0061")", "false", "null"}) EXPECT_FALSE(accepts(v, bad)) << bad;
  auto e = schema_grammar(R"({"enum": ["x", "y", 3], "not": {"const": "y"}})");
  EXPECT_TRUE(accepts(e, R"("x")"));
  EXPECT_TRUE(accepts(e, "3"));
  EXPECT_FALSE(accepts(e, R"("y")"));
  // not {required: [k]}: an object without k (every non-object satisfies {required: [k]}).
  auto absent = schema_grammar(R"({"properties": {"a": {}, "b": {}}, "not": {"required": ["a"]}})");
  for (const char* ok : {R"({"b": 1})", "{}", R"({"c": 2})"}) EXPECT_TRUE(accepts(absent, ok)) << ok;
  for (const char* bad : {R"({"a": 1})", R"({"b": 1, "a": 2})", R"({"c": 2, "a": 1})", "1", R"("x")"}) EXPECT_FALSE(accepts(absent, bad)) << bad;
  auto extra = schema_grammar(R"({"type": "object", "not": {"required": ["x"]}, "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(accepts(extra, R"({"y": 1, "xx": 2})"));
  EXPECT_FALSE(accepts(extra, R"({"y": 1, "x": 2})"));
  EXPECT_EQ(schema_error(R"({"not": {"required": ["a", "b"]}})"), "not /not");
  EXPECT_EQ(schema_error(R"({"not": {"minimum": 3}})"), "not /not");
  EXPECT_EQ(schema_error(R"({"not": {"enum": [1, 2]}})"), "not /not");
  EXPECT_EQ(schema_error(R"({"type": "string", "pattern": "^a", "not": {"const": "ab"}})"), "not /not");
  EXPECT_NE(schema_error(R"({"not": {}})").find("never finish"), std::string::npos);  // nothing is valid
}

// enum/const values are tested against the schema's other keywords and its `not` (each compiled
// on its own); a value the test cannot decide is refused.
TEST(JsonSchema, ListedValuesAreTested) {
  // 7 has no length: valid against {maxLength: 2}, so excluded.
  auto p = schema_grammar(R"({"enum": ["ab", "abc", "x", 7], "pattern": "^a", "not": {"maxLength": 2}})");
  EXPECT_TRUE(accepts(p, R"("abc")"));
  for (const char* bad : {R"("ab")", R"("x")", "7"}) EXPECT_FALSE(accepts(p, bad)) << bad;
  auto n = schema_grammar(R"({"enum": [1, 2, 3, "a", [2]], "not": {"minimum": 2}})");
  EXPECT_TRUE(accepts(n, "1"));  // "a" and [2] have no minimum to break: valid against it, so excluded
  for (const char* bad : {"2", "3", R"("a")", "[2]"}) EXPECT_FALSE(accepts(n, bad)) << bad;
  auto o = schema_grammar(R"({"const": {"a": 1}, "not": {"properties": {"a": {"type": "string"}}}})");
  EXPECT_TRUE(accepts(o, R"({"a":1})"));
  auto none = schema_grammar(R"({"anyOf": [{"const": {"a": "s"}, "not": {"properties": {"a": {"type": "string"}}}}, {"type": "null"}]})");
  EXPECT_FALSE(accepts(none, R"({"a":"s"})"));
  // multipleOf, in decimal as the values are written.
  auto m = schema_grammar(R"({"enum": [3, 4, 4.5, 6, -9, 0.3], "multipleOf": 1.5})");
  for (const char* ok : {"3", "4.5", "6", "-9"}) EXPECT_TRUE(accepts(m, ok)) << ok;
  for (const char* bad : {"4", "0.3"}) EXPECT_FALSE(accepts(m, bad)) << bad;
  auto m1 = schema_grammar(R"({"enum": [0.3, 0.5], "multipleOf": 0.1})");
  EXPECT_TRUE(accepts(m1, "0.3"));
  EXPECT_TRUE(accepts(m1, "0.5"));
  EXPECT_EQ(schema_error(R"({"enum": [1e300], "multipleOf": 3})"), "multipleOf ");
  // The value is valid against `not`'s schema with its keys in another order than the grammar
  // writes them: undecidable by the grammar, so refused.
  EXPECT_EQ(schema_error(R"({"enum": [{"b": 2, "a": 1}], "not": {"properties": {"a": {"const": 1}}, "required": ["a"]}})"), "not /not");
  EXPECT_EQ(schema_error(R"({"enum": [1.0], "not": {"type": "integer"}})"), "not /not");  // 1.0 is an integer, written "1"
  // not {not X} is X.
  auto nn = schema_grammar(R"({"not": {"not": {"type": "integer", "minimum": 3}}})");
  EXPECT_TRUE(accepts(nn, "3"));
  for (const char* bad : {"2", R"("a")", "3.5"}) EXPECT_FALSE(accepts(nn, bad)) << bad;
}

TEST(JsonSchema, UniqueItemsOverFiniteValues) {
  auto g = schema_grammar(R"({"type": "array", "items": {"enum": ["a", "b", "c", 1.0, 1]}, "uniqueItems": true, "minItems": 1})");
  for (const char* ok : {R"(["a"])", R"(["a", "c"])", R"(["a", "b", "c", 1.0])", "[1.0]"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  // Repeats never; other orders than the enum's are left out (a subset, so still exact).
  for (const char* bad : {R"(["a", "a"])", "[]", R"(["c", "a"])", "[1.0, 1]", "[1]"}) EXPECT_FALSE(accepts(g, bad)) << bad;
  auto b = schema_grammar(R"({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "maxItems": 5})");
  EXPECT_TRUE(accepts(b, "[true, false]"));
  EXPECT_FALSE(accepts(b, "[true, true]"));
  auto one = schema_grammar(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "maxItems": 1})");
  EXPECT_TRUE(accepts(one, "[5]"));
  EXPECT_EQ(schema_error(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})"), "uniqueItems ");
  EXPECT_EQ(schema_error(R"({"type": "array", "prefixItems": [{"const": 1}], "uniqueItems": true})"), "uniqueItems ");
}

TEST(JsonSchema, UnenforceableKeywordsNameThemselves) {
  EXPECT_EQ(schema_error(R"({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}})"),
            "uniqueItems /properties/a");
  EXPECT_EQ(schema_error(R"({"type": "object", "patternProperties": {"^x": {"type": "null"}}})"), "patternProperties ");
  EXPECT_EQ(schema_error(R"({"type": "integer", "multipleOf": 3})"), "multipleOf ");
  EXPECT_EQ(schema_error(R"({"if": {"type": "string"}})"), "if ");
  EXPECT_EQ(schema_error(R"({"type": "object", "properties": {"a": {"dependentRequired": {"x": ["y"]}}}})"),
            "dependentRequired /properties/a");
  // A keyword no draft defines is an annotation (validators ignore it as well).
  EXPECT_TRUE(accepts(schema_grammar(R"({"type": "integer", "javaType": "int", "_uniqueItems": true})"), "5"));
  EXPECT_EQ(schema_error(R"({"anyOf": [{"not": {"pattern": "a"}}]})"), "not /anyOf/0/not");
  // strict: false ignores them (documented: the output may then not validate).
  auto lax = schema_grammar(R"({"type": "integer", "multipleOf": 3})", false);
  EXPECT_TRUE(accepts(lax, "4"));
  // Annotations are fine.
  EXPECT_EQ(schema_error(R"({"title": "t", "description": "d", "default": 1, "examples": [1], "$comment": "c",
                              "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"})"),
            "");
}

TEST(JsonSchema, HostileSchemasAreRefusedQuickly) {
  std::string deep = "true";
  for (int i = 0; i < 200; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(schema_error(deep).find("nested deeper"), std::string::npos);  // the JSON reader's bound
  json nested = true;
  for (int i = 0; i < 200; ++i) nested = json{{"type", "array"}, {"items", nested}};
  try {
    json_schema_to_grammar(nested);
    ADD_FAILURE() << "a 200-level schema compiled";
  } catch (const SchemaError& e) {
    EXPECT_EQ(e.keyword(), "schema");  // the compiler's own bound
  }
  EXPECT_NE(schema_error(R"({"type": "string", "pattern": "^(a|b)*a(a|b){40}$"})").find("automaton"), std::string::npos);
  std::string wide = R"({"anyOf": [)";
  for (int i = 0; i < 30000; ++i) wide += std::string(i ? "," : "") + R"({"type": "object", "properties": {"k)" + std::to_string(i) + R"(": {"const": 1}}, "required": ["k)" + std::to_string(i) + R"("]})";
  wide += "]}";
  EXPECT_FALSE(schema_error(wide).empty());
}

// MaskBench sample: every schema compiles or is refused with a keyword error or a size bound; for the compiled
// ones no invalid instance is accepted, and the valid instances (as written, keys in the file's
// order) are accepted but for those whose key order differs from `properties`.
TEST(JsonSchema, MaskBenchSample) {
  std::ifstream in(test::data_path("grammar/maskbench_sample.jsonl"));
  ASSERT_TRUE(in);
  std::string line;
  int schemas = 0, compiled = 0, refused = 0, bounded = 0, valid = 0, valid_ok = 0, invalid = 0;
  while (std::getline(in, line)) {
    const json rec = json::parse(line);
    ++schemas;
    std::shared_ptr<const Grammar> g;
    try {
      g = compile_grammar(json_schema_to_grammar(rec["schema"]));
    } catch (const SchemaError& e) {
      ++refused;
      continue;
    } catch (const Error& e) {
      if (std::string(e.what()).find("more than") != std::string::npos) {
        ++bounded;  // a grammar past GrammarLimits: refused, within the bound
      } else {
        ADD_FAILURE() << rec["file"] << ": neither a keyword error nor a bound: " << e.what();
      }
      continue;
    }
    ++compiled;
    for (const json& t : rec["tests"]) {
      const std::string text = t["data"].dump();
      if (t["valid"].get<bool>()) {
        ++valid;
        valid_ok += accepts(g, text);
      } else {
        ++invalid;
        EXPECT_FALSE(accepts(g, text)) << rec["file"] << " accepts an invalid instance: " << text;
      }
    }
  }
  std::printf("maskbench sample: %d schemas, %d compiled, %d refused with a keyword error, %d past a size bound; valid "
              "instances accepted %d/%d; invalid instances %d, all rejected\n",
              schemas, compiled, refused, bounded, valid_ok, valid, invalid);
  EXPECT_EQ(schemas, compiled + refused + bounded);
  EXPECT_GE(compiled * 100, schemas * 80);
  EXPECT_GE(valid_ok * 100, valid * 80);
}

}  // namespace
}  // namespace qwen35::grammar
