// The block formats in the avx2 table: activation quantization and the vpmaddubsw matmuls of
// avx2_quant.h over interleave16 weights. Compiled with -mavx2 -mfma -mf16c; only reached after a
// CPU check.
#include "kernels/x86_avx2/avx2_quant.h"

#include "kernels/pack/interleave16.h"

namespace qwen35::kernels {
namespace {

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// act_format.h's exact rules, 8 lanes at a time.
void quantize_act_avx2(ActFormat fmt, const float* x, int64_t T, int64_t x_stride, int64_t n, uint8_t* out) {
  const ActLayout l = act_layout(fmt, n);
  const int64_t B = fmt == ActFormat::kQ8x256 ? 256 : 32;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(3.4028234663852886e38f);
  // packs_epi32 / packs_epi16 work per 128-bit lane; this puts the 8 groups of 4 back in order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x + t * x_stride;
    uint8_t* row = out + size_t(t) * l.row_bytes;
    int8_t* q = reinterpret_cast<int8_t*>(row + l.q);
    float* d = reinterpret_cast<float*>(row + l.d);
    for (int64_t b = 0; b < n / B; ++b) {
      const float* xb = xr + b * B;
      __m256 amax = _mm256_setzero_ps();
      int finite = 0xff;
      for (int64_t j = 0; j < B; j += 8) {
        const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xb + j), abs_mask);
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_LE_OQ));
        amax = _mm256_max_ps(amax, a);
      }
      int8_t* qb = q + b * B;
      const float m = hmax8(amax);
      if (finite != 0xff || m < 1e-30f) {
        d[b] = finite != 0xff ? __builtin_nanf("") : 0.0f;
        std::memset(qb, 0, size_t(B));
        continue;
      }
      const float db = m / 127.0f, id = 1.0f / db;
      d[b] = db;
      const __m256 idv = _mm256_set1_ps(id);
      for (int64_t j = 0; j < B; j += 32) {
        __m256i qi[4];
        for (int i = 0; i < 4; ++i) qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + j + 8 * i), idv));  // nearest even
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb + j), _mm256_permutevar8x32_epi32(p, order));
      }
    }
    // Sums of q per 16 and 32: vpsadbw of q + 128 adds 8 bytes at a time (minus 8 * 128 each).
    for (int64_t g = 0; g < n / 32; ++g) {
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + g * 32)),
                                         _mm256_set1_epi8(int8_t(0x80)));
      const __m256i s8 = _mm256_sad_epu8(v, _mm256_setzero_si256());
      const __m128i lo = _mm256_castsi256_si128(s8), hi = _mm256_extracti128_si256(s8, 1);
      const int32_t first16 = int32_t(_mm_cvtsi128_si32(lo) + _mm_extract_epi32(lo, 2)) - 2048;
      const int32_t last16 = int32_t(_mm_cvtsi128_si32(hi) + _mm_extract_epi32(hi, 2)) - 2048;
      if (fmt == ActFormat::kQ8x32) {
        reinterpret_cast<int32_t*>(row + l.s32)[g] = first16 + last16;
      } else {
        reinterpret_cast<int16_t*>(row + l.h32)[g] = int16_t(first16 + last16);
        reinterpret_cast<int16_t*>(row + l.s16)[2 * g] = int16_t(first16);
        reinterpret_cast<int16_t*>(row + l.s16)[2 * g + 1] = int16_t(last16);
      }
    }
  }
}

}  // namespace

// Filled into the avx2 table by avx2_kernels.cpp.
void install_avx2_quant(KernelTable& k) {
  k.packing = interleave16::format();
  k.quantize_act = quantize_act_avx2;
  avx2q::install_qmatmuls<false>(k);
}

}  // namespace qwen35::kernels
