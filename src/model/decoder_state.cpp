#include "model/decoder_state.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace qwen35 {

void KvCache::reserve(int64_t tokens) {
  const size_t need = size_t(tokens * row_floats());
  if (k_.size() >= need) return;
  const size_t grown = std::max(need, k_.size() * 2);
  k_.resize(grown);
  v_.resize(grown);
}

void KvCache::append(const float* k, const float* v, int64_t T) {
  reserve(length_ + T);
  const size_t off = size_t(length_ * row_floats()), n = size_t(T * row_floats());
  std::memcpy(k_.data() + off, k, n * sizeof(float));
  std::memcpy(v_.data() + off, v, n * sizeof(float));
  length_ += T;
}

void KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_) fail("KvCache::truncate: ", length, " outside [0, ", length_, "]");
  length_ = length;
}

DecoderState DecoderState::create(const TextConfig& cfg) {
  DecoderState s;
  for (LayerKind kind : cfg.layer_kinds) {
    if (kind == LayerKind::kDeltaNet) {
      DeltaNetState d;
      d.conv.assign(size_t(cfg.conv_dim() * cfg.conv_kernel), 0.0f);
      d.recurrent.assign(size_t(cfg.linear_value_heads) * cfg.linear_key_dim * cfg.linear_value_dim, 0.0f);
      s.deltanet.push_back(std::move(d));
    } else {
      s.kv.emplace_back(cfg.num_kv_heads, cfg.head_dim);
    }
  }
  return s;
}

void DecoderState::reserve(int64_t tokens) {
  for (KvCache& c : kv) c.reserve(tokens);
}

void DecoderState::reset() {
  for (DeltaNetState& d : deltanet) {
    std::fill(d.conv.begin(), d.conv.end(), 0.0f);
    std::fill(d.recurrent.begin(), d.recurrent.end(), 0.0f);
  }
  for (KvCache& c : kv) c.truncate(0);
  n_past = 0;
}

size_t DecoderState::bytes() const {
  size_t n = 0;
  for (const DeltaNetState& d : deltanet) n += (d.conv.size() + d.recurrent.size()) * sizeof(float);
  for (const KvCache& c : kv) n += c.bytes_used();
  return n;
}

}  // namespace qwen35
