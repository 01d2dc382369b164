// ggml's block formats (GGUF), byte for byte: shared/spec/gguf.md section 8. Multi-byte fields are
// little-endian; f16 fields are IEEE binary16 bit patterns.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace qwen35::kernels::quant {

constexpr int kQK = 32;     // elements of a legacy block
constexpr int kQK_K = 256;  // elements of a K-quant super-block

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // byte j: element j (low nibble), element j + 16 (high nibble)
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j: fifth bit of element j
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ2_K {
  uint8_t scales[16];  // low nibble scale, high nibble min, per sub-block of 16
  uint8_t qs[64];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];  // 16 6-bit scales, stored with an offset of 32
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // 8 6-bit scales and 8 6-bit mins
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ8_K) == 292);

// The IQ4_NL / IQ4_XS code book.
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Q4_K / Q5_K: scale and min of sub-block i (0..7), 6 bits each, from the 12 packed bytes.
inline void q4k_scale_min(const uint8_t* s, int i, int& scale, int& min) {
  if (i < 4) {
    scale = s[i] & 63;
    min = s[i + 4] & 63;
  } else {
    scale = (s[i + 4] & 15) | ((s[i - 4] >> 6) << 4);
    min = (s[i + 4] >> 4) | ((s[i] >> 6) << 4);
  }
}

// Q3_K: signed scale of sub-block i (0..15), already minus 32.
inline int q3k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? (s[i] & 15) : (s[i - 8] >> 4);
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// IQ4_XS: signed scale of sub-block i (0..7), already minus 32.
inline int iq4xs_scale(const BlockIQ4_XS& b, int i) {
  const int low = (b.scales_l[i / 2] >> (4 * (i % 2))) & 15;
  const int high = (b.scales_h >> (2 * i)) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace qwen35::kernels::quant
