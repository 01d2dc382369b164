#include "grammar/number_range.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace qwen35::grammar {
namespace {

Expr digits(int lo, int hi) { return Expr::repeat(Expr::cls({{'0', '9'}}), lo, hi); }

Expr alt_or_one(std::vector<Expr> alts) {
  if (alts.empty()) return Expr::cls({});
  return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
}

// Equal-length decimal strings x <= y: every string between them.
Expr same_length_range(const std::string& x, const std::string& y) {
  if (x.empty()) return Expr::seq();
  if (x == y) return Expr::literal(x);
  size_t i = 0;
  while (x[i] == y[i]) ++i;
  const std::string prefix = x.substr(0, i), xs = x.substr(i + 1), ys = y.substr(i + 1);
  const char dx = x[i], dy = y[i];
  const int rest = int(xs.size());
  std::vector<Expr> alts;
  if (xs == std::string(size_t(rest), '0') && ys == std::string(size_t(rest), '9')) {
    alts.push_back(Expr::seq({Expr::cls({{uint32_t(dx), uint32_t(dy)}}), digits(rest, rest)}));
  } else {
    alts.push_back(Expr::seq({Expr::literal(std::string(1, dx)), same_length_range(xs, std::string(size_t(rest), '9'))}));
    if (dy - dx > 1) alts.push_back(Expr::seq({Expr::cls({{uint32_t(dx + 1), uint32_t(dy - 1)}}), digits(rest, rest)}));
    alts.push_back(Expr::seq({Expr::literal(std::string(1, dy)), same_length_range(std::string(size_t(rest), '0'), ys)}));
  }
  return Expr::seq({Expr::literal(prefix), alt_or_one(std::move(alts))});
}

// Every non-negative integer in [a, b] in its canonical decimal form, each followed by
// suffix(its digit count).
Expr nonneg_range(uint64_t a, uint64_t b, const std::function<Expr(size_t)>& suffix = nullptr) {
  std::vector<Expr> alts;
  const size_t la = std::to_string(a).size(), lb = std::to_string(b).size();
  uint64_t p = 1;
  for (size_t l = 1; l < la; ++l) p *= 10;
  for (size_t l = la; l <= lb; ++l, p *= 10) {
    const uint64_t lo = std::max(a, l == 1 ? uint64_t(0) : p), hi = std::min(b, p * 10 - 1);
    if (lo > hi) continue;
    Expr e = same_length_range(std::to_string(lo), std::to_string(hi));
    alts.push_back(suffix ? Expr::seq({std::move(e), suffix(l)}) : std::move(e));
  }
  return alt_or_one(std::move(alts));
}

// A non-negative decimal as its integer digits (no leading zeros; "0") and fraction digits (no
// trailing zeros).
struct Decimal {
  std::string int_digits = "0", frac;
  bool exclusive = false;
};

// |v| in the shortest form that reads back as the same double.
Decimal decimal_of(double v, bool exclusive) {
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), std::fabs(v), std::chars_format::scientific);
  const std::string s(buf.data(), r.ptr);  // d[.ddd]e[+-]xx
  const size_t e_at = s.find('e');
  std::string mant;
  for (size_t i = 0; i < e_at; ++i)
    if (s[i] != '.') mant += s[i];
  const int exp = std::stoi(s.substr(e_at + 1));
  Decimal d;
  d.exclusive = exclusive;
  if (exp >= 0) {
    if (mant.size() < size_t(exp) + 1) mant.resize(size_t(exp) + 1, '0');
    d.int_digits = mant.substr(0, size_t(exp) + 1);
    d.frac = mant.substr(size_t(exp) + 1);
  } else {
    d.frac = std::string(size_t(-exp - 1), '0') + mant;
  }
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size() - 1));
  d.frac.erase(d.frac.find_last_not_of('0') + 1);
  return d;
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.int_digits.size() != b.int_digits.size()) return a.int_digits.size() < b.int_digits.size() ? -1 : 1;
  if (int c = a.int_digits.compare(b.int_digits)) return c < 0 ? -1 : 1;
  if (int c = a.frac.compare(b.frac)) return c < 0 ? -1 : 1;  // no trailing zeros: a prefix is smaller
  return 0;
}

// A bound on the digits still to come of a fraction, compared as 0.ddd... with the rest of the
// bound's digits; nullopt once an earlier digit settled the comparison.
struct FracBound {
  std::string digits;
  bool exclusive;
};

// Fraction digit strings of length <= n (the empty one only when `allow_empty`) with
// lo <= 0.f <= hi (strictly where exclusive); nullopt when there is none.
std::optional<Expr> fraction(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi, int n, bool allow_empty) {
  // An inclusive lower bound of 0.000... holds for every rest.
  std::optional<FracBound> l = lo;
  if (l && !l->exclusive && l->digits.find_first_not_of('0') == std::string::npos) l.reset();
  if (!l && !hi) {
    if (n == 0 && !allow_empty) return std::nullopt;
    return digits(allow_empty ? 0 : 1, n);
  }
  // The empty rest reads as 0: below a non-zero lower bound, above a zero upper bound that is exclusive.
  const bool hi_zero = hi && hi->digits.find_first_not_of('0') == std::string::npos;
  const bool empty_ok = allow_empty && !l && !(hi_zero && hi->exclusive);
  std::vector<Expr> alts;
  if (empty_ok) alts.push_back(Expr::seq());
  if (n > 0) {
    // The next digit either settles a bound (free), follows it (the bound goes on) or breaks it.
    enum Next { kFree, kFollow, kBreak };
    auto step = [](const std::optional<FracBound>& b, int d, bool lower) {
      if (!b) return kFree;
      const int bd = b->digits.empty() ? 0 : b->digits[0] - '0';
      if (d == bd) return kFollow;
      return (lower ? d > bd : d < bd) ? kFree : kBreak;
    };
    auto rest = [](const std::optional<FracBound>& b, Next nx) -> std::optional<FracBound> {
      if (nx == kFree) return std::nullopt;
      return FracBound{b->digits.empty() ? std::string() : b->digits.substr(1), b->exclusive};
    };
    for (int d = 0; d <= 9;) {
      const Next nl = step(l, d, true), nh = step(hi, d, false);
      int e = d;
      while (e + 1 <= 9 && step(l, e + 1, true) == nl && step(hi, e + 1, false) == nh) ++e;
      if (nl != kBreak && nh != kBreak) {
        if (auto tail = fraction(rest(l, nl), rest(hi, nh), n - 1, true))
          alts.push_back(Expr::seq({Expr::cls({{uint32_t('0' + d), uint32_t('0' + e)}}), std::move(*tail)}));
      }
      d = e + 1;
    }
  }
  if (alts.empty()) return std::nullopt;
  return alt_or_one(std::move(alts));
}

// "" or "." and the fraction digits, for a number whose integer part is fixed.
std::optional<Expr> fraction_part(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi, int n) {
  std::vector<Expr> alts;
  if (fraction(lo, hi, 0, true)) alts.push_back(Expr::seq());
  if (auto f = fraction(lo, hi, n, false)) alts.push_back(Expr::seq({Expr::literal("."), std::move(*f)}));
  if (alts.empty()) return std::nullopt;
  return alt_or_one(std::move(alts));
}

Expr any_fraction_part(int n) {
  if (n <= 0) return Expr::seq();
  return Expr::opt(Expr::seq({Expr::literal("."), digits(1, n)}));
}

// Non-negative decimals m with lo <= m <= hi (hi absent: no bound), as written after the sign.
std::optional<Expr> magnitude_range(const Decimal& lo, const std::optional<Decimal>& hi_in) {
  const int max_digits = kMaxDecimalDigits;
  if (int(lo.int_digits.size()) > max_digits) return std::nullopt;
  // A bound past every number we write is no bound.
  const Decimal* hi = hi_in && int(hi_in->int_digits.size()) <= max_digits ? &*hi_in : nullptr;
  if (hi) {
    const int c = compare(lo, *hi);
    if (c > 0 || (c == 0 && (lo.exclusive || hi->exclusive))) return std::nullopt;
  }
  const FracBound flo{lo.frac, lo.exclusive};
  const int lo_room = max_digits - int(lo.int_digits.size());
  std::vector<Expr> alts;
  auto add = [&](const std::string& int_digits, std::optional<Expr> frac) {
    if (frac) alts.push_back(Expr::seq({Expr::literal(int_digits), std::move(*frac)}));
  };
  if (hi && hi->int_digits == lo.int_digits) {
    add(lo.int_digits, fraction_part(flo, FracBound{hi->frac, hi->exclusive}, lo_room));
  } else {
    add(lo.int_digits, fraction_part(flo, std::nullopt, lo_room));
    const uint64_t a = std::stoull(lo.int_digits) + 1;
    const uint64_t b = hi ? std::stoull(hi->int_digits) - 1 : uint64_t(std::pow(10.0, max_digits)) - 1;
    if (a <= b)
      alts.push_back(nonneg_range(a, b, [&](size_t len) { return any_fraction_part(max_digits - int(len)); }));
    if (hi) add(hi->int_digits, fraction_part(std::nullopt, FracBound{hi->frac, hi->exclusive}, max_digits - int(hi->int_digits.size())));
  }
  if (alts.empty()) return std::nullopt;
  return alt_or_one(std::move(alts));
}

}  // namespace

Expr integer_range(int64_t lo, int64_t hi) {
  std::vector<Expr> alts;
  if (lo < 0) {
    const int64_t m_lo = std::max<int64_t>(1, hi < 0 ? -hi : 1), m_hi = -lo;
    if (m_lo <= m_hi) alts.push_back(Expr::seq({Expr::literal("-"), nonneg_range(uint64_t(m_lo), uint64_t(m_hi))}));
  }
  if (hi >= 0) alts.push_back(nonneg_range(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
  return alt_or_one(std::move(alts));
}

Expr decimal_range(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  if ((lo && !std::isfinite(lo->value)) || (hi && !std::isfinite(hi->value))) fail("number bounds must be finite");
  std::vector<Expr> alts;
  // x >= 0, written as its magnitude.
  if (!hi || hi->value >= 0) {
    Decimal m_lo = lo && lo->value >= 0 ? decimal_of(lo->value, lo->exclusive) : Decimal{};
    std::optional<Decimal> m_hi;
    if (hi) m_hi = decimal_of(hi->value, hi->exclusive);
    if (auto e = magnitude_range(m_lo, m_hi)) alts.push_back(std::move(*e));
  }
  // x < 0, written as "-" and m = -x > 0 (so "-0" is never written): -hi <= m <= -lo.
  if (!lo || lo->value < 0) {
    Decimal m_lo = hi && hi->value < 0 ? decimal_of(hi->value, hi->exclusive) : Decimal{"0", "", true};
    std::optional<Decimal> m_hi;
    if (lo) m_hi = decimal_of(lo->value, lo->exclusive);
    if (auto e = magnitude_range(m_lo, m_hi)) alts.push_back(Expr::seq({Expr::literal("-"), std::move(*e)}));
  }
  return alt_or_one(std::move(alts));
}

Expr non_integer_number() {
  return Expr::seq({Expr::opt(Expr::literal("-")),
                    Expr::alt({Expr::literal("0"), Expr::seq({Expr::cls({{'1', '9'}}), digits(0, 15)})}),
                    Expr::literal("."), digits(0, 15), Expr::cls({{'1', '9'}})});
}

}  // namespace qwen35::grammar
