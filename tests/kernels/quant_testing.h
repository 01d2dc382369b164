// Helpers for block-format tests: random blocks of every weight format with sane scales, and
// quantized activation rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "kernels/quant/act_format.h"

namespace qwen35::kernels::testing {

inline const std::vector<DType>& weight_block_formats() {
  static const std::vector<DType> all = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,   DType::Q5_1,  DType::Q2_K,
                                         DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,   DType::IQ4_NL, DType::IQ4_XS};
  return all;
}

// Offsets of the f16 scale fields of a block (they get finite random values; every other byte is random).
inline std::vector<size_t> f16_fields(DType t) {
  switch (t) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::IQ4_NL:
    case DType::IQ4_XS: return {0};
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {};
  }
}

// rows x cols of random blocks; `extra` bytes of slack before the first row (misalignment).
inline std::vector<uint8_t> random_block_rows(DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(t);
  const size_t n_blocks = size_t(rows) * size_t(cols) / info.block_elems;
  std::vector<uint8_t> bytes(n_blocks * info.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (auto& b : bytes) b = uint8_t(byte(rng));
  for (size_t b = 0; b < n_blocks; ++b)
    for (size_t off : f16_fields(t)) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(bytes.data() + b * info.block_bytes + off, &h, 2);
    }
  return bytes;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace qwen35::kernels::testing
