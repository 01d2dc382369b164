#include "grammar/gbnf.h"

#include "core/error.h"
#include "text/utf8.h"

namespace qwen35::grammar {
namespace {

struct Parser {
  std::string_view s;
  const GbnfLimits& lim;
  size_t p = 0;
  int depth = 0;
  GrammarIR ir;

  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("grammar: line ", line, ", column ", col, ": ", what);
  }

  bool at_end() const { return p >= s.size(); }
  char peek() const { return at_end() ? '\0' : s[p]; }

  void space(bool newlines) {
    while (!at_end()) {
      const char c = s[p];
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++p;
      } else if (c == '#') {
        while (!at_end() && s[p] != '\n') ++p;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  std::string name() {
    const size_t b = p;
    while (!at_end() && name_char(s[p])) ++p;
    if (p == b) error("expected a rule name");
    return std::string(s.substr(b, p - b));
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) error("expected a hexadecimal digit");
      v = v * 16 + uint32_t(d);
      ++p;
    }
    return v;
  }

  // One UTF-8 character or escape.
  uint32_t character() {
    if (at_end()) error("unexpected end of grammar");
    const unsigned char c = uint8_t(s[p]);
    if (c == '\\') {
      ++p;
      const char e = peek();
      ++p;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^': return uint32_t(e);
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        default: --p; error("unknown escape");
      }
    }
    char32_t cp = 0;
    const size_t n = utf8::decode(s.substr(p), &cp);
    if (n == 0) error("ill-formed UTF-8");
    p += n;
    return uint32_t(cp);
  }

  int number() {
    if (!(peek() >= '0' && peek() <= '9')) error("expected a number");
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > lim.max_repeat) error(str("repetition count over ", lim.max_repeat));
      ++p;
    }
    return int(v);
  }

  Expr primary() {
    const char c = peek();
    if (c == '"') {
      ++p;
      std::string bytes;
      while (peek() != '"') {
        if (at_end() || peek() == '\n') error("unterminated literal");
        const uint32_t cp = character();
        if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) error("not a Unicode scalar value");
        utf8::append(bytes, cp);
      }
      ++p;
      return Expr::literal(std::move(bytes));
    }
    if (c == '[') {
      ++p;
      bool negated = false;
      if (peek() == '^') {
        negated = true;
        ++p;
      }
      std::vector<std::pair<uint32_t, uint32_t>> ranges;
      while (peek() != ']') {
        if (at_end()) error("unterminated character class");
        const uint32_t lo = character();
        uint32_t hi = lo;
        if (peek() == '-' && p + 1 < s.size() && s[p + 1] != ']') {
          ++p;
          hi = character();
          if (hi < lo) error("character range out of order");
        }
        ranges.emplace_back(lo, hi);
      }
      ++p;
      return Expr::cls(std::move(ranges), negated);
    }
    if (c == '.') {
      ++p;
      return Expr::any_char();
    }
    if (c == '(') {
      ++p;
      if (++depth > lim.max_depth) error("parentheses nested too deep");
      space(true);
      Expr e = alternatives(true);
      if (peek() != ')') error("expected ')'");
      ++p;
      --depth;
      return e;
    }
    if (name_char(c)) return Expr::ref(ir.rule(name()));
    error(at_end() ? "unexpected end of grammar" : "unexpected character");
  }

  Expr item() {
    Expr e = primary();
    for (;;) {
      const char c = peek();
      if (c == '*') {
        e = Expr::star(std::move(e));
      } else if (c == '+') {
        e = Expr::plus(std::move(e));
      } else if (c == '?') {
        e = Expr::opt(std::move(e));
      } else if (c == '{') {
        ++p;
        space(false);
        const int m = number();
        space(false);
        int n = m;
        if (peek() == ',') {
          ++p;
          space(false);
          n = peek() == '}' ? kUnbounded : number();
          space(false);
        }
        if (peek() != '}') error("expected '}'");
        if (n != kUnbounded && n < m) error("repetition {m,n} with n < m");
        e = Expr::repeat(std::move(e), m, n);
      } else {
        break;
      }
      ++p;
    }
    return e;
  }

  // A sequence stops at '|', ')', the end, or (outside parentheses) the end of the line.
  Expr sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      space(nested);
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') break;
      items.push_back(item());
    }
    return items.size() == 1 ? std::move(items[0]) : Expr::seq(std::move(items));
  }

  Expr alternatives(bool nested) {
    std::vector<Expr> alts;
    alts.push_back(sequence(nested));
    while (peek() == '|') {
      ++p;
      space(true);
      alts.push_back(sequence(nested));
    }
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  void rules() {
    for (;;) {
      space(true);
      if (at_end()) break;
      const std::string n = name();
      space(false);
      if (s.substr(p, 3) != "::=") error("expected '::='");
      p += 3;
      space(true);
      const int id = ir.rule(n);
      if (ir.defined[size_t(id)]) error("rule '" + n + "' defined twice");
      ir.define(id, alternatives(false));
      if (!at_end() && peek() != '\n' && peek() != '\r') error("unexpected character");
    }
  }
};

}  // namespace

GrammarIR parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  if (text.size() > limits.max_bytes) fail("grammar: longer than ", limits.max_bytes, " bytes");
  Parser ps{text, limits};
  ps.rules();
  ps.ir.root = ps.ir.find("root");
  if (ps.ir.root < 0) fail("grammar: no rule named 'root'");
  for (size_t i = 0; i < ps.ir.names.size(); ++i)
    if (!ps.ir.defined[i]) fail("grammar: rule '", ps.ir.names[i], "' is used but never defined");
  return std::move(ps.ir);
}

}  // namespace qwen35::grammar
