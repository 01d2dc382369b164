// AVX-512 kernels (F, BW, VL). Compiled with -mavx512*; only reached after a CPU check.
#include <immintrin.h>

#include <algorithm>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

template <DType D>
inline __m512 load16(const void* base, int64_t i) {
  if constexpr (D == DType::F32) return _mm512_loadu_ps(static_cast<const float*>(base) + i);
  if constexpr (D == DType::BF16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if constexpr (D == DType::F16)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
}

template <DType D>
inline __m512 load16_masked(const void* base, int64_t i, __mmask16 m) {
  if constexpr (D == DType::F32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + i);
  if constexpr (D == DType::BF16) {
    __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if constexpr (D == DType::F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i));
}

// One tile: R weight rows against C tokens, R * C accumulators in registers. Every output is
// summed over k in the same order whatever R, C and T are (16-lane vectors front to back, then
// the masked tail, then one horizontal reduce), so a token's results never depend on the block
// it was computed in: prompt lookup verification relies on that.
template <DType D, int R, int C>
inline void tile(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, float* y, int64_t ys, int64_t n16,
                 __mmask16 tail) {
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  const void* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w.row(o + r);
  for (int64_t i = 0; i < n16; i += 16) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_loadu_ps(x + c * xs + i);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16<D>(rows[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if (tail) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_maskz_loadu_ps(tail, x + c * xs + n16);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16_masked<D>(rows[r], n16, tail);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[c * ys + o + r] = _mm512_reduce_add_ps(acc[r][c]);
}

template <DType D, int R>
inline void tile_tokens(const float* x, int64_t xs, int64_t C, const WeightMatrix& w, int64_t o, float* y, int64_t ys,
                        int64_t n16, __mmask16 tail) {
  switch (C) {
    case 1: return tile<D, R, 1>(x, xs, w, o, y, ys, n16, tail);
    case 2: return tile<D, R, 2>(x, xs, w, o, y, ys, n16, tail);
    case 3: return tile<D, R, 3>(x, xs, w, o, y, ys, n16, tail);
    default: return tile<D, R, 4>(x, xs, w, o, y, ys, n16, tail);
  }
}

// Tiles of 4 rows x 4 tokens: per 16-wide step, 4 weight and 4 activation loads feed 16 FMAs,
// and a single token (decode) still has 4 independent accumulation chains.
template <DType D>
void matmul_avx512(const float* x, int64_t T, int64_t xs, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                   float* y, int64_t ys) {
  const int64_t n = w.cols, n16 = n & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (n - n16)) - 1);
  for (int64_t o = o_begin; o < o_end; o += 4) {
    const int64_t R = std::min<int64_t>(4, o_end - o);
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int64_t C = std::min<int64_t>(4, T - t0);
      const float* xt = x + t0 * xs;
      float* yt = y + t0 * ys;
      switch (R) {
        case 1: tile_tokens<D, 1>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        case 2: tile_tokens<D, 2>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        case 3: tile_tokens<D, 3>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        default: tile_tokens<D, 4>(xt, xs, C, w, o, yt, ys, n16, tail); break;
      }
    }
  }
}

float dot_avx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    __mmask16 m = __mmask16((1u << (n - i)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void axpy_avx512(float a, const float* x, float* y, int64_t n) {
  __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

KernelTable make_avx512() {
  KernelTable k = ref_table();
  k.name = "avx512";
  k.matmul[size_t(DType::F32)] = matmul_avx512<DType::F32>;
  k.matmul[size_t(DType::BF16)] = matmul_avx512<DType::BF16>;
  k.matmul[size_t(DType::F16)] = matmul_avx512<DType::F16>;
  k.dot = dot_avx512;
  k.axpy = axpy_avx512;
  return k;
}

}  // namespace

// Only called by dispatch.cpp after it checked the CPU's features.
const KernelTable& avx512_table_unchecked() {
  static const KernelTable table = make_avx512();
  return table;
}

}  // namespace qwen35::kernels
