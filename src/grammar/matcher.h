// GrammarMatcher: which byte strings a grammar allows, advanced one byte or one token at a time.
//
// The state is a set of stacks, kept as nodes (position in the grammar, lexeme DFA state, parent)
// in an arena. Nodes are hash-consed, so equal stacks are one node and a state is a sorted list
// of node ids: ambiguity never duplicates work, and a state is a cheap, exact cache key. Every
// node of a state sits at a lexeme whose DFA can still move; "can finish" says the root rule may
// end here. A state is kept per step (a byte, or all the bytes of a token), one after another in
// one buffer (no allocation per step once it has grown), so rollback(n) undoes the last n steps.
//
// Thread contract: one matcher per generation, used by one thread; the Grammar is shared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace qwen35::grammar {

class GrammarMatcher {
 public:
  struct Node {
    int32_t pos;     // element index in Grammar::elems
    int32_t dstate;  // the lexeme's DFA state when elems[pos] is a lexeme
    int32_t parent;  // node to continue with when this alternative ends; -1: the root's end
  };

  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

  // One step over `bytes` (all or nothing): false, and nothing changes, when the grammar does not
  // allow them here. advance("") is a step that changes nothing.
  bool advance(std::string_view bytes);
  bool advance_byte(uint8_t b) { return advance(std::string_view(reinterpret_cast<const char*>(&b), 1)); }
  // The root rule may end here (the stop token is allowed).
  bool can_finish() const { return finish_.back() != 0; }
  // Nothing but the end is allowed.
  bool must_finish() const { return tops().empty(); }

  size_t steps() const { return finish_.size() - 1; }
  void rollback(size_t n);  // n <= steps()
  void reset() { rollback(steps()); }

  // For the token mask: the current nodes, and whether the stack under `node` can take `bytes`
  // (nothing is kept; the state does not change).
  std::span<const int32_t> tops() const {
    return {history_.data() + starts_.back(), history_.size() - starts_.back()};
  }
  const Node& node(int32_t id) const { return nodes_[size_t(id)]; }
  bool accepts_from(int32_t node, std::string_view bytes);
  // accepts_from for many byte strings walked as a trie (the token mask's undecided tokens, in
  // sorted order): probe_begin(node) makes depth 0 the stack under `node`; probe_step(k, b) sets
  // depth k + 1 to depth k after byte b (depths past k are dropped) and says whether it lives. A
  // string is accepted when every step along it lived, exactly as accepts_from says. probe_end()
  // drops the scratch nodes; the state does not change.
  void probe_begin(int32_t node);
  bool probe_step(size_t depth, uint8_t b);
  void probe_end();
  // Nodes visited by every closure so far (the matcher's work, for callers that bound it).
  uint64_t work() const { return visited_; }
  const Grammar& grammar() const { return *g_; }
  // Unique per matcher: node ids mean something only within one matcher.
  uint64_t serial() const { return serial_; }

 private:
  struct State {
    std::vector<int32_t> tops;
    bool finish = false;
  };

  int32_t make(const Node& n, bool scratch);
  // Adds the nodes reachable from `n` without consuming a byte that sit at a lexeme.
  void close(Node n, State& out, bool scratch);
  bool step(const State& from, uint8_t b, State& to, bool scratch);
  void push(const State& s);

  std::shared_ptr<const Grammar> g_;
  uint64_t serial_;
  std::vector<Node> nodes_;
  size_t committed_ = 0;  // nodes_[committed_..] are scratch, dropped after accepts_from
  struct NodeHash {
    size_t operator()(const Node& n) const {
      return size_t((uint64_t(uint32_t(n.pos)) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(uint32_t(n.dstate)) << 32) ^
                    (uint64_t(uint32_t(n.parent)) * 0xC2B2AE3D27D4EB4Full));
    }
  };
  struct NodeEq {
    bool operator()(const Node& a, const Node& b) const {
      return a.pos == b.pos && a.dstate == b.dstate && a.parent == b.parent;
    }
  };
  std::unordered_map<Node, int32_t, NodeHash, NodeEq> interned_;  // committed nodes only
  // Step k's state: node ids history_[starts_[k] .. starts_[k + 1] or the end), finish_[k].
  std::vector<int32_t> history_;
  std::vector<uint32_t> starts_;
  std::vector<uint8_t> finish_;
  std::vector<Node> work_;
  State tmp_a_, tmp_b_;
  std::vector<State> probe_;          // probe_[k]: the state after k bytes of the probed string
  std::vector<size_t> probe_nodes_;  // nodes_.size() once probe_[k] was made (its scratch nodes end there)
  uint64_t visited_ = 0;             // work()
};

}  // namespace qwen35::grammar
