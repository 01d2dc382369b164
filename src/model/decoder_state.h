// Per-sequence state of the hybrid decoder. The two kinds of cache behave differently and the
// types say so: attention KV rewinds by truncation; DeltaNet state cannot rewind at all, only be
// replaced by an earlier copy (see runtime snapshots).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/uninitialized_allocator.h"
#include "model/config.h"

namespace qwen35 {

struct DeltaNetState {
  std::vector<float> conv;       // [conv_dim, K]: last K pre-conv inputs, oldest first, zero-padded
  std::vector<float> recurrent;  // [Hv, dk, dv] fp32
};

class KvCache {
 public:
  KvCache() = default;
  // dtype: F32 (exact parity with the reference's math) or F16 (half the memory and bandwidth;
  // rows are rounded once, when appended).
  KvCache(int n_kv_heads, int head_dim, DType dtype = DType::F32);

  int64_t length() const { return length_; }
  DType dtype() const { return dtype_; }
  int64_t row_floats() const { return int64_t(n_kv_) * head_dim_; }  // elements per row
  size_t row_bytes() const { return size_t(row_floats()) * elem_; }
  // Makes room for `tokens` positions in total (amortised growth; call once with the context size
  // to keep the decode loop free of allocation).
  void reserve(int64_t tokens);
  // Appends rows [T, n_kv, hd] of keys and values (converted to the cache's dtype).
  void append(const float* k, const float* v, int64_t T);
  // Appends rows already in the cache's dtype (snapshot restore).
  void append_raw(const void* k, const void* v, int64_t T);
  void truncate(int64_t length);
  // Row pos [n_kv, hd] in the cache's dtype, for pos < length(): the bytes past length() are
  // indeterminate (a reservation is not zeroed).
  const void* key_row(int64_t pos) const { return k_.data() + size_t(pos) * row_bytes(); }
  const void* value_row(int64_t pos) const { return v_.data() + size_t(pos) * row_bytes(); }
  // Row pos as f32 (dumps and tests).
  void key_f32(int64_t pos, float* out) const;
  void value_f32(int64_t pos, float* out) const;
  size_t bytes_used() const { return size_t(length_) * row_bytes() * 2; }
  size_t bytes_reserved() const { return k_.capacity() + v_.capacity(); }

 private:
  int n_kv_ = 0;
  int head_dim_ = 0;
  DType dtype_ = DType::F32;
  size_t elem_ = 4;
  int64_t length_ = 0;
  // [capacity, n_kv, hd] in dtype_: 64 KiB per token at 9B in f32, 32 KiB in f16.
  // Rows past length() are never read, so a reservation is not zeroed: a server's four sessions
  // each reserve min(context, 4096) rows, and zeroing them (512 MiB at 9B, first touched) took
  // about 2.3 s of a 3.6 s start.
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> k_;
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> v_;
};

// A backend's copy of a sequence's state where it computes (a device's buffers for the KV caches
// and DeltaNet states, made on its first pass); the CPU computes on the vectors of DecoderState.
// Saves, snapshots and rewinds of such a state are device copies (named costs: each one pass on
// the device, run by the caller under the device's lock).
class BackendState {
 public:
  virtual ~BackendState() = default;
  virtual void reset() = 0;  // back to an empty sequence
  // A copy where this one lives of its DeltaNet states and, with `kv`, of its KV rows (a
  // snapshot, sized to the rows used); without, the copy holds no KV rows.
  virtual std::unique_ptr<BackendState> copy(bool kv) const = 0;
  // Takes `from`'s DeltaNet states (a copy of this sequence's, or of one of the same model) and,
  // with `kv`, its KV rows, into this state's buffers. Throws when the shapes differ.
  virtual void assign(const BackendState& from, bool kv) = 0;
  // Drops the KV rows past `length` (rewinds), as KvCache::truncate.
  virtual void truncate_kv(int64_t length) = 0;
  virtual int64_t kv_length() const = 0;
  virtual size_t bytes() const = 0;  // the buffers' bytes in use
};

// DecoderState::device. A state whose caches live on a device is not copied by value (its host
// vectors are stale): copying one throws; copying a host state copies nothing here.
class BackendStateSlot : public std::unique_ptr<BackendState> {
 public:
  using std::unique_ptr<BackendState>::unique_ptr;
  using std::unique_ptr<BackendState>::operator=;
  BackendStateSlot() = default;
  BackendStateSlot(BackendStateSlot&&) = default;
  BackendStateSlot& operator=(BackendStateSlot&&) = default;
  BackendStateSlot(const BackendStateSlot& other);
  BackendStateSlot& operator=(const BackendStateSlot& other);
};

struct DecoderState {
  std::vector<DeltaNetState> deltanet;  // one per DeltaNet layer, in layer order
  std::vector<KvCache> kv;              // one per attention layer, in layer order
  int64_t n_past = 0;                   // tokens processed
  // Null unless a device backend has run this sequence: then the caches live there, not above.
  BackendStateSlot device;

  static DecoderState create(const TextConfig& cfg, DType kv_dtype = DType::F32);
  void reserve(int64_t tokens);
  void reset();  // back to an empty sequence, keeping allocations
  size_t bytes() const;
};

}  // namespace qwen35
