// The K-quants (Q2_K .. Q6_K), as ggml's reference quantizers (quantize_row_q*_K_ref) make them,
// which is what llama-quantize runs without an importance matrix. Each super-block of 256:
//   1. fit a float scale (and min) per sub-block with a search (scale_search.h);
//   2. quantize those sub-block scales to 4/6/8 bits against one f16 super-block scale;
//   3. requantize every element against its rounded sub-block scale, so the stored quants fit
//      the scales a decoder will actually see (sub-blocks whose scale rounds to 0 keep step 1's).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quantize_formats.h"
#include "kernels/quant/scale_search.h"

namespace qwen35::kernels::quant {
namespace {

int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Q2_K / Q3_K: 2-bit fields of four quarters of each half: byte l of half h holds elements
// 128h + l + 32k in bits 2k..2k+1.
void pack_two_bit_quants(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = L + 128 * h + l;
      qs[32 * h + l] = uint8_t(e[0] | (e[32] << 2) | (e[64] << 4) | (e[96] << 6));
    }
}

// Q4_K / Q5_K: 6-bit sub-block scales and mins of 8 sub-blocks in 12 bytes (q4k_scale_min
// unpacks them): 0..3 in the low 6 bits of bytes 0..7, 4..7 as nibbles of bytes 8..11 with their
// top two bits in the spare bits of bytes 0..7.
void pack_scales_mins_6bit(const uint8_t* ls, const uint8_t* lm, uint8_t* s) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = ls[j];
      s[j + 4] = lm[j];
    } else {
      s[j + 4] = uint8_t((ls[j] & 15) | ((lm[j] & 15) << 4));
      s[j - 4] |= uint8_t((ls[j] >> 4) << 6);
      s[j] |= uint8_t((lm[j] >> 4) << 6);
    }
  }
}

// Steps 1-3 of Q4_K and Q5_K, which differ only in the quant range and the search grid.
void quantize_scale_min_superblock(const float* x, const AffineGrid& grid, uint16_t& d16, uint16_t& dmin16,
                                   uint8_t* scales12, uint8_t* L) {
  // Weights: each sub-block's rms plus |x|, favouring large elements without ignoring small ones.
  float w[256];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[32 * j + l] = rms + std::fabs(xs[l]);
  }
  AffineFit fit[8];
  fit_scales_and_mins(8, 32, x, w, grid, L, fit);
  float scale[8], neg_min[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    scale[j] = fit[j].scale;
    neg_min[j] = fit[j].neg_min;
    if (scale[j] > max_scale) max_scale = scale[j];
    if (neg_min[j] > max_min) max_min = neg_min[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // uint8 first, clamp after: a negative fit wraps to a large value and clamps to 63, as in ggml.
    ls[j] = std::min<uint8_t>(63, uint8_t(round_nearest(inv_scale * scale[j])));
    lm[j] = std::min<uint8_t>(63, uint8_t(round_nearest(inv_min * neg_min[j])));
  }
  pack_scales_mins_6bit(ls, lm, scales12);
  d16 = f32_to_f16(max_scale / 63.0f);
  dmin16 = f32_to_f16(max_min / 63.0f);

  const float d_all = f16_to_f32(d16), dmin_all = f16_to_f32(dmin16);
  for (int j = 0; j < 8; ++j) {
    int sc, mn;
    q4k_scale_min(scales12, j, sc, mn);
    const float d = d_all * float(sc);
    if (d == 0) continue;
    const float dm = dmin_all * float(mn);
    for (int l = 0; l < 32; ++l) L[32 * j + l] = uint8_t(clamp_int(round_nearest((x[32 * j + l] + dm) / d), 0, grid.nmax));
  }
}

}  // namespace

void quantize_q2_k(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ2_K*>(out);
  constexpr AffineGrid kGrid{3, -0.5f, 0.1f, 15, true};
  uint8_t L[256];
  float scale[16], neg_min[16], w[256];
  AffineFit fit[16];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    for (int l = 0; l < 256; ++l) w[l] = std::fabs(x[l]);
    fit_scales_and_mins(16, 16, x, w, kGrid, L, fit);
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      scale[j] = fit[j].scale;
      neg_min[j] = fit[j].neg_min;
      if (scale[j] > max_scale) max_scale = scale[j];
      if (neg_min[j] > max_min) max_min = neg_min[j];
    }
    // 4-bit sub-block scales (low nibble) and mins (high nibble) against f16 d and dmin.
    if (max_scale > 0) {
      const float inv = 15.0f / max_scale;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = uint8_t(round_nearest(inv * scale[j]));
      y[b].d = f32_to_f16(max_scale / 15.0f);
    } else {
      std::memset(y[b].scales, 0, 16);
      y[b].d = f32_to_f16(0.0f);
    }
    if (max_min > 0) {
      const float inv = 15.0f / max_min;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = uint8_t(y[b].scales[j] | (round_nearest(inv * neg_min[j]) << 4));
      y[b].dmin = f32_to_f16(max_min / 15.0f);
    } else {
      y[b].dmin = f32_to_f16(0.0f);
    }
    const float d_all = f16_to_f32(y[b].d), dmin_all = f16_to_f32(y[b].dmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * float(y[b].scales[j] & 15);
      if (d == 0) continue;
      const float dm = dmin_all * float(y[b].scales[j] >> 4);
      for (int l = 0; l < 16; ++l) L[16 * j + l] = uint8_t(clamp_int(round_nearest((x[16 * j + l] + dm) / d), 0, 3));
    }
    pack_two_bit_quants(L, y[b].qs);
  }
}

void quantize_q3_k(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ3_K*>(out);
  int8_t L[256];
  float scale[16];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scale[j] = fit_signed_scale_refined(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scale[j]) > amax) {
        amax = std::fabs(scale[j]);
        max_scale = scale[j];
      }
    }
    // 6-bit signed sub-block scales, offset 32: low nibbles in bytes 0..7 (sub-blocks 0..7 low,
    // 8..15 high), top two bits in bytes 8..11 (sub-block j at bits 2 (j / 4) of byte 8 + j % 4).
    std::memset(y[b].scales, 0, 12);
    if (max_scale != 0) {
      const float inv = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(int8_t(round_nearest(inv * scale[j])), -32, 31) + 32;
        if (j < 8)
          y[b].scales[j] = uint8_t(l & 15);
        else
          y[b].scales[j - 8] |= uint8_t((l & 15) << 4);
        y[b].scales[8 + j % 4] |= uint8_t((l >> 4) << (2 * (j / 4)));
      }
      y[b].d = f32_to_f16(1 / inv);
    } else {
      y[b].d = f32_to_f16(0.0f);
    }
    const float d_all = f16_to_f32(y[b].d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * float(q3k_scale(y[b].scales, j));
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l) L[16 * j + l] = int8_t(clamp_int(round_nearest(x[16 * j + l] / d), -4, 3) + 4);
    }
    // The third bit of element e goes to bit e / 32 of hmask[e % 32]; the low two bits stay.
    std::memset(y[b].hmask, 0, 32);
    uint8_t low[256];
    for (int e = 0; e < 256; ++e) {
      int q = L[e];
      if (q > 3) {
        y[b].hmask[e % 32] |= uint8_t(1 << (e / 32));
        q -= 4;
      }
      low[e] = uint8_t(q);
    }
    pack_two_bit_quants(low, y[b].qs);
  }
}

void quantize_q4_k(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ4_K*>(out);
  constexpr AffineGrid kGrid{15, -1.0f, 0.1f, 20, false};
  uint8_t L[256];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    quantize_scale_min_superblock(x, kGrid, y[b].d, y[b].dmin, y[b].scales, L);
    // Chunk c of 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high ones.
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) y[b].qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_k(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ5_K*>(out);
  constexpr AffineGrid kGrid{31, -0.5f, 0.1f, 15, false};
  uint8_t L[256];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    quantize_scale_min_superblock(x, kGrid, y[b].d, y[b].dmin, y[b].scales, L);
    // As Q4_K, with the fifth bit of elements 64c + l and 64c + 32 + l in bits 2c, 2c + 1 of qh[l].
    std::memset(y[b].qh, 0, 32);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y[b].qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        y[b].qs[32 * c + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
      }
  }
}

void quantize_q6_k(const float* x, void* out, int64_t nblocks) {
  auto* y = static_cast<BlockQ6_K*>(out);
  int8_t L[256];
  float scale[16];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    fit_signed_scales(16, 16, 32, x, L, scale);
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; ++j) {
      if (std::fabs(scale[j]) > max_abs) {
        max_abs = std::fabs(scale[j]);
        max_scale = scale[j];
      }
    }
    if (max_abs < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof(BlockQ6_K));
      continue;
    }
    // int8 sub-block scales against d = max_scale / -128 (the largest maps to -128).
    const float inv = -128.0f / max_scale;
    y[b].d = f32_to_f16(1 / inv);
    for (int j = 0; j < 16; ++j) y[b].scales[j] = int8_t(std::min(127, round_nearest(inv * scale[j])));
    const float d_all = f16_to_f32(y[b].d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * float(y[b].scales[j]);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l) L[16 * j + l] = int8_t(clamp_int(round_nearest(x[16 * j + l] / d), -32, 31) + 32);
    }
    // Half h: elements 128h + 32k + l (k = 0..3); low nibbles of k = 0, 2 and 1, 3 share bytes
    // l and 32 + l of ql, the top two bits of all four go to qh[l] at bits 2k.
    for (int h = 0; h < 2; ++h) {
      const int8_t* e = L + 128 * h;
      uint8_t* ql = y[b].ql + 64 * h;
      uint8_t* qh = y[b].qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = uint8_t((e[l] & 15) | ((e[l + 64] & 15) << 4));
        ql[l + 32] = uint8_t((e[l + 32] & 15) | ((e[l + 96] & 15) << 4));
        qh[l] = uint8_t((e[l] >> 4) | ((e[l + 32] >> 4) << 2) | ((e[l + 64] >> 4) << 4) | ((e[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace qwen35::kernels::quant
