#include "grammar/grammar_ir.h"

#include <algorithm>

#include "core/error.h"

namespace qwen35::grammar {

Expr Expr::seq(std::vector<Expr> kids) {
  Expr e;
  e.kind = Kind::kSeq;
  e.kids = std::move(kids);
  return e;
}

Expr Expr::alt(std::vector<Expr> kids) {
  Expr e;
  e.kind = Kind::kAlt;
  e.kids = std::move(kids);
  return e;
}

Expr Expr::repeat(Expr kid, int min, int max) {
  if (min < 0 || (max != kUnbounded && max < min)) fail("grammar: repetition {", min, ",", max, "} is empty");
  Expr e;
  e.kind = Kind::kRepeat;
  e.min = min;
  e.max = max;
  e.kids.push_back(std::move(kid));
  return e;
}

Expr Expr::literal(std::string utf8) {
  Expr e;
  e.kind = Kind::kLiteral;
  e.bytes = std::move(utf8);
  return e;
}

Expr Expr::cls(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
  Expr e;
  e.kind = Kind::kClass;
  e.ranges = normalize_ranges(std::move(ranges), negated);
  return e;
}

Expr Expr::ref(int rule) {
  Expr e;
  e.kind = Kind::kRef;
  e.rule = rule;
  return e;
}

bool Expr::has_refs() const {
  if (kind == Kind::kRef) return true;
  for (const Expr& k : kids)
    if (k.has_refs()) return true;
  return false;
}

int GrammarIR::rule(const std::string& name) {
  const int id = find(name);
  if (id >= 0) return id;
  names.push_back(name);
  by_name_.emplace(name, int(names.size()) - 1);
  bodies.emplace_back();
  defined.push_back(false);
  return int(names.size()) - 1;
}

int GrammarIR::fresh(const std::string& hint) {
  std::string name = hint;
  int& i = next_suffix_[hint];
  while (find(name) >= 0) name = hint + "-" + std::to_string(++i);
  return rule(name);
}

void GrammarIR::define(int id, Expr body) {
  bodies.at(size_t(id)) = std::move(body);
  defined[size_t(id)] = true;
}

int GrammarIR::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negated) {
  std::vector<std::pair<uint32_t, uint32_t>> in;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCodepoint);
    if (lo > hi) continue;
    // Surrogates have no UTF-8 form: cut them out.
    if (lo < 0xD800 && hi >= 0xD800) {
      in.emplace_back(lo, 0xD7FF);
      if (hi > 0xDFFF) in.emplace_back(0xE000, hi);
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi > 0xDFFF) in.emplace_back(0xE000, hi);
    } else {
      in.emplace_back(lo, hi);
    }
  }
  std::sort(in.begin(), in.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto r : in) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  if (!negated) return merged;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (auto [lo, hi] : merged) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.emplace_back(next, kMaxCodepoint);
  return normalize_ranges(std::move(out), false);
}


}  // namespace qwen35::grammar
