// The AVX-512 table's activations and row operations (kernels/simd/elementwise_simd.h over
// VecAvx512), the vision tower's LayerNorm and the bandwidth probe. Compiled with the AVX-512 flags;
// only reached after a CPU check.
#include <immintrin.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd/elementwise_simd.h"
#include "kernels/x86_avx512/vec_avx512.h"

namespace qwen35::kernels {
namespace {

// Sums of 16 floats at a time in two double accumulators (one per half), masked at the tail.
inline __m512d widen_lo(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d widen_hi(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

void layer_norm_avx512(const float* x, const float* w, const float* b, double eps, float* y, int64_t n) {
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  each_vector<VecAvx512>(n, [&](int64_t i, __mmask16 m) {
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);  // masked lanes add 0
    s0 = _mm512_add_pd(s0, widen_lo(v));
    s1 = _mm512_add_pd(s1, widen_hi(v));
  });
  const float mean = float(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / double(n));
  const __m512 mv = _mm512_set1_ps(mean);
  s0 = _mm512_setzero_pd();
  s1 = s0;
  each_vector<VecAvx512>(n, [&](int64_t i, __mmask16 m) {
    // x - mean in float as the reference; masked lanes are 0 - 0. Squares of floats are exact in
    // double, so the fused multiply-add rounds like the reference's product and sum.
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), mv);
    const __m512d lo = widen_lo(d), hi = widen_hi(d);
    s0 = _mm512_fmadd_pd(lo, lo, s0);
    s1 = _mm512_fmadd_pd(hi, hi, s1);
  });
  const double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  const __m512 r = _mm512_set1_ps(float(1.0 / std::sqrt(ss / double(n) + eps)));
  each_vector<VecAvx512>(n, [&](int64_t i, __mmask16 m) {
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv);
    const __m512 z = _mm512_mul_ps(_mm512_mul_ps(d, r), _mm512_maskz_loadu_ps(m, w + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(z, _mm512_maskz_loadu_ps(m, b + i)));
  });
}

uint64_t stream_read_avx512(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 256 <= n; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(b + i));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(b + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(b + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(b + i + 192));
  }
  return uint64_t(_mm512_reduce_add_epi64(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3))));
}

}  // namespace

void install_avx512_elementwise(KernelTable& k) {
  k.stream_read = stream_read_avx512;
  install_elementwise<VecAvx512>(k);
  k.layer_norm = layer_norm_avx512;
}

}  // namespace qwen35::kernels
