#include "kernels/quant/act_format.h"

#include <cmath>
#include <cstring>

namespace qwen35::kernels {
namespace {

size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

}  // namespace

ActFormat act_format_for(DType w) {
  switch (w) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::IQ4_NL: return ActFormat::kQ8x32;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return ActFormat::kQ8x256;
    default: return ActFormat::kF32;
  }
}

ActLayout act_layout(ActFormat fmt, int64_t n) {
  ActLayout l;
  const size_t nb = size_t(n / act_block(fmt));
  l.q = 0;
  l.d = align64(size_t(n));
  const size_t after_d = l.d + align64(nb * sizeof(float));
  if (fmt == ActFormat::kQ8x32) {
    l.s32 = after_d;
    l.row_bytes = l.s32 + align64(size_t(n / 32) * sizeof(int32_t));
  } else {
    l.s16 = after_d;
    l.h32 = l.s16 + align64(size_t(n / 16) * sizeof(int16_t));
    l.row_bytes = l.h32 + align64(size_t(n / 32) * sizeof(int16_t));
  }
  return l;
}

size_t act_tile_bytes(ActFormat fmt, int64_t T, int64_t n) {
  return size_t(T / kActTile) * act_tile_stride(fmt, n);
}

void tile_act_rows(const ActRows& rows, int64_t i0, int64_t i1, uint8_t* out) {
  const ActTileLayout l = act_tile_layout(rows.fmt);
  const int64_t B = act_block(rows.fmt), nb = rows.n / B;
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = out + size_t(i) * act_tile_stride(rows.fmt, rows.n) + size_t(b) * l.block_bytes;
      for (int t = 0; t < kActTile; ++t) {
        const int64_t r = i * kActTile + t;
        std::memcpy(blk + l.q + size_t(B) * size_t(t), rows.q(r) + b * B, size_t(B));
        std::memcpy(blk + l.d + 4 * size_t(t), rows.d(r) + b, 4);
        if (rows.fmt == ActFormat::kQ8x32) {
          const int32_t ns = -rows.s32(r)[b];  // |s32| <= 32 * 127: no overflow
          std::memcpy(blk + l.ns32 + 4 * size_t(t), &ns, 4);
        } else {
          std::memcpy(blk + l.h32 + size_t(B / 16) * size_t(t), rows.h32(r) + b * (B / 32), size_t(B / 16));
          std::memcpy(blk + l.s16 + size_t(B / 8) * size_t(t), rows.s16(r) + b * (B / 16), size_t(B / 8));
        }
      }
    }
}

void compute_act_sums(ActFormat fmt, int64_t n, uint8_t* row) {
  const ActLayout l = act_layout(fmt, n);
  const int8_t* q = reinterpret_cast<const int8_t*>(row + l.q);
  for (int64_t g = 0; g < n / 32; ++g) {
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += q[g * 32 + j];
    if (fmt == ActFormat::kQ8x32) reinterpret_cast<int32_t*>(row + l.s32)[g] = s;
    else reinterpret_cast<int16_t*>(row + l.h32)[g] = int16_t(s);
  }
  if (fmt == ActFormat::kQ8x256) {
    int16_t* s16 = reinterpret_cast<int16_t*>(row + l.s16);
    for (int64_t g = 0; g < n / 16; ++g) {
      int32_t s = 0;
      for (int j = 0; j < 16; ++j) s += q[g * 16 + j];
      s16[g] = int16_t(s);
    }
  }
}

void quantize_act_ref(ActFormat fmt, const float* x, int64_t T, int64_t x_stride, int64_t n, uint8_t* out) {
  const ActLayout l = act_layout(fmt, n);
  const int64_t B = act_block(fmt);
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x + t * x_stride;
    uint8_t* row = out + size_t(t) * l.row_bytes;
    int8_t* q = reinterpret_cast<int8_t*>(row + l.q);
    float* d = reinterpret_cast<float*>(row + l.d);
    for (int64_t b = 0; b < n / B; ++b) {
      const float* xb = xr + b * B;
      float amax = 0;
      bool finite = true;
      for (int64_t j = 0; j < B; ++j) {
        const float a = std::fabs(xb[j]);
        if (!(a <= 3.4028234663852886e38f)) finite = false;  // inf or NaN
        else if (a > amax) amax = a;
      }
      int8_t* qb = q + b * B;
      if (!finite || amax < 1e-30f) {
        d[b] = finite ? 0.0f : std::nanf("");
        std::memset(qb, 0, size_t(B));
        continue;
      }
      const float db = amax / 127.0f, id = 1.0f / db;
      d[b] = db;
      for (int64_t j = 0; j < B; ++j) qb[j] = int8_t(std::nearbyint(xb[j] * id));
    }
    compute_act_sums(fmt, n, row);
  }
}

}  // namespace qwen35::kernels
