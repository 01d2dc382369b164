#include "grammar/matcher.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"

namespace qwen35::grammar {
namespace {

// A closure that visits more nodes than this is a grammar too ambiguous to run in bounded time.
constexpr size_t kMaxClosureWork = 200000;

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  static std::atomic<uint64_t> next_serial{1};
  serial_ = next_serial.fetch_add(1);
  State s;
  for (int32_t a : g_->alts[size_t(g_->root)]) close({a, 0, -1}, s, false);
  std::sort(s.tops.begin(), s.tops.end());
  s.tops.erase(std::unique(s.tops.begin(), s.tops.end()), s.tops.end());
  committed_ = nodes_.size();
  push(s);
}

void GrammarMatcher::push(const State& s) {
  starts_.push_back(uint32_t(history_.size()));
  history_.insert(history_.end(), s.tops.begin(), s.tops.end());
  finish_.push_back(s.finish);
}

int32_t GrammarMatcher::make(const Node& n, bool scratch) {
  if (auto it = interned_.find(n); it != interned_.end()) return it->second;
  const int32_t id = int32_t(nodes_.size());
  nodes_.push_back(n);
  if (!scratch) interned_.emplace(n, id);
  return id;
}

void GrammarMatcher::close(Node start, State& out, bool scratch) {
  const Grammar& g = *g_;
  work_.clear();
  work_.push_back(start);
  size_t visited = 0;
  while (!work_.empty()) {
    if (++visited > kMaxClosureWork) fail("grammar: too ambiguous (more than ", kMaxClosureWork, " states in one step)");
    const Node n = work_.back();
    work_.pop_back();
    const Elem& e = g.elems[size_t(n.pos)];
    switch (e.kind) {
      case Elem::kLexeme: {
        const Lexeme& lx = g.lexemes[size_t(e.arg)];
        if (lx.live[size_t(n.dstate)]) out.tops.push_back(make(n, scratch));
        if (lx.accepting[size_t(n.dstate)]) work_.push_back({n.pos + 1, 0, n.parent});
        break;
      }
      case Elem::kRef: {
        const int32_t ret = make({n.pos + 1, 0, n.parent}, scratch);
        for (int32_t a : g.alts[size_t(e.arg)]) work_.push_back({a, 0, ret});
        break;
      }
      case Elem::kEnd:
        if (n.parent < 0)
          out.finish = true;
        else
          work_.push_back(nodes_[size_t(n.parent)]);
        break;
    }
  }
  visited_ += visited;
}

bool GrammarMatcher::step(const State& from, uint8_t b, State& to, bool scratch) {
  to.tops.clear();
  to.finish = false;
  for (int32_t id : from.tops) {
    const Node n = nodes_[size_t(id)];
    const Lexeme& lx = g_->lexemes[size_t(g_->elems[size_t(n.pos)].arg)];
    const int32_t d = lx.step(n.dstate, b);
    if (d != Lexeme::kDead) close({n.pos, d, n.parent}, to, scratch);
  }
  std::sort(to.tops.begin(), to.tops.end());
  to.tops.erase(std::unique(to.tops.begin(), to.tops.end()), to.tops.end());
  return !to.tops.empty() || to.finish;
}

bool GrammarMatcher::advance(std::string_view bytes) {
  const std::span<const int32_t> now = tops();
  tmp_a_.tops.assign(now.begin(), now.end());
  tmp_a_.finish = can_finish();
  for (char c : bytes) {
    if (!step(tmp_a_, uint8_t(c), tmp_b_, false)) {
      committed_ = nodes_.size();  // interned nodes stay valid for later steps
      return false;
    }
    std::swap(tmp_a_, tmp_b_);
  }
  committed_ = nodes_.size();
  push(tmp_a_);
  return true;
}

bool GrammarMatcher::accepts_from(int32_t node, std::string_view bytes) {
  tmp_a_.tops.assign(1, node);
  tmp_a_.finish = false;
  bool ok = true;
  for (char c : bytes) {
    if (!step(tmp_a_, uint8_t(c), tmp_b_, true)) {
      ok = false;
      break;
    }
    std::swap(tmp_a_, tmp_b_);
  }
  nodes_.resize(committed_);
  return ok;
}

void GrammarMatcher::probe_begin(int32_t node) {
  if (probe_.empty()) probe_.resize(1);
  probe_[0].tops.assign(1, node);
  probe_[0].finish = false;
  probe_nodes_.assign(1, committed_);
}

bool GrammarMatcher::probe_step(size_t depth, uint8_t b) {
  if (probe_.size() < depth + 2) probe_.resize(depth + 2);
  probe_nodes_.resize(depth + 2);
  nodes_.resize(probe_nodes_[depth]);  // depth k's nodes and below stay; deeper ones are gone
  const bool alive = step(probe_[depth], b, probe_[depth + 1], true);
  probe_nodes_[depth + 1] = nodes_.size();
  return alive;
}

void GrammarMatcher::probe_end() { nodes_.resize(committed_); }

void GrammarMatcher::rollback(size_t n) {
  if (n > steps()) fail("grammar: rollback of ", n, " steps past the start (", steps(), " taken)");
  if (n == 0) return;
  history_.resize(starts_[starts_.size() - n]);  // where the first undone step's state began
  starts_.resize(starts_.size() - n);
  finish_.resize(finish_.size() - n);
}

}  // namespace qwen35::grammar
