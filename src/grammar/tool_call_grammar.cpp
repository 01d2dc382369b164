#include "grammar/tool_call_grammar.h"

#include "core/error.h"
#include "grammar/json_schema.h"

#include <set>

namespace qwen35::grammar {
namespace {

using json = nlohmann::ordered_json;

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// Text without "</": runs of '<' are followed by anything but '/' or '<', or end the value.
Expr raw_text() {
  const Expr other = Expr::cls({{'<', '<'}}, true);
  const Expr lt = Expr::literal("<");
  return Expr::seq({Expr::star(Expr::alt({other, Expr::seq({Expr::plus(lt), Expr::cls({{'<', '<'}, {'/', '/'}}, true)})})),
                    Expr::star(lt)});
}

// minLength / maxLength of a raw string parameter (`dflt` when absent; a maximum past what we
// unroll is no bound).
int raw_length(const json& ps, const char* kw, const std::string& param, int dflt) {
  if (!ps.contains(kw)) return dflt;
  const json& v = ps[kw];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw SchemaError(kw, "/properties/" + pointer_escape(param), "must be a non-negative integer");
  const uint64_t n = v.get<uint64_t>();
  if (n > 4096) {
    if (dflt == kUnbounded) return kUnbounded;
    throw SchemaError(kw, "/properties/" + pointer_escape(param), "over 4096 is not supported");
  }
  return int(n);
}

}  // namespace

GrammarIR tool_call_grammar(const json& tools, const std::string& only, bool parallel) {
  if (!tools.is_array() || tools.empty()) fail("tools: no tools to call");
  GrammarIR ir;
  std::vector<Expr> functions;
  for (size_t ti = 0; ti < tools.size(); ++ti) {
    const json& t = tools[ti];
    const json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) fail("tools[", ti, "]: no function name");
    const std::string name = fn["name"].get<std::string>();
    if (!only.empty() && name != only) continue;
    if (name.empty() || name.find_first_of("<>\n") != std::string::npos)
      fail("tools[", ti, "]: a function name with '<', '>' or a newline cannot be called");
    const json params = fn.contains("parameters") ? fn["parameters"] : json::object();
    JsonSchemaOptions opt;
    opt.strict = fn.contains("strict") && fn["strict"].is_boolean() && fn["strict"].get<bool>();
    const std::string at = "/tools/" + std::to_string(ti) + "/function/parameters";
    std::vector<Expr> members;
    std::vector<bool> required;
    try {
      JsonSchemaCompiler compiler(ir, params, opt);
      if (!params.is_object()) throw SchemaError("parameters", "", "must be an object schema");
      std::set<std::string> req;
      if (params.contains("required") && params["required"].is_array())
        for (const json& r : params["required"])
          if (r.is_string()) req.insert(r.get<std::string>());
      if (params.contains("properties") && params["properties"].is_object()) {
        for (auto it = params["properties"].begin(); it != params["properties"].end(); ++it) {
          const std::string& p = it.key();
          if (p.empty() || p.find_first_of("<>\n") != std::string::npos)
            throw SchemaError("properties", "/properties/" + pointer_escape(p), "a parameter name with '<', '>' or a newline");
          const json& ps = it.value();
          Expr value;
          if (ps.is_object() && ps.contains("type") && ps["type"] == "string") {
            if (ps.contains("enum") && ps["enum"].is_array()) {
              std::vector<Expr> alts;
              for (const json& v : ps["enum"])
                if (v.is_string() && v.get<std::string>().find("</") == std::string::npos) alts.push_back(Expr::literal(v.get<std::string>()));
              value = alts.empty() ? Expr::cls({}) : Expr::alt(std::move(alts));
            } else if (ps.contains("const") && ps["const"].is_string() && ps["const"].get<std::string>().find("</") == std::string::npos) {
              value = Expr::literal(ps["const"].get<std::string>());
            } else {
              for (const char* kw : {"pattern", "format", "const"})
                if (ps.contains(kw) && opt.strict)
                  throw SchemaError(kw, "/properties/" + pointer_escape(p), "not enforced on a raw string parameter");
              const int lo = raw_length(ps, "minLength", p, 0), hi = raw_length(ps, "maxLength", p, kUnbounded);
              // A length counts code points; without '<' no "</" can end the value early, and within
              // the BMP JavaScript's UTF-16 length agrees (json_schema.h).
              value = lo == 0 && hi == kUnbounded ? raw_text() : Expr::repeat(Expr::cls({{0, '<' - 1}, {'<' + 1, 0xFFFF}}), lo, hi);
            }
          } else {
            value = Expr::ref(compiler.value_rule("/properties/" + pointer_escape(p)));
          }
          members.push_back(Expr::seq({Expr::literal("<parameter=" + p + ">\n"), std::move(value), Expr::literal("\n</parameter>\n")}));
          required.push_back(req.count(p) > 0);
          req.erase(p);
        }
      }
      if (!req.empty()) throw SchemaError("required", "", "'" + *req.begin() + "' is required but not in properties");
    } catch (const SchemaError& e) {
      throw SchemaError(e.keyword(), at + e.pointer(), e.why());
    }
    // Optional parameters may be left out; the order stays that of `properties`.
    Expr tail = Expr::seq();
    for (size_t i = members.size(); i-- > 0;) {
      Expr with = Expr::seq({std::move(members[i]), tail});
      tail = required[i] ? std::move(with) : Expr::alt({std::move(with), std::move(tail)});
      // Each step a rule: an optional's two branches share the rest instead of copying it.
      const int r = ir.fresh("params");
      ir.define(r, std::move(tail));
      tail = Expr::ref(r);
    }
    functions.push_back(Expr::seq({Expr::literal(name + ">\n"), std::move(tail)}));
  }
  if (functions.empty()) fail("tools: no function named '", only, "'");
  const int call = ir.fresh("tool-call");
  ir.define(call, Expr::seq({Expr::literal(std::string(kToolCallOpen) + "\n<function="), Expr::alt(std::move(functions)),
                             Expr::literal("</function>\n</tool_call>")}));
  ir.root = ir.rule("root");
  ir.define(ir.root, parallel ? Expr::seq({Expr::ref(call), Expr::star(Expr::seq({Expr::literal("\n"), Expr::ref(call)}))})
                              : Expr::ref(call));
  return ir;
}

}  // namespace qwen35::grammar
