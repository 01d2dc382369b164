#include "runtime/prefix_cache.h"

#include <algorithm>

namespace qwen35 {

void PrefixCache::Impl::put(std::shared_ptr<const SnapshotData> snap) {
  const size_t size = snap->bytes();
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = lru.begin(); it != lru.end(); ++it) {
    if ((*it)->keys == snap->keys) {
      used -= (*it)->bytes();
      lru.erase(it);
      break;
    }
  }
  if (size > budget) return;
  while (used + size > budget && !lru.empty()) {
    used -= lru.back()->bytes();
    lru.pop_back();
  }
  used += size;
  lru.push_front(std::move(snap));
}

std::shared_ptr<const SnapshotData> PrefixCache::Impl::find(const uint64_t* keys, int64_t max_len) {
  std::lock_guard<std::mutex> lock(mu);
  auto best = lru.end();
  for (auto it = lru.begin(); it != lru.end(); ++it) {
    const auto& k = (*it)->keys;
    const int64_t n = int64_t(k.size());
    if (n == 0 || n > max_len) continue;
    if (best != lru.end() && n <= int64_t((*best)->keys.size())) continue;
    if (std::equal(k.begin(), k.end(), keys)) best = it;
  }
  if (best == lru.end()) {
    ++misses;
    return nullptr;
  }
  ++hits;
  auto snap = *best;
  lru.splice(lru.begin(), lru, best);
  return snap;
}

PrefixCache::PrefixCache(size_t budget_bytes) : impl_(std::make_unique<Impl>(budget_bytes)) {}
PrefixCache::~PrefixCache() = default;

size_t PrefixCache::bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->used;
}
size_t PrefixCache::budget() const { return impl_->budget; }
size_t PrefixCache::entries() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lru.size();
}
int64_t PrefixCache::hits() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->hits;
}
int64_t PrefixCache::misses() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->misses;
}

}  // namespace qwen35
