#include "grammar/lexeme.h"

#include <algorithm>

#include "core/error.h"
#include "text/utf8.h"

namespace qwen35::grammar {
namespace {

struct Nfa {
  // Out-edges are singly linked lists in two pools (head per state), not a vector per state:
  // an NFA has thousands of states and is built per lexeme, so per-state allocations dominated.
  struct Edge {
    uint8_t lo, hi;
    int to;
    int next;  // the state's next byte edge, -1 at the end
  };
  struct Eps {
    int to, next;
  };
  std::vector<int> eps_head, edge_head;  // per state: first link or -1
  std::vector<Eps> eps_pool;
  std::vector<Edge> edge_pool;
  int limit = 0;

  size_t size() const { return eps_head.size(); }
  int add() {
    if (int(eps_head.size()) >= limit) fail("grammar: a lexeme needs more than ", limit, " automaton states (pattern or repetition too large)");
    eps_head.push_back(-1);
    edge_head.push_back(-1);
    return int(eps_head.size()) - 1;
  }
  void edge(int from, uint8_t lo, uint8_t hi, int to) {
    edge_pool.push_back({lo, hi, to, edge_head[size_t(from)]});
    edge_head[size_t(from)] = int(edge_pool.size()) - 1;
  }
  void eps(int from, int to) {
    eps_pool.push_back({to, eps_head[size_t(from)]});
    eps_head[size_t(from)] = int(eps_pool.size()) - 1;
  }
  // Calls f(edge) for every byte edge out of `s`.
  template <class F>
  void for_edges(int s, F&& f) const {
    for (int l = edge_head[size_t(s)]; l >= 0; l = edge_pool[size_t(l)].next) f(edge_pool[size_t(l)]);
  }

  // A path s -> e for every code point in [lo, hi] (same UTF-8 length classes split first).
  void utf8_range(uint32_t lo, uint32_t hi, int s, int e) {
    static const uint32_t kLimits[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (uint32_t lim : kLimits) {
      if (lo <= lim && hi > lim) {
        utf8_range(lo, lim, s, e);
        utf8_range(lim + 1, hi, s, e);
        return;
      }
    }
    const int n = lo <= 0x7F ? 1 : lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < n; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          utf8_range(lo, lo | m, s, e);
          utf8_range((lo | m) + 1, hi, s, e);
          return;
        }
        if ((hi & m) != m) {
          utf8_range(lo, (hi & ~m) - 1, s, e);
          utf8_range(hi & ~m, hi, s, e);
          return;
        }
      }
    }
    std::string a, b;
    utf8::append(a, lo);
    utf8::append(b, hi);
    int cur = s;
    for (size_t i = 0; i < a.size(); ++i) {
      const int to = i + 1 == a.size() ? e : add();
      edge(cur, uint8_t(a[i]), uint8_t(b[i]), to);
      cur = to;
    }
  }

  // Builds `x` between fresh states; returns {start, end}.
  std::pair<int, int> build(const Expr& x) {
    const int s = add();
    int e = -1;
    switch (x.kind) {
      case Expr::Kind::kLiteral: {
        int cur = s;
        for (char c : x.bytes) {
          const int to = add();
          edge(cur, uint8_t(c), uint8_t(c), to);
          cur = to;
        }
        e = cur;
        break;
      }
      case Expr::Kind::kClass:
        e = add();
        for (auto [lo, hi] : x.ranges) utf8_range(lo, hi, s, e);
        break;
      case Expr::Kind::kSeq: {
        int cur = s;
        for (const Expr& k : x.kids) {
          auto [ks, ke] = build(k);
          eps(cur, ks);
          cur = ke;
        }
        e = cur;
        break;
      }
      case Expr::Kind::kAlt:
        e = add();
        for (const Expr& k : x.kids) {
          auto [ks, ke] = build(k);
          eps(s, ks);
          eps(ke, e);
        }
        break;
      case Expr::Kind::kRepeat: {
        const Expr& k = x.kids[0];
        int cur = s;
        for (int i = 0; i < x.min; ++i) {
          auto [ks, ke] = build(k);
          eps(cur, ks);
          cur = ke;
        }
        e = add();
        if (x.max == kUnbounded) {
          auto [ks, ke] = build(k);
          eps(cur, ks);
          eps(cur, e);
          eps(ke, ks);
          eps(ke, e);
        } else {
          for (int i = x.min; i < x.max; ++i) {
            eps(cur, e);
            auto [ks, ke] = build(k);
            eps(cur, ks);
            cur = ke;
          }
          eps(cur, e);
        }
        break;
      }
      case Expr::Kind::kRef:
        fail("grammar: internal: a rule reference inside a lexeme");
    }
    return {s, e};
  }
};

uint64_t set_hash(const std::vector<int>& v) {
  uint64_t h = v.size();
  for (int x : v) h = (h ^ uint64_t(uint32_t(x))) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

// The DFA states' NFA state sets, in one pool with an open-addressing index: the subset
// construction looks a set up once per byte run, and a node-based map keyed by vectors spent
// most of that in allocations and copies.
class SetStore {
 public:
  SetStore() : table_(64, -1) {}
  size_t size() const { return hashes_.size(); }
  const int* begin(size_t i) const { return pool_.data() + off_[i]; }
  const int* end(size_t i) const { return pool_.data() + off_[i + 1]; }
  // The id of `t`, or -1 when absent.
  int32_t find(const std::vector<int>& t, uint64_t h) const {
    for (size_t k = h & (table_.size() - 1);; k = (k + 1) & (table_.size() - 1)) {
      const int32_t id = table_[k];
      if (id < 0) return -1;
      if (hashes_[size_t(id)] == h && size_t(end(size_t(id)) - begin(size_t(id))) == t.size() &&
          std::equal(t.begin(), t.end(), begin(size_t(id))))
        return id;
    }
  }
  int32_t add(const std::vector<int>& t, uint64_t h) {
    const int32_t id = int32_t(hashes_.size());
    pool_.insert(pool_.end(), t.begin(), t.end());
    off_.push_back(uint32_t(pool_.size()));
    hashes_.push_back(h);
    if (hashes_.size() * 2 > table_.size()) {
      table_.assign(table_.size() * 2, -1);
      for (size_t i = 0; i < hashes_.size(); ++i) place(int32_t(i));
    } else {
      place(id);
    }
    return id;
  }

 private:
  void place(int32_t id) {
    size_t k = hashes_[size_t(id)] & (table_.size() - 1);
    while (table_[k] >= 0) k = (k + 1) & (table_.size() - 1);
    table_[k] = id;
  }
  std::vector<int> pool_;
  std::vector<uint32_t> off_{0};
  std::vector<uint64_t> hashes_;
  std::vector<int32_t> table_;  // power of two, at most half full; -1 empty
};

// `stack`: scratch space, passed in so the subset construction does not allocate per closure.
void closure(const Nfa& nfa, std::vector<int>& set, std::vector<uint8_t>& seen, std::vector<int>& stack) {
  stack.assign(set.begin(), set.end());
  for (int s : set) seen[size_t(s)] = 1;
  while (!stack.empty()) {
    const int s = stack.back();
    stack.pop_back();
    for (int l = nfa.eps_head[size_t(s)]; l >= 0; l = nfa.eps_pool[size_t(l)].next)
      if (const int t = nfa.eps_pool[size_t(l)].to; !seen[size_t(t)]) {
        seen[size_t(t)] = 1;
        set.push_back(t);
        stack.push_back(t);
      }
  }
  for (int s : set) seen[size_t(s)] = 0;
  std::sort(set.begin(), set.end());
}

}  // namespace

Lexeme build_lexeme(const std::vector<const Expr*>& parts, const LexemeLimits& limits) {
  Nfa nfa;
  nfa.limit = limits.max_nfa_states;
  const int start = nfa.add();
  int cur = start;
  for (const Expr* p : parts) {
    auto [s, e] = nfa.build(*p);
    nfa.eps(cur, s);
    cur = e;
  }
  const int final_state = cur;

  std::vector<uint8_t> seen(nfa.size(), 0);
  SetStore sets;
  Lexeme lx;
  std::vector<int> first{start}, scratch;
  closure(nfa, first, seen, scratch);
  sets.add(first, set_hash(first));
  // The bytes split into runs on which every NFA edge of the set is on or off (a class is a few
  // byte ranges): each run is one target set, one closure and one lookup.
  std::vector<int> cuts;
  std::vector<std::vector<int>> targets(256);  // per run of bytes: the NFA states it leads to
  std::vector<uint16_t> run_of(256);           // first byte of a run -> the run
  std::vector<std::vector<int32_t>> succ;      // DFA state -> its targets (for the liveness pass)
  std::vector<std::pair<uint16_t, int32_t>> row_runs;  // per DFA state, in order: (first byte, target) of each run
  std::vector<uint32_t> row_end;                       // DFA state -> the end of its runs in row_runs
  for (size_t d = 0; d < sets.size(); ++d) {
    bool acc = false;
    cuts.assign({0, 256});
    for (const int* p = sets.begin(d); p != sets.end(d); ++p) {
      const int s = *p;
      if (s == final_state) acc = true;
      nfa.for_edges(s, [&](const Nfa::Edge& ed) {
        cuts.push_back(ed.lo);
        cuts.push_back(ed.hi + 1);
      });
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    lx.accepting.push_back(acc);
    succ.emplace_back();
    // Each edge drops its target into the runs it covers (a run lies inside or outside every
    // edge), so the work is the edges' total width in runs, not runs times edges.
    const size_t runs = cuts.size() - 1;
    for (size_t i = 0; i < runs; ++i) targets[i].clear();
    for (size_t i = 0; i < runs; ++i) run_of[size_t(cuts[i])] = uint16_t(i);  // an edge starts at a cut
    for (const int* p = sets.begin(d); p != sets.end(d); ++p)
      nfa.for_edges(*p, [&](const Nfa::Edge& ed) {
        for (size_t i = run_of[ed.lo]; i < runs && cuts[i] <= ed.hi; ++i) targets[i].push_back(ed.to);
      });
    for (size_t i = 0; i < runs; ++i) {
      std::vector<int>& t = targets[i];
      if (t.empty()) {
        row_runs.push_back({uint16_t(cuts[i]), Lexeme::kDead});
        continue;
      }
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      closure(nfa, t, seen, scratch);
      const uint64_t h = set_hash(t);
      int32_t to = sets.find(t, h);
      if (to < 0) {
        if (int(sets.size()) >= limits.max_dfa_states)
          fail("grammar: a lexeme needs more than ", limits.max_dfa_states, " automaton states (pattern or repetition too large)");
        to = sets.add(t, h);
      }
      if (succ[d].empty() || succ[d].back() != to) succ[d].push_back(to);
      row_runs.push_back({uint16_t(cuts[i]), to});
    }
    row_end.push_back(uint32_t(row_runs.size()));
  }
  lx.states = int(sets.size());
  // The table is written once, at its final size: growing it row by row cost more in copies
  // and page faults than the construction itself.
  lx.next.reserve(size_t(lx.states) * 256);
  for (size_t d = 0, r = 0; d < size_t(lx.states); ++d)
    for (; r < row_end[d]; ++r) {  // a state's runs cover its 256 bytes in order
      const int end = r + 1 < row_end[d] ? row_runs[r + 1].first : 256;
      lx.next.insert(lx.next.end(), size_t(end - row_runs[r].first), row_runs[r].second);
    }

  // States that cannot reach an accepting one are dead: transitions into them become kDead.
  std::vector<std::vector<int32_t>> rev(size_t(lx.states));
  for (int s = 0; s < lx.states; ++s)
    for (int32_t to : succ[size_t(s)]) rev[size_t(to)].push_back(s);
  std::vector<uint8_t> alive(size_t(lx.states), 0);
  std::vector<int32_t> stack;
  for (int s = 0; s < lx.states; ++s)
    if (lx.accepting[size_t(s)]) {
      alive[size_t(s)] = 1;
      stack.push_back(s);
    }
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    for (int32_t p : rev[size_t(s)])
      if (!alive[size_t(p)]) {
        alive[size_t(p)] = 1;
        stack.push_back(p);
      }
  }
  if (!alive[0]) return Lexeme{};  // empty language
  lx.live.assign(size_t(lx.states), 0);
  if (std::find(alive.begin(), alive.end(), 0) == alive.end()) {  // nothing to cut: the table stands
    for (int s = 0; s < lx.states; ++s) lx.live[size_t(s)] = !succ[size_t(s)].empty();
    return lx;
  }
  for (int s = 0; s < lx.states; ++s)
    for (int b = 0; b < 256; ++b) {
      int32_t& t = lx.next[size_t(s) * 256 + b];
      if (t >= 0 && !alive[size_t(t)]) t = Lexeme::kDead;
      if (t >= 0) lx.live[size_t(s)] = 1;
    }
  return lx;
}

}  // namespace qwen35::grammar
