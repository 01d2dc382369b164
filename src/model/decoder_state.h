// Per-sequence state of the hybrid decoder. The two kinds of cache behave differently and the
// types say so: attention KV rewinds by truncation; DeltaNet state cannot rewind at all, only be
// replaced by an earlier copy (see runtime snapshots).
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace qwen35 {

struct DeltaNetState {
  std::vector<float> conv;       // [conv_dim, K]: last K pre-conv inputs, oldest first, zero-padded
  std::vector<float> recurrent;  // [Hv, dk, dv] fp32
};

class KvCache {
 public:
  KvCache() = default;
  KvCache(int n_kv_heads, int head_dim) : n_kv_(n_kv_heads), head_dim_(head_dim) {}

  int64_t length() const { return length_; }
  int64_t row_floats() const { return int64_t(n_kv_) * head_dim_; }
  // Makes room for `tokens` positions in total (amortised growth; call once with the context size
  // to keep the decode loop free of allocation).
  void reserve(int64_t tokens);
  // Appends rows [T, n_kv, hd] of keys and values.
  void append(const float* k, const float* v, int64_t T);
  void truncate(int64_t length);
  const float* key(int64_t pos) const { return k_.data() + pos * row_floats(); }    // [n_kv, hd]
  const float* value(int64_t pos) const { return v_.data() + pos * row_floats(); }  // [n_kv, hd]
  size_t bytes_used() const { return size_t(length_ * row_floats()) * 2 * sizeof(float); }
  size_t bytes_reserved() const { return (k_.capacity() + v_.capacity()) * sizeof(float); }

 private:
  int n_kv_ = 0;
  int head_dim_ = 0;
  int64_t length_ = 0;
  // [capacity, n_kv, hd], fp32 (64 KiB per token at 9B, twice the bf16 the reference keeps: the
  // price of exact parity; a bf16 cache is a later option).
  std::vector<float> k_;
  std::vector<float> v_;
};

struct DecoderState {
  std::vector<DeltaNetState> deltanet;  // one per DeltaNet layer, in layer order
  std::vector<KvCache> kv;              // one per attention layer, in layer order
  int64_t n_past = 0;                   // tokens processed

  static DecoderState create(const TextConfig& cfg);
  void reserve(int64_t tokens);
  void reset();  // back to an empty sequence, keeping allocations
  size_t bytes() const;
};

}  // namespace qwen35
