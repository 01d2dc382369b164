// AVX2 + FMA kernels. Compiled with -mavx2 -mfma; only reached after a CPU check.
#include <immintrin.h>


#include "kernels/kernels.h"
#include "kernels/simd/isa_local.h"

namespace qwen35::kernels {

void install_avx2_elementwise(KernelTable& k);  // avx2_elementwise.cpp
void install_avx2_delta(KernelTable& k);        // avx2_delta.cpp
void install_avx2_attention(KernelTable& k);    // avx2_attention.cpp
void install_avx2_quant(KernelTable& k);        // avx2_quant.cpp

namespace {


inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline __m256 load_bf16x8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <DType D>
inline __m256 load8(const void* base, int64_t i) {
  if constexpr (D == DType::F32) return _mm256_loadu_ps(static_cast<const float*>(base) + i);
  if constexpr (D == DType::BF16) return load_bf16x8(static_cast<const uint16_t*>(base) + i);
  if constexpr (D == DType::F16) return load_f16x8(static_cast<const uint16_t*>(base) + i);
}

template <DType D>
inline float scalar_at(const void* base, int64_t i) {
  float out;
  ref_table().row_to_f32(D, static_cast<const uint8_t*>(base) + i * (D == DType::F32 ? 4 : 2), &out, 1);
  return out;
}

// Four weight rows against up to four tokens per pass: each weight load feeds 4 FMAs.
template <DType D>
void matmul_avx2(const float* x, int64_t T, int64_t xs, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                 float* y, int64_t ys) {
  const int64_t n = w.cols, n8 = n & ~int64_t(7);
  // Rows outside, tokens inside: each weight row comes from memory once and is reused from L1
  // for every group of 4 tokens.
  for (int64_t o = o_begin; o < o_end; ++o) {
    const void* wr = row_of(w, o);
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int64_t tn = imin(4, T - t0);
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int64_t i = 0; i < n8; i += 8) {
        __m256 wv = load8<D>(wr, i);
        for (int64_t t = 0; t < tn; ++t)
          acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (t0 + t) * xs + i), acc[t]);
      }
      for (int64_t t = 0; t < tn; ++t) {
        float s = hsum(acc[t]);
        for (int64_t i = n8; i < n; ++i) s += scalar_at<D>(wr, i) * x[(t0 + t) * xs + i];
        y[(t0 + t) * ys + o] = s;
      }
    }
  }
}

float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

KernelTable make_avx2() {
  KernelTable k = ref_table();
  k.name = "avx2";
  k.matmul[size_t(DType::F32)] = matmul_avx2<DType::F32>;
  k.matmul[size_t(DType::BF16)] = matmul_avx2<DType::BF16>;
  k.matmul[size_t(DType::F16)] = matmul_avx2<DType::F16>;
  k.dot = dot_avx2;
  k.axpy = axpy_avx2;
  install_avx2_elementwise(k);
  install_avx2_delta(k);
  install_avx2_attention(k);
  install_avx2_quant(k);
  return k;
}

}  // namespace

// Only called by dispatch.cpp after it checked the CPU's features.
const KernelTable& avx2_table_unchecked() {
  static const KernelTable table = make_avx2();
  return table;
}

}  // namespace qwen35::kernels
