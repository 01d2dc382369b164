// 16 fp32 lanes for the vector templates in kernels/simd/. Include only from files compiled with
// the AVX-512 flags; everything here has internal linkage, so no baseline caller can pick it up.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qwen35::kernels {
namespace {

struct VecAvx512 {
  using F = __m512;
  using M = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kGemmRows = 6;  // GEMM micro-tile: 6 rows x 4 vectors = 24 accumulators
  static constexpr int kGemmVecs = 4;
  static constexpr int kAttnRows = 8;  // attention: up to 8 query rows share every key load

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static M mask(int n) { return n >= 16 ? M(0xffff) : M((1u << n) - 1); }  // the first n lanes
  static F load(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, M m, F v) { _mm512_mask_storeu_ps(p, m, v); }
  static F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F load_f16(const uint16_t* p, M m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static F select(M m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }  // m ? a : b
  static M less(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M is_nan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  // The lanes of m from p[0], p[stride], p[2 * stride], ...; the others 0.
  static F gather(const float* p, int64_t stride, M m) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(int(stride)));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, p, 4);
  }

  static float lane0(F v) { return _mm512_cvtss_f32(v); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static float hmax(F v) { return _mm512_reduce_max_ps(v); }

  // Lane i of the result is the sum of the 16 lanes of acc[i]. Every input is summed by the same
  // tree ((e0+e2)+(e1+e3) within each 128-bit block, then (b0+b1)+(b2+b3) across blocks), so a sum
  // does not depend on which slot it came in.
  // Always inlined: a call would take the accumulators through memory (measured 7% of the vision
  // tower's time when GCC left it out of line).
  [[gnu::always_inline]] static F reduce_lanes(const F* acc) {
    F u[4];
    for (int g = 0; g < 4; ++g) {
      const F* a = acc + 4 * g;
      F t01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
      F t23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
      __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
      __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(t01), _mm512_castps_pd(t23));
      u[g] = _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));  // block b: block-b sums of a[0..3]
    }
    F w0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    F w1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // e^x to about 1 ulp (Cephes' expf polynomial, 2^n applied by scalef): exactly 0 below -87.33
  // (no subnormal results) and for -inf, inf above 88.72 (the float range); NaN gives a number,
  // so callers that must keep NaN select it back (sigmoid_v).
  static F exp(F x) {
    const M tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33f), _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33f)), _mm512_set1_ps(89.0f));
    const F n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    F p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(M(~tiny), _mm512_scalef_ps(p, n));
  }

  // out[i] = float(e^x[i]) for i < n, x[i] <= 0, with e^x evaluated in double (Taylor to degree 13
  // after reduction by ln 2, ~1 ulp of double): the float result is the correctly rounded one, as
  // float(std::exp(x)) gives, except within ~1e-16 of a rounding tie.
  static void exp_to_float(const double* x, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(exp_f64(_mm512_loadu_pd(x + i))));
    if (i < n) {
      const __mmask8 m = __mmask8((1u << (n - i)) - 1);
      _mm256_mask_storeu_ps(out + i, m, _mm512_cvtpd_ps(exp_f64(_mm512_maskz_loadu_pd(m, x + i))));
    }
  }
  static __m512d exp_f64(__m512d x) {
    x = _mm512_max_pd(x, _mm512_set1_pd(-745.0));
    const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93147180369123816490e-01), x);  // ln 2, high part
    r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.90821492927058770002e-10), r);          // low part
    __m512d p = _mm512_set1_pd(1.0 / 6227020800.0);  // 1/13!
    constexpr double kTaylor[12] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                    1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                    1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0};
    for (double c : kTaylor) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
    return _mm512_scalef_pd(p, n);
  }

  // dst[c * ldd + r] = src[r * lds + c] for a 16 x 16 block.
  static void transpose(const float* src, int64_t lds, float* dst, int64_t ldd) {
    F a[16], b[16], c[16];
    for (int r = 0; r < 16; ++r) a[r] = _mm512_loadu_ps(src + r * lds);
    for (int k = 0; k < 8; ++k) {
      b[2 * k] = _mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]);
      b[2 * k + 1] = _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]);
    }
    for (int k = 0; k < 4; ++k) {  // c[4k + m], 128-bit lane L: column 4L + m of rows 4k .. 4k + 3
      const __m512d b0 = _mm512_castps_pd(b[4 * k]), b1 = _mm512_castps_pd(b[4 * k + 1]);
      const __m512d b2 = _mm512_castps_pd(b[4 * k + 2]), b3 = _mm512_castps_pd(b[4 * k + 3]);
      c[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(b0, b2));
      c[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(b0, b2));
      c[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b1, b3));
      c[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b1, b3));
    }
    for (int m = 0; m < 4; ++m) {
      const F e0 = _mm512_shuffle_f32x4(c[m], c[4 + m], _MM_SHUFFLE(2, 0, 2, 0));
      const F e1 = _mm512_shuffle_f32x4(c[m], c[4 + m], _MM_SHUFFLE(3, 1, 3, 1));
      const F f0 = _mm512_shuffle_f32x4(c[8 + m], c[12 + m], _MM_SHUFFLE(2, 0, 2, 0));
      const F f1 = _mm512_shuffle_f32x4(c[8 + m], c[12 + m], _MM_SHUFFLE(3, 1, 3, 1));
      _mm512_storeu_ps(dst + m * ldd, _mm512_shuffle_f32x4(e0, f0, _MM_SHUFFLE(2, 0, 2, 0)));
      _mm512_storeu_ps(dst + (4 + m) * ldd, _mm512_shuffle_f32x4(e1, f1, _MM_SHUFFLE(2, 0, 2, 0)));
      _mm512_storeu_ps(dst + (8 + m) * ldd, _mm512_shuffle_f32x4(e0, f0, _MM_SHUFFLE(3, 1, 3, 1)));
      _mm512_storeu_ps(dst + (12 + m) * ldd, _mm512_shuffle_f32x4(e1, f1, _MM_SHUFFLE(3, 1, 3, 1)));
    }
  }

  // Stops the compiler from folding the load that made v into every instruction that uses it.
  static void keep_in_register(F& v) { __asm__("" : "+v"(v)); }

  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace qwen35::kernels
