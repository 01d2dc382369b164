// AVX2 + FMA elementwise activations (SiLU, sigmoid, SwiGLU, tanh-GELU) with a vectorised e^x,
// and the vision tower's LayerNorm. Compiled with -mavx2 -mfma; only reached after a CPU check.
#include <immintrin.h>

#include <cmath>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

// e^x as in avx512_activations.cpp; 2^n is built in the exponent field, which holds normal
// floats only, so results beyond that range are set to inf and 0 (no denormals).
inline __m256 exp256(__m256 x0) {
  const __m256 x = _mm256_min_ps(_mm256_max_ps(x0, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x0, _mm256_set1_ps(88.7228f), _CMP_GT_OQ));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x0, _mm256_set1_ps(-87.3365f), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x0, _mm256_cmp_ps(x0, x0, _CMP_UNORD_Q));  // NaN stays NaN
}

inline __m256 sigmoid256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Tails go through the same vector code on a zero-padded copy, so every element is computed the
// same way wherever it sits.
template <typename F>
inline void each8(const float* a, const float* b, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(a + i), b ? _mm256_loadu_ps(b + i) : _mm256_setzero_ps()));
  if (i < n) {
    alignas(32) float ta[8] = {}, tb[8] = {}, ty[8];
    for (int64_t j = i; j < n; ++j) {
      ta[j - i] = a[j];
      if (b) tb[j - i] = b[j];
    }
    _mm256_store_ps(ty, f(_mm256_load_ps(ta), _mm256_load_ps(tb)));
    for (int64_t j = i; j < n; ++j) y[j] = ty[j - i];
  }
}

void silu_avx2(const float* x, float* y, int64_t n) {
  each8(x, nullptr, y, n, [](__m256 v, __m256) { return _mm256_mul_ps(v, sigmoid256(v)); });
}
void sigmoid_avx2(const float* x, float* y, int64_t n) {
  each8(x, nullptr, y, n, [](__m256 v, __m256) { return sigmoid256(v); });
}
void swiglu_avx2(const float* g, const float* u, float* y, int64_t n) {
  each8(g, u, y, n, [](__m256 v, __m256 w) { return _mm256_mul_ps(_mm256_mul_ps(v, sigmoid256(v)), w); });
}

// The same float steps as ref_gelu_tanh (no contraction in this file), then e^x.
void gelu_tanh_avx2(const float* x, float* y, int64_t n) {
  each8(x, nullptr, y, n, [](__m256 v, __m256) {
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
    const __m256 u =
        _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(0.044715f), cube)));
    const __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
    return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  });
}

inline double hsum(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// As layer_norm_avx512, 8 floats at a time; the tail's sums are taken one by one.
void layer_norm_avx2(const float* x, const float* w, const float* b, double eps, float* y, int64_t n) {
  const int64_t n8 = n - n % 8;
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  double sum = hsum(_mm256_add_pd(s0, s1));
  for (int64_t i = n8; i < n; ++i) sum += double(x[i]);
  const float mean = float(sum / double(n));
  const __m256 mv = _mm256_set1_ps(mean);
  s0 = _mm256_setzero_pd();
  s1 = s0;
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(d)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1));
    s0 = _mm256_fmadd_pd(lo, lo, s0);  // exact squares: rounds like the reference's product and sum
    s1 = _mm256_fmadd_pd(hi, hi, s1);
  }
  double ss = hsum(_mm256_add_pd(s0, s1));
  for (int64_t i = n8; i < n; ++i) {
    const double d = double(x[i] - mean);
    ss += d * d;
  }
  const float r = float(1.0 / std::sqrt(ss / double(n) + eps));
  const __m256 rv = _mm256_set1_ps(r);
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(d, rv), _mm256_loadu_ps(w + i)), _mm256_loadu_ps(b + i)));
  }
  for (int64_t i = n8; i < n; ++i) y[i] = (x[i] - mean) * r * w[i] + b[i];
}

uint64_t stream_read_avx2(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i + 96)));
  }
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return uint64_t(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 1) ^ _mm256_extract_epi64(x, 2) ^
                  _mm256_extract_epi64(x, 3));
}

}  // namespace

void install_avx2_activations(KernelTable& k) {
  k.stream_read = stream_read_avx2;
  k.silu = silu_avx2;
  k.sigmoid = sigmoid_avx2;
  k.swiglu = swiglu_avx2;
  k.gelu_tanh = gelu_tanh_avx2;
  k.layer_norm = layer_norm_avx2;
}

}  // namespace qwen35::kernels
