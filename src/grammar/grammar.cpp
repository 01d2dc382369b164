#include "grammar/grammar.h"

#include <functional>
#include <unordered_map>

#include "core/error.h"

namespace qwen35::grammar {
namespace {

struct Lowering {
  const GrammarIR& ir;
  const GrammarLimits& limits;
  Grammar g;
  // rule -> alternatives -> elements (kEnd not yet appended)
  std::vector<std::vector<std::vector<Elem>>> rules;
  std::vector<std::pair<int, const Expr*>> todo;  // rules whose body still has to be lowered
  std::vector<std::unique_ptr<Expr>> owned;       // bodies made during lowering
  int total_states = 0;
  size_t total_elems = 0;
  std::unordered_multimap<size_t, int32_t> by_hash;  // lexeme table hash -> lexeme id
  // The canonical text of a run of parts -> what flush() made of it (a lexeme id, or kDeadRun /
  // kEmptyRun): a schema spells the same runs many times (the same key and value shape in many
  // objects), and building the automaton is the bulk of a compile.
  static constexpr int32_t kDeadRun = -1, kEmptyRun = -2;
  std::unordered_map<std::string, int32_t> by_text;
  std::string key;

  static void append_int(std::string& k, int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); }
  static void canonical(const Expr& x, std::string& k) {
    k += char('0' + int(x.kind));
    switch (x.kind) {
      case Expr::Kind::kLiteral:
        append_int(k, int64_t(x.bytes.size()));
        k += x.bytes;
        break;
      case Expr::Kind::kClass:
        append_int(k, int64_t(x.ranges.size()));
        for (auto [lo, hi] : x.ranges) append_int(k, int64_t(lo) << 32 | hi);
        break;
      case Expr::Kind::kRepeat:
        append_int(k, x.min);
        append_int(k, x.max);
        [[fallthrough]];
      case Expr::Kind::kSeq:
      case Expr::Kind::kAlt:
        append_int(k, int64_t(x.kids.size()));
        for (const Expr& kid : x.kids) canonical(kid, k);
        break;
      case Expr::Kind::kRef:
        append_int(k, x.rule);
        break;
    }
  }

  int new_rule(const std::string& name) {
    if (int(rules.size()) >= limits.max_rules) fail("grammar: more than ", limits.max_rules, " rules");
    rules.emplace_back();
    g.rule_names.push_back(name);
    return int(rules.size()) - 1;
  }

  int rule_for(const Expr& body, const std::string& hint) {
    if (body.kind == Expr::Kind::kRef) return body.rule;
    const int id = new_rule(hint);
    todo.emplace_back(id, &body);
    return id;
  }

  int rule_for_owned(Expr body, const std::string& hint) {
    owned.push_back(std::make_unique<Expr>(std::move(body)));
    return rule_for(*owned.back(), hint);
  }

  void flatten(const Expr& x, std::vector<const Expr*>& items) {
    if (x.kind == Expr::Kind::kSeq) {
      for (const Expr& k : x.kids) flatten(k, items);
    } else {
      items.push_back(&x);
    }
  }

  // False when the run matches nothing at all (the alternative is dead).
  bool flush(std::vector<const Expr*>& pending, std::vector<Elem>& out) {
    if (pending.empty()) return true;
    key.clear();
    append_int(key, int64_t(pending.size()));
    for (const Expr* p : pending) canonical(*p, key);
    if (auto it = by_text.find(key); it != by_text.end()) {
      pending.clear();
      if (it->second == kDeadRun) return false;
      if (it->second != kEmptyRun) out.push_back({Elem::kLexeme, it->second});
      return true;
    }
    Lexeme lx = build_lexeme(pending, limits.lexeme);
    pending.clear();
    const int32_t id = !lx.nonempty() ? kDeadRun : !lx.live[0] ? kEmptyRun : dedup(std::move(lx));
    by_text.emplace(key, id);
    if (id == kDeadRun) return false;
    if (id != kEmptyRun) out.push_back({Elem::kLexeme, id});  // kEmptyRun matches only "": nothing to keep
    return true;
  }

  // The id of `lx`, a new one unless an equal automaton is already stored.
  int32_t dedup(Lexeme lx) {
    // Equal automata are one lexeme (a schema repeats the same value shapes many times): stored,
    // counted against the bound and given token-mask entries once.
    const size_t h = lexeme_hash(lx);
    auto [lo, hi] = by_hash.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      const Lexeme& o = g.lexemes[size_t(it->second)];
      if (o.states == lx.states && o.next == lx.next && o.accepting == lx.accepting) return it->second;
    }
    total_states += lx.states;
    if (total_states > limits.max_total_dfa_states)
      fail("grammar: its lexemes need more than ", limits.max_total_dfa_states, " automaton states");
    const int32_t id = int32_t(g.lexemes.size());
    by_hash.emplace(h, id);
    g.lexemes.push_back(std::move(lx));
    return id;
  }

  static size_t lexeme_hash(const Lexeme& lx) {
    uint64_t h = uint64_t(lx.states) * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < lx.next.size(); i += 61) h = (h ^ uint64_t(uint32_t(lx.next[i]))) * 0x100000001B3ull;  // a sample: equal tables are compared whole
    for (uint8_t a : lx.accepting) h = (h ^ a) * 0x100000001B3ull;
    return size_t(h);
  }

  void add_elem(std::vector<Elem>& out, Elem e) {
    if (++total_elems > size_t(limits.max_elements)) fail("grammar: more than ", limits.max_elements, " elements");
    out.push_back(e);
  }

  // Appends the elements of one alternative; false when it can match nothing.
  bool lower_seq(const Expr& x, int owner, std::vector<Elem>& out) {
    std::vector<const Expr*> items, pending;
    flatten(x, items);
    const std::string hint = g.rule_names[size_t(owner)];  // a copy: new_rule() grows the list
    for (const Expr* it : items) {
      if (!it->has_refs()) {
        pending.push_back(it);
        continue;
      }
      if (!flush(pending, out)) return false;
      switch (it->kind) {
        case Expr::Kind::kRef:
          add_elem(out, {Elem::kRef, it->rule});
          break;
        case Expr::Kind::kAlt:
          add_elem(out, {Elem::kRef, rule_for(*it, hint + "-alt")});
          break;
        case Expr::Kind::kRepeat: {
          const int body = rule_for(it->kids[0], hint + "-item");
          for (int i = 0; i < it->min; ++i) add_elem(out, {Elem::kRef, body});
          if (it->max == kUnbounded) {
            // R ::= body R | ""
            const int r = new_rule(hint + "-star");
            rules[size_t(r)].push_back({{Elem::kRef, body}, {Elem::kRef, r}});
            rules[size_t(r)].push_back({});
            add_elem(out, {Elem::kRef, r});
          } else if (it->max > it->min) {
            // O_1 ::= body | "";  O_k ::= body O_{k-1} | ""
            int prev = -1;
            for (int k = 1; k <= it->max - it->min; ++k) {
              const int r = new_rule(hint + "-opt");
              std::vector<Elem> a{{Elem::kRef, body}};
              if (prev >= 0) a.push_back({Elem::kRef, prev});
              total_elems += a.size();
              if (total_elems > size_t(limits.max_elements)) fail("grammar: more than ", limits.max_elements, " elements");
              rules[size_t(r)].push_back(std::move(a));
              rules[size_t(r)].push_back({});
              prev = r;
            }
            add_elem(out, {Elem::kRef, prev});
          }
          break;
        }
        default:
          fail("grammar: internal: unexpected expression");
      }
    }
    return flush(pending, out);
  }

  void lower_body(int id, const Expr& body) {
    std::vector<const Expr*> alts;
    if (body.kind == Expr::Kind::kAlt) {
      for (const Expr& k : body.kids) alts.push_back(&k);
    } else {
      alts.push_back(&body);
    }
    for (const Expr* a : alts) {
      std::vector<Elem> elems;
      if (lower_seq(*a, id, elems)) rules[size_t(id)].push_back(std::move(elems));
    }
  }
};

}  // namespace

std::shared_ptr<const Grammar> compile_grammar(const GrammarIR& ir, const GrammarLimits& limits) {
  if (ir.root < 0 || size_t(ir.root) >= ir.names.size()) fail("grammar: no root rule");
  Lowering L{ir, limits, {}, {}, {}, {}, 0, 0, {}, {}, {}};
  for (const std::string& n : ir.names) L.new_rule(n);
  for (size_t i = 0; i < ir.names.size(); ++i) {
    if (!ir.defined[i]) fail("grammar: rule '", ir.names[i], "' is used but never defined");
    L.todo.emplace_back(int(i), &ir.bodies[i]);
  }
  while (!L.todo.empty()) {
    auto [id, body] = L.todo.back();
    L.todo.pop_back();
    L.lower_body(id, *body);
  }
  auto& rules = L.rules;
  const size_t n = rules.size();

  // Productive rules (some alternative whose references are all productive), to a fixpoint; then
  // drop the alternatives that go through an unproductive rule.
  std::vector<uint8_t> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (productive[r]) continue;
      for (const auto& a : rules[r]) {
        bool ok = true;
        for (const Elem& e : a)
          if (e.kind == Elem::kRef && !productive[size_t(e.arg)]) ok = false;
        if (ok) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  if (!productive[size_t(ir.root)])
    fail("grammar: rule '", ir.names[size_t(ir.root)], "' can never finish (a recursion without a base case?)");
  for (auto& alts : rules) {
    std::erase_if(alts, [&](const std::vector<Elem>& a) {
      for (const Elem& e : a)
        if (e.kind == Elem::kRef && !productive[size_t(e.arg)]) return true;
      return false;
    });
  }

  // Nullable rules, then left recursion: A -> B when B can come first in A.
  std::vector<uint8_t> nullable(n, 0);
  auto elem_nullable = [&](const Elem& e) {
    return e.kind == Elem::kLexeme ? L.g.lexemes[size_t(e.arg)].nullable() : bool(nullable[size_t(e.arg)]);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& a : rules[r]) {
        bool all = true;
        for (const Elem& e : a) all = all && elem_nullable(e);
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<int>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& a : rules[r])
      for (const Elem& e : a) {
        if (e.kind == Elem::kRef) first[r].push_back(e.arg);
        if (!elem_nullable(e)) break;
      }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::function<void(int)> visit = [&](int r) {
    color[size_t(r)] = 1;
    for (int s : first[size_t(r)]) {
      if (color[size_t(s)] == 1) fail("grammar: rule '", L.g.rule_names[size_t(s)], "' is left-recursive");
      if (color[size_t(s)] == 0) visit(s);
    }
    color[size_t(r)] = 2;
  };
  for (size_t r = 0; r < n; ++r)
    if (color[r] == 0) visit(int(r));

  Grammar& g = L.g;
  g.root = ir.root;
  g.alts.resize(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& a : rules[r]) {
      g.alts[r].push_back(int32_t(g.elems.size()));
      g.elems.insert(g.elems.end(), a.begin(), a.end());
      g.elems.push_back({Elem::kEnd, 0});
    }
  return std::make_shared<const Grammar>(std::move(g));
}

}  // namespace qwen35::grammar
