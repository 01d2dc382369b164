// Non-owning typed views over bytes (mmapped weights, golden files) and a small owning f32 buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace qwen35 {

constexpr int kMaxDims = 6;

struct Shape {
  std::array<int64_t, kMaxDims> dims{};
  int ndim = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) {
    for (int64_t x : d) dims[size_t(ndim++)] = x;
  }
  int64_t operator[](int i) const { return dims[size_t(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[size_t(i)];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
      if (dims[size_t(i)] != o.dims[size_t(i)]) return false;
    return true;
  }
  std::string to_string() const;
};

// A typed view of tensor bytes owned elsewhere.
struct TensorView {
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const { return shape.numel(); }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

// Reads element i of a plain float view (F32/F16/BF16) as f32.
float read_float(const TensorView& t, int64_t i);
// Converts a whole plain float view to f32.
std::vector<float> to_f32(const TensorView& t);

}  // namespace qwen35
