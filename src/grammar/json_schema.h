// JSON Schema -> grammar: the JSON texts a schema's instances can be written as.
//
// Exact, or an error: every keyword that constrains instances is either enforced exactly or
// rejected with a SchemaError naming the keyword and its JSON pointer, never ignored. Enforced:
//   type (a name or an array of names), nullable (OpenAPI), boolean schemas;
//   enum, const: each listed value is tested against the schema's other keywords and its `not`
//     (their grammar, compiled on its own, must accept the value as dumped; multipleOf exactly in
//     decimal); a value the grammar rejects though it might be valid in another spelling (keys in
//     another order, a fraction, a character past the BMP) is an error;
//   objects: properties (written in the order `properties` lists them), required,
//     additionalProperties (a schema, false, or true -- the default, as the specification says;
//     extra keys never repeat a listed one), minProperties / maxProperties (members counted);
//     patternProperties (a listed key takes the schemas of the patterns it matches; extra keys
//     only with additionalProperties false, patterns that cannot share a key and match no listed
//     key -- or patterns with no constraint); propertyNames (listed keys it rejects are left
//     out; extra keys must be valid names and no listed key may be one);
//   arrays: items, prefixItems (and draft-07's array form of items with additionalItems),
//     minItems, maxItems; uniqueItems when the items come from a finite set (enum, const,
//     boolean, null: written as distinct values in the set's order) or at most one is allowed;
//   strings: minLength, maxLength (code points), pattern (regex.h), format (date-time, date,
//     time, email, uuid, uri, ipv4, ipv6);
//   numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum (both drafts' forms), exactly
//     (number_range.h: integers canonical; decimals without exponent, at most 15 digits);
//   not, of a type (or types), of enum/const values that are null, booleans or strings (other
//     strings are then written without escapes), of one required property (an object without it),
//     of a `not` (not {not X} is X), or of anything beside enum/const (above);
//   anyOf; oneOf when no two branches can meet (by type, by enum/const values, or by the values
//     of a property both require); allOf by merging its branches (an error
//     when two give different values to a keyword that cannot be merged);
//   $ref to "#" or a JSON pointer into the document ($defs, definitions, ...), recursion included.
// Annotations (title, description, default, examples, $schema, $id, $comment, ...) are ignored, and
// so are keywords no draft defines and format names outside the specification, as validators do.
// With `strict = false` a keyword that cannot be enforced is ignored instead (the output then
// may not validate); used for the OpenAI API's strict: false.
//
// Output form: whitespace between tokens, at most `max_whitespace` characters at each place;
// strings with a length bound keep to the BMP (JavaScript validators count UTF-16 units);
// strings escape only what JSON requires (plus \/, \b, \f, \uXXXX except surrogates); numbers
// have at most 16 digits before and after the point and 3 in the exponent (bounded ones: above).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

class SchemaError : public Error {
 public:
  SchemaError(std::string keyword, std::string pointer, const std::string& why)
      : Error("schema: '" + keyword + "' at " + (pointer.empty() ? "#" : "#" + pointer) + ": " + why),
        keyword_(std::move(keyword)),
        pointer_(std::move(pointer)),
        why_(why) {}
  const std::string& keyword() const { return keyword_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& why() const { return why_; }

 private:
  std::string keyword_, pointer_, why_;
};

struct JsonSchemaOptions {
  bool strict = true;
  int max_whitespace = 16;
  int max_depth = 64;          // nested subschemas while compiling
  int max_enum = 10000;        // enum values
  int max_rules = 20000;       // rules made from one schema
  int max_count = 4096;        // minItems/maxItems/minLength/maxLength bounds we unroll
};

// Adds rules to `ir` for values valid against schemas of one document.
class JsonSchemaCompiler {
 public:
  JsonSchemaCompiler(GrammarIR& ir, const nlohmann::ordered_json& document, JsonSchemaOptions options = {});
  // A rule matching the JSON text of any instance of the subschema at `pointer` ("" = the root).
  int value_rule(const std::string& pointer = "");
  // A rule for any JSON value.
  int any_value_rule();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The grammar of a whole document (throws SchemaError, or qwen35::Error for malformed JSON).
GrammarIR json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
GrammarIR json_schema_text_to_grammar(std::string_view schema_text, const JsonSchemaOptions& options = {});

}  // namespace qwen35::grammar
