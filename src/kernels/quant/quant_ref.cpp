#include "kernels/quant/quant_ref.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/quant/blocks.h"

namespace qwen35::kernels::quant {
namespace {

template <typename B>
const B& block_at(const void* row, int64_t i) {
  return static_cast<const B*>(row)[i];
}

void legacy(DecodedBlock& o, float d) {
  o.n = 32;
  o.sub = 32;
  o.d = d;
  o.dmin = 0;
  o.has_min = false;
  o.sc[0] = 1;
  o.mn[0] = 0;
}

}  // namespace

void decode_block(DType dtype, const void* row, int64_t i, DecodedBlock& o) {
  switch (dtype) {
    case DType::Q8_0: {
      const auto& b = block_at<BlockQ8_0>(row, i);
      legacy(o, f16_to_f32(b.d));
      for (int j = 0; j < 32; ++j) o.q[j] = b.qs[j];
      return;
    }
    case DType::Q4_0:
    case DType::IQ4_NL: {
      const auto& b = block_at<BlockQ4_0>(row, i);  // same layout
      legacy(o, f16_to_f32(b.d));
      const bool nl = dtype == DType::IQ4_NL;
      for (int j = 0; j < 16; ++j) {
        const int lo = b.qs[j] & 15, hi = b.qs[j] >> 4;
        o.q[j] = int8_t(nl ? kIQ4Values[lo] : lo - 8);
        o.q[j + 16] = int8_t(nl ? kIQ4Values[hi] : hi - 8);
      }
      return;
    }
    case DType::Q4_1: {
      const auto& b = block_at<BlockQ4_1>(row, i);
      legacy(o, f16_to_f32(b.d));
      o.has_min = true;
      o.dmin = -f16_to_f32(b.m);
      o.mn[0] = 1;
      for (int j = 0; j < 16; ++j) {
        o.q[j] = int8_t(b.qs[j] & 15);
        o.q[j + 16] = int8_t(b.qs[j] >> 4);
      }
      return;
    }
    case DType::Q5_0:
    case DType::Q5_1: {
      const bool with_min = dtype == DType::Q5_1;
      const uint8_t* qs;
      const uint8_t* qhp;
      if (with_min) {
        const auto& b = block_at<BlockQ5_1>(row, i);
        legacy(o, f16_to_f32(b.d));
        o.has_min = true;
        o.dmin = -f16_to_f32(b.m);
        o.mn[0] = 1;
        qs = b.qs;
        qhp = b.qh;
      } else {
        const auto& b = block_at<BlockQ5_0>(row, i);
        legacy(o, f16_to_f32(b.d));
        qs = b.qs;
        qhp = b.qh;
      }
      uint32_t qh;
      std::memcpy(&qh, qhp, 4);
      const int offset = with_min ? 0 : 16;
      for (int j = 0; j < 16; ++j) {
        o.q[j] = int8_t(((qs[j] & 15) | (((qh >> j) & 1) << 4)) - offset);
        o.q[j + 16] = int8_t(((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - offset);
      }
      return;
    }
    case DType::Q2_K: {
      const auto& b = block_at<BlockQ2_K>(row, i);
      o.n = 256;
      o.sub = 16;
      o.has_min = true;
      o.d = f16_to_f32(b.d);
      o.dmin = f16_to_f32(b.dmin);
      for (int s = 0; s < 16; ++s) {
        o.sc[s] = int16_t(b.scales[s] & 15);
        o.mn[s] = int16_t(b.scales[s] >> 4);
      }
      // Halves of 128 use 32 bytes each; shift k (0..3) gives sub-blocks 8h+2k (bytes 0..15) and 8h+2k+1 (16..31).
      for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 4; ++k)
          for (int l = 0; l < 32; ++l) o.q[128 * h + 32 * k + l] = int8_t((b.qs[32 * h + l] >> (2 * k)) & 3);
      return;
    }
    case DType::Q3_K: {
      const auto& b = block_at<BlockQ3_K>(row, i);
      o.n = 256;
      o.sub = 16;
      o.has_min = false;
      o.d = f16_to_f32(b.d);
      o.dmin = 0;
      for (int s = 0; s < 16; ++s) {
        o.sc[s] = int16_t(q3k_scale(b.scales, s));
        o.mn[s] = 0;
      }
      for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 4; ++k)
          for (int l = 0; l < 32; ++l) {
            const int low = (b.qs[32 * h + l] >> (2 * k)) & 3;
            const bool high = (b.hmask[l] >> (4 * h + k)) & 1;
            o.q[128 * h + 32 * k + l] = int8_t(low - (high ? 0 : 4));
          }
      return;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = dtype == DType::Q5_K;
      const uint8_t *scales, *qs, *qh = nullptr;
      uint16_t d, dmin;
      if (five) {
        const auto& b = block_at<BlockQ5_K>(row, i);
        scales = b.scales;
        qs = b.qs;
        qh = b.qh;
        d = b.d;
        dmin = b.dmin;
      } else {
        const auto& b = block_at<BlockQ4_K>(row, i);
        scales = b.scales;
        qs = b.qs;
        d = b.d;
        dmin = b.dmin;
      }
      o.n = 256;
      o.sub = 32;
      o.has_min = true;
      o.d = f16_to_f32(d);
      o.dmin = f16_to_f32(dmin);
      for (int s = 0; s < 8; ++s) {
        int sc, mn;
        q4k_scale_min(scales, s, sc, mn);
        o.sc[s] = int16_t(sc);
        o.mn[s] = int16_t(mn);
      }
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
          if (five) {
            lo |= ((qh[l] >> (2 * c)) & 1) << 4;
            hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
          }
          o.q[64 * c + l] = int8_t(lo);
          o.q[64 * c + 32 + l] = int8_t(hi);
        }
      return;
    }
    case DType::Q6_K: {
      const auto& b = block_at<BlockQ6_K>(row, i);
      o.n = 256;
      o.sub = 16;
      o.has_min = false;
      o.d = f16_to_f32(b.d);
      o.dmin = 0;
      for (int s = 0; s < 16; ++s) {
        o.sc[s] = b.scales[s];
        o.mn[s] = 0;
      }
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        int8_t* q = o.q + 128 * h;
        for (int l = 0; l < 32; ++l) {
          q[l] = int8_t(((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32);
          q[l + 32] = int8_t(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
          q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
          q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
      }
      return;
    }
    case DType::IQ4_XS: {
      const auto& b = block_at<BlockIQ4_XS>(row, i);
      o.n = 256;
      o.sub = 32;
      o.has_min = false;
      o.d = f16_to_f32(b.d);
      o.dmin = 0;
      for (int s = 0; s < 8; ++s) {
        o.sc[s] = int16_t(iq4xs_scale(b, s));
        o.mn[s] = 0;
        const uint8_t* qs = b.qs + 16 * s;
        for (int j = 0; j < 16; ++j) {
          o.q[32 * s + j] = kIQ4Values[qs[j] & 15];
          o.q[32 * s + j + 16] = kIQ4Values[qs[j] >> 4];
        }
      }
      return;
    }
    default: fail("decode_block: ", dtype_name(dtype), " is not a weight block format");
  }
}

void dequantize_row(DType dtype, const void* row, float* out, int64_t n) {
  const int64_t B = int64_t(dtype_info(dtype).block_elems);
  DecodedBlock blk;
  for (int64_t b = 0; b < n / B; ++b) {
    decode_block(dtype, row, b, blk);
    float* y = out + b * B;
    for (int s = 0; s < blk.n / blk.sub; ++s) {
      // ggml rounds the sub-block factors first: (d * sc) * q - (dmin * mn).
      const float dl = blk.d * float(blk.sc[s]);
      const float ml = blk.dmin * float(blk.mn[s]);
      for (int j = s * blk.sub; j < (s + 1) * blk.sub; ++j)
        y[j] = blk.has_min ? dl * float(blk.q[j]) - ml : dl * float(blk.q[j]);
    }
  }
}

float dot_row(DType dtype, const void* row, const ActRows& a, int64_t t) {
  const int64_t B = int64_t(dtype_info(dtype).block_elems);
  if (act_block(a.fmt) != B || act_format_for(dtype) != a.fmt) fail("dot_row: activation format does not fit ", dtype_name(dtype));
  const int8_t* q = a.q(t);
  const float* d = a.d(t);
  const bool k256 = a.fmt == ActFormat::kQ8x256;
  const int32_t* s32 = k256 ? nullptr : a.s32(t);
  const int16_t* s16 = k256 ? a.s16(t) : nullptr;
  const int16_t* h32 = k256 ? a.h32(t) : nullptr;
  DecodedBlock blk;
  float acc = 0;
  for (int64_t b = 0; b < a.n / B; ++b) {
    decode_block(dtype, row, b, blk);
    const int8_t* qa = q + b * B;
    int32_t i1 = 0, i2 = 0;
    for (int s = 0; s < blk.n / blk.sub; ++s) {
      int32_t part = 0;
      for (int j = s * blk.sub; j < (s + 1) * blk.sub; ++j) part += int32_t(blk.q[j]) * qa[j];
      i1 += int32_t(blk.sc[s]) * part;
      if (blk.has_min) {
        const int32_t asum = !k256 ? s32[b] : blk.sub == 16 ? s16[b * 16 + s] : h32[b * 8 + s];
        i2 += int32_t(blk.mn[s]) * asum;
      }
    }
    acc = std::fma(float(i1), blk.d * d[b], acc);
    if (blk.has_min) acc = std::fma(float(i2), -(blk.dmin * d[b]), acc);
  }
  return acc;
}

}  // namespace qwen35::kernels::quant
