#include "grammar/token_mask.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "text/tokenizer.h"

namespace qwen35::grammar {
namespace {

// Past this, precomputed entries are dropped and rebuilt on demand (a bounded cache).
constexpr size_t kMaxEntryBytes = size_t(256) << 20;
constexpr size_t kMaxStateMasks = 64;
// Grouping a lexeme's states costs states * (distinct byte columns + 1) per round, one round per
// token byte at most: past this, each state keeps an entry of its own (as exact, only slower).
constexpr size_t kMaxClassWork = size_t(64) << 20;

// The UTF-8 automaton of a slice: 0 at a code point boundary, 1 one continuation byte to go, 2
// two, 3 two after E0 (the next one A0..BF), 4 two after ED (80..9F, no surrogates); -1: the byte
// is not in the slice's text.
int slice_step(const TokenVocab::Slice& s, int u, uint8_t b) {
  switch (u) {
    case 0:
      if (b < 0x80) return s.ascii[b] ? 0 : -1;
      if (!s.bmp) return -1;
      if (b >= 0xC2 && b <= 0xDF) return 1;
      if (b == 0xE0) return 3;
      if (b == 0xED) return 4;
      if (b >= 0xE1 && b <= 0xEF) return 2;
      return -1;
    case 1: return b >= 0x80 && b <= 0xBF ? 0 : -1;
    case 2: return b >= 0x80 && b <= 0xBF ? 1 : -1;
    case 3: return b >= 0xA0 && b <= 0xBF ? 1 : -1;
    case 4: return b >= 0x80 && b <= 0x9F ? 1 : -1;
    default: return -1;
  }
}

bool in_slice(const TokenVocab::Slice& s, std::string_view bytes) {
  int u = 0;
  for (char c : bytes)
    if ((u = slice_step(s, u, uint8_t(c))) < 0) return false;
  return true;
}

// Whether every text of the slice of up to s.max_bytes bytes keeps `lx` alive from `dstate`: a
// breadth-first search over (DFA state, UTF-8 state) pairs, each reached first at its least depth,
// failing on the first byte of the slice that kills the lexeme within the depth.
bool keeps_alive(const Lexeme& lx, int32_t dstate, const TokenVocab::Slice& s) {
  if (s.max_bytes == 0) return true;
  std::vector<std::pair<int64_t, uint32_t>> queue{{int64_t(dstate) * 8, 0}};  // (pair, depth)
  std::unordered_map<int64_t, uint32_t> seen{{int64_t(dstate) * 8, 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto [pair, depth] = queue[q];
    const int32_t d = int32_t(pair / 8);
    const int u = int(pair % 8);
    for (int b = 0; b < 256; ++b) {
      const int nu = slice_step(s, u, uint8_t(b));
      if (nu < 0) continue;
      const int32_t nd = lx.step(d, uint8_t(b));
      if (nd == Lexeme::kDead) return false;
      const int64_t np = int64_t(nd) * 8 + nu;
      if (seen.emplace(np, depth + 1).second && depth + 1 < s.max_bytes) queue.emplace_back(np, depth + 1);
    }
  }
  return true;
}

}  // namespace

TokenVocab::Trie TokenVocab::make_trie(std::vector<int32_t> pos) const {
  Trie t;
  t.pos = std::move(pos);
  t.lcp.resize(t.pos.size());
  t.first_end.resize(t.pos.size() + 1);
  std::vector<size_t> open;  // ends[] slots of the nodes on the current path, shallowest first
  std::string_view prev;
  for (size_t i = 0; i < t.pos.size(); ++i) {
    const std::string_view b = bytes(size_t(t.pos[i]));
    size_t l = 0;
    while (l < prev.size() && l < b.size() && prev[l] == b[l]) ++l;
    t.lcp[i] = uint16_t(l);
    while (open.size() > l) {  // the nodes deeper than the common prefix end here
      t.ends[open.back()] = int32_t(i);
      open.pop_back();
    }
    t.first_end[i] = uint32_t(t.ends.size());
    for (size_t d = l + 1; d <= b.size(); ++d) {
      open.push_back(t.ends.size());
      t.ends.push_back(-1);
    }
    prev = b;
  }
  for (size_t slot : open) t.ends[slot] = int32_t(t.pos.size());
  t.first_end[t.pos.size()] = uint32_t(t.ends.size());
  return t;
}

TokenVocab::TokenVocab(int32_t vocab_size, const std::vector<std::pair<int32_t, std::string>>& tokens)
    : vocab_size_(vocab_size), sorted_index_(size_t(std::max(vocab_size, 0)), -1) {
  std::vector<size_t> order;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].first < 0 || tokens[i].first >= vocab_size) fail("token mask: token id ", tokens[i].first, " out of range");
    if (!tokens[i].second.empty()) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tokens[a].second != tokens[b].second ? tokens[a].second < tokens[b].second : tokens[a].first < tokens[b].first;
  });
  offsets_.push_back(0);
  std::string_view prev;
  for (size_t i : order) {
    const std::string& b = tokens[i].second;
    if (b.size() > 0xFFFF) fail("token mask: a token of ", b.size(), " bytes");
    size_t l = 0;
    while (l < prev.size() && l < b.size() && prev[l] == b[l]) ++l;
    if (sorted_index_[size_t(tokens[i].first)] >= 0) fail("token mask: token id ", tokens[i].first, " given twice");
    sorted_index_[size_t(tokens[i].first)] = int32_t(ids_.size());
    ids_.push_back(tokens[i].first);
    lcp_.push_back(uint16_t(l));
    bytes_ += b;
    max_bytes_ = std::max(max_bytes_, b.size());
    offsets_.push_back(uint32_t(bytes_.size()));
    prev = b;
  }
  std::vector<int32_t> all(ids_.size());
  std::iota(all.begin(), all.end(), 0);
  trie_ = make_trie(std::move(all));
  // What a JSON string holds unescaped (below U+10000, as length-bounded strings allow), and
  // digits (numbers); a slice holding another comes first.
  slices_.resize(2);
  Slice& text = slices_[0];
  text.ascii.assign(128, 0);
  for (int c = 0x20; c < 0x7F; ++c) text.ascii[size_t(c)] = c != '"' && c != '\\';
  text.bmp = true;
  Slice& digits = slices_[1];
  digits.ascii.assign(128, 0);
  for (int c = '0'; c <= '9'; ++c) digits.ascii[size_t(c)] = 1;
  for (Slice& s : slices_) {
    s.bits.assign(words(), 0);
    std::vector<int32_t> rest;
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (in_slice(s, bytes(i))) {
        s.bits[size_t(ids_[i]) >> 6] |= uint64_t(1) << (ids_[i] & 63);
        s.max_bytes = std::max(s.max_bytes, bytes(i).size());
      } else {
        rest.push_back(int32_t(i));
      }
    }
    s.rest = make_trie(std::move(rest));
  }
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tok, const std::vector<int32_t>& exclude) {
  std::vector<std::pair<int32_t, std::string>> tokens;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (!tok.is_valid_id(id) || tok.is_special(id)) continue;
    if (std::find(exclude.begin(), exclude.end(), id) != exclude.end()) continue;
    tokens.emplace_back(id, std::string(tok.token_bytes(id)));
  }
  return std::make_shared<const TokenVocab>(tok.vocab_size(), tokens);
}

std::string_view TokenVocab::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size_ || sorted_index_[size_t(id)] < 0) return {};
  return bytes(size_t(sorted_index_[size_t(id)]));
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> vocab, uint64_t max_mask_work)
    : g_(std::move(g)), vocab_(std::move(vocab)), max_mask_work_(max_mask_work) {}

TokenMasker::Entry TokenMasker::build(const Lexeme& lx, int32_t dstate) const {
  const TokenVocab& v = *vocab_;
  Entry e;
  const TokenVocab::Slice* slice = nullptr;
  for (const TokenVocab::Slice& s : v.slices())
    if (keeps_alive(lx, dstate, s)) {
      slice = &s;
      break;
    }
  const TokenVocab::Trie& trie = slice ? slice->rest : v.trie();
  // st[k]: DFA state after k bytes of the current token; end[k]: the lexeme may end after some
  // j in 1..k bytes (the rest of the token would then belong to the stack below).
  std::vector<int32_t> st(1, dstate);
  std::vector<uint8_t> end(1, 0);
  size_t valid = 0;  // st[0..valid] hold for the current token's prefix
  const size_t n = trie.size();
  for (size_t i = 0; i < n;) {
    const size_t pos = size_t(trie.pos[i]);
    const std::string_view b = v.bytes(pos);
    valid = std::min<size_t>(valid, trie.lcp[i]);
    if (st.size() < b.size() + 1) {
      st.resize(b.size() + 1);
      end.resize(b.size() + 1);
    }
    size_t k = valid;
    while (k < b.size() && st[k] != Lexeme::kDead) {
      const int32_t d = lx.step(st[k], uint8_t(b[k]));
      st[k + 1] = d;
      end[k + 1] = end[k] || (d != Lexeme::kDead && lx.accepting[size_t(d)]);
      ++k;
    }
    if (st[k] != Lexeme::kDead) {  // the whole token fits the lexeme
      e.accepted.push_back(v.id(pos));
      valid = k;
      ++i;
      continue;
    }
    // The first k bytes are dead (k > lcp[i]: entry i entered that node), and so is every
    // entry under it.
    const bool undecided = end[k - 1];
    valid = k - 1;
    const size_t j = trie.end(i, k);
    if (undecided) {
      for (size_t u = i; u < j; ++u) {
        const std::string_view a = e.undecided.empty() ? std::string_view() : v.bytes(size_t(e.undecided.back()));
        const std::string_view c = v.bytes(size_t(trie.pos[u]));
        size_t l = 0;
        while (l < a.size() && l < c.size() && a[l] == c[l]) ++l;
        e.undecided_lcp.push_back(uint16_t(l));
        e.undecided.push_back(trie.pos[u]);
      }
    }
    i = j;
  }
  if (slice || e.accepted.size() * 32 > size_t(v.vocab_size())) {
    e.bits = slice ? slice->bits : std::vector<uint64_t>(v.words(), 0);
    for (int32_t t : e.accepted) e.bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
    e.accepted.clear();
    e.accepted.shrink_to_fit();
  }
  return e;
}

const std::vector<int32_t>& TokenMasker::classes(int32_t lexeme) {
  if (auto it = classes_.find(lexeme); it != classes_.end()) return it->second;
  const Lexeme& lx = g_->lexemes[size_t(lexeme)];
  const size_t n = size_t(lx.states);
  const size_t rounds = vocab_->max_bytes();
  std::vector<int32_t> cls(n);
  // Bytes whose columns of the table are equal move every state alike: one of each is enough.
  std::vector<int> bytes;
  {
    std::unordered_multimap<uint64_t, int> seen;
    for (int b = 0; b < 256; ++b) {
      uint64_t h = 0xcbf29ce484222325ull;
      for (size_t s = 0; s < n; ++s) h = (h ^ uint64_t(uint32_t(lx.step(int32_t(s), uint8_t(b))))) * 0x100000001B3ull;
      bool dup = false;
      auto [lo, hi] = seen.equal_range(h);
      for (auto it = lo; it != hi && !dup; ++it) {
        dup = true;
        for (size_t s = 0; s < n && dup; ++s) dup = lx.step(int32_t(s), uint8_t(b)) == lx.step(int32_t(s), uint8_t(it->second));
      }
      if (!dup) {
        seen.emplace(h, b);
        bytes.push_back(b);
      }
    }
  }
  if (n * (bytes.size() + 1) * rounds > kMaxClassWork) {
    std::iota(cls.begin(), cls.end(), 0);
    return classes_.emplace(lexeme, std::move(cls)).first->second;
  }
  // Moore's refinement, one round per byte: after round r, equal classes mean the same dead and
  // accepting states along every path of up to r bytes -- all a token of up to `rounds` bytes
  // sees in TokenMasker::build.
  for (size_t s = 0; s < n; ++s) cls[s] = lx.accepting[s];
  const size_t width = bytes.size() + 1;
  size_t count = 0;
  std::vector<int32_t> next(n), sigs;  // sigs: each new class's signature, `width` apiece
  std::vector<int32_t> sig(width);
  std::unordered_multimap<uint64_t, int32_t> reps;  // signature hash -> class made this round
  for (size_t r = 0; r < rounds; ++r) {
    reps.clear();
    sigs.clear();
    size_t made = 0;
    for (size_t s = 0; s < n; ++s) {
      sig[0] = cls[s];
      for (size_t i = 0; i + 1 < width; ++i) {
        const int32_t d = lx.step(int32_t(s), uint8_t(bytes[i]));
        sig[i + 1] = d == Lexeme::kDead ? -1 : cls[size_t(d)];
      }
      uint64_t h = 0xcbf29ce484222325ull;
      for (int32_t x : sig) h = (h ^ uint64_t(uint32_t(x))) * 0x100000001B3ull;
      int32_t found = -1;
      auto [lo, hi] = reps.equal_range(h);
      for (auto it = lo; it != hi && found < 0; ++it)
        if (std::equal(sig.begin(), sig.end(), sigs.begin() + std::ptrdiff_t(size_t(it->second) * width))) found = it->second;
      if (found < 0) {
        found = int32_t(made++);
        reps.emplace(h, found);
        sigs.insert(sigs.end(), sig.begin(), sig.end());
      }
      next[s] = found;
    }
    cls.swap(next);
    if (made == count) break;  // stable: no longer paths split anything
    count = made;
  }
  return classes_.emplace(lexeme, std::move(cls)).first->second;
}

const TokenMasker::Entry& TokenMasker::entry(int32_t lexeme, int32_t dstate) {
  const int32_t c = classes(lexeme)[size_t(dstate)];
  const uint64_t key = (uint64_t(uint32_t(lexeme)) << 32) | uint32_t(c);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  Entry e = build(g_->lexemes[size_t(lexeme)], dstate);
  entry_bytes_ += (e.bits.size() * 8) + (e.accepted.size() + e.undecided.size()) * 4 + e.undecided_lcp.size() * 2 + 64;
  return entries_.emplace(key, std::move(e)).first->second;
}

void TokenMasker::fill(GrammarMatcher& m, uint64_t* bits) {
  const size_t words = vocab_->words();
  const std::span<const int32_t> tops = m.tops();
  const uint64_t serial = m.serial();
  // The key buffer is reused: a cached state costs no allocation.
  key_.assign(reinterpret_cast<const char*>(&serial), sizeof serial);
  key_.append(reinterpret_cast<const char*>(tops.data()), tops.size() * sizeof(int32_t));
  if (auto it = by_state_.find(key_); it != by_state_.end()) {
    std::memcpy(bits, it->second.data(), words * 8);
    return;
  }
  // Evicted here, not while entries are in use below (es_ points into entries_).
  if (entry_bytes_ > kMaxEntryBytes) {
    entries_.clear();
    entry_bytes_ = 0;
  }
  std::fill(bits, bits + words, uint64_t(0));
  std::vector<const Entry*>& es = es_;
  es.clear();
  for (int32_t id : tops) {
    const GrammarMatcher::Node& n = m.node(id);
    const Entry& e = entry(g_->elems[size_t(n.pos)].arg, n.dstate);
    es.push_back(&e);
    if (!e.bits.empty())
      for (size_t w = 0; w < words; ++w) bits[w] |= e.bits[w];
    for (int32_t t : e.accepted) bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
  }
  const uint64_t work0 = m.work();
  for (size_t i = 0; i < tops.size(); ++i) {
    const Entry& e = *es[i];
    if (e.undecided.empty()) continue;
    m.probe_begin(tops[i]);
    size_t valid = 0;                // depths 0..valid hold for the current token's prefix
    size_t dead = size_t(-1);        // a token whose first `dead` bytes are the dead prefix is out
    for (size_t u = 0; u < e.undecided.size(); ++u) {
      const size_t lcp = e.undecided_lcp[u];
      valid = std::min(valid, lcp);
      if (lcp >= dead) continue;
      dead = size_t(-1);
      const size_t pos = size_t(e.undecided[u]);
      const int32_t t = vocab_->id(pos);
      uint64_t& w = bits[size_t(t) >> 6];
      const uint64_t bit = uint64_t(1) << (t & 63);
      if (w & bit) continue;
      const std::string_view b = vocab_->bytes(pos);
      size_t k = valid;
      while (k < b.size() && m.probe_step(k, uint8_t(b[k]))) ++k;
      if (m.work() - work0 > max_mask_work_) {
        m.probe_end();
        throw MaskWorkExceeded(str("grammar: the token mask needs more than ", max_mask_work_,
                                   " matcher steps here (the grammar is too ambiguous where a lexeme may end inside a token)"));
      }
      if (k == b.size()) {
        w |= bit;
        valid = k;
      } else {
        valid = k;      // depth k lives; k + 1 is dead
        dead = k + 1;
      }
    }
    m.probe_end();
  }
  if (by_state_.size() >= kMaxStateMasks) by_state_.clear();
  by_state_.emplace(key_, std::vector<uint64_t>(bits, bits + words));
}

void apply_token_mask(const uint64_t* bits, int32_t vocab_size, float* logits, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    if (i >= vocab_size || !((bits[size_t(i) >> 6] >> (i & 63)) & 1)) logits[i] = ninf;
}

}  // namespace qwen35::grammar
