// Writes GGUF v3 files the way llama.cpp's strict reader wants them (gguf.md sections 9-10):
// metadata in insertion order, tensor infos in insertion order, 32-byte alignment, data contiguous
// in info order with every tensor zero-padded to the alignment.
//
// Tensor bytes are produced on demand while writing (a fill callback per tensor), so a converter
// never holds more than one tensor in memory. The file is written to "<path>.part" and renamed
// when complete, so a failed write never leaves a file that looks finished.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "io/gguf.h"

namespace qwen35 {

class GgufWriter {
 public:
  // Scalars. Keys must be unique; adding one twice throws.
  void set_u8(const std::string& key, uint8_t v) { scalar(key, GgufType::kU8, &v, 1); }
  void set_u16(const std::string& key, uint16_t v) { scalar(key, GgufType::kU16, &v, 2); }
  void set_u32(const std::string& key, uint32_t v) { scalar(key, GgufType::kU32, &v, 4); }
  void set_i32(const std::string& key, int32_t v) { scalar(key, GgufType::kI32, &v, 4); }
  void set_u64(const std::string& key, uint64_t v) { scalar(key, GgufType::kU64, &v, 8); }
  void set_i64(const std::string& key, int64_t v) { scalar(key, GgufType::kI64, &v, 8); }
  void set_f32(const std::string& key, float v) { scalar(key, GgufType::kF32, &v, 4); }
  void set_f64(const std::string& key, double v) { scalar(key, GgufType::kF64, &v, 8); }
  void set_bool(const std::string& key, bool v) {
    const uint8_t b = v;
    scalar(key, GgufType::kBool, &b, 1);
  }
  void set_string(const std::string& key, std::string_view v);
  // Arrays.
  void set_array_i32(const std::string& key, const std::vector<int32_t>& v);
  void set_array_f32(const std::string& key, const std::vector<float>& v);
  void set_array_bool(const std::string& key, const std::vector<bool>& v);
  void set_array_strings(const std::string& key, const std::vector<std::string>& v);
  // Copies a value read from another file (for requantizing: metadata passes through unchanged).
  void set_value(const std::string& key, const GgufValue& v);
  bool has(const std::string& key) const;

  // A tensor of `shape` (outermost first, HF orientation: Shape{rows, cols} is ggml ne {cols, rows})
  // stored as `dtype`; `fill` writes exactly dtype_bytes(dtype, numel) bytes into the buffer it is
  // given, when the file is written.
  using Fill = std::function<void(uint8_t* out)>;
  void add_tensor(const std::string& name, DType dtype, const Shape& shape, Fill fill);
  // A tensor whose bytes are already at hand (copied now).
  void add_tensor_bytes(const std::string& name, DType dtype, const Shape& shape, const void* data, size_t nbytes);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file. `progress(done, total)` is called after each tensor.
  void write(const std::string& path, const std::function<void(size_t done, size_t total)>& progress = {}) const;
  // The whole file in memory (for tests).
  std::vector<uint8_t> to_bytes() const;

  static constexpr uint32_t kAlignment = 32;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    Shape shape;
    size_t nbytes;
    Fill fill;
  };
  void scalar(const std::string& key, GgufType type, const void* v, size_t size);
  void begin_key(const std::string& key, GgufType type);
  std::vector<uint8_t> header() const;
  template <typename Sink>
  void emit(Sink& sink, const std::function<void(size_t, size_t)>& progress) const;

  std::vector<uint8_t> kv_;  // serialised key/value pairs
  std::vector<std::string> keys_;
  std::vector<Tensor> tensors_;
};

}  // namespace qwen35
