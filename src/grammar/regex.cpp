#include "grammar/regex.h"

#include "core/error.h"
#include "text/utf8.h"

namespace qwen35::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

const Ranges kDigit{{'0', '9'}};
const Ranges kWord{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kLineTerminators{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

Ranges complement(const Ranges& r) { return normalize_ranges(r, true); }

struct Parser {
  std::string_view s;
  const RegexLimits& lim;
  size_t p = 0;
  int depth = 0;

  [[noreturn]] void error(const std::string& what) const { fail("pattern: ", what, " at offset ", p); }
  bool at_end() const { return p >= s.size(); }
  char peek() const { return at_end() ? '\0' : s[p]; }

  uint32_t utf8() {
    char32_t cp = 0;
    const size_t n = utf8::decode(s.substr(p), &cp);
    if (n == 0) error("ill-formed UTF-8");
    p += n;
    return uint32_t(cp);
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      const char c = peek();
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) error("expected a hexadecimal digit");
      v = v * 16 + uint32_t(d);
      ++p;
    }
    return v;
  }

  // After a backslash: a class escape fills `cls` and returns true; a character escape sets `cp`.
  bool escape(Ranges& cls, uint32_t& cp, bool in_class) {
    if (at_end()) error("a pattern cannot end with a backslash");
    const char c = s[p++];
    switch (c) {
      case 'd': cls = kDigit; return true;
      case 'D': cls = complement(kDigit); return true;
      case 'w': cls = kWord; return true;
      case 'W': cls = complement(kWord); return true;
      case 's': cls = kSpace; return true;
      case 'S': cls = complement(kSpace); return true;
      case 'n': cp = '\n'; return false;
      case 'r': cp = '\r'; return false;
      case 't': cp = '\t'; return false;
      case 'f': cp = '\f'; return false;
      case 'v': cp = '\v'; return false;
      case '0': cp = 0; return false;
      case 'x': cp = hex(2); return false;
      case 'u':
        if (peek() == '{') {
          ++p;
          cp = 0;
          int n = 0;
          while (peek() != '}') {
            cp = cp * 16 + hex(1);
            if (++n > 6 || cp > kMaxCodepoint) error("\\u{...} out of range");
          }
          ++p;
        } else {
          cp = hex(4);
        }
        return false;
      case 'b':
        if (in_class) {
          cp = '\b';
          return false;
        }
        error("\\b (word boundary) is not supported");
      case 'B': error("\\B is not supported");
      case 'k': error("named backreferences are not supported");
      case 'c': error("\\c control escapes are not supported");
      default:
        if (c >= '1' && c <= '9') error("backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) error(std::string("unknown escape \\") + c);
        --p;
        cp = utf8();
        return false;
    }
  }

  Expr char_class() {
    ++p;  // [
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++p;
    }
    Ranges out;
    bool first = true;
    while (first || peek() != ']') {
      first = false;
      if (at_end()) error("unterminated character class");
      Ranges cls;
      uint32_t lo = 0;
      bool is_class = false;
      if (peek() == '\\') {
        ++p;
        is_class = escape(cls, lo, true);
      } else {
        lo = utf8();
      }
      if (is_class) {
        out.insert(out.end(), cls.begin(), cls.end());
        continue;
      }
      uint32_t hi = lo;
      if (peek() == '-' && p + 1 < s.size() && s[p + 1] != ']') {
        ++p;
        if (peek() == '\\') {
          ++p;
          if (escape(cls, hi, true)) error("a class escape cannot end a range");
        } else {
          hi = utf8();
        }
        if (hi < lo) error("character range out of order");
      }
      out.emplace_back(lo, hi);
    }
    ++p;  // ]
    return Expr::cls(std::move(out), negated);
  }

  int number() {
    if (!(peek() >= '0' && peek() <= '9')) error("expected a number");
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > lim.max_repeat) error(str("a repetition count over ", lim.max_repeat));
      ++p;
    }
    return int(v);
  }

  Expr atom() {
    const char c = peek();
    if (c == '(') {
      ++p;
      if (peek() == '?') {
        ++p;
        if (peek() != ':') error("lookaround and named groups are not supported");
        ++p;
      }
      if (++depth > lim.max_depth) error("groups nested too deep");
      Expr e = alternation();
      if (peek() != ')') error("expected ')'");
      ++p;
      --depth;
      return e;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++p;
      return Expr::cls(kLineTerminators, true);
    }
    if (c == '\\') {
      ++p;
      Ranges cls;
      uint32_t cp = 0;
      if (escape(cls, cp, false)) return Expr::cls(std::move(cls));
      return Expr::cls({{cp, cp}});
    }
    if (c == '^' || c == '$') error("anchors are supported only at the start and the end");
    if (c == '*' || c == '+' || c == '?' || c == '{') error("nothing to repeat");
    const uint32_t cp = utf8();
    return Expr::cls({{cp, cp}});
  }

  Expr quantified() {
    Expr e = atom();
    for (;;) {
      const char c = peek();
      int lo = 0, hi = 0;
      if (c == '*') {
        lo = 0;
        hi = kUnbounded;
        ++p;
      } else if (c == '+') {
        lo = 1;
        hi = kUnbounded;
        ++p;
      } else if (c == '?') {
        lo = 0;
        hi = 1;
        ++p;
      } else if (c == '{' && p + 1 < s.size() && s[p + 1] >= '0' && s[p + 1] <= '9') {
        ++p;
        lo = hi = number();
        if (peek() == ',') {
          ++p;
          hi = peek() == '}' ? kUnbounded : number();
        }
        if (peek() != '}') error("expected '}'");
        ++p;
        if (hi != kUnbounded && hi < lo) error("a repetition {m,n} with n < m");
      } else {
        return e;
      }
      if (peek() == '?') ++p;  // lazy: the same strings
      e = Expr::repeat(std::move(e), lo, hi);
    }
  }

  Expr sequence() {
    std::vector<Expr> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && p + 1 == s.size()) break;
      items.push_back(quantified());
    }
    return Expr::seq(std::move(items));
  }

  Expr alternation() {
    std::vector<Expr> alts{sequence()};
    while (peek() == '|') {
      ++p;
      alts.push_back(sequence());
    }
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }
};

}  // namespace

Expr regex_to_expr(std::string_view pattern, const RegexLimits& limits) {
  if (pattern.size() > limits.max_bytes) fail("pattern: longer than ", limits.max_bytes, " bytes");
  Parser ps{pattern, limits};
  const bool start = ps.peek() == '^';
  if (start) ++ps.p;
  Expr body = ps.alternation();
  bool end = false;
  if (ps.peek() == '$' && ps.p + 1 == pattern.size()) {
    end = true;
    ++ps.p;
  }
  if (!ps.at_end()) ps.error(ps.peek() == ')' ? "unbalanced ')'" : "unexpected character");
  std::vector<Expr> parts;
  if (!start) parts.push_back(Expr::star(Expr::any_char()));
  parts.push_back(std::move(body));
  if (!end) parts.push_back(Expr::star(Expr::any_char()));
  return Expr::seq(std::move(parts));
}

namespace {

// The JSON spelling of one code point that must be escaped.
std::string json_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: {
      static const char* hex = "0123456789abcdef";
      return std::string("\\u00") + hex[cp >> 4] + hex[cp & 15];
    }
  }
}

bool needs_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

}  // namespace

Expr json_string_chars(const Expr& x) {
  switch (x.kind) {
    case Expr::Kind::kLiteral: {
      // Literals are UTF-8; only ASCII bytes can need an escape.
      std::string out;
      for (char c : x.bytes) {
        if (needs_escape(uint8_t(c)))
          out += json_escape(uint8_t(c));
        else
          out += c;
      }
      return Expr::literal(out);
    }
    case Expr::Kind::kClass: {
      Ranges plain;
      std::vector<Expr> alts;
      for (auto [lo, hi] : x.ranges) {
        for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x5C); ++c) {
          if (needs_escape(c))
            alts.push_back(Expr::literal(json_escape(c)));
          else
            plain.emplace_back(c, c);
        }
        if (hi > 0x5C) plain.emplace_back(std::max<uint32_t>(lo, 0x5D), hi);
      }
      if (!plain.empty()) alts.insert(alts.begin(), Expr::cls(std::move(plain)));
      if (alts.empty()) return Expr::cls({});
      return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
    }
    case Expr::Kind::kRef: fail("pattern: internal: a reference in a string pattern");
    default: {
      Expr out = x;
      for (Expr& k : out.kids) k = json_string_chars(k);
      return out;
    }
  }
}

}  // namespace qwen35::grammar
