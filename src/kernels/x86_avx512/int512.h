// 512-bit integer helpers shared by the AVX-512 and AMX block kernels. Include only from files
// compiled with the AVX-512 flags; internal linkage (simd/isa_local.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/isa_local.h"

namespace qwen35::kernels {
namespace {

inline __m512i vload(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline __m512i bcast32(const void* p) { return _mm512_set1_epi32(load_i32(p)); }
inline __m512 load_f16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Low and high nibbles of a packed vector as bytes 0..15.
inline __m512i lo_nib(__m512i v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0f)); }
inline __m512i hi_nib(__m512i v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f)); }

// Sub-block s of a packed Q6_K block (p: its three vectors, interleave16.h) as four vectors of
// unsigned quants: quad k of every row in W[k]. The fourth quad's bits 0-1, 2-3 and 4-5 are the
// tops of vectors 0, 1 and 2: C's top with B's moved down 2, then A's moved down 4 (vpternlogd
// selects by a byte mask, so the bits the 16-bit shifts carry in from the next byte stay below
// the mask and the final mask clears them).
inline void q6k_unpack(const uint8_t* p, __m512i W[4]) {
  const __m512i m63 = _mm512_set1_epi8(63);
  const __m512i A = vload(p), B = vload(p + 64), C = vload(p + 128);
  W[0] = _mm512_and_si512(A, m63);
  W[1] = _mm512_and_si512(B, m63);
  W[2] = _mm512_and_si512(C, m63);
  const __m512i cb = _mm512_ternarylogic_epi32(C, _mm512_srli_epi16(B, 2), _mm512_set1_epi8(int8_t(0xc0)), 0xe4);
  const __m512i cba = _mm512_ternarylogic_epi32(cb, _mm512_srli_epi16(A, 4), _mm512_set1_epi8(int8_t(0xf0)), 0xe4);
  W[3] = _mm512_and_si512(_mm512_srli_epi16(cba, 2), m63);
}

// Rows [o, o + 16) of y for one token: the valid lanes.
inline void store_rows(float* y, int64_t o, int64_t o_end, __m512 v) {
  const int64_t n = imin(16, o_end - o);
  _mm512_mask_storeu_ps(y + o, n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1), v);
}

}  // namespace
}  // namespace qwen35::kernels
