// Block-format matmuls on 8 int32 lanes over the interleave16 layout (kernels/pack/interleave16.h),
// written once for two tables: avx2 (kVnni = false: vpmaddubsw + vpmaddwd) and avxvnni (kVnni =
// true: the VEX vpdpbusd / vpdpwssd of AVX-VNNI). A 16-row group is read as two 8-row halves (the
// low and high 32 bytes of each 64-byte vector): one token reads each half in one pass over the
// row's blocks; token tiles of several tokens mostly take both halves together (legacy_tile,
// k4_tile).
// Include only from files compiled with the AVX2 flags (and -mavxvnni for kVnni); everything here
// has internal linkage, so no baseline caller can pick it up.
//
// The integer sums are exact and the float steps are the reference's (quant_ref.h), so results
// equal the ref table's bit for bit. Without VNNI, vpmaddubsw adds two u8 * s8 products into a
// saturating int16: every use below keeps |unsigned operand| <= 129 (activations lie in
// [-127, 127], so 2 * 129 * 127 <= 32767), and where several of its results are added in int16
// before widening, the comment gives the bound. Signed weights go through the sign trick:
// |w| * (a * sign(w)) with vpsignb.
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/pack/interleave16.h"
#include "kernels/simd/isa_local.h"

namespace qwen35::kernels {
namespace {
namespace avx2q {

inline __m256i bcast32(const void* p) { return _mm256_set1_epi32(load_i32(p)); }
inline __m256i vload(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256 load_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i lo_nib(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0f)); }
inline __m256i hi_nib(__m256i v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f)); }
// Bytes of v where the same byte of m has any of `bits` set become `val`, others 0.
inline __m256i bits_to(__m256i m, int bits, int val) {
  const __m256i b = _mm256_set1_epi8(int8_t(bits));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(m, b), b), _mm256_set1_epi8(int8_t(val)));
}

// acc += per lane, the sum of 4 products u8 w * s8 a. Without VNNI, w <= 129.
template <bool kVnni>
inline __m256i dot_u8(__m256i acc, __m256i w, __m256i a) {
  if constexpr (kVnni) return _mm256_dpbusd_avx_epi32(acc, w, a);
  else return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
}
// acc += per lane, lo16(x) * lo16(y) + hi16(x) * hi16(y) (signed).
template <bool kVnni>
inline __m256i dot_i16(__m256i acc, __m256i x, __m256i y) {
  if constexpr (kVnni) return _mm256_dpwssd_avx_epi32(acc, x, y);
  else return _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
}
// int16 pair sums w0 * a0 + w1 * a1 (w <= 129: no saturation).
inline __m256i pairs16(__m256i w, __m256i a) { return _mm256_maddubs_epi16(w, a); }
// Signed weights (|w| <= 128) against activations: int16 pair sums of w * a.
inline __m256i pairs16_signed(__m256i abs_w, __m256i w, __m256i a) {
  return _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(a, w));
}
// A 32-bit value per lane repeated in both 16-bit halves (for vpmaddwd against int16 pair sums).
inline __m256i both_halves(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16));
}
inline __m256i low_half(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi32(0xffff)); }
// A vpshufb control that gives every 32-bit lane the bytes {b0, b1, b2, b3} of that same lane (-1:
// zero), so one shuffle spreads a lane's byte into its 16-bit halves.
inline __m256i lane_bytes(int b0, int b1, int b2, int b3) {
  auto at = [](int b, int lane) { return b < 0 ? 0x80u : uint32_t(4 * lane + b); };
  alignas(32) uint32_t c[8];
  for (int k = 0; k < 8; ++k) c[k] = at(b0, k % 4) | at(b1, k % 4) << 8 | at(b2, k % 4) << 16 | at(b3, k % 4) << 24;
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
}

// Rows [o, o + 8) of y for one token: the valid lanes.
inline void store_rows(float* y, int64_t o, int64_t o_end, __m256 v) {
  const int64_t n = imin(8, o_end - o);
  if (n >= 8) return _mm256_storeu_ps(y + o, v);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_maskstore_ps(y + o, _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(n)), lane), v);
}

// Software prefetch, spread over a block: each of a block's `parts` steps requests its share of
// the lines of the block kPrefetchAhead(bytes) further on. With the hardware prefetchers alone,
// Q6_K decoding on 2 cores of an AMD EPYC (Zen 3) streamed 6.8-7.7 GB/s; with the whole block
// requested at once 2 KiB ahead, 9.6-10.9 (one thread: 5.4); spread over its steps, two blocks
// ahead, one thread streams 8.0-8.4. The prefetch past the matrix end does not fault.
constexpr size_t kPrefetchAhead(size_t bytes) { return bytes * (bytes >= 1024 ? 2 : (2048 + bytes - 1) / bytes); }
inline void prefetch_part(const uint8_t* block, size_t bytes, int part, int parts) {
  const size_t lines = (bytes + 63) / 64;
  const size_t l0 = lines * size_t(part) / size_t(parts), l1 = lines * size_t(part + 1) / size_t(parts);
  const uint8_t* ahead = block + kPrefetchAhead(bytes);
  for (size_t l = l0; l < l1; ++l) _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
}

// prefetch_part pinned where it stands: in fully unrolled loops GCC hoisted every part's prefetches
// to the top of the block, one burst for the whole block, which on Zen 4 (qmatmul_bench avx2 from
// memory, T = 1, one thread) took IQ4_XS from 18-20 GB/s to 9-12. A volatile asm is a scheduling
// barrier.
inline void prefetch_part_here(const uint8_t* block, size_t bytes, int part, int parts) {
  prefetch_part(block, bytes, part, parts);
  asm volatile("" ::: "memory");
}

// Token tiles: up to kTokenTile tokens share one unpacking of a block's weights; where the
// registers allow, kWideTokenTile (the legacy formats' kLegacyTile below, Q6_K with VNNI).
constexpr int kTokenTile = 4;
constexpr int kWideTokenTile = 6;

// The tile's activation rows, looked up once per call rather than in every block.
template <int TT>
struct TokenTile {
  const int8_t* q[TT];
  const float* d[TT];
  const int32_t* s32[TT];
  const int16_t* s16[TT];
  const int16_t* h32[TT];
  TokenTile(const ActRows& a, int64_t t0) {
    for (int t = 0; t < TT; ++t) {
      q[t] = a.q(t0 + t);
      d[t] = a.d(t0 + t);
      s32[t] = a.s32(t0 + t);
      s16[t] = a.s16(t0 + t);
      h32[t] = a.h32(t0 + t);
    }
  }
};

// Where a kernel reads: block b of a group, half h (vector k of a field at off + 64k + 32h, f16
// entry arrays at off + 16h).
struct Half {
  const uint8_t* group;
  int h;
  const uint8_t* vec(size_t block_bytes, int64_t b, size_t off) const {
    return group + size_t(b) * block_bytes + off + 32 * size_t(h);
  }
  __m256 f16(size_t block_bytes, int64_t b, size_t off) const {
    return load_f16x8(group + size_t(b) * block_bytes + off + 16 * size_t(h));
  }
};
// The float sums of a token tile for each of NH halves (8 rows each) from o on, zeroed.
template <int TT, int NH>
struct TileSums {
  __m256 v[NH][TT];
  TileSums() {
    for (auto& half : v)
      for (__m256& x : half) x = _mm256_setzero_ps();
  }
  void store(float* y, int64_t ys, int64_t t0, int64_t o, int64_t o_end) const {
    for (int hi = 0; hi < NH; ++hi)
      for (int t = 0; t < TT; ++t) store_rows(y + (t0 + t) * ys, o + 8 * hi, o_end, v[hi][t]);
  }
};

// The halves h0 .. h0 + NH - 1 of a group, read block by block together.
struct Rows {
  const uint8_t* group;
  int h0;
};

// ---- Legacy formats (blocks of 32; activations kQ8x32) ----------------------------------------

enum class Legacy { kQ8_0, kQ4_0, kIQ4_NL, kQ4_1, kQ5_0, kQ5_1 };

template <Legacy L>
struct LegacyLayout {
  static constexpr bool kMin = L == Legacy::kQ4_1 || L == Legacy::kQ5_1;
  static constexpr bool kFive = L == Legacy::kQ5_0 || L == Legacy::kQ5_1;
  static constexpr bool kSigned = L == Legacy::kQ8_0 || L == Legacy::kIQ4_NL;  // weights not unsigned nibbles
  static constexpr size_t kQh = L == Legacy::kQ5_0 ? 32 : 64;
  static constexpr size_t kQs = L == Legacy::kQ4_1 ? 64 : L == Legacy::kQ5_0 ? 96 : L == Legacy::kQ5_1 ? 128 : 32;
  static constexpr size_t kBlock = L == Legacy::kQ8_0 ? 544 : L == Legacy::kQ4_1 ? 320 : L == Legacy::kQ5_0 ? 352
                                   : L == Legacy::kQ5_1 ? 384 : 288;
};

// The IQ4_NL / IQ4_XS code book for vpshufb: signed, or + 128 as unsigned bytes.
inline __m256i iq4_book() {
  return _mm256_broadcastsi128_si256(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}
inline __m256i iq4_book_u8() { return _mm256_xor_si256(iq4_book(), _mm256_set1_epi8(int8_t(0x80))); }

// The offset c the unpacked weights W carry: sum(w * a) = sum(W * a) - c * sum(a). With VNNI every W
// is unsigned (signed weights + 128); without, signed formats keep their signed values (c = 0) for
// the sign trick.
template <bool kVnni, Legacy L>
constexpr int legacy_offset() {
  if constexpr (LegacyLayout<L>::kSigned) return kVnni ? 128 : 0;
  else return L == Legacy::kQ4_0 ? 8 : L == Legacy::kQ5_0 ? 16 : 0;
}

// The block's 8 weight vectors (quad k = elements 4k..4k+3 of every row) and their offset.
template <bool kVnni, Legacy L>
inline int unpack_legacy(const uint8_t* qs, const uint8_t* qh, __m256i W[8]) {
  using Lay = LegacyLayout<L>;
  if constexpr (L == Legacy::kQ8_0) {
    for (int k = 0; k < 8; ++k) {
      W[k] = vload(qs + 64 * k);
      if constexpr (kVnni) W[k] = _mm256_xor_si256(W[k], _mm256_set1_epi8(int8_t(0x80)));
    }
    return legacy_offset<kVnni, L>();
  } else {
    for (int v = 0; v < 4; ++v) {
      const __m256i p = vload(qs + 64 * v);
      W[v] = lo_nib(p);
      W[v + 4] = hi_nib(p);
    }
    if constexpr (L == Legacy::kIQ4_NL) {
      const __m256i book = kVnni ? iq4_book_u8() : iq4_book();
      for (int k = 0; k < 8; ++k) W[k] = _mm256_shuffle_epi8(book, W[k]);
    }
    if constexpr (Lay::kFive) {
      const __m256i h = vload(qh);
      for (int k = 0; k < 8; ++k) W[k] = _mm256_or_si256(W[k], bits_to(h, 1 << k, 16));
    }
    return legacy_offset<kVnni, L>();
  }
}

// Quad k (elements 4k..4k+3 of every row) of a half's block, as unpack_legacy gives it.
template <bool kVnni, Legacy L>
inline __m256i legacy_quad(const uint8_t* qs, const uint8_t* qh, int k) {
  if constexpr (L == Legacy::kQ8_0) {
    const __m256i w = vload(qs + 64 * k);
    return kVnni ? _mm256_xor_si256(w, _mm256_set1_epi8(int8_t(0x80))) : w;
  } else {
    const __m256i p = vload(qs + 64 * (k % 4));
    __m256i w = k < 4 ? lo_nib(p) : hi_nib(p);
    if constexpr (L == Legacy::kIQ4_NL) w = _mm256_shuffle_epi8(kVnni ? iq4_book_u8() : iq4_book(), w);
    if constexpr (LegacyLayout<L>::kFive) w = _mm256_or_si256(w, bits_to(vload(qh), 1 << k, 16));
    return w;
  }
}

// Token tiles of several tokens (TT >= 2): quads outer, tokens inner, every half of the group at
// once, so one broadcast of a token's 4 activation bytes feeds all NH halves. Block by block, as
// legacy_blocks (one token), each (row, token) sum takes the same float steps in the same
// order, so a row's result does not depend on how many tokens share its tile. Broadcasts from
// memory issue about two a cycle on Zen 5, as many as the multiplies, so one a half (NH = 1 here
// before) bound Q4_0's tiles rather than its multiplies. Without VNNI Q5_0 / Q5_1 stay on
// legacy_blocks (one half a tile past 6 tokens): their int16 runs of 4 quads and their int32 sums
// would not fit the registers together.
template <bool kVnni, Legacy L>
constexpr bool kQuadOuter = kVnni || !LegacyLayout<L>::kFive;

// Tokens a legacy tile takes. With VNNI kWideTokenTile (6): the quad loop's 12 int32 sums (two halves x 6 tokens),
// two weight vectors and a broadcast fit the 16 registers (the 12 float sums wait in memory between
// blocks, as the 8 of 4-token tiles did), and 12 independent vpdpbusd chains keep Zen 5's two
// multiply pipes busier than 8 (a chain's step takes 4 cycles; 8 chains issued 1.4 a cycle, 12
// chains 1.75). Without, Q5_0 / Q5_1 (legacy_blocks, one half at a time) take 6 too, sharing a
// block's 5-bit unpacking among more tokens (qmatmul_bench avx2, T = 64 and 512, one thread: +13-21%);
// the other formats' tiles measured level at 6.
template <bool kVnni, Legacy L>
constexpr int kLegacyTile = kVnni || LegacyLayout<L>::kFive ? kWideTokenTile : kTokenTile;

template <bool kVnni, Legacy L, int TT, int NH>
void legacy_tile(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  using Lay = LegacyLayout<L>;
  static_assert(kQuadOuter<kVnni, L>);
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    prefetch_part(rows.group + size_t(b) * Lay::kBlock, Lay::kBlock, 0, 1);
    const uint8_t* qs[NH];
    const uint8_t* qh[NH];
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      qs[hi] = g.vec(Lay::kBlock, b, Lay::kQs);
      qh[hi] = g.vec(Lay::kBlock, b, Lay::kQh);
    }
    __m256i isum[NH][TT];
    __m256i p16[NH][TT];  // unsigned nibbles without VNNI: int16 pair sums of all 8 quads, <= 30480
    for (int hi = 0; hi < NH; ++hi)
      for (int t = 0; t < TT; ++t) isum[hi][t] = p16[hi][t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i W[NH], A[NH];
      for (int hi = 0; hi < NH; ++hi) {
        W[hi] = legacy_quad<kVnni, L>(qs[hi], qh[hi], k);
        if constexpr (!kVnni && Lay::kSigned) A[hi] = _mm256_abs_epi8(W[hi]);
      }
      for (int t = 0; t < TT; ++t) {
        const __m256i av = bcast32(tk.q[t] + 32 * b + 4 * k);
        for (int hi = 0; hi < NH; ++hi) {
          if constexpr (kVnni) isum[hi][t] = _mm256_dpbusd_avx_epi32(isum[hi][t], W[hi], av);
          else if constexpr (Lay::kSigned)
            isum[hi][t] = _mm256_add_epi32(isum[hi][t], _mm256_madd_epi16(pairs16_signed(A[hi], W[hi], av), ones16));
          else p16[hi][t] = _mm256_add_epi16(p16[hi][t], pairs16(W[hi], av));
          // Without this GCC reassociates the integer sums into a tree over all 64 products and
          // spills them (Q4_0 ran 10% slower than one half a tile).
          asm("" : "+x"(kVnni || Lay::kSigned ? isum[hi][t] : p16[hi][t]));
        }
      }
    }
    // The offset c * sum(a) of each token, shared by its halves: c is a power of two, so a shift of
    // the broadcast sum rather than scalar arithmetic per token.
    constexpr int c = legacy_offset<kVnni, L>();
    static_assert(c == 0 || std::has_single_bit(unsigned(c)));
    __m256 dw[NH], dm[NH];
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      dw[hi] = g.f16(Lay::kBlock, b, 0);
      if constexpr (Lay::kMin) dm[hi] = g.f16(Lay::kBlock, b, 32);
    }
    for (int t = 0; t < TT; ++t) {
      const __m256i s32v = _mm256_set1_epi32(tk.s32[t][b]);
      const __m256 dav = _mm256_set1_ps(tk.d[t][b]);
      for (int hi = 0; hi < NH; ++hi) {
        __m256i s = isum[hi][t];
        if constexpr (c != 0) s = _mm256_sub_epi32(s, _mm256_slli_epi32(s32v, std::countr_zero(unsigned(c))));
        if constexpr (!kVnni && !Lay::kSigned) s = _mm256_add_epi32(s, _mm256_madd_epi16(p16[hi][t], ones16));
        acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw[hi], dav), acc.v[hi][t]);
        if constexpr (Lay::kMin)
          acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32v), _mm256_mul_ps(dm[hi], dav), acc.v[hi][t]);
      }
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

// Halves outer, tokens inner, block by block: one token, and the tiles of Q5_0 / Q5_1 without VNNI.
template <bool kVnni, Legacy L, int TT, int NH>
void legacy_blocks(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  using Lay = LegacyLayout<L>;
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  const __m256i ones16 = _mm256_set1_epi16(1);
  const auto block = [&](int64_t b) __attribute__((always_inline)) {
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      __m256i W[8];
      const int c = unpack_legacy<kVnni, L>(g.vec(Lay::kBlock, b, Lay::kQs), g.vec(Lay::kBlock, b, Lay::kQh), W);
      const __m256 dw = g.f16(Lay::kBlock, b, 0);
      for (int t = 0; t < TT; ++t) {
        const int8_t* qa = tk.q[t] + 32 * b;
        const int32_t s32 = tk.s32[t][b];
        __m256i isum = _mm256_set1_epi32(-c * s32);
        if constexpr (kVnni) {
          for (int k = 0; k < 8; ++k) isum = _mm256_dpbusd_avx_epi32(isum, W[k], bcast32(qa + 4 * k));
        } else if constexpr (Lay::kSigned) {
          // |w| <= 128: each pair sum <= 2 * 128 * 127, widened one vector at a time.
          for (int k = 0; k < 8; ++k)
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs16_signed(_mm256_abs_epi8(W[k]), W[k], bcast32(qa + 4 * k)), ones16));
        } else if constexpr (Lay::kFive) {
          // w <= 31: 4 pair sums <= 4 * 2 * 31 * 127 = 31496 in int16.
          for (int half = 0; half < 2; ++half) {
            __m256i p = pairs16(W[4 * half], bcast32(qa + 16 * half));
            for (int k = 1; k < 4; ++k) p = _mm256_add_epi16(p, pairs16(W[4 * half + k], bcast32(qa + 16 * half + 4 * k)));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones16));
          }
        } else {
          // w <= 15: 8 pair sums <= 8 * 2 * 15 * 127 = 30480 in int16.
          __m256i p = pairs16(W[0], bcast32(qa));
          for (int k = 1; k < 8; ++k) p = _mm256_add_epi16(p, pairs16(W[k], bcast32(qa + 4 * k)));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones16));
        }
        const __m256 dav = _mm256_set1_ps(tk.d[t][b]);
        acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, dav), acc.v[hi][t]);
        if constexpr (Lay::kMin)
          acc.v[hi][t] = _mm256_fmadd_ps(_mm256_set1_ps(float(s32)), _mm256_mul_ps(g.f16(Lay::kBlock, b, 32), dav), acc.v[hi][t]);
      }
    }
  };
  int64_t b = 0;
  if constexpr (TT == 1) {
    // One token: eight blocks a step (2.3-4.3 KB), their lines requested in one burst, as in the
    // AVX-512 table (avx512_quant.cpp, legacy_group): one block a step streamed 17-23 GB/s a
    // core where Q4_K's 2304-byte blocks stream 30. Zen 5 running this table, qmatmul_bench from
    // memory, T = 1, 2 threads: avx2 Q4_0 37 -> 55 GB/s, Q8_0 45 -> 63, Q4_1 38 -> 57, IQ4_NL /
    // Q5_0 / Q5_1 +16-25%; avxvnni +38-70% (Q5_1 level to +7%). Token tiles keep one block a
    // step: eight cost them 15-35% (T = 4).
    for (; b + 8 <= nb; b += 8) {
      prefetch_part(rows.group + size_t(b) * Lay::kBlock, 8 * Lay::kBlock, 0, 1);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) block(b + j);
    }
  }
  for (; b < nb; ++b) {
    prefetch_part(rows.group + size_t(b) * Lay::kBlock, Lay::kBlock, 0, 1);
    block(b);
  }
  acc.store(y, ys, t0, o, o_end);
}

template <bool kVnni, Legacy L, int TT, int NH>
void legacy_rows(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  if constexpr (TT > 1 && kQuadOuter<kVnni, L>) legacy_tile<kVnni, L, TT, NH>(a, t0, rows, nb, y, ys, o, o_end);
  else legacy_blocks<kVnni, L, TT, NH>(a, t0, rows, nb, y, ys, o, o_end);
}

// ---- Q4_K / Q5_K (8 sub-blocks of 32 with 6-bit scales and mins; kQ8x256) ---------------------

template <bool kFive>
struct K4Layout {
  static constexpr size_t kDmin = 32, kScales = 64, kQh = 256;
  static constexpr size_t kQs = kFive ? 768 : 256;
  static constexpr size_t kBlock = kFive ? 2816 : 2304;
};

// The 8 scales and 4 pairs of mins (mn[2p] | mn[2p + 1] << 16) of 8 rows from ggml's 12 bytes.
inline void k4_scales(const uint8_t* p, __m256i sc[8], __m256i mn_pairs[4]) {
  const __m256i u0 = vload(p), u1 = vload(p + 64), u2 = vload(p + 128);
  const __m256i m6 = _mm256_set1_epi32(63), m4 = _mm256_set1_epi32(15), m2 = _mm256_set1_epi32(3);
  __m256i mn[8];
  for (int i = 0; i < 4; ++i) {
    sc[i] = _mm256_and_si256(_mm256_srli_epi32(u0, 8 * i), m6);
    mn[i] = _mm256_and_si256(_mm256_srli_epi32(u1, 8 * i), m6);
    const __m256i b8 = _mm256_srli_epi32(u2, 8 * i);
    sc[i + 4] = _mm256_or_si256(_mm256_and_si256(b8, m4),
                                _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 8 * i + 6), m2), 4));
    mn[i + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(b8, 4), m4),
                                _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 8 * i + 6), m2), 4));
  }
  for (int q = 0; q < 4; ++q) mn_pairs[q] = _mm256_or_si256(mn[2 * q], _mm256_slli_epi32(mn[2 * q + 1], 16));
}

// The same scales for vpmaddwd (each in both int16 halves of its lane) and the same min pairs, worked
// out bytewise: byte i of lo / hi is scale (min) i / i + 4 of the lane's row.
inline void k4_scales_both_halves(const uint8_t* p, __m256i sc[8], __m256i mn_pairs[4]) {
  const __m256i u0 = vload(p), u1 = vload(p + 64), u2 = vload(p + 128);
  const __m256i m6 = _mm256_set1_epi8(63), m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i s_lo = _mm256_and_si256(u0, m6), m_lo = _mm256_and_si256(u1, m6);
  const __m256i s_hi = _mm256_or_si256(_mm256_and_si256(u2, m4), _mm256_and_si256(_mm256_srli_epi16(u0, 2), m30));
  const __m256i m_hi =
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(u2, 4), m4), _mm256_and_si256(_mm256_srli_epi16(u1, 2), m30));
  for (int i = 0; i < 4; ++i) {
    const __m256i ctl = lane_bytes(i, -1, i, -1);
    sc[i] = _mm256_shuffle_epi8(s_lo, ctl);
    sc[i + 4] = _mm256_shuffle_epi8(s_hi, ctl);
  }
  const __m256i p01 = lane_bytes(0, -1, 1, -1), p23 = lane_bytes(2, -1, 3, -1);
  mn_pairs[0] = _mm256_shuffle_epi8(m_lo, p01);
  mn_pairs[1] = _mm256_shuffle_epi8(m_lo, p23);
  mn_pairs[2] = _mm256_shuffle_epi8(m_hi, p01);
  mn_pairs[3] = _mm256_shuffle_epi8(m_hi, p23);
}

// Q5_K's fifth bits of sub-block s (bit s of each qh byte, interleave16.h) as 16 or 0 per byte: one
// 16-bit shift takes bit s of either byte of a word to bit 4 of the same byte (the bits that
// cross from the neighbour byte land elsewhere and are masked off), where the compare of bits_to
// took three instructions (the shift counts need the loops unrolled: k4_token).
inline __m256i k5_fifth_bit(__m256i qh, int s) {
  const __m256i v = s < 4 ? _mm256_slli_epi16(qh, 4 - s) : s > 4 ? _mm256_srli_epi16(qh, s - 4) : qh;
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// The scale operand of k4_sub for the scales sc: as is for vpmulld (VNNI), else in both int16 halves.
template <bool kVnni>
inline __m256i k4_scale(__m256i sc) {
  if constexpr (kVnni) return sc;
  else return both_halves(sc);
}

// Quads of a sub-block summed before widening: all 8 with VNNI (int32); without, the int16 pair
// sums of Q4_K 8 <= 8 * 2 * 15 * 127 = 30480, of Q5_K 4 <= 4 * 2 * 31 * 127 = 31496.
template <bool kVnni, bool kFive>
constexpr int kK4Run = kVnni || !kFive ? 8 : 4;

// I1 += sc * (sum of the 8 quads of W against qa): one sub-block of 32 with unsigned weights;
// sc2 = k4_scale(sc).
template <bool kVnni, bool kFive>
inline __m256i k4_sub(__m256i I1, const __m256i W[8], const int8_t* qa, __m256i sc2) {
  if constexpr (kVnni) {
    __m256i p = _mm256_setzero_si256();
    for (int m = 0; m < 8; ++m) p = _mm256_dpbusd_avx_epi32(p, W[m], bcast32(qa + 4 * m));
    return _mm256_add_epi32(I1, _mm256_mullo_epi32(p, sc2));
  } else {
    // vpmaddwd multiplies and widens the pair sums in one step.
    constexpr int kRun = kK4Run<kVnni, kFive>;
    for (int m0 = 0; m0 < 8; m0 += kRun) {
      __m256i p = pairs16(W[m0], bcast32(qa + 4 * m0));
      for (int m = m0 + 1; m < m0 + kRun; ++m) p = _mm256_add_epi16(p, pairs16(W[m], bcast32(qa + 4 * m)));
      I1 = _mm256_add_epi32(I1, _mm256_madd_epi16(p, sc2));
    }
    return I1;
  }
}

// The block's float steps for one half and token: I1 the scaled quant sums, mnp the half's min pairs.
template <bool kVnni, bool kFive, int TT>
inline __m256 k4_finish(const TokenTile<TT>& tk, int t, int64_t b, const Half& g, __m256i I1, const __m256i mnp[4],
                        __m256 acc) {
  using Lay = K4Layout<kFive>;
  const __m256 d = g.f16(Lay::kBlock, b, 0), dmin = g.f16(Lay::kBlock, b, Lay::kDmin);
  const int16_t* h32 = tk.h32[t] + 8 * b;
  __m256i I2 = _mm256_setzero_si256();
  for (int q = 0; q < 4; ++q) I2 = dot_i16<kVnni>(I2, mnp[q], bcast32(h32 + 2 * q));
  const __m256 dav = _mm256_set1_ps(tk.d[t][b]);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I1), _mm256_mul_ps(d, dav), acc);
  return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(I2), _mm256_mul_ps(dmin, dav), acc);
}

// Token tiles of several tokens: as legacy_tile, quads outer and tokens inner over every half of
// the group, so one broadcast of 4 activation bytes feeds both halves; the same integer sums and
// float steps per (row, token) as k4_token below.
template <bool kVnni, bool kFive, int TT, int NH>
void k4_tile(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  using Lay = K4Layout<kFive>;
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  constexpr int kRun = kK4Run<kVnni, kFive>;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i sc[NH][8], mnp[NH][4], I1[NH][TT];
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      if constexpr (kVnni) {
        k4_scales(g.vec(Lay::kBlock, b, Lay::kScales), sc[hi], mnp[hi]);
        for (int s = 0; s < 8; ++s) sc[hi][s] = k4_scale<kVnni>(sc[hi][s]);
      } else {
        k4_scales_both_halves(g.vec(Lay::kBlock, b, Lay::kScales), sc[hi], mnp[hi]);
      }
      for (int t = 0; t < TT; ++t) I1[hi][t] = _mm256_setzero_si256();
    }
    for (int c = 0; c < 4; ++c) {
      for (int hi = 0; hi < NH; ++hi) prefetch_part(rows.group + size_t(b) * Lay::kBlock, Lay::kBlock, 4 * hi + c, 4 * NH);
#pragma GCC unroll 2
      for (int part = 0; part < 2; ++part) {
        const int s = 2 * c + part;
        __m256i p[NH][TT];
#pragma GCC unroll 8
        for (int m = 0; m < 8; ++m) {
          __m256i W[NH];
          for (int hi = 0; hi < NH; ++hi) {
            const Half g{rows.group, rows.h0 + hi};
            const __m256i v = vload(g.vec(Lay::kBlock, b, Lay::kQs + 64 * size_t(8 * c + m)));
            W[hi] = part ? hi_nib(v) : lo_nib(v);
            if constexpr (kFive)
              W[hi] = _mm256_or_si256(W[hi], bits_to(vload(g.vec(Lay::kBlock, b, Lay::kQh + 64 * size_t(m))), 1 << s, 16));
          }
          for (int t = 0; t < TT; ++t) {
            const __m256i av = bcast32(tk.q[t] + 256 * b + 64 * c + 32 * part + 4 * m);
            for (int hi = 0; hi < NH; ++hi) {
              if (m % kRun == 0) p[hi][t] = _mm256_setzero_si256();
              if constexpr (kVnni) p[hi][t] = _mm256_dpbusd_avx_epi32(p[hi][t], W[hi], av);
              else p[hi][t] = _mm256_add_epi16(p[hi][t], pairs16(W[hi], av));
              asm("" : "+x"(p[hi][t]));  // keeps GCC from reassociating the sums into a tree (see legacy_tile)
              if (m % kRun == kRun - 1) {
                if constexpr (kVnni) I1[hi][t] = _mm256_add_epi32(I1[hi][t], _mm256_mullo_epi32(p[hi][t], sc[hi][s]));
                else I1[hi][t] = _mm256_add_epi32(I1[hi][t], _mm256_madd_epi16(p[hi][t], sc[hi][s]));
              }
            }
          }
        }
      }
    }
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      for (int t = 0; t < TT; ++t) acc.v[hi][t] = k4_finish<kVnni, kFive>(tk, t, b, g, I1[hi][t], mnp[hi], acc.v[hi][t]);
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

// One token: each half in turn, block by block.
template <bool kVnni, bool kFive, int TT, int NH>
void k4_token(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  static_assert(TT == 1);
  using Lay = K4Layout<kFive>;
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  for (int64_t b = 0; b < nb; ++b) {
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      __m256i sc[8], mnp[4];
      if constexpr (kVnni) {
        k4_scales(g.vec(Lay::kBlock, b, Lay::kScales), sc, mnp);
        for (int s = 0; s < 8; ++s) sc[s] = k4_scale<kVnni>(sc[s]);
      } else {
        k4_scales_both_halves(g.vec(Lay::kBlock, b, Lay::kScales), sc, mnp);
      }
      __m256i I1[TT];
      for (int t = 0; t < TT; ++t) I1[t] = _mm256_setzero_si256();
      // One sub-block's 8 weight vectors at a time (sixteen would not fit the 16 registers).
      [[maybe_unused]] const auto sub = [&](int c, int part) __attribute__((always_inline)) {
        __m256i W[8];
        for (int m = 0; m < 8; ++m) {
          const __m256i p = vload(g.vec(Lay::kBlock, b, Lay::kQs + 64 * size_t(8 * c + m)));
          W[m] = part ? hi_nib(p) : lo_nib(p);
          if constexpr (kFive) {
            const __m256i qh = vload(g.vec(Lay::kBlock, b, Lay::kQh + 64 * size_t(m)));
            W[m] = _mm256_or_si256(W[m], k5_fifth_bit(qh, 2 * c + part));
          }
        }
        for (int t = 0; t < TT; ++t)
          I1[t] = k4_sub<kVnni, kFive>(I1[t], W, tk.q[t] + 256 * b + 64 * c + 32 * part, sc[2 * c + part]);
      };
      if constexpr (kFive && !kVnni) {
        // Sub-blocks 2c and 2c + 1 from one load of each qs and qh vector (low and high nibbles,
        // fifth bits 2c and 2c + 1), a run of 4 quads at a time: a qs and a qh load a weight
        // vector rather than two each. Unrolled, so that k5_fifth_bit's shifts are immediates.
        // Zen 4 VM, qmatmul_bench qhot avx2 T = 1, one thread, 3 pairs alternating: 23.6-24.8 ->
        // 29.4-30.2 GB/s with prefetch_part_here (Q4_K, 33 GB/s, measured 13% slower with its loops
        // unrolled, so it keeps them).
        const int8_t* q = tk.q[0] + 256 * b;
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          prefetch_part_here(rows.group + size_t(b) * Lay::kBlock, Lay::kBlock, 4 * hi + c, 4 * NH);
#pragma GCC unroll 2
          for (int m0 = 0; m0 < 8; m0 += 4) {
            __m256i lo16 = _mm256_setzero_si256(), hi16 = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int m = m0; m < m0 + 4; ++m) {  // 4 pair sums <= 4 * 2 * 31 * 127 = 31496 in int16
              const __m256i p = vload(g.vec(Lay::kBlock, b, Lay::kQs + 64 * size_t(8 * c + m)));
              const __m256i qh = vload(g.vec(Lay::kBlock, b, Lay::kQh + 64 * size_t(m)));
              const __m256i wl = _mm256_or_si256(lo_nib(p), k5_fifth_bit(qh, 2 * c));
              const __m256i wh = _mm256_or_si256(hi_nib(p), k5_fifth_bit(qh, 2 * c + 1));
              lo16 = _mm256_add_epi16(lo16, pairs16(wl, bcast32(q + 64 * c + 4 * m)));
              hi16 = _mm256_add_epi16(hi16, pairs16(wh, bcast32(q + 64 * c + 32 + 4 * m)));
            }
            I1[0] = _mm256_add_epi32(I1[0], _mm256_madd_epi16(lo16, sc[2 * c]));
            I1[0] = _mm256_add_epi32(I1[0], _mm256_madd_epi16(hi16, sc[2 * c + 1]));
          }
        }
      } else {
        for (int c = 0; c < 4; ++c) {
          prefetch_part(rows.group + size_t(b) * Lay::kBlock, Lay::kBlock, 4 * hi + c, 4 * NH);
          for (int part = 0; part < 2; ++part) sub(c, part);
        }
      }
      for (int t = 0; t < TT; ++t) acc.v[hi][t] = k4_finish<kVnni, kFive>(tk, t, b, g, I1[t], mnp, acc.v[hi][t]);
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

template <bool kVnni, bool kFive, int TT, int NH>
void k4_rows(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  if constexpr (TT > 1) k4_tile<kVnni, kFive, TT, NH>(a, t0, rows, nb, y, ys, o, o_end);
  else k4_token<kVnni, kFive, TT, NH>(a, t0, rows, nb, y, ys, o, o_end);
}

// ---- Sub-blocks of 16 with an offset: Q6_K (u - 32), Q3_K (u - 4), and Q2_K (mins) --------------
//
// Quants are taken unsigned (u = q + c), so a sub-block's sum is sum(u * a) - c * s16. The offset
// term over the whole block is c * sum_s sc_s * s16_s: one vpmaddwd per pair of sub-blocks
// (scale pairs against activation-sum pairs), the same shape as the mins of Q2_K.

// Scale pairs (sc[2p] | sc[2p + 1] << 16, int16 halves) from 16 per-lane scales.
inline void scale_pairs(const __m256i sc[16], __m256i pairs[8]) {
  for (int p = 0; p < 8; ++p) pairs[p] = _mm256_or_si256(low_half(sc[2 * p]), _mm256_slli_epi32(sc[2 * p + 1], 16));
}
// sum_s pairs * s16 over the block's 16 sub-blocks (exact int32).
template <bool kVnni>
inline __m256i pair_dot(const __m256i pairs[8], const int16_t* s16) {
  __m256i r = _mm256_setzero_si256();
  for (int p = 0; p < 8; ++p) r = dot_i16<kVnni>(r, pairs[p], bcast32(s16 + 2 * p));
  return r;
}

// I1 += sc * (sum over 4 quads of u * a) for one sub-block of 16 with unsigned u <= kMax.
// VNNI: the int32 part then vpdpwssd (sc in the low half, the part fitting int16: 16 * 63 * 127
// does not, so Q6_K multiplies in int32) or vpmulld. AVX2: int16 pair sums, at most 32767 / (2 *
// kMax * 127) of them added before vpmaddwd widens them with sc in both halves.
template <bool kVnni, int kMax>
inline __m256i sub16_scale(__m256i sc) {
  if constexpr (!kVnni) return both_halves(sc);
  else if constexpr (16 * kMax * 127 <= 32767) return low_half(sc);
  else return sc;
}
// sc2 = sub16_scale(sc).
template <bool kVnni, int kMax>
inline __m256i sub16(__m256i I1, const __m256i W[4], const int8_t* qa, __m256i sc2) {
  if constexpr (kVnni) {
    __m256i p = _mm256_setzero_si256();
    for (int m = 0; m < 4; ++m) p = _mm256_dpbusd_avx_epi32(p, W[m], bcast32(qa + 4 * m));
    if constexpr (16 * kMax * 127 <= 32767) return _mm256_dpwssd_avx_epi32(I1, p, sc2);
    else return _mm256_add_epi32(I1, _mm256_mullo_epi32(p, sc2));
  } else {
    constexpr int kRun = 32767 / (2 * kMax * 127) >= 4 ? 4 : 32767 / (2 * kMax * 127);
    static_assert(kRun >= 1 && 4 % kRun == 0);
    for (int m0 = 0; m0 < 4; m0 += kRun) {
      __m256i p = pairs16(W[m0], bcast32(qa + 4 * m0));
      for (int m = m0 + 1; m < m0 + kRun; ++m) p = _mm256_add_epi16(p, pairs16(W[m], bcast32(qa + 4 * m)));
      I1 = _mm256_add_epi32(I1, _mm256_madd_epi16(p, sc2));
    }
    return I1;
  }
}

using interleave16::kQ6kBlock, interleave16::kQ6kD, interleave16::kQ6kScales, interleave16::kQ6kSubBlock,
    interleave16::kQ6kSubBlocks;

// Sub-block s of a packed Q6_K block for one half's 8 rows (p: its first vector's half) as four
// vectors of unsigned quants, quad k in W[k]: int512.h's q6k_unpack on 256 bits.
inline void q6k_unpack(const uint8_t* p, __m256i W[4]) {
  const __m256i m63 = _mm256_set1_epi8(63);
  const __m256i A = vload(p), B = vload(p + 64), C = vload(p + 128);
  W[0] = _mm256_and_si256(A, m63);
  W[1] = _mm256_and_si256(B, m63);
  W[2] = _mm256_and_si256(C, m63);
  const __m256i mc0 = _mm256_set1_epi8(int8_t(0xc0)), mf0 = _mm256_set1_epi8(int8_t(0xf0));
  const __m256i cb = _mm256_or_si256(_mm256_and_si256(C, mc0), _mm256_andnot_si256(mc0, _mm256_srli_epi16(B, 2)));
  const __m256i cba = _mm256_or_si256(_mm256_and_si256(cb, mf0), _mm256_andnot_si256(mf0, _mm256_srli_epi16(A, 4)));
  W[3] = _mm256_and_si256(_mm256_srli_epi16(cba, 2), m63);
}

// Row r's scale of sub-block s in both 16-bit halves of lane r (sub16_scale's AVX2 form), or
// sign-extended to the lane (VNNI); and the pairs (sc[2p] | sc[2p + 1] << 16) of scale_pairs. p: the
// half's 8 scale bytes of sub-block 0 (16 apart from one sub-block to the next).
template <bool kVnni>
inline void q6k_scales(const uint8_t* p, __m256i sc[16], __m256i pairs[8]) {
  __m128i v[16];
  for (int s = 0; s < 16; ++s) v[s] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16 * s));
  for (int s = 0; s < 16; ++s)
    sc[s] = kVnni ? sub16_scale<kVnni, 63>(_mm256_cvtepi8_epi32(v[s])) : _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(v[s], v[s]));
  for (int q = 0; q < 8; ++q) pairs[q] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(v[2 * q], v[2 * q + 1]));
}

template <bool kVnni, int TT, int NH>
void q6k_rows(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  for (int64_t b = 0; b < nb; ++b) {
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      __m256i sc[16], scp[8];
      q6k_scales<kVnni>(rows.group + size_t(b) * kQ6kBlock + kQ6kScales + 8 * size_t(g.h), sc, scp);
      __m256i I1[TT];
      for (int t = 0; t < TT; ++t) I1[t] = _mm256_setzero_si256();
      for (int s = 0; s < 16; ++s) {
        if (s % 4 == 0) prefetch_part(rows.group + size_t(b) * kQ6kBlock, kQ6kBlock, 4 * hi + s / 4, 4 * NH);
        __m256i W[4];
        q6k_unpack(g.vec(kQ6kBlock, b, kQ6kSubBlocks + kQ6kSubBlock * size_t(s)), W);
        for (int t = 0; t < TT; ++t) I1[t] = sub16<kVnni, 63>(I1[t], W, tk.q[t] + 256 * b + 16 * s, sc[s]);
      }
      const __m256 d = g.f16(kQ6kBlock, b, kQ6kD);
      for (int t = 0; t < TT; ++t) {
        const __m256i off = pair_dot<kVnni>(scp, tk.s16[t] + 16 * b);  // I1 -= 32 * sum sc * s16
        const __m256i i1 = _mm256_sub_epi32(I1[t], _mm256_slli_epi32(off, 5));
        acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(d, _mm256_set1_ps(tk.d[t][b])), acc.v[hi][t]);
      }
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

constexpr size_t kQ2Dmin = 32, kQ2Scales = 64, kQ2Qs = 320, kQ2Block = 1344;
constexpr size_t kQ3Qs = 512, kQ3Scales = 1536, kQ3D = 1728, kQ3Block = 1760;

// Q3_K's 16 signed scales of 8 rows from ggml's 12 packed bytes (blocks.h q3k_scale), each
// sign-extended to its lane. Bytewise first: byte i of B[j] is scale 4j + i, its low nibble from
// byte i of u0 / u1 (j = 0, 1; their high nibbles for j = 2, 3) and its bits 4-5 from bits 2j,
// 2j + 1 of byte i of u2.
inline void q3k_scales(const uint8_t* p, __m256i sc[16]) {
  const __m256i u0 = vload(p), u1 = vload(p + 64), u2 = vload(p + 128);
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
  const __m256i B[4] = {
      _mm256_or_si256(_mm256_and_si256(u0, m4), _mm256_and_si256(_mm256_slli_epi16(u2, 4), m30)),
      _mm256_or_si256(_mm256_and_si256(u1, m4), _mm256_and_si256(_mm256_slli_epi16(u2, 2), m30)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(u0, 4), m4), _mm256_and_si256(u2, m30)),
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(u1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(u2, 2), m30))};
  for (int s = 0; s < 16; ++s)
    sc[s] = _mm256_srai_epi32(_mm256_slli_epi32(_mm256_sub_epi8(B[s / 4], off), 8 * (3 - s % 4)), 24);
}

// Q2_K (kQ3 = false) and Q3_K: quad m of half hh at shift k holds elements 128hh + 32k + 4m + j,
// so quads 0..3 and 4..7 of a shift are the sub-blocks 8hh + 2k and 8hh + 2k + 1.
template <bool kVnni, bool kQ3, int TT, int NH>
void k2_rows(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  constexpr size_t kBlock = kQ3 ? kQ3Block : kQ2Block;
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  const __m256i mask = _mm256_set1_epi8(kQ3 ? 7 : 3);
  for (int64_t b = 0; b < nb; ++b) {
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      __m256i sc[16], pairs[8];  // pairs: Q3_K scale pairs (offset term), Q2_K min pairs
      if constexpr (kQ3) {
        q3k_scales(g.vec(kBlock, b, kQ3Scales), sc);
        scale_pairs(sc, pairs);
      } else {
        // Byte i of scale vector v is sub-block 4v + i: scale in the low nibble, min in the high one.
        __m256i mn[16];
        for (int v = 0; v < 4; ++v) {
          const __m256i sv = vload(g.vec(kBlock, b, kQ2Scales + 64 * size_t(v)));
          for (int i = 0; i < 4; ++i) {
            sc[4 * v + i] = _mm256_and_si256(_mm256_srli_epi32(sv, 8 * i), _mm256_set1_epi32(15));
            mn[4 * v + i] = _mm256_and_si256(_mm256_srli_epi32(sv, 8 * i + 4), _mm256_set1_epi32(15));
          }
        }
        scale_pairs(mn, pairs);
      }
      for (int s = 0; s < 16; ++s) sc[s] = sub16_scale<kVnni, kQ3 ? 7 : 3>(sc[s]);
      __m256i I1[TT];
      for (int t = 0; t < TT; ++t) I1[t] = _mm256_setzero_si256();
      // Unsigned quants: Q2_K's as stored, Q3_K's + 4 (its high bit set means +4). Shifts kp and
      // kp + 2 come from one vector X per quad: 2-bit fields at bits 0-1 and 4-5 of each byte, Q3_K's
      // high bits at bits 2 and 6 (interleave16.h).
      for (int hh = 0; hh < 2; ++hh)
        for (int kp = 0; kp < 2; ++kp) {
          prefetch_part(rows.group + size_t(b) * kBlock, kBlock, 4 * hi + 2 * hh + kp, 4 * NH);
          __m256i X[8];
          for (int m = 0; m < 8; ++m) {
            X[m] = _mm256_srli_epi16(vload(g.vec(kBlock, b, (kQ3 ? kQ3Qs : kQ2Qs) + 64 * size_t(8 * hh + m))), 2 * kp);
            if constexpr (kQ3) {
              const int left = 2 * hh - kp;
              const __m256i hm = vload(g.vec(kBlock, b, 64 * size_t(m)));
              const __m256i hb = left > 0 ? _mm256_slli_epi16(hm, left) : left < 0 ? _mm256_srli_epi16(hm, -left) : hm;
              X[m] = _mm256_or_si256(_mm256_and_si256(X[m], _mm256_set1_epi8(0x33)), _mm256_and_si256(hb, _mm256_set1_epi8(0x44)));
            }
          }
          for (int e = 0; e < 2; ++e) {
            const int k = kp + 2 * e;
            __m256i W[8];
            for (int m = 0; m < 8; ++m) W[m] = _mm256_and_si256(e ? _mm256_srli_epi16(X[m], 4) : X[m], mask);
            const int s0 = 8 * hh + 2 * k;
            for (int t = 0; t < TT; ++t) {
              const int8_t* qa = tk.q[t] + 256 * b + 16 * s0;
              I1[t] = sub16<kVnni, kQ3 ? 7 : 3>(I1[t], W, qa, sc[s0]);
              I1[t] = sub16<kVnni, kQ3 ? 7 : 3>(I1[t], W + 4, qa + 16, sc[s0 + 1]);
            }
          }
        }
      const __m256 d = g.f16(kBlock, b, kQ3 ? kQ3D : 0);
      for (int t = 0; t < TT; ++t) {
        const __m256i i2 = pair_dot<kVnni>(pairs, tk.s16[t] + 16 * b);
        const __m256 dav = _mm256_set1_ps(tk.d[t][b]);
        if constexpr (kQ3) {
          const __m256i i1 = _mm256_sub_epi32(I1[t], _mm256_slli_epi32(i2, 2));  // I1 -= 4 * sum sc * s16
          acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(d, dav), acc.v[hi][t]);
        } else {
          acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I1[t]), _mm256_mul_ps(d, dav), acc.v[hi][t]);
          acc.v[hi][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(i2), _mm256_mul_ps(g.f16(kBlock, b, kQ2Dmin), dav), acc.v[hi][t]);
        }
      }
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

// ---- IQ4_XS (8 sub-blocks of 32 with signed 6-bit scales, the IQ4 code book; kQ8x256) -----------

constexpr size_t kXsScalesH = 32, kXsScalesL = 64, kXsQs = 128, kXsBlock = 2176;

// A half's 8 signed 6-bit scales as bytes, worked out once a block: byte j of lane r of E / O is
// row r's scale of sub-block 2j / 2j + 1 (sh: the half's 8 scales_h, sl: its scales_l vector).
// Byte j of the spread high bits holds bits 4j..4j+3 of the row's scales_h: those of sub-blocks
// 2j (bits 0-1) and 2j + 1 (bits 2-3).
inline void iq4xs_scale_bytes(const uint8_t* sh, const uint8_t* sl, __m256i& E, __m256i& O) {
  const __m256i h = _mm256_shuffle_epi8(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sh))),
                                        lane_bytes(0, 0, 1, 1));
  const __m256i hn = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(0x000f)),
                                     _mm256_and_si256(_mm256_srli_epi16(h, 4), _mm256_set1_epi16(0x0f00)));
  const __m256i l = vload(sl);
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
  E = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l, m4), _mm256_and_si256(_mm256_slli_epi16(hn, 4), m30)), off);
  O = _mm256_sub_epi8(
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m4), _mm256_and_si256(_mm256_slli_epi16(hn, 2), m30)), off);
}
// Sub-block s's scale from iq4xs_scale_bytes, sign-extended into both 16-bit halves of its lane.
inline __m256i iq4xs_scale16(__m256i E, __m256i O, int s) {
  const int j = s / 2;
  return _mm256_srai_epi16(_mm256_shuffle_epi8(s % 2 ? O : E, lane_bytes(j, j, j, j)), 8);
}

// |q| of one token's activations (n a multiple of 32), kept per thread for iq4xs_token.
inline const int8_t* abs_acts(const int8_t* q, int64_t n) {
  thread_local std::vector<int8_t> buf;
  if (buf.size() < size_t(n)) buf.resize(size_t(n));
  for (int64_t i = 0; i < n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(buf.data() + i), _mm256_abs_epi8(vload(reinterpret_cast<const uint8_t*>(q + i))));
  return buf.data();
}

// One token without VNNI, the NH halves of a group block by block together. The code book's
// values lie in [-127, 113], so the sign trick runs the other way round: vpmaddubsw takes |a| as
// its unsigned operand and the weights with a's sign (vpsignb: w * sign(a), |w| <= 127), which
// spares the vpabsb of the weights (|a| comes from a per-token copy; the broadcasts are loads):
// pair sums |a0| * w0' + |a1| * w1' = a0 * w0 + a1 * w1, |.| <= 2 * 127 * 127, widened by vpmaddwd
// with the sub-block's scale in both halves. The scales come once a block as bytes
// (iq4xs_scale_bytes), two instructions a sub-block from there. The integer sums are those of
// iq4xs_rows, so are the float steps. Zen 4 (2 vCPUs of an EPYC VM) running this table,
// qmatmul_bench qhot T = 1, one thread, 3 pairs alternating: 17.1-17.7 -> 23.8-24.6 GB/s (the
// kernel before took 8 weight vectors' lookups and vpabsb at once and spilled them).
template <int NH>
void iq4xs_token(const ActRows& a, const int8_t* qabs, Rows rows, int64_t nb, float* y, int64_t o, int64_t o_end) {
  const int8_t* qa0 = a.q(0);
  const float* da = a.d(0);
  TileSums<1, NH> acc;
  const __m256i book = iq4_book(), m4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i E[NH], O[NH], I1[NH];
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      iq4xs_scale_bytes(g.group + size_t(b) * kXsBlock + kXsScalesH + 16 * size_t(g.h), g.vec(kXsBlock, b, kXsScalesL),
                        E[hi], O[hi]);
      I1[hi] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {  // unrolled: the scale shuffles' controls are constants
      prefetch_part_here(rows.group + size_t(b) * kXsBlock, kXsBlock, s, 8);
      const int8_t* qa = qa0 + 256 * b + 32 * s;
      const int8_t* qb = qabs + 256 * b + 32 * s;
      __m256i sc[NH];
      for (int hi = 0; hi < NH; ++hi) sc[hi] = iq4xs_scale16(E[hi], O[hi], s);
      for (int v = 0; v < 4; ++v) {
        const __m256i a_lo = bcast32(qa + 4 * v), a_hi = bcast32(qa + 16 + 4 * v);
        const __m256i b_lo = bcast32(qb + 4 * v), b_hi = bcast32(qb + 16 + 4 * v);
        for (int hi = 0; hi < NH; ++hi) {
          const Half g{rows.group, rows.h0 + hi};
          const __m256i p = vload(g.vec(kXsBlock, b, kXsQs + 64 * size_t(4 * s + v)));
          const __m256i wl = _mm256_shuffle_epi8(book, _mm256_and_si256(p, m4));
          const __m256i wh = _mm256_shuffle_epi8(book, _mm256_and_si256(_mm256_srli_epi16(p, 4), m4));
          I1[hi] = _mm256_add_epi32(I1[hi], _mm256_madd_epi16(_mm256_maddubs_epi16(b_lo, _mm256_sign_epi8(wl, a_lo)), sc[hi]));
          I1[hi] = _mm256_add_epi32(I1[hi], _mm256_madd_epi16(_mm256_maddubs_epi16(b_hi, _mm256_sign_epi8(wh, a_hi)), sc[hi]));
          asm("" : "+x"(I1[hi]));  // keeps GCC from reassociating the sums into a tree and spilling (see legacy_tile)
        }
      }
    }
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      acc.v[hi][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I1[hi]), _mm256_mul_ps(g.f16(kXsBlock, b, 0), _mm256_set1_ps(da[b])),
                                     acc.v[hi][0]);
    }
  }
  acc.store(y, 0, 0, o, o_end);
}

template <bool kVnni, int TT, int NH>
void iq4xs_rows(const ActRows& a, int64_t t0, Rows rows, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  const TokenTile<TT> tk(a, t0);
  TileSums<TT, NH> acc;
  const __m256i book = kVnni ? iq4_book_u8() : iq4_book();
  for (int64_t b = 0; b < nb; ++b) {
    for (int hi = 0; hi < NH; ++hi) {
      const Half g{rows.group, rows.h0 + hi};
      const __m256i sh = _mm256_cvtepu16_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.group + size_t(b) * kXsBlock + kXsScalesH + 16 * size_t(g.h))));
      const __m256i sl = vload(g.vec(kXsBlock, b, kXsScalesL));
      __m256i I1[TT];
      for (int t = 0; t < TT; ++t) I1[t] = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {
        prefetch_part(rows.group + size_t(b) * kXsBlock, kXsBlock, 8 * hi + s, 8 * NH);
        const __m256i sc = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(sl, 4 * s), _mm256_set1_epi32(15)),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(sh, 2 * s), _mm256_set1_epi32(3)), 4)),
            _mm256_set1_epi32(32));
        __m256i W[8];
        for (int v = 0; v < 4; ++v) {
          const __m256i p = vload(g.vec(kXsBlock, b, kXsQs + 64 * size_t(4 * s + v)));
          W[v] = _mm256_shuffle_epi8(book, lo_nib(p));
          W[v + 4] = _mm256_shuffle_epi8(book, hi_nib(p));
        }
        if constexpr (kVnni) {
          // Code book + 128: sum(w * a) = sum(w_u8 * a) - 128 * sum(a); the part needs 32 bits.
          for (int t = 0; t < TT; ++t) {
            const int8_t* qa = tk.q[t] + 256 * b + 32 * s;
            __m256i part = _mm256_set1_epi32(-128 * int32_t(tk.h32[t][8 * b + s]));
            for (int k = 0; k < 8; ++k) part = _mm256_dpbusd_avx_epi32(part, W[k], bcast32(qa + 4 * k));
            I1[t] = _mm256_add_epi32(I1[t], _mm256_mullo_epi32(part, sc));
          }
        } else {
          // Signed values (|w| <= 127), one pair sum per vpmaddwd with the scale in both halves.
          const __m256i sc2 = both_halves(sc);
          __m256i A[8];
          for (int k = 0; k < 8; ++k) A[k] = _mm256_abs_epi8(W[k]);
          for (int t = 0; t < TT; ++t) {
            const int8_t* qa = tk.q[t] + 256 * b + 32 * s;
            for (int k = 0; k < 8; ++k)
              I1[t] = _mm256_add_epi32(I1[t], _mm256_madd_epi16(pairs16_signed(A[k], W[k], bcast32(qa + 4 * k)), sc2));
          }
        }
      }
      const __m256 d = g.f16(kXsBlock, b, 0);
      for (int t = 0; t < TT; ++t)
        acc.v[hi][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I1[t]), _mm256_mul_ps(d, _mm256_set1_ps(tk.d[t][b])), acc.v[hi][t]);
    }
  }
  acc.store(y, ys, t0, o, o_end);
}

// ---- Dispatch over halves and token tiles ------------------------------------------------------

// kernel.operator()<TT, NH>(t0, rows, nb, o, o_end) for each group (or lone 8-row half) of the
// range and token tile (of up to kTile tokens).
template <int kTileHalves = 1, int kTile = kTokenTile, class Kernel>
void run_halves(const ActRows& a, const WeightMatrix& w, int64_t block_elems, int64_t o_begin, int64_t o_end,
                const Kernel& kernel) {
  static_assert(kTile >= 1 && kTile <= kWideTokenTile && kWideTokenTile == 6);
  const int64_t nb = w.cols / block_elems;
  o_end = imin(o_end, w.rows);
  auto rows_at = [&](int64_t o) {
    return Rows{static_cast<const uint8_t*>(w.data) + size_t(o / 16) * w.group_bytes, int((o / 8) % 2)};
  };
  auto tile = [&]<int NH>(int64_t t0, int64_t o) {
    const Rows g = rows_at(o);
    const int64_t tt = imin(kTile, a.T - t0);
    if constexpr (kTile >= 6) if (tt == 6) return kernel.template operator()<6, NH>(t0, g, nb, o, o_end);
    if constexpr (kTile >= 5) if (tt == 5) return kernel.template operator()<5, NH>(t0, g, nb, o, o_end);
    if constexpr (kTile >= 4) if (tt == 4) return kernel.template operator()<4, NH>(t0, g, nb, o, o_end);
    if constexpr (kTile >= 3) if (tt == 3) return kernel.template operator()<3, NH>(t0, g, nb, o, o_end);
    if constexpr (kTile >= 2) if (tt == 2) return kernel.template operator()<2, NH>(t0, g, nb, o, o_end);
    if (tt == 1) kernel.template operator()<1, NH>(t0, g, nb, o, o_end);
  };
  // The range's halves for one token tile: whole groups as one call where kPairs (a lone half at
  // either end alone).
  auto sweep = [&]<bool kPairs>(int64_t t0) {
    for (int64_t o = o_begin; o < o_end;) {
      const bool both = kPairs && (o / 8) % 2 == 0 && o + 8 < o_end;
      if (both) tile.template operator()<2>(t0, o);
      else tile.template operator()<1>(t0, o);
      o += both ? 16 : 8;
    }
  };
  // One token tile: a group's two halves block by block together, so the second half finds its
  // lines in L1 (the group is read once).
  if (a.T <= kTile) return sweep.template operator()<true>(0);
  // Token tiles outer, the range's halves inner: the range's weights stay in L2 while each tile's
  // activations pass once from L1, rather than every half sweeping all T tokens' activations from
  // L3 (2.6 MB at T = 512 for each 8 rows). Kernels whose tiles take a group's two halves together
  // get both (kTileHalves = 2); the others get one half at a time, which leaves the tile more
  // registers.
  // Zen 5 running these tables, qmatmul_bench T = 512, one thread: avx2 +14-21%, avxvnni +35-85%.
  for (int64_t t0 = 0; t0 < a.T; t0 += kTile) sweep.template operator()<kTileHalves == 2>(t0);
}

template <bool V, Legacy L>
void qmatmul_legacy(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  run_halves<kQuadOuter<V, L> ? 2 : 1, kLegacyTile<V, L>>(a, w, 32, o_begin, o_end, [&]<int TT, int NH>(int64_t t0, Rows g, int64_t nb, int64_t o, int64_t oe) {
    legacy_rows<V, L, TT, NH>(a, t0, g, nb, y, ys, o, oe);
  });
}
template <bool V, bool kFive>
void qmatmul_k4(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  run_halves<2>(a, w, 256, o_begin, o_end, [&]<int TT, int NH>(int64_t t0, Rows g, int64_t nb, int64_t o, int64_t oe) {
    k4_rows<V, kFive, TT, NH>(a, t0, g, nb, y, ys, o, oe);
  });
}
template <bool V>
void qmatmul_q6k(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  // With VNNI 6 tokens rather than 4 share a block's 6-bit unpacking (qmatmul_bench avxvnni, one
  // thread, 16 pairs on a noisy host: T = 64 / 512 +7% / +9%, the best runs +8-13% / +7%).
  run_halves<1, V ? kWideTokenTile : kTokenTile>(a, w, 256, o_begin, o_end, [&]<int TT, int NH>(int64_t t0, Rows g, int64_t nb, int64_t o, int64_t oe) {
    q6k_rows<V, TT, NH>(a, t0, g, nb, y, ys, o, oe);
  });
}
template <bool V, bool kQ3>
void qmatmul_k2(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  run_halves(a, w, 256, o_begin, o_end, [&]<int TT, int NH>(int64_t t0, Rows g, int64_t nb, int64_t o, int64_t oe) {
    k2_rows<V, kQ3, TT, NH>(a, t0, g, nb, y, ys, o, oe);
  });
}
template <bool V>
void qmatmul_iq4xs(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  if constexpr (!V) {
    if (a.T == 1) {
      const int8_t* qabs = abs_acts(a.q(0), a.n);
      return run_halves(a, w, 256, o_begin, o_end, [&]<int TT, int NH>(int64_t, Rows g, int64_t nb, int64_t o, int64_t oe) {
        iq4xs_token<NH>(a, qabs, g, nb, y, o, oe);
      });
    }
  }
  run_halves(a, w, 256, o_begin, o_end, [&]<int TT, int NH>(int64_t t0, Rows g, int64_t nb, int64_t o, int64_t oe) {
    iq4xs_rows<V, TT, NH>(a, t0, g, nb, y, ys, o, oe);
  });
}

// Every block format's matmul into k (weights in interleave16, which k must pack).
template <bool V>
void install_qmatmuls(KernelTable& k) {
  k.qmatmul[size_t(DType::Q8_0)] = qmatmul_legacy<V, Legacy::kQ8_0>;
  k.qmatmul[size_t(DType::Q4_0)] = qmatmul_legacy<V, Legacy::kQ4_0>;
  k.qmatmul[size_t(DType::IQ4_NL)] = qmatmul_legacy<V, Legacy::kIQ4_NL>;
  k.qmatmul[size_t(DType::Q4_1)] = qmatmul_legacy<V, Legacy::kQ4_1>;
  k.qmatmul[size_t(DType::Q5_0)] = qmatmul_legacy<V, Legacy::kQ5_0>;
  k.qmatmul[size_t(DType::Q5_1)] = qmatmul_legacy<V, Legacy::kQ5_1>;
  k.qmatmul[size_t(DType::Q2_K)] = qmatmul_k2<V, false>;
  k.qmatmul[size_t(DType::Q3_K)] = qmatmul_k2<V, true>;
  k.qmatmul[size_t(DType::Q4_K)] = qmatmul_k4<V, false>;
  k.qmatmul[size_t(DType::Q5_K)] = qmatmul_k4<V, true>;
  k.qmatmul[size_t(DType::Q6_K)] = qmatmul_q6k<V>;
  k.qmatmul[size_t(DType::IQ4_XS)] = qmatmul_iq4xs<V>;
}

}  // namespace avx2q
}  // namespace
}  // namespace qwen35::kernels
