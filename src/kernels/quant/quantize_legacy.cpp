// The closed-form 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): one pass for the block's
// range, one for the quants, exactly ggml's reference quantizers (quantize_row_*_ref), which
// llama-quantize runs for these formats when it has no importance matrix.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quantize_formats.h"

namespace qwen35::kernels::quant {
namespace {

// The element of largest magnitude with its sign (the first one on a tie); ggml divides it by
// the most negative quant so that it maps exactly onto that quant.
float signed_absmax32(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < kQK; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

void min_max32(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// Whether every element is finite (no exponent of all ones): then the quantizers' float -> int
// conversions stay in range and need no x86 emulation, and the loops vectorize.
bool all_finite32(const float* x) {
  uint32_t special = 0;
  for (int j = 0; j < kQK; ++j) {
    uint32_t b;
    std::memcpy(&b, x + j, 4);
    special |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
  }
  return special == 0;
}

bool finite(float v) { return std::fabs(v) <= FLT_MAX; }

// Q4_0 / Q5_0: value = d * (q - offset), d = max / -offset, q = trunc(x / d + offset + 0.5).
void symmetric_block(const float* x, int offset, int qmax, uint16_t& d16, uint8_t* q) {
  const float d = signed_absmax32(x) / float(-offset);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  d16 = f32_to_f16(d);
  const float bias = float(offset) + 0.5f;
  if (finite(id) && all_finite32(x)) {
    // |x * id| <= offset (up to rounding): the conversion is in range.
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(qmax, int32_t(x[j] * id + bias)));
    return;
  }
  for (int j = 0; j < kQK; ++j) {
    const int v = int8_t(truncate_like_x86(x[j] * id + bias));
    q[j] = uint8_t(v < qmax ? v : qmax);
  }
}

// Q4_1 / Q5_1: value = d * q + m, m = min, d = (max - min) / qmax. ggml clamps only the
// 4-bit form (after an int8 conversion); the 5-bit form converts straight to uint8.
void affine_block(const float* x, int qmax, uint16_t& d16, uint16_t& m16, uint8_t* q) {
  float min, max;
  min_max32(x, min, max);
  const float d = (max - min) / float(qmax);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  d16 = f32_to_f16(d);
  m16 = f32_to_f16(min);
  if (finite(id) && finite(max - min) && all_finite32(x)) {
    // 0 <= (x - min) * id <= qmax (up to rounding): the conversion is in range.
    for (int j = 0; j < kQK; ++j) {
      const int32_t v = int32_t((x[j] - min) * id + 0.5f);
      q[j] = uint8_t(qmax == 15 ? std::min(15, v) : v);
    }
    return;
  }
  for (int j = 0; j < kQK; ++j) {
    const int32_t v = truncate_like_x86((x[j] - min) * id + 0.5f);
    q[j] = qmax == 15 ? uint8_t(std::min(15, int(int8_t(v)))) : uint8_t(v);
  }
}

// roundf (ties away from zero) followed by the x86 conversion, without a libm call. Below 2^23
// the truncation and the remainder are exact; from 2^23 on (and for NaN) roundf changes nothing.
int32_t round_away_like_x86(float v) {
  if (!(std::fabs(v) < 8388608.0f)) return truncate_like_x86(v);
  const int32_t t = int32_t(v);
  const float frac = v - float(t);
  return frac >= 0.5f ? t + 1 : (frac <= -0.5f ? t - 1 : t);
}

// Low nibbles: elements 0..15; high nibbles: elements 16..31. The 4-bit formats OR the quants
// in unmasked, as ggml does (they are <= 15 for every finite input).
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t(q[j] | (q[j + 16] << 4));
}
void pack_low_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

// Bit j of the little-endian word: the fifth bit of element j.
void pack_fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= uint32_t((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

}  // namespace

void quantize_q8_0(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < nblocks; ++b, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    // Ties round away from zero here (ggml's roundf), unlike the activation quantizer.
    if (finite(id) && all_finite32(x)) {
      // |x * id| <= 127 (up to rounding): truncation and remainder are exact and in range.
      for (int j = 0; j < kQK; ++j) {
        const float v = x[j] * id;
        const int32_t t = int32_t(v);
        const float frac = v - float(t);
        y[b].qs[j] = int8_t(t + int32_t(frac >= 0.5f) - int32_t(frac <= -0.5f));
      }
    } else {
      for (int j = 0; j < kQK; ++j) y[b].qs[j] = int8_t(round_away_like_x86(x[j] * id));
    }
  }
}

void quantize_q4_0(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ4_0*>(out);
  uint8_t q[kQK];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK) {
    symmetric_block(x, 8, 15, y[b].d, q);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_q5_0(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ5_0*>(out);
  uint8_t q[kQK];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK) {
    symmetric_block(x, 16, 31, y[b].d, q);
    pack_low_nibbles(q, y[b].qs);
    pack_fifth_bits(q, y[b].qh);
  }
}

void quantize_q4_1(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ4_1*>(out);
  uint8_t q[kQK];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK) {
    affine_block(x, 15, y[b].d, y[b].m, q);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_q5_1(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ5_1*>(out);
  uint8_t q[kQK];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK) {
    affine_block(x, 31, y[b].d, y[b].m, q);
    pack_low_nibbles(q, y[b].qs);
    pack_fifth_bits(q, y[b].qh);
  }
}

}  // namespace qwen35::kernels::quant
