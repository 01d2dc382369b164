// The AVX2 + FMA table's activations and row operations (kernels/simd/elementwise_simd.h over
// VecAvx2), the vision tower's LayerNorm and the bandwidth probe. Compiled with -mavx2 -mfma;
// only reached after a CPU check.
#include <immintrin.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd/elementwise_simd.h"
#include "kernels/x86_avx2/vec_avx2.h"

namespace qwen35::kernels {
namespace {

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

void install_avx2_elementwise(KernelTable& k) {
  k.stream_read = stream_read_avx2;
  install_elementwise<VecAvx2>(k);
  k.layer_norm = layer_norm_avx2;
}

}  // namespace qwen35::kernels
