// AVX-512 elementwise activations (SiLU, sigmoid, SwiGLU, tanh-GELU) with a vectorised e^x, and
// the vision tower's LayerNorm. Compiled with the AVX-512 flags; only reached after a CPU check.
#include <immintrin.h>

#include <cmath>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

// e^x to about 1 ulp for |x| <= 88 (Cephes' polynomial on [-ln2/2, ln2/2] after x = n ln2 + r);
// scalef applies 2^n with correct overflow to inf and underflow to 0 beyond that.
inline __m512 exp512(__m512 x0) {
  const __m512 x = _mm512_min_ps(_mm512_max_ps(x0, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  // NaN stays NaN (min/max above would have replaced it).
  return _mm512_mask_mov_ps(_mm512_scalef_ps(p, n), _mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q), x0);
}

inline __m512 sigmoid512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

template <typename F>
inline void each16(int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(i, __mmask16(0xffff));
  if (i < n) f(i, __mmask16((1u << (n - i)) - 1));
}

void silu_avx512(const float* x, float* y, int64_t n) {
  each16(n, [&](int64_t i, __mmask16 m) {
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, sigmoid512(v)));
  });
}

void sigmoid_avx512(const float* x, float* y, int64_t n) {
  each16(n, [&](int64_t i, __mmask16 m) { _mm512_mask_storeu_ps(y + i, m, sigmoid512(_mm512_maskz_loadu_ps(m, x + i))); });
}

void swiglu_avx512(const float* g, const float* u, float* y, int64_t n) {
  each16(n, [&](int64_t i, __mmask16 m) {
    const __m512 v = _mm512_maskz_loadu_ps(m, g + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(v, sigmoid512(v)), _mm512_maskz_loadu_ps(m, u + i)));
  });
}

// The same float steps as ref_gelu_tanh (no contraction in this file), then e^x.
void gelu_tanh_avx512(const float* x, float* y, int64_t n) {
  const __m512 k = _mm512_set1_ps(0.7978845608028654f), c = _mm512_set1_ps(0.044715f);
  const __m512 minus2 = _mm512_set1_ps(-2.0f), one = _mm512_set1_ps(1.0f);
  each16(n, [&](int64_t i, __mmask16 m) {
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
    const __m512 u = _mm512_mul_ps(k, _mm512_add_ps(v, _mm512_mul_ps(c, cube)));
    const __m512 e = exp512(_mm512_mul_ps(minus2, u));
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  });
}

// Sums of 16 floats at a time in two double accumulators (one per half), masked at the tail.
inline __m512d widen_lo(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d widen_hi(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

void layer_norm_avx512(const float* x, const float* w, const float* b, double eps, float* y, int64_t n) {
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  each16(n, [&](int64_t i, __mmask16 m) {
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);  // masked lanes add 0
    s0 = _mm512_add_pd(s0, widen_lo(v));
    s1 = _mm512_add_pd(s1, widen_hi(v));
  });
  const float mean = float(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / double(n));
  const __m512 mv = _mm512_set1_ps(mean);
  s0 = _mm512_setzero_pd();
  s1 = s0;
  each16(n, [&](int64_t i, __mmask16 m) {
    // x - mean in float as the reference; masked lanes are 0 - 0. Squares of floats are exact in
    // double, so the fused multiply-add rounds like the reference's product and sum.
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), mv);
    const __m512d lo = widen_lo(d), hi = widen_hi(d);
    s0 = _mm512_fmadd_pd(lo, lo, s0);
    s1 = _mm512_fmadd_pd(hi, hi, s1);
  });
  const double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  const __m512 r = _mm512_set1_ps(float(1.0 / std::sqrt(ss / double(n) + eps)));
  each16(n, [&](int64_t i, __mmask16 m) {
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

void install_avx512_activations(KernelTable& k) {
  k.stream_read = stream_read_avx512;
  k.silu = silu_avx512;
  k.sigmoid = sigmoid_avx512;
  k.swiglu = swiglu_avx512;
  k.gelu_tanh = gelu_tanh_avx512;
  k.layer_norm = layer_norm_avx512;
}

}  // namespace qwen35::kernels
