#include "text/bpe.h"

#include <algorithm>
#include <bit>

namespace qwen35 {

namespace {

uint64_t mix(uint64_t k) {
  // splitmix64 finalizer: ids are small dense integers, so the raw key would cluster.
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebULL;
  k ^= k >> 31;
  return k;
}

// Heap order: lowest rank first, then leftmost. std::push_heap builds a max-heap, so "less" here
// means "comes out later".
bool comes_later(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  if (a.rank != b.rank) return a.rank > b.rank;
  return a.left > b.left;
}

}  // namespace

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges) : byte_ids_(byte_ids) {
  size_t capacity = std::bit_ceil(std::max<size_t>(16, merges.size() + merges.size() / 4));
  slots_.assign(capacity, Slot{kEmpty, 0, 0});
  mask_ = capacity - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    uint64_t key = key_of(m.left, m.right);
    uint64_t i = mix(key) & mask_;
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == kEmpty) ++merge_count_;
    slots_[i] = Slot{key, uint32_t(rank), m.result};
  }
}

inline const BpeModel::Slot* BpeModel::find(int32_t left, int32_t right) const {
  uint64_t key = key_of(left, right);
  uint64_t i = mix(key) & mask_;
  while (true) {
    const Slot& s = slots_[i];
    if (s.key == key) return &s;
    if (s.key == kEmpty) return nullptr;
    i = (i + 1) & mask_;
  }
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out, BpeScratch& scratch) const {
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.clear();
  heap.clear();
  for (char c : piece) {
    int32_t id = byte_ids_[uint8_t(c)];
    if (id < 0) continue;
    int32_t index = int32_t(symbols.size());
    symbols.push_back({id, index - 1, -1, true});
    if (index > 0) symbols[index - 1].next = index;
  }
  if (symbols.size() <= 1) {
    if (!symbols.empty()) out.push_back(symbols[0].id);
    return;
  }

  auto consider = [&](int32_t left) {
    int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const Slot* s = find(symbols[left].id, symbols[right].id)) {
      heap.push_back({s->rank, left, right, symbols[left].id, symbols[right].id, s->result});
      std::push_heap(heap.begin(), heap.end(), comes_later);
    }
  };
  for (int32_t i = 0; i + 1 < int32_t(symbols.size()); ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), comes_later);
    BpeScratch::Candidate c = heap.back();
    heap.pop_back();
    BpeScratch::Symbol& left = symbols[c.left];
    BpeScratch::Symbol& right = symbols[c.right];
    // Skip candidates made stale by an earlier merge of either half.
    if (!left.alive || left.next != c.right || left.id != c.left_id || right.id != c.right_id) continue;

    left.id = c.result;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    if (left.prev >= 0) consider(left.prev);
    consider(c.left);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace qwen35
