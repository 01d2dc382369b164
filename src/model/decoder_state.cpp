#include "model/decoder_state.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace qwen35 {

KvCache::KvCache(int n_kv_heads, int head_dim, DType dtype) : n_kv_(n_kv_heads), head_dim_(head_dim), dtype_(dtype) {
  if (dtype != DType::F32 && dtype != DType::F16) fail("KV cache type must be f32 or f16, got ", dtype_name(dtype));
  elem_ = dtype == DType::F16 ? 2 : 4;
}

void KvCache::reserve(int64_t tokens) {
  const size_t need = size_t(tokens) * row_bytes();
  if (k_.size() >= need) return;
  const size_t grown = std::max(need, k_.size() * 2);
  k_.resize(grown);
  v_.resize(grown);
}

void KvCache::append(const float* k, const float* v, int64_t T) {
  reserve(length_ + T);
  const size_t off = size_t(length_) * row_bytes(), n = size_t(T * row_floats());
  if (dtype_ == DType::F32) {
    std::memcpy(k_.data() + off, k, n * sizeof(float));
    std::memcpy(v_.data() + off, v, n * sizeof(float));
  } else {
    uint16_t* kd = reinterpret_cast<uint16_t*>(k_.data() + off);
    uint16_t* vd = reinterpret_cast<uint16_t*>(v_.data() + off);
    for (size_t i = 0; i < n; ++i) {
      kd[i] = f32_to_f16(k[i]);
      vd[i] = f32_to_f16(v[i]);
    }
  }
  length_ += T;
}

void KvCache::append_raw(const void* k, const void* v, int64_t T) {
  reserve(length_ + T);
  const size_t off = size_t(length_) * row_bytes(), n = size_t(T) * row_bytes();
  std::memcpy(k_.data() + off, k, n);
  std::memcpy(v_.data() + off, v, n);
  length_ += T;
}

namespace {
void row_to_f32(DType t, const uint8_t* row, int64_t n, float* out) {
  if (t == DType::F32) std::memcpy(out, row, size_t(n) * sizeof(float));
  else
    for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
}
}  // namespace

void KvCache::key_f32(int64_t pos, float* out) const {
  row_to_f32(dtype_, static_cast<const uint8_t*>(key_row(pos)), row_floats(), out);
}
void KvCache::value_f32(int64_t pos, float* out) const {
  row_to_f32(dtype_, static_cast<const uint8_t*>(value_row(pos)), row_floats(), out);
}

void KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_) fail("KvCache::truncate: ", length, " outside [0, ", length_, "]");
  length_ = length;
}

BackendStateSlot::BackendStateSlot(const BackendStateSlot& other) : std::unique_ptr<BackendState>() {
  if (other) fail("a decoder state whose caches live on a device cannot be copied");
}

BackendStateSlot& BackendStateSlot::operator=(const BackendStateSlot& other) {
  if (other || *this) fail("a decoder state whose caches live on a device cannot be copied");
  return *this;
}

DecoderState DecoderState::create(const TextConfig& cfg, DType kv_dtype) {
  DecoderState s;
  for (LayerKind kind : cfg.layer_kinds) {
    if (kind == LayerKind::kDeltaNet) {
      DeltaNetState d;
      d.conv.assign(size_t(cfg.conv_dim() * cfg.conv_kernel), 0.0f);
      d.recurrent.assign(size_t(cfg.linear_value_heads) * cfg.linear_key_dim * cfg.linear_value_dim, 0.0f);
      s.deltanet.push_back(std::move(d));
    } else {
      s.kv.emplace_back(cfg.num_kv_heads, cfg.head_dim, kv_dtype);
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
  if (device) device->reset();
  n_past = 0;
}

size_t DecoderState::bytes() const {
  size_t n = 0;
  for (const DeltaNetState& d : deltanet) n += (d.conv.size() + d.recurrent.size()) * sizeof(float);
  for (const KvCache& c : kv) n += c.bytes_used();
  return n;
}

}  // namespace qwen35
