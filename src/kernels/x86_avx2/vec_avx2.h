// 8 fp32 lanes (AVX2 + FMA + F16C) for the vector templates in kernels/simd/. Include only from
// files compiled with the AVX2 flags; everything here has internal linkage, so no baseline caller
// can pick it up.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace qwen35::kernels {
namespace {

struct VecAvx2 {
  using F = __m256;
  using M = __m256i;  // all-ones lanes are selected
  static constexpr int kLanes = 8;
  static constexpr int kGemmRows = 6;  // GEMM micro-tile: 6 rows x 2 vectors = 12 accumulators
  static constexpr int kGemmVecs = 2;
  static constexpr int kAttnRows = 4;  // attention: up to 4 query rows share every key load

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static M mask(int n) {  // the first n lanes
    alignas(32) static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 8 - (n >= 8 ? 8 : n)));
  }
  static F load(const float* p, M m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, M m, F v) { _mm256_maskstore_ps(p, m, v); }
  static F load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F load_f16(const uint16_t* p, M m) {  // no 16-bit masked load in AVX2: copy the lanes
    alignas(16) uint16_t buf[8] = {};
    const int n = __builtin_popcount(unsigned(_mm256_movemask_ps(_mm256_castsi256_ps(m))));
    std::memcpy(buf, p, size_t(n) * 2);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
  }

  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static F select(M m, F a, F b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m)); }  // m ? a : b
  static M less(F a, F b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  static M is_nan(F a) { return _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)); }
  // The lanes of m from p[0], p[stride], p[2 * stride], ...; the others 0.
  static F gather(const float* p, int64_t stride, M m) {
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(stride)));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx, _mm256_castsi256_ps(m), 4);
  }

  static float lane0(F v) { return _mm256_cvtss_f32(v); }
  static float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(F v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // Lane i of the result is the sum of the 8 lanes of acc[i]. Every input is summed by the same
  // tree ((e0+e2)+(e1+e3) within each 128-bit half, then lo+hi), so a sum does not depend on
  // which slot it came in.
  // Always inlined: a call would take the accumulators through memory (measured 7% of the vision
  // tower's time when GCC left it out of line).
  [[gnu::always_inline]] static F reduce_lanes(const F* acc) {
    F u[2];
    for (int g = 0; g < 2; ++g) {
      const F* a = acc + 4 * g;
      F t01 = _mm256_add_ps(_mm256_unpacklo_ps(a[0], a[1]), _mm256_unpackhi_ps(a[0], a[1]));
      F t23 = _mm256_add_ps(_mm256_unpacklo_ps(a[2], a[3]), _mm256_unpackhi_ps(a[2], a[3]));
      __m256d lo = _mm256_unpacklo_pd(_mm256_castps_pd(t01), _mm256_castps_pd(t23));
      __m256d hi = _mm256_unpackhi_pd(_mm256_castps_pd(t01), _mm256_castps_pd(t23));
      u[g] = _mm256_add_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi));  // half h: half-h sums of a[0..3]
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20), _mm256_permute2f128_ps(u[0], u[1], 0x31));
  }

  // e^x to about 1 ulp (Cephes' expf polynomial): exactly 0 below -87.33 (no subnormal results)
  // and for -inf, inf above 88.72 (the float range); 2^n is built in the exponent field, so the
  // polynomial's input stops at 88.3 (n <= 127) and (88.3, 88.72] gives e^88.3. NaN gives a
  // number, so callers that must keep NaN select it back (sigmoid_v).
  static F exp(F x0) {
    const F tiny = _mm256_cmp_ps(x0, _mm256_set1_ps(-87.33f), _CMP_LT_OQ);
    const F huge = _mm256_cmp_ps(x0, _mm256_set1_ps(88.7228f), _CMP_GT_OQ);
    const F x = _mm256_min_ps(_mm256_max_ps(x0, _mm256_set1_ps(-87.33f)), _mm256_set1_ps(88.3f));
    const F n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    F p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const F y = _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
    return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), huge);
  }

  // out[i] = float(e^x[i]) for i < n, x[i] <= 0, with e^x evaluated in double (Taylor to degree 13
  // after reduction by ln 2, ~1 ulp of double): the float result is the correctly rounded one, as
  // float(std::exp(x)) gives, except within ~1e-16 of a rounding tie.
  static void exp_to_float(const double* x, float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, _mm256_cvtpd_ps(exp_f64(_mm256_loadu_pd(x + i))));
    if (i < n) {
      double xs[4] = {0, 0, 0, 0};
      float ys[4];
      for (int64_t j = i; j < n; ++j) xs[j - i] = x[j];
      _mm_storeu_ps(ys, _mm256_cvtpd_ps(exp_f64(_mm256_loadu_pd(xs))));
      for (int64_t j = i; j < n; ++j) out[j] = ys[j - i];
    }
  }
  static __m256d exp_f64(__m256d x) {
    x = _mm256_max_pd(x, _mm256_set1_pd(-708.0));  // below, e^x is 0 in float anyway; 2^n stays normal
    const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);  // ln 2, high part
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);          // low part
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);  // 1/13!
    constexpr double kTaylor[12] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                    1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                    1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0};
    for (double c : kTaylor) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    // 2^n from its bits: n + 1.5 * 2^52 holds n in the low mantissa bits.
    const __m256i magic = _mm256_castpd_si256(_mm256_set1_pd(6755399441055744.0));
    const __m256i ni = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n, _mm256_set1_pd(6755399441055744.0))), magic);
    const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(ni, _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
  }

  // dst[c * ldd + r] = src[r * lds + c] for an 8 x 8 block.
  static void transpose(const float* src, int64_t lds, float* dst, int64_t ldd) {
    F a[8], b[8], c[8];
    for (int r = 0; r < 8; ++r) a[r] = _mm256_loadu_ps(src + r * lds);
    for (int k = 0; k < 4; ++k) {
      b[2 * k] = _mm256_unpacklo_ps(a[2 * k], a[2 * k + 1]);
      b[2 * k + 1] = _mm256_unpackhi_ps(a[2 * k], a[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {  // c[4k + m], 128-bit half L: column 4L + m of rows 4k .. 4k + 3
      const __m256d b0 = _mm256_castps_pd(b[4 * k]), b1 = _mm256_castps_pd(b[4 * k + 1]);
      const __m256d b2 = _mm256_castps_pd(b[4 * k + 2]), b3 = _mm256_castps_pd(b[4 * k + 3]);
      c[4 * k] = _mm256_castpd_ps(_mm256_unpacklo_pd(b0, b2));
      c[4 * k + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(b0, b2));
      c[4 * k + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b1, b3));
      c[4 * k + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b1, b3));
    }
    for (int m = 0; m < 4; ++m) {
      _mm256_storeu_ps(dst + m * ldd, _mm256_permute2f128_ps(c[m], c[4 + m], 0x20));
      _mm256_storeu_ps(dst + (4 + m) * ldd, _mm256_permute2f128_ps(c[m], c[4 + m], 0x31));
    }
  }

  // Stops the compiler from folding the load that made v into every instruction that uses it.
  static void keep_in_register(F& v) { __asm__("" : "+v"(v)); }

  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace qwen35::kernels
