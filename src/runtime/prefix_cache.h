// PrefixCache internals: snapshots keyed by the cache keys of the tokens they cover.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "qwen35/engine.h"
#include "runtime/sequence.h"

namespace qwen35 {

struct PrefixCache::Impl {
  explicit Impl(size_t budget) : budget(budget) {}

  // Stores a snapshot (replacing one with the same keys); evicts least recently used entries
  // until the total fits the budget. A snapshot larger than the whole budget is not stored.
  void put(std::shared_ptr<const SnapshotData> snap);
  // The longest stored snapshot whose keys are a prefix of keys[0, max_len); nullptr if none.
  std::shared_ptr<const SnapshotData> find(const uint64_t* keys, int64_t max_len);

  mutable std::mutex mu;
  size_t budget;
  size_t used = 0;
  int64_t hits = 0, misses = 0;
  std::list<std::shared_ptr<const SnapshotData>> lru;  // most recently used first
};

}  // namespace qwen35
