#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/json_parse.h"
#include "grammar/matcher.h"
#include "grammar/number_range.h"
#include "grammar/regex.h"
#include "text/utf8.h"

namespace qwen35::grammar {

using json = nlohmann::ordered_json;

namespace {

// Type bits, for oneOf's disjointness check and for enum filtering.
enum : unsigned { kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kInteger = 32, kFraction = 64 };
constexpr unsigned kAllTypes = 127;

unsigned type_bit(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "object") return kObject;
  if (t == "array") return kArray;
  if (t == "string") return kString;
  if (t == "integer") return kInteger;
  if (t == "number") return kInteger | kFraction;
  return 0;
}

unsigned value_type(const json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  if (v.is_number_integer() || v.is_number_unsigned()) return kInteger;
  const double d = v.get<double>();
  return d == std::floor(d) ? kInteger : kFraction;
}

const std::set<std::string>& annotations() {
  static const std::set<std::string> k{"title", "description", "default", "examples", "example", "$schema", "$id", "id",
                                       "$comment", "readOnly", "writeOnly", "deprecated", "contentMediaType",
                                       "contentEncoding", "$anchor", "discriminator", "markdownDescription", "$defs",
                                       "definitions", "xml", "externalDocs"};
  return k;
}

const std::set<std::string>& enforced() {
  static const std::set<std::string> k{"type", "enum", "const", "nullable", "properties", "required", "additionalProperties",
                                       "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength",
                                       "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                                       "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "minProperties",
                                       "maxProperties", "uniqueItems", "patternProperties", "propertyNames", "not"};
  return k;
}

// Keywords the drafts define as constraints on instances that the compiler does not enforce.
const std::set<std::string>& unenforced() {
  static const std::set<std::string> k{"multipleOf", "contains", "minContains", "maxContains", "dependencies",
                                       "dependentRequired", "dependentSchemas", "if", "then", "else",
                                       "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
                                       "divisibleBy", "disallow", "extends"};
  return k;
}

// Annotations, and keywords no draft defines (validators ignore them as well).
bool is_annotation(const std::string& k) { return annotations().count(k) || (!enforced().count(k) && !unenforced().count(k)); }

// The formats of the specification (2020-12 and earlier drafts); other names are annotations.
bool standard_format(const std::string& f) {
  static const std::set<std::string> k{"date-time", "date", "time", "duration", "email", "idn-email", "hostname",
                                       "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
                                       "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex",
                                       "host-name", "ip-address", "color", "utc-millisec", "style", "phone"};
  return k.count(f) > 0;
}

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::u32string code_points(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t n = utf8::decode(std::string_view(s).substr(i), &cp);
    if (n == 0) fail("schema: a key is not valid UTF-8");
    out += cp;
    i += n;
  }
  return out;
}

const Expr& digit_class() {
  static const Expr e = Expr::cls({{'0', '9'}});
  return e;
}

Expr digits(int lo, int hi) { return Expr::repeat(digit_class(), lo, hi); }

Expr number_expr() {
  return Expr::seq({Expr::opt(Expr::literal("-")),
                    Expr::alt({Expr::literal("0"), Expr::seq({Expr::cls({{'1', '9'}}), digits(0, 15)})}),
                    Expr::opt(Expr::seq({Expr::literal("."), digits(1, 16)})),
                    Expr::opt(Expr::seq({Expr::cls({{'e', 'e'}, {'E', 'E'}}), Expr::opt(Expr::cls({{'+', '+'}, {'-', '-'}})),
                                         digits(1, 3)}))});
}

// One character inside a JSON string, in any spelling JSON allows (surrogate escapes left out, so
// a character is always one code point).
// `max_codepoint`: kMaxCodepoint, or 0xFFFF for strings whose length is bounded -- a character
// past the BMP is one code point to JSON Schema but two UTF-16 units to JavaScript validators (zod,
// the OpenAI SDK's parse helpers), so leaving them out keeps both counts equal.
Expr string_char(uint32_t max_codepoint = kMaxCodepoint) {
  const Expr hex = Expr::cls({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
  const Expr u_escape = Expr::seq(
      {Expr::literal("\\u"),
       Expr::alt({Expr::seq({Expr::cls({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}), hex, hex, hex}),
                  Expr::seq({Expr::cls({{'d', 'd'}, {'D', 'D'}}), Expr::cls({{'0', '7'}}), hex, hex})})});
  return Expr::alt({Expr::cls({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, max_codepoint}}),
                    Expr::seq({Expr::literal("\\"), Expr::cls({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'},
                                                               {'n', 'n'}, {'r', 'r'}, {'t', 't'}})}),
                    u_escape});
}

// Calendar dates, exactly: years 0001-9999, each month's days, February 29 in leap years only
// (divisible by 4; centuries only when divisible by 400). Times leave out the leap second 60,
// which not every validator takes.
constexpr const char* kDateBody =
    "(([0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|"
    "(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))|"
    "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([2468][048]|[13579][26]|0[48])00)-02-29)";
constexpr const char* kTimeBody = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";

const char* format_regex(const std::string& f) {
  static const std::string date = std::string("^") + kDateBody + "$", time = std::string("^") + kTimeBody + "$",
                           date_time = std::string("^") + kDateBody + "[Tt]" + kTimeBody + "$";
  static const std::map<std::string, const char*> k{
      {"date", date.c_str()},
      {"time", time.c_str()},
      {"date-time", date_time.c_str()},
      {"email",
       "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,64}(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,64}){0,8}@[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?"
       "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,30}[A-Za-z0-9])?){1,6}$"},
      {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
      {"uri", "^[A-Za-z][A-Za-z0-9+.-]{0,31}:([A-Za-z0-9._~:/?#@!$&'()*+,;=\\[\\]-]|%[0-9A-Fa-f]{2}){0,512}$"},
      {"ipv4", "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$"},
      {"ipv6",
       "^(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:|([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|"
       "([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}|([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}|"
       "([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}|([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}|"
       "[0-9a-fA-F]{1,4}:(:[0-9a-fA-F]{1,4}){1,6}|:((:[0-9a-fA-F]{1,4}){1,7}|:))$"},
  };
  auto it = k.find(f);
  return it == k.end() ? nullptr : it->second;
}

}  // namespace

struct JsonSchemaCompiler::Impl {
  GrammarIR& ir;
  const json& doc;
  JsonSchemaOptions opt;
  std::map<std::string, int> ref_rules;
  int any_rule = -1;
  int depth = 0;
  int rules_made = 0;
  std::vector<std::unique_ptr<json>> owned;  // merged schemas live as long as the compiler

  [[noreturn]] void error(const std::string& kw, const std::string& ptr, const std::string& why) const {
    throw SchemaError(kw, ptr, why);
  }

  // Strict: an error; otherwise the keyword is left unenforced.
  void unsupported(const std::string& kw, const std::string& ptr, const std::string& why) const {
    if (opt.strict) error(kw, ptr, why);
  }

  int new_rule(const std::string& hint) {
    if (++rules_made > opt.max_rules) error("$ref", "", str("the schema needs more than ", opt.max_rules, " rules"));
    return ir.fresh(hint);
  }

  Expr ws() const { return Expr::repeat(Expr::cls({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0, opt.max_whitespace); }

  const json& resolve(const std::string& ref, const std::string& ptr) const {
    if (ref.empty() || ref[0] != '#') error("$ref", ptr, "only references inside the document ('#...') are supported, got '" + ref + "'");
    if (ref.size() > 1 && ref[1] != '/') error("$ref", ptr, "anchors are not supported ('" + ref + "')");
    std::string decoded;
    for (size_t i = 1; i < ref.size(); ++i) {
      if (ref[i] == '%' && i + 2 < ref.size() + 0 && std::isxdigit(uint8_t(ref[i + 1])) && std::isxdigit(uint8_t(ref[i + 2]))) {
        decoded += char(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += ref[i];
      }
    }
    try {
      const json::json_pointer jp(decoded);
      if (!doc.contains(jp)) error("$ref", ptr, "'" + ref + "' points at nothing");
      return doc.at(jp);
    } catch (const json::exception&) {
      error("$ref", ptr, "'" + ref + "' is not a JSON pointer");
    }
  }

  int any_value() {
    if (any_rule >= 0) return any_rule;
    any_rule = new_rule("any-value");
    const int obj = new_rule("any-object"), arr = new_rule("any-array");
    const Expr str_e = Expr::seq({Expr::literal("\""), Expr::star(string_char()), Expr::literal("\"")});
    ir.define(any_rule, Expr::alt({Expr::ref(obj), Expr::ref(arr), str_e, number_expr(), Expr::literal("true"),
                                   Expr::literal("false"), Expr::literal("null")}));
    const Expr member = Expr::seq({str_e, ws(), Expr::literal(":"), ws(), Expr::ref(any_rule), ws()});
    ir.define(obj, Expr::seq({Expr::literal("{"), ws(),
                              Expr::opt(Expr::seq({member, Expr::star(Expr::seq({Expr::literal(","), ws(), member}))})),
                              Expr::literal("}")}));
    const Expr item = Expr::seq({Expr::ref(any_rule), ws()});
    ir.define(arr, Expr::seq({Expr::literal("["), ws(),
                              Expr::opt(Expr::seq({item, Expr::star(Expr::seq({Expr::literal(","), ws(), item}))})),
                              Expr::literal("]")}));
    return any_rule;
  }

  // ---- allOf: one schema with the constraints of both ----
  const json& keep(json j) {
    owned.push_back(std::make_unique<json>(std::move(j)));
    return *owned.back();
  }

  // `s` with a top-level $ref replaced by its target (siblings merged into it).
  json expand_ref(const json& s, const std::string& ptr, int hops = 0) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    if (hops > 32) error("$ref", ptr, "more than 32 references in a row");
    if (!s["$ref"].is_string()) error("$ref", ptr, "must be a string");
    json target = expand_ref(resolve(s["$ref"].get<std::string>(), ptr), ptr, hops + 1);
    json rest = s;
    rest.erase("$ref");
    return merge(target, rest, ptr);
  }

  json merge(const json& a0, const json& b0, const std::string& ptr) {
    if (a0.is_boolean()) return a0.get<bool>() ? b0 : json(false);
    if (b0.is_boolean()) return b0.get<bool>() ? a0 : json(false);
    json a = expand_ref(a0, ptr), b = expand_ref(b0, ptr);
    if (a.is_boolean() || b.is_boolean()) return merge(a, b, ptr);
    if (a.contains("allOf")) a = flatten_all_of(a, ptr);
    if (b.contains("allOf")) b = flatten_all_of(b, ptr);
    if (a.is_boolean() || b.is_boolean()) return merge(a, b, ptr);
    json out = a;
    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (!out.contains(k)) {
        out[k] = v;
        continue;
      }
      json& cur = out[k];
      if (cur == v || is_annotation(k)) continue;
      if (k == "type") {
        auto bits = [](const json& t) {
          unsigned m = 0;
          if (t.is_string()) m = type_bit(t.get<std::string>());
          if (t.is_array())
            for (const json& x : t)
              if (x.is_string()) m |= type_bit(x.get<std::string>());
          return m;
        };
        const unsigned m = bits(cur) & bits(v);
        json types = json::array();
        for (const char* n : {"null", "boolean", "object", "array", "string"})
          if (m & type_bit(n)) types.push_back(n);
        if ((m & kFraction) && (m & kInteger))
          types.push_back("number");
        else if (m & kInteger)
          types.push_back("integer");
        if (types.empty()) return json(false);
        cur = types;
      } else if (k == "required") {
        for (const json& r : v)
          if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
      } else if (k == "properties") {
        for (auto p = v.begin(); p != v.end(); ++p)
          cur[p.key()] = cur.contains(p.key()) ? json{{"allOf", {cur[p.key()], p.value()}}} : p.value();
      } else if (k == "minLength" || k == "minItems" || k == "minProperties" || k == "minimum") {
        if (!cur.is_number() || !v.is_number()) error(k, ptr, "must be a number");
        if (v > cur) cur = v;
      } else if (k == "maxLength" || k == "maxItems" || k == "maxProperties" || k == "maximum") {
        if (!cur.is_number() || !v.is_number()) error(k, ptr, "must be a number");
        if (v < cur) cur = v;
      } else if (k == "enum") {
        json both = json::array();
        for (const json& x : cur)
          if (std::find(v.begin(), v.end(), x) != v.end()) both.push_back(x);
        cur = both;
      } else if (k == "items" && cur.is_object() && v.is_object()) {
        cur = json{{"allOf", {cur, v}}};
      } else if (k == "additionalProperties") {
        cur = json{{"allOf", {cur, v}}};
      } else if (k == "nullable") {
        cur = cur.get<bool>() && v.get<bool>();
      } else if (k == "anyOf" || k == "oneOf") {
        // (A1 | A2) & (B1 | B2) = (A1 & B1) | (A1 & B2) | ...: fine while it stays small.
        if (cur.size() * v.size() > 64) error("allOf", ptr, "two " + k + " lists too large to combine");
        if (k == "oneOf") unsupported("allOf", ptr, "two oneOf lists cannot be combined exactly");
        json prod = json::array();
        for (const json& x : cur)
          for (const json& y : v) prod.push_back(json{{"allOf", {x, y}}});
        cur = prod;
        if (k == "oneOf") {
          out["anyOf"] = cur;
          out.erase("oneOf");
        }
      } else {
        unsupported("allOf", ptr, "cannot merge two different values of '" + k + "'");
      }
    }
    // additionalProperties of one side applies to the other side's extra properties.
    for (const json* side : {&a, &b}) {
      const json* other = side == &a ? &b : &a;
      if (!side->contains("additionalProperties") || !other->contains("properties")) continue;
      const json& addl = (*side)["additionalProperties"];
      const json empty = json::object();
      const json& mine = side->contains("properties") ? (*side)["properties"] : empty;
      for (auto p = (*other)["properties"].begin(); p != (*other)["properties"].end(); ++p) {
        if (mine.contains(p.key())) continue;
        out["properties"][p.key()] = json{{"allOf", {out["properties"][p.key()], addl}}};
      }
    }
    return out;
  }

  json flatten_all_of(const json& s, const std::string& ptr) {
    const json& list = s["allOf"];
    if (!list.is_array() || list.empty()) error("allOf", ptr, "must be a non-empty array");
    json rest = s;
    rest.erase("allOf");
    json acc = rest;
    for (size_t i = 0; i < list.size(); ++i) acc = merge(acc, list[i], ptr + "/allOf/" + std::to_string(i));
    return acc;
  }

  // ---- values ----
  Expr value(const json& s, const std::string& ptr) {
    if (s.is_boolean()) return s.get<bool>() ? Expr::ref(any_value()) : Expr::cls({});
    if (!s.is_object()) error("schema", ptr, "a schema must be an object or a boolean");
    if (++depth > opt.max_depth) error("schema", ptr, str("nested deeper than ", opt.max_depth));
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth};

    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "multipleOf" && (s.contains("enum") || s.contains("const"))) continue;  // tested per listed value
      if (unenforced().count(k)) unsupported(k, ptr, "this keyword cannot be enforced");
      // Any other keyword no draft defines is an annotation: validators ignore it too.
    }
    if (s.contains("$ref")) {
      bool only_ref = true;
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != "$ref" && !is_annotation(it.key())) only_ref = false;
      if (!s["$ref"].is_string()) error("$ref", ptr, "must be a string");
      if (only_ref) return Expr::ref(ref_rule(s["$ref"].get<std::string>(), ptr));
      return value(keep(expand_ref(s, ptr)), ptr);
    }
    if (s.contains("allOf")) return value(keep(flatten_all_of(s, ptr)), ptr);
    if (s.contains("not") && s["not"].is_object() && s["not"].contains("not") && only_keyword(s["not"], "not")) {
      // not {not X} is X.
      json rest = s;
      rest.erase("not");
      return value(keep(merge(rest, s["not"]["not"], ptr + "/not/not")), ptr);
    }
    for (const char* kw : {"anyOf", "oneOf"}) {
      if (!s.contains(kw)) continue;
      const json& list = s[kw];
      if (!list.is_array() || list.empty()) error(kw, ptr, "must be a non-empty array");
      json rest = s;
      rest.erase(kw);
      std::vector<Expr> alts;
      std::vector<unsigned> types;
      std::vector<const json*> branches;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string bp = ptr + "/" + kw + "/" + std::to_string(i);
        const json& branch = rest.size() > 0 && has_constraints(rest) ? keep(merge(rest, list[i], bp)) : list[i];
        alts.push_back(value(branch, bp));
        types.push_back(possible_types(branch, bp));
        branches.push_back(&branch);
      }
      if (std::string(kw) == "oneOf")
        for (size_t i = 0; i < types.size(); ++i)
          for (size_t j = i + 1; j < types.size(); ++j)
            if ((types[i] & types[j]) && !values_disjoint(*branches[i], *branches[j], ptr))
              unsupported("oneOf", ptr, str("branches ", i, " and ", j, " may both match (oneOf is enforced when its branches' types, ",
                                            "enum/const values or a required property's enum/const values cannot meet)"));
      return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
    }

    unsigned allowed = kAllTypes;
    if (s.contains("type")) {
      const json& t = s["type"];
      allowed = 0;
      auto add = [&](const json& x) {
        const unsigned b = x.is_string() ? type_bit(x.get<std::string>()) : 0;
        if (!b) error("type", ptr, "unknown type " + x.dump());
        allowed |= b;
      };
      if (t.is_array()) {
        for (const json& x : t) add(x);
      } else {
        add(t);
      }
    }
    if (s.contains("nullable") && s["nullable"].is_boolean() && s["nullable"].get<bool>()) allowed |= kNull;
    if (s.contains("const") || s.contains("enum")) return listed_value(s, ptr, allowed);
    Negation neg;
    if (s.contains("not")) {
      neg = negation(s["not"], ptr + "/not");
      allowed &= ~neg.types;
    }
    auto excluded = [&](const json& v) { return std::find(neg.values.begin(), neg.values.end(), v) != neg.values.end(); };

    std::vector<Expr> alts;
    if ((allowed & kNull) && !excluded(json(nullptr))) alts.push_back(Expr::literal("null"));
    if (allowed & kBool) {
      std::vector<Expr> b;
      for (bool v : {true, false})
        if (!excluded(json(v))) b.push_back(Expr::literal(v ? "true" : "false"));
      if (!b.empty()) alts.push_back(b.size() == 1 ? std::move(b[0]) : Expr::alt(std::move(b)));
    }
    if (allowed & kString) {
      std::vector<std::u32string> taken;
      for (const json& v : neg.values)
        if (v.is_string()) taken.push_back(code_points(v.get<std::string>()));
      if (taken.empty()) {
        alts.push_back(string_value(s, ptr));
      } else {
        for (const char* kw : {"pattern", "format", "minLength", "maxLength"})
          if (s.contains(kw)) unsupported("not", ptr + "/not", std::string("excluded strings together with '") + kw + "' cannot be enforced");
        alts.push_back(key_except(taken));  // any string but those, written without escapes
      }
    }
    if (allowed & (kInteger | kFraction)) alts.push_back(number_value(s, ptr, allowed & (kInteger | kFraction)));
    if (allowed & kObject) alts.push_back(object_value(s, ptr, neg.absent));
    if (allowed & kArray) alts.push_back(array_value(s, ptr));
    if (alts.empty()) return Expr::cls({});
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  // What `not` excludes, where that is exactly expressible: whole types, or listed null, boolean
  // and string values (a string is then written without escapes, so no spelling slips through).
  struct Negation {
    unsigned types = 0;
    std::vector<json> values;
    std::vector<std::string> absent;  // not {required: [k]}: an object without k
  };
  Negation negation(const json& n0, const std::string& ptr) {
    Negation out;
    if (n0.is_boolean()) {
      if (n0.get<bool>()) out.types = kAllTypes;
      return out;
    }
    const json n = expand_ref(n0, ptr);
    if (n.is_boolean()) return negation(n, ptr);
    if (!n.is_object()) error("not", ptr, "a schema must be an object or a boolean");
    int kinds = 0;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string& k = it.key();
      if (is_annotation(k)) continue;
      if (k != "type" && k != "enum" && k != "const" && k != "required")
        unsupported("not", ptr, "only 'not' of a type, enum, const or one required property is enforced, not of '" + k + "'");
      ++kinds;
    }
    if (kinds == 0) {
      out.types = kAllTypes;  // not {}: nothing is valid
      return out;
    }
    if (kinds > 1) unsupported("not", ptr, "only 'not' of a single type, enum, const or required is enforced");
    if (n.contains("required")) {
      // {required: [k]} holds for every non-object and for objects with k: its negation is an
      // object without k.
      const json& r = n["required"];
      if (!r.is_array() || r.size() != 1 || !r[0].is_string())
        unsupported("not", ptr, "only 'not' of one required property is enforced");
      else
        out.absent.push_back(r[0].get<std::string>());
      out.types = kAllTypes & ~unsigned(kObject);
    } else if (n.contains("type")) {
      const json& t = n["type"];
      for (const json& x : t.is_array() ? t : json::array({t})) {
        const unsigned b = x.is_string() ? type_bit(x.get<std::string>()) : 0;
        if (!b) error("type", ptr, "unknown type " + x.dump());
        out.types |= b;
      }
    } else {
      const json list = n.contains("const") ? json::array({n["const"]}) : n["enum"];
      if (!list.is_array()) error("enum", ptr, "must be an array");
      for (const json& v : list) {
        if (!v.is_null() && !v.is_boolean() && !v.is_string())
          unsupported("not", ptr, "excluding a " + std::string(v.type_name()) + " value cannot be enforced");
        if (v.is_string() && needs_escape(v.get<std::string>()))
          unsupported("not", ptr, "excluding a string with characters JSON escapes cannot be enforced");
        out.values.push_back(v);
      }
    }
    return out;
  }

  // `kw` is the one keyword of `s` that is not an annotation.
  static bool only_keyword(const json& s, const std::string& kw) {
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != kw && !is_annotation(it.key())) return false;
    return true;
  }

  // Keywords other than annotations and combinators.
  static bool has_constraints(const json& s) {
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!is_annotation(it.key())) return true;
    return false;
  }

  // enum/const: the listed values of the allowed types that the schema's other keywords accept
  // and its `not` rejects. Each value is tested against those keywords' own compiled grammar; a
  // grammar accepts only valid instances, and rejects every valid one but those it cannot write as
  // dumped (see ambiguous_text), which are refused.
  Expr listed_value(const json& s, const std::string& ptr, unsigned allowed) {
    std::vector<json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) error("enum", ptr, "must be an array");
      if (int(s["enum"].size()) > opt.max_enum) error("enum", ptr, str("more than ", opt.max_enum, " values"));
      for (const json& v : s["enum"])
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
      if (s.contains("const")) values.erase(values.begin());
    }
    json rest = json::object();
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!is_annotation(it.key()) && it.key() != "const" && it.key() != "enum" && it.key() != "type" && it.key() != "nullable" &&
          it.key() != "not" && it.key() != "multipleOf")
        rest[it.key()] = it.value();
    std::shared_ptr<const Grammar> keep_g, drop_g;
    bool drop_all = false;
    const std::string kw = s.contains("enum") ? "enum" : "const";
    if (!rest.empty()) keep_g = sub_grammar(rest, kw, ptr);
    if (s.contains("not")) {
      const json& n = s["not"];
      if (n.is_boolean()) {
        drop_all = n.get<bool>();
      } else if (!trivially_true(n)) {
        drop_g = sub_grammar(n, "not", ptr + "/not");
      } else {
        drop_all = true;
      }
    }
    std::vector<Expr> alts;
    for (const json& v : values) {
      if (!(value_type(v) & allowed) || drop_all) continue;
      if (s.contains("multipleOf") && !multiple_of(v, s["multipleOf"], ptr)) continue;
      if (keep_g && !valid_against(keep_g, v, kw, ptr)) continue;
      if (drop_g && valid_against(drop_g, v, "not", ptr + "/not")) continue;
      alts.push_back(Expr::literal(v.dump()));
    }
    if (alts.empty()) return Expr::cls({});
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  // A number's JSON text as mantissa * 10^-scale, when it has no exponent and at most 18 digits.
  static std::optional<std::pair<int64_t, int>> decimal(const std::string& text) {
    int64_t m = 0;
    int scale = 0, digits = 0;
    bool point = false;
    for (size_t i = text[0] == '-' ? 1 : 0; i < text.size(); ++i) {
      if (text[i] == '.') {
        point = true;
      } else if (std::isdigit(uint8_t(text[i])) && ++digits <= 18) {
        m = m * 10 + (text[i] - '0');
        scale += point;
      } else {
        return std::nullopt;
      }
    }
    return std::pair{text[0] == '-' ? -m : m, scale};
  }

  // multipleOf for a listed value, exactly in decimal (as the value is written); values and
  // divisors with an exponent or more than 18 digits are refused.
  bool multiple_of(const json& v, const json& m, const std::string& ptr) const {
    if (!m.is_number() || m.get<double>() <= 0) error("multipleOf", ptr, "must be a positive number");
    if (!v.is_number()) return true;
    auto a = decimal(v.dump()), d = decimal(m.dump());
    auto widen = [](std::pair<int64_t, int>& x, int scale) {
      for (; x.second < scale; ++x.second) {
        if (std::llabs(x.first) > std::numeric_limits<int64_t>::max() / 10) return false;
        x.first *= 10;
      }
      return true;
    };
    const int scale = a && d ? std::max(a->second, d->second) : 0;
    if (!a || !d || !widen(*a, scale) || !widen(*d, scale) || d->first == 0) {
      unsupported("multipleOf", ptr, "tested only for values and divisors of at most 18 digits without an exponent");
      return true;
    }
    return a->first % d->first == 0;
  }

  // Whether `v` is valid against the schema compiled to `g`, when the grammar can tell.
  bool valid_against(const std::shared_ptr<const Grammar>& g, const json& v, const std::string& kw, const std::string& ptr) const {
    const std::string text = v.dump();
    if (grammar_accepts(g, text)) return true;
    if (ambiguous_text(v))
      unsupported(kw, ptr, "cannot test the listed value " + text.substr(0, 80) + " (objects with several keys, fractions "
                           "and characters past the BMP may be valid in a spelling the grammar does not write)");
    return false;
  }

  // Values a schema's grammar may reject in their dumped spelling though they are valid: objects
  // whose keys could be in another order than the grammar's, numbers with a fraction or exponent
  // (integers written as 1.0, digits past the grammar's bounds), strings past the BMP (written
  // only where no length is bounded).
  static bool ambiguous_text(const json& v) {
    if (v.is_object()) {
      if (v.size() > 1) return true;
      for (auto it = v.begin(); it != v.end(); ++it)
        if (ambiguous_text(it.value()) || ambiguous_text(json(it.key()))) return true;
      return false;
    }
    if (v.is_array()) return std::any_of(v.begin(), v.end(), [](const json& x) { return ambiguous_text(x); });
    if (v.is_number_float()) return true;
    if (v.is_string()) {
      for (char c : v.get_ref<const std::string&>())
        if (uint8_t(c) >= 0xF0) return true;
    }
    return false;
  }

  // The enum/const values a schema allows, when it lists them.
  std::optional<std::vector<json>> listed_values(const json& s0, const std::string& ptr) {
    if (!s0.is_object()) return std::nullopt;
    const json s = expand_ref(s0, ptr);
    if (!s.is_object()) return std::nullopt;
    if (s.contains("const")) return std::vector<json>{s["const"]};
    if (s.contains("enum") && s["enum"].is_array()) return std::vector<json>(s["enum"].begin(), s["enum"].end());
    return std::nullopt;
  }

  static bool share_a_value(const std::vector<json>& a, const std::vector<json>& b) {
    for (const json& x : a)
      if (std::find(b.begin(), b.end(), x) != b.end()) return true;
    return false;
  }

  // No instance can match both: their listed values do not meet, or a property both require has
  // listed values that do not meet (a discriminator).
  bool values_disjoint(const json& a0, const json& b0, const std::string& ptr) {
    if (!a0.is_object() || !b0.is_object()) return false;
    const json a = expand_ref(a0, ptr), b = expand_ref(b0, ptr);
    if (!a.is_object() || !b.is_object()) return false;
    const auto va = listed_values(a, ptr), vb = listed_values(b, ptr);
    if (va && vb && !share_a_value(*va, *vb)) return true;
    if (!a.contains("properties") || !b.contains("properties") || !a.contains("required") || !b.contains("required")) return false;
    const json &pa = a["properties"], &pb = b["properties"], &ra = a["required"], &rb = b["required"];
    if (!pa.is_object() || !pb.is_object() || !ra.is_array() || !rb.is_array()) return false;
    for (auto it = pa.begin(); it != pa.end(); ++it) {
      const json key = it.key();
      if (!pb.contains(it.key()) || std::find(ra.begin(), ra.end(), key) == ra.end() || std::find(rb.begin(), rb.end(), key) == rb.end())
        continue;
      const auto x = listed_values(it.value(), ptr), y = listed_values(pb[it.key()], ptr);
      if (x && y && !share_a_value(*x, *y)) return true;
    }
    return false;
  }

  unsigned possible_types(const json& s0, const std::string& ptr) {
    if (s0.is_boolean()) return s0.get<bool>() ? kAllTypes : 0;
    const json s = expand_ref(s0, ptr);
    if (s.is_boolean()) return s.get<bool>() ? kAllTypes : 0;
    if (s.contains("const")) return value_type(s["const"]);
    unsigned m = kAllTypes;
    if (s.contains("type")) {
      m = 0;
      const json& t = s["type"];
      if (t.is_string()) m = type_bit(t.get<std::string>());
      if (t.is_array())
        for (const json& x : t)
          if (x.is_string()) m |= type_bit(x.get<std::string>());
    }
    if (s.contains("enum") && s["enum"].is_array()) {
      unsigned e = 0;
      for (const json& v : s["enum"]) e |= value_type(v);
      m &= e;
    }
    if (s.contains("nullable") && s["nullable"] == true) m |= kNull;
    return m;
  }

  int ref_rule(const std::string& ref, const std::string& ptr) {
    if (auto it = ref_rules.find(ref); it != ref_rules.end()) return it->second;
    const json& target = resolve(ref, ptr);
    std::string hint = "ref";
    for (char c : ref.substr(ref.rfind('/') == std::string::npos ? 0 : ref.rfind('/') + 1))
      hint += std::isalnum(uint8_t(c)) ? c : '-';
    const int id = new_rule(hint);
    ref_rules.emplace(ref, id);
    ir.define(id, value(target, ref.substr(1)));
    return id;
  }

  int count(const json& s, const char* kw, const std::string& ptr, int dflt) const {
    if (!s.contains(kw)) return dflt;
    const json& v = s[kw];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()))
      error(kw, ptr, "must be a non-negative integer");
    const double d = v.get<double>();
    if (d > opt.max_count) {
      if (std::string(kw).rfind("max", 0) == 0) return dflt;  // a bound past what we unroll: no bound
      error(kw, ptr, str("over ", opt.max_count, " is not supported"));
    }
    return int(d);
  }

  Expr string_value(const json& s, const std::string& ptr) {
    const int min_len = count(s, "minLength", ptr, 0);
    const int max_len = count(s, "maxLength", ptr, kUnbounded);
    if (max_len != kUnbounded && max_len < min_len) return Expr::cls({});
    Expr body;
    if (s.contains("format") && s["format"].is_string() && format_regex(s["format"].get<std::string>())) {
      if (s.contains("pattern")) unsupported("pattern", ptr, "pattern together with format cannot be enforced");
      if (s.contains("minLength") || s.contains("maxLength"))
        unsupported(s.contains("minLength") ? "minLength" : "maxLength", ptr, "a length together with format cannot be enforced");
      body = json_string_chars(regex_to_expr(format_regex(s["format"].get<std::string>())));
    } else if (s.contains("format") && (!s["format"].is_string() || standard_format(s["format"].get<std::string>()))) {
      unsupported("format", ptr, "format " + s["format"].dump() + " cannot be enforced");
    }
    if (body.kind == Expr::Kind::kSeq && body.kids.empty()) {
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) error("pattern", ptr, "must be a string");
        if (s.contains("minLength") || s.contains("maxLength"))
          unsupported(s.contains("minLength") ? "minLength" : "maxLength", ptr, "a length together with pattern cannot be enforced");
        try {
          body = json_string_chars(regex_to_expr(s["pattern"].get<std::string>()));
        } catch (const SchemaError&) {
          throw;
        } catch (const Error& e) {
          error("pattern", ptr, e.what());
        }
      } else {
        const bool bounded = min_len > 0 || max_len != kUnbounded;
        body = Expr::repeat(string_char(bounded ? 0xFFFF : kMaxCodepoint), min_len, max_len);
      }
    }
    return Expr::seq({Expr::literal("\""), std::move(body), Expr::literal("\"")});
  }

  // `types`: kInteger, kFraction or both (numbers that are not integers: `not` of integer).
  Expr number_value(const json& s, const std::string& ptr, unsigned types) {
    if (s.contains("multipleOf")) unsupported("multipleOf", ptr, "cannot be enforced");
    std::optional<NumberBound> lo, hi;
    auto num = [&](const char* kw) {
      if (!s[kw].is_number()) error(kw, ptr, "must be a number");
      return s[kw].get<double>();
    };
    auto draft4 = [&](const char* kw) { return s.contains(kw) && s[kw].is_boolean() && s[kw].get<bool>(); };
    auto tighten = [](std::optional<NumberBound>& b, double v, bool exclusive, bool lower) {
      if (!b || (lower ? v > b->value : v < b->value) || (v == b->value && exclusive)) b = NumberBound{v, exclusive};
    };
    if (s.contains("minimum")) tighten(lo, num("minimum"), draft4("exclusiveMinimum"), true);
    if (s.contains("maximum")) tighten(hi, num("maximum"), draft4("exclusiveMaximum"), false);
    if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean()) tighten(lo, num("exclusiveMinimum"), true, true);
    if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean()) tighten(hi, num("exclusiveMaximum"), true, false);
    if (types == kFraction) {
      if (lo || hi) unsupported(lo ? "minimum" : "maximum", ptr, "bounds on numbers that must not be integers cannot be enforced");
      return non_integer_number();
    }
    if (types & kFraction) return lo || hi ? decimal_range(lo, hi) : number_expr();
    const double max = double(kMaxIntMagnitude);
    double lo_i = -max, hi_i = max;
    if (lo) lo_i = std::max(lo_i, lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value));
    if (hi) hi_i = std::min(hi_i, hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value));
    if (lo_i > hi_i) return Expr::cls({});
    return integer_range(int64_t(lo_i), int64_t(hi_i));
  }

  // Keys other than `taken`, written without escapes so that the text is the key.
  Expr key_except(const std::vector<std::u32string>& taken) {
    struct Node {
      std::map<uint32_t, int> kids;
      bool end = false;
    };
    std::vector<Node> trie(1);
    for (const std::u32string& k : taken) {
      int n = 0;
      for (uint32_t c : k) {
        auto it = trie[size_t(n)].kids.find(c);
        if (it == trie[size_t(n)].kids.end()) {
          trie.emplace_back();
          it = trie[size_t(n)].kids.emplace(c, int(trie.size()) - 1).first;
        }
        n = it->second;
      }
      trie[size_t(n)].end = true;
    }
    const std::vector<std::pair<uint32_t, uint32_t>> raw{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodepoint}};
    std::function<Expr(int)> build = [&](int n) {
      const Node& node = trie[size_t(n)];
      std::vector<Expr> alts;
      if (!node.end) alts.push_back(Expr::seq());
      std::vector<std::pair<uint32_t, uint32_t>> others = raw;
      for (auto [c, kid] : node.kids) {
        std::vector<std::pair<uint32_t, uint32_t>> cut;
        for (auto [lo, hi] : others) {
          if (c < lo || c > hi) {
            cut.emplace_back(lo, hi);
            continue;
          }
          if (c > lo) cut.emplace_back(lo, c - 1);
          if (c < hi) cut.emplace_back(c + 1, hi);
        }
        others = cut;
        std::string lit;
        utf8::append(lit, c);
        alts.push_back(Expr::seq({Expr::literal(lit), build(kid)}));
      }
      alts.push_back(Expr::seq({Expr::cls(others), Expr::star(Expr::cls(raw))}));
      return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
    };
    return Expr::seq({Expr::literal("\""), build(0), Expr::literal("\"")});
  }

  // True, {} or annotations only: every value is valid.
  static bool trivially_true(const json& s) {
    return (s.is_boolean() && s.get<bool>()) || (s.is_object() && !has_constraints(s));
  }

  // A pattern's language (code points, matched as UTF-8 bytes) as an automaton, to test keys with.
  Lexeme pattern_automaton(const std::string& kw, const json& pattern, const std::string& ptr) const {
    if (!pattern.is_string()) error(kw, ptr, "a pattern must be a string");
    try {
      const Expr e = regex_to_expr(pattern.get<std::string>());
      return build_lexeme({&e}, LexemeLimits{});
    } catch (const Error& e) {
      error(kw, ptr, e.what());
    }
  }

  static bool automaton_matches(const Lexeme& lx, std::string_view bytes) {
    if (!lx.nonempty()) return false;
    int32_t st = 0;
    for (char c : bytes)
      if ((st = lx.step(st, uint8_t(c))) == Lexeme::kDead) return false;
    return lx.accepting[size_t(st)] != 0;
  }

  // Whether some byte string matches both automata (a bounded search over pairs of states).
  bool automata_intersect(const Lexeme& a, const Lexeme& b, const std::string& kw, const std::string& ptr) const {
    if (!a.nonempty() || !b.nonempty()) return false;
    std::set<std::pair<int32_t, int32_t>> seen{{0, 0}};
    std::vector<std::pair<int32_t, int32_t>> todo{{0, 0}};
    while (!todo.empty()) {
      const auto [x, y] = todo.back();
      todo.pop_back();
      if (a.accepting[size_t(x)] && b.accepting[size_t(y)]) return true;
      for (int c = 0; c < 256; ++c) {
        const int32_t nx = a.step(x, uint8_t(c)), ny = b.step(y, uint8_t(c));
        if (nx == Lexeme::kDead || ny == Lexeme::kDead || !seen.insert({nx, ny}).second) continue;
        if (seen.size() > 100000) error(kw, ptr, "patterns too large to compare");
        todo.emplace_back(nx, ny);
      }
    }
    return false;
  }

  // The compiled grammar of `schema` alone (for testing keys against propertyNames); null when no
  // value is valid.
  std::shared_ptr<const Grammar> sub_grammar(const json& schema, const std::string& kw, const std::string& ptr) {
    GrammarIR sub;
    Impl c{sub, doc, opt, {}, -1, depth, 0, {}};
    sub.root = sub.rule("root");
    sub.define(sub.root, c.value(schema, ptr));
    try {
      return compile_grammar(sub);
    } catch (const Error& e) {
      error(kw, ptr, std::string("cannot be compiled to test keys or listed values against: ") + e.what());
    }
  }

  static bool grammar_accepts(const std::shared_ptr<const Grammar>& g, std::string_view text) {
    GrammarMatcher m(g);
    return m.advance(text) && m.can_finish();
  }

  static bool needs_escape(const std::string& key) {
    for (char c : key)
      if (uint8_t(c) < 0x20 || c == '"' || c == '\\') return true;
    return false;
  }

  // `absent`: keys the object must not have (from `not`).
  Expr object_value(const json& s, const std::string& ptr, const std::vector<std::string>& absent) {
    struct Prop {
      std::string key;
      const json* schema;
      std::string ptr;
      bool required;
    };
    static const json kTrue = true;
    std::vector<Prop> props;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) error("required", ptr, "must be an array");
      for (const json& r : s["required"]) {
        if (!r.is_string()) error("required", ptr, "must list strings");
        required.insert(r.get<std::string>());
      }
    }
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) error("properties", ptr, "must be an object");
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
        props.push_back({it.key(), &it.value(), ptr + "/properties/" + pointer_escape(it.key()), required.count(it.key()) > 0});
    }
    const json* addl = s.contains("additionalProperties") ? &s["additionalProperties"] : &kTrue;
    bool addl_allowed = !(addl->is_boolean() && !addl->get<bool>());

    // patternProperties: a key matching a pattern takes that pattern's schema too, and
    // additionalProperties applies only to keys that match no pattern.
    struct Pattern {
      std::string source, ptr;
      const json* schema;
      Lexeme automaton;
    };
    std::vector<Pattern> patterns;
    if (s.contains("patternProperties")) {
      if (!s["patternProperties"].is_object()) error("patternProperties", ptr, "must be an object");
      for (auto it = s["patternProperties"].begin(); it != s["patternProperties"].end(); ++it) {
        const std::string pp = ptr + "/patternProperties/" + pointer_escape(it.key());
        patterns.push_back({it.key(), pp, &it.value(), pattern_automaton("patternProperties", json(it.key()), pp)});
      }
    }
    // Required keys that `properties` does not list follow, in the order `required` gives them.
    if (s.contains("required")) {
      for (const json& rj : s["required"]) {
        const std::string r = rj.get<std::string>();
        bool listed = false;
        for (const Prop& p : props) listed = listed || p.key == r;
        if (!listed) props.push_back({r, addl, ptr + "/additionalProperties", true});
      }
    }
    // Every key the object names (some dropped below): an extra key must never repeat one.
    std::vector<std::string> named_keys;
    for (const Prop& p : props) named_keys.push_back(p.key);
    for (const std::string& k : absent) {
      if (required.count(k)) return Expr::cls({});  // required yet forbidden: nothing is valid
      if (std::find(named_keys.begin(), named_keys.end(), k) == named_keys.end()) named_keys.push_back(k);
    }
    std::vector<Prop> kept;
    for (Prop& p : props) {
      if (std::find(absent.begin(), absent.end(), p.key) != absent.end()) continue;
      const bool listed = s.contains("properties") && s["properties"].contains(p.key);
      json all = json::array();
      if (listed) all.push_back(*p.schema);
      for (const Pattern& pat : patterns) {
        if (!automaton_matches(pat.automaton, p.key)) continue;
        if (needs_escape(p.key)) unsupported("patternProperties", pat.ptr, "keys with characters JSON escapes are not tested");
        all.push_back(*pat.schema);
      }
      if (!listed && all.empty()) all.push_back(*addl);  // a required key no property or pattern names
      if (all.size() > 1 || !listed) p.schema = &keep(all.size() == 1 ? all[0] : json{{"allOf", all}});
      if (p.schema->is_boolean() && !p.schema->get<bool>()) {
        if (p.required) return Expr::cls({});  // required but forbidden: nothing is valid
        continue;
      }
      kept.push_back(std::move(p));
    }
    props = std::move(kept);

    // propertyNames: every key is a string valid against it.
    const json* names = nullptr;
    std::shared_ptr<const Grammar> names_grammar;
    if (s.contains("propertyNames") && !trivially_true(s["propertyNames"])) {
      const std::string np = ptr + "/propertyNames";
      names = &keep(merge(s["propertyNames"], json{{"type", "string"}}, np));
      if (!(names->is_boolean() && !names->get<bool>())) names_grammar = sub_grammar(*names, "propertyNames", np);
      std::vector<Prop> named;
      for (Prop& p : props) {
        if (needs_escape(p.key)) unsupported("propertyNames", np, "keys with characters JSON escapes are not tested");
        if (names_grammar && grammar_accepts(names_grammar, json(p.key).dump())) {
          named.push_back(std::move(p));
        } else if (p.required) {
          return Expr::cls({});
        }
      }
      props = std::move(named);
    }

    // Additional members (after the listed ones): their key and value, or -1 when there are none.
    int member = -1;
    const bool patterns_vacuous = std::all_of(patterns.begin(), patterns.end(), [](const Pattern& p) { return trivially_true(*p.schema); });
    if (!patterns.empty() && patterns_vacuous && addl_allowed && trivially_true(*addl)) patterns.clear();  // no constraint at all
    if (!patterns.empty() && addl_allowed) {
      unsupported("patternProperties", ptr, "keys matching no pattern cannot be told apart (only with additionalProperties: false)");
      patterns.clear();
    }
    if (!patterns.empty() && names) unsupported("propertyNames", ptr, "together with patternProperties cannot be enforced");
    if (!patterns.empty()) {
      // Keys matching a pattern and no listed key: exact when the patterns cannot share a key and
      // no listed key matches one (so an extra key never repeats a listed one).
      std::vector<Expr> alts;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (patterns[i].schema->is_boolean() && !patterns[i].schema->get<bool>()) continue;  // its keys are forbidden
        for (size_t j = i + 1; j < patterns.size(); ++j)
          if (automata_intersect(patterns[i].automaton, patterns[j].automaton, "patternProperties", ptr))
            unsupported("patternProperties", patterns[j].ptr, "patterns that may match the same key cannot be enforced");
        for (const std::string& k : named_keys)
          if (automaton_matches(patterns[i].automaton, k))
            unsupported("patternProperties", patterns[i].ptr, "a pattern matching a listed property ('" + k + "') cannot be enforced");
        alts.push_back(Expr::seq({string_value(json{{"pattern", patterns[i].source}}, patterns[i].ptr), ws(), Expr::literal(":"), ws(),
                                  value(*patterns[i].schema, patterns[i].ptr), ws()}));
      }
      if (!alts.empty()) {
        member = new_rule("pattern-member");
        ir.define(member, alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts)));
      }
    } else if (names && addl_allowed) {
      // Keys valid against propertyNames: none is a listed key (else one could repeat).
      for (const std::string& k : named_keys)
        if (names_grammar && grammar_accepts(names_grammar, json(k).dump()))
          unsupported("propertyNames", ptr + "/propertyNames", "'" + k + "' is listed and a valid name, so an extra key could repeat it");
      if (names_grammar) {
        member = new_rule("named-member");
        ir.define(member, Expr::seq({value(*names, ptr + "/propertyNames"), ws(), Expr::literal(":"), ws(),
                                     value(*addl, ptr + "/additionalProperties"), ws()}));
      }
    } else if (addl_allowed) {
      std::vector<std::u32string> taken;
      for (const std::string& k : named_keys) taken.push_back(code_points(k));
      member = new_rule("extra-member");
      ir.define(member, Expr::seq({key_except(taken), ws(), Expr::literal(":"), ws(), value(*addl, ptr + "/additionalProperties"), ws()}));
    }

    // Counting members for minProperties / maxProperties: c members written so far, kept up to
    // `cap` (past it the count no longer matters); c == 0 also means no comma before the next.
    const int min_props = count(s, "minProperties", ptr, 0);
    const int max_props = count(s, "maxProperties", ptr, kUnbounded);
    const int cap = max_props != kUnbounded ? max_props : std::max(min_props, 1);
    auto next_count = [&](int c) { return max_props != kUnbounded ? (c + 1 > max_props ? -1 : c + 1) : std::min(c + 1, cap); };
    const Expr comma = Expr::seq({Expr::literal(","), ws()});
    auto extras = [&](int c) -> Expr {
      const int need = std::max(min_props - c, 0);
      const int room = max_props != kUnbounded ? max_props - c : kUnbounded;
      if (member < 0 || room == 0) return need == 0 ? Expr::seq() : Expr::cls({});
      if (c > 0) return Expr::repeat(Expr::seq({comma, Expr::ref(member)}), need, room);
      Expr list = Expr::seq({Expr::ref(member), Expr::repeat(Expr::seq({comma, Expr::ref(member)}), std::max(need - 1, 0),
                                                             room == kUnbounded ? kUnbounded : room - 1)});
      return need > 0 ? std::move(list) : Expr::opt(std::move(list));
    };
    // tail[i][c]: the members from property i on, with c written before.
    const size_t n = props.size();
    std::vector<std::vector<int>> tail(n + 1);
    for (size_t i = n + 1; i-- > 0;) {
      const int top = std::min(int(i), cap);
      tail[i].resize(size_t(top) + 1);
      const Expr kv = i < n ? Expr::seq({Expr::literal(json(props[i].key).dump()), ws(), Expr::literal(":"), ws(),
                                         value(*props[i].schema, props[i].ptr), ws()})
                            : Expr::seq();
      for (int c = 0; c <= top; ++c) {
        const int id = tail[i][size_t(c)] = new_rule("members");
        if (i == n) {
          ir.define(id, extras(c));
          continue;
        }
        std::vector<Expr> alts;
        if (const int nc = next_count(c); nc >= 0)
          alts.push_back(Expr::seq({c == 0 ? Expr::seq() : comma, kv, Expr::ref(tail[i + 1][size_t(nc)])}));
        if (!props[i].required) alts.push_back(Expr::ref(tail[i + 1][size_t(c)]));
        ir.define(id, alts.empty() ? Expr::cls({}) : alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts)));
      }
    }
    return Expr::seq({Expr::literal("{"), ws(), Expr::ref(tail[0][0]), Expr::literal("}")});
  }

  // The values `s` allows when they are few and have one spelling each (an enum or const, maybe
  // narrowed by type; boolean; null); nullopt otherwise.
  std::optional<std::vector<json>> finite_values(const json& s0, const std::string& ptr) {
    if (!s0.is_object()) return std::nullopt;
    const json s = expand_ref(s0, ptr);
    if (!s.is_object()) return std::nullopt;
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!is_annotation(it.key()) && it.key() != "type" && it.key() != "enum" && it.key() != "const") return std::nullopt;
    unsigned types = kAllTypes;
    if (s.contains("type")) types = possible_types(json{{"type", s["type"]}}, ptr);
    std::vector<json> list;
    if (s.contains("const")) {
      list.push_back(s["const"]);
    } else if (s.contains("enum") && s["enum"].is_array()) {
      list.assign(s["enum"].begin(), s["enum"].end());
    } else if ((types & ~(kBool | kNull)) == 0) {
      if (types & kBool) list = {json(true), json(false)};
      if (types & kNull) list.push_back(json(nullptr));
    } else {
      return std::nullopt;
    }
    if (int(list.size()) > 64) return std::nullopt;  // ordered subsets: one rule per (value, count)
    std::vector<json> out;
    for (const json& v : list)
      if ((value_type(v) & types) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    return out;
  }

  // Arrays of distinct values from `values`, in their order (so none repeats), with a count in
  // [min_items, max_items].
  Expr unique_items(const std::vector<json>& values, int min_items, int max_items) {
    const Expr comma = Expr::seq({Expr::literal(","), ws()});
    const size_t k = values.size();
    const int cap = max_items != kUnbounded ? max_items : std::max(min_items, 1);
    std::vector<std::vector<int>> tail(k + 1);  // tail[i][c]: values from i on, c written before
    for (size_t i = k + 1; i-- > 0;) {
      tail[i].resize(size_t(std::min(int(i), cap)) + 1);
      for (int c = 0; c < int(tail[i].size()); ++c) {
        const int id = tail[i][size_t(c)] = new_rule("unique-items");
        if (i == k) {
          ir.define(id, c >= min_items ? Expr::seq() : Expr::cls({}));
          continue;
        }
        std::vector<Expr> alts;
        const int nc = max_items != kUnbounded ? c + 1 : std::min(c + 1, cap);
        if (max_items == kUnbounded || c + 1 <= max_items)
          alts.push_back(Expr::seq({c == 0 ? Expr::seq() : comma, Expr::literal(values[i].dump()), ws(), Expr::ref(tail[i + 1][size_t(nc)])}));
        alts.push_back(Expr::ref(tail[i + 1][size_t(c)]));
        ir.define(id, alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts)));
      }
    }
    return Expr::seq({Expr::literal("["), ws(), Expr::ref(tail[0][0]), Expr::literal("]")});
  }

  Expr array_value(const json& s, const std::string& ptr) {
    if (s.contains("contains")) unsupported("contains", ptr, "cannot be enforced");
    std::vector<std::pair<const json*, std::string>> prefix;
    static const json kTrue = true;
    const json* rest = &kTrue;
    std::string rest_ptr = ptr;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) error("prefixItems", ptr, "must be an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) prefix.emplace_back(&s["prefixItems"][i], ptr + "/prefixItems/" + std::to_string(i));
      if (s.contains("items")) {
        rest = &s["items"];
        rest_ptr = ptr + "/items";
      }
    } else if (s.contains("items") && s["items"].is_array()) {  // draft-07 tuples
      for (size_t i = 0; i < s["items"].size(); ++i) prefix.emplace_back(&s["items"][i], ptr + "/items/" + std::to_string(i));
      if (s.contains("additionalItems")) {
        rest = &s["additionalItems"];
        rest_ptr = ptr + "/additionalItems";
      }
    } else if (s.contains("items")) {
      rest = &s["items"];
      rest_ptr = ptr + "/items";
    }
    const int min_items = count(s, "minItems", ptr, 0);
    int max_items = count(s, "maxItems", ptr, kUnbounded);
    const bool rest_allowed = !(rest->is_boolean() && !rest->get<bool>());
    if (!rest_allowed) max_items = max_items == kUnbounded ? int(prefix.size()) : std::min(max_items, int(prefix.size()));
    if (max_items != kUnbounded && max_items < min_items) return Expr::cls({});
    const Expr comma = Expr::seq({Expr::literal(","), ws()});
    if (s.contains("uniqueItems") && s["uniqueItems"] == true && (max_items == kUnbounded || max_items > 1)) {
      if (!prefix.empty()) unsupported("uniqueItems", ptr, "with prefixItems cannot be enforced");
      if (auto values = finite_values(*rest, rest_ptr)) return unique_items(*values, min_items, max_items);
      unsupported("uniqueItems", ptr, "enforced only when the items are from an enum, const, boolean or null");
    }

    // Items from position k on; k == 0 writes no comma first.
    Expr tail;
    const int p = int(prefix.size());
    if (rest_allowed && (max_items == kUnbounded || max_items > p)) {
      const int item = new_rule("item");
      ir.define(item, Expr::seq({value(*rest, rest_ptr), ws()}));
      const int need = std::max(min_items - p, 0);
      const int more = max_items == kUnbounded ? kUnbounded : max_items - p;
      if (p == 0) {
        Expr list = Expr::seq({Expr::ref(item), Expr::repeat(Expr::seq({comma, Expr::ref(item)}), std::max(need - 1, 0),
                                                             more == kUnbounded ? kUnbounded : more - 1)});
        tail = need > 0 ? std::move(list) : Expr::opt(std::move(list));
      } else {
        tail = Expr::repeat(Expr::seq({comma, Expr::ref(item)}), need, more);
      }
    } else {
      tail = Expr::seq();
    }
    for (int k = std::min(p, max_items == kUnbounded ? p : max_items); k-- > 0;) {
      Expr with = Expr::seq({k == 0 ? Expr::seq() : comma, value(*prefix[size_t(k)].first, prefix[size_t(k)].second), ws(),
                             std::move(tail)});
      tail = k < min_items ? std::move(with) : Expr::opt(std::move(with));
      const int r = new_rule("items");  // keeps each level's expression a rule of its own
      ir.define(r, std::move(tail));
      tail = Expr::ref(r);
    }
    return Expr::seq({Expr::literal("["), ws(), std::move(tail), Expr::literal("]")});
  }
};

JsonSchemaCompiler::JsonSchemaCompiler(GrammarIR& ir, const json& document, JsonSchemaOptions options)
    : impl_(std::make_shared<Impl>(Impl{ir, document, options, {}, -1, 0, 0, {}})) {}

int JsonSchemaCompiler::value_rule(const std::string& pointer) {
  const std::string ref = "#" + pointer;
  return impl_->ref_rule(ref, pointer);
}

int JsonSchemaCompiler::any_value_rule() { return impl_->any_value(); }

GrammarIR json_schema_to_grammar(const json& schema, const JsonSchemaOptions& options) {
  GrammarIR ir;
  JsonSchemaCompiler c(ir, schema, options);
  const int value = c.value_rule("");
  ir.root = ir.rule("root");
  ir.define(ir.root, Expr::ref(value));
  return ir;
}

GrammarIR json_schema_text_to_grammar(std::string_view text, const JsonSchemaOptions& options) {
  return json_schema_to_grammar(parse_json_limited<json>(text), options);
}

}  // namespace qwen35::grammar
