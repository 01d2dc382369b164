// AMX-INT8 matmuls of the block formats for blocks of many tokens (prefill, verification,
// batches). Compiled with -mamx-tile -mamx-int8 and the AVX-512 flags; only reached after a CPU
// check and the kernel's permission request (dispatch.cpp).
//
// A tile op multiplies 16 tokens x K activation bytes by K x 16 weight bytes into 16 x 16 int32
// sums. K is one scale's worth of elements (32 for blocks and sub-blocks of 32, 16 for the
// sub-blocks of 16), so each tile op yields exactly the integer partial sums of the canonical dot
// (quant_ref.h), and the float steps that follow are the reference's: results equal the other
// tables' bit for bit. The weights of a 16-row group are decoded once per token chunk into signed
// bytes in "quad-major" order (quad u = elements 4u..4u+3 of all 16 rows, 64 bytes), which is the
// B-tile layout, so a tile op reads K/4 consecutive quads (Q8_0's packed blocks hold their quants
// that way already and are read in place). Blocks of 32 go by pairs of groups and pairs of token
// tiles where both are there (2 x 2 tiles: each tile load serves two products and four products
// are in flight), which changes the order of the tile ops, not the steps of any output.
//
// Q2_K and Q3_K are decoded already multiplied by their sub-block scales (Q2_K: q * sc in
// [0, 45]; Q3_K: -(q * sc) in [-128, 124], the negation being what makes it fit a signed byte), so
// a whole block is four tile ops of K = 64 into one sum, and I1 needs no vector multiply at all.
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/kernels.h"
#include "kernels/pack/interleave16.h"
#include "kernels/x86_avx512/int512.h"

namespace qwen35::kernels {

void install_avx512_quant(KernelTable& k);  // avx512_quant.cpp (the small-block kernels)

namespace {

inline void vstore(uint8_t* p, __m512i v) { _mm512_storeu_si512(p, v); }

// ---- Tile configuration ------------------------------------------------------------------------

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0/3: activations [M tokens x kb bytes]; 1/4: weights [kb/4 x 64 bytes]; 2/5: sums [M x 64].
inline void configure(int M, int kb) {
  TileConfig cfg;
  for (int set = 0; set < 2; ++set) {
    cfg.rows[3 * set + 0] = uint8_t(M);
    cfg.colsb[3 * set + 0] = uint16_t(kb);
    cfg.rows[3 * set + 1] = uint8_t(kb / 4);
    cfg.colsb[3 * set + 1] = 64;
    cfg.rows[3 * set + 2] = uint8_t(M);
    cfg.colsb[3 * set + 2] = 64;
  }
  _tile_loadconfig(&cfg);
}

// The 2 x 2 layout of blocks of 32: tiles 0/1: activations of two 16-token tiles [16 x 32 bytes];
// 2/3: weights of two 16-row groups [8 x 64 bytes]; 4..7: the four products' sums [16 x 64].
inline void configure_2x2() {
  TileConfig cfg;
  for (int i = 0; i < 2; ++i) {
    cfg.rows[i] = 16;
    cfg.colsb[i] = 32;
    cfg.rows[2 + i] = 8;
    cfg.colsb[2 + i] = 64;
  }
  for (int i = 4; i < 8; ++i) {
    cfg.rows[i] = 16;
    cfg.colsb[i] = 64;
  }
  _tile_loadconfig(&cfg);
}

// sums[M][16] (int32, 64-byte rows) = A[M x kb] (stride a_stride) * B[kb/4 x 64]; `kSet` picks the
// tile registers so that two products can be in flight (the tile intrinsics take literal register
// numbers).
template <int kSet>
inline void tile_product(const int8_t* A, int64_t a_stride, const uint8_t* B, int32_t* sums) {
  if constexpr (kSet == 0) {
    _tile_loadd(0, A, a_stride);
    _tile_loadd(1, B, 64);
    _tile_zero(2);
    _tile_dpbssd(2, 0, 1);
    _tile_stored(2, sums, 64);
  } else {
    _tile_loadd(3, A, a_stride);
    _tile_loadd(4, B, 64);
    _tile_zero(5);
    _tile_dpbssd(5, 3, 4);
    _tile_stored(5, sums, 64);
  }
}

// sums[M][16] = A[M x 256] * B[64 x 64] (a whole premultiplied block): four K = 64 products
// accumulated in one tile.
template <int kSet>
inline void block_sum(const int8_t* A, int64_t a_stride, const uint8_t* B, int32_t* sums) {
  if constexpr (kSet == 0) {
    _tile_zero(2);
    for (int k = 0; k < 4; ++k) {
      _tile_loadd(0, A + 64 * k, a_stride);
      _tile_loadd(1, B + 1024 * k, 64);
      _tile_dpbssd(2, 0, 1);
    }
    _tile_stored(2, sums, 64);
  } else {
    _tile_zero(5);
    for (int k = 0; k < 4; ++k) {
      _tile_loadd(3, A + 64 * k, a_stride);
      _tile_loadd(4, B + 1024 * k, 64);
      _tile_dpbssd(5, 3, 4);
    }
    _tile_stored(5, sums, 64);
  }
}

// ---- Decoding a group's weights into signed bytes, quad-major ---------------------------------

enum class Fmt { kQ8_0, kQ4_0, kIQ4_NL, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K, kQ2_K, kQ3_K, kIQ4_XS };

constexpr int block_elems(Fmt f) {
  return f == Fmt::kQ4_K || f == Fmt::kQ5_K || f == Fmt::kQ6_K || f == Fmt::kQ2_K || f == Fmt::kQ3_K || f == Fmt::kIQ4_XS
             ? 256
             : 32;
}
// Formats decoded with their scales multiplied in (one sum per block).
constexpr bool premultiplied(Fmt f) { return f == Fmt::kQ2_K || f == Fmt::kQ3_K; }
constexpr size_t packed_block_bytes(Fmt f) {
  switch (f) {
    case Fmt::kQ8_0: return 544;
    case Fmt::kQ4_1: return 320;
    case Fmt::kQ5_0: return 352;
    case Fmt::kQ5_1: return 384;
    case Fmt::kQ4_K: return 2304;
    case Fmt::kQ5_K: return 2816;
    case Fmt::kQ6_K: return interleave16::kQ6kBlock;
    case Fmt::kQ2_K: return 1344;
    case Fmt::kQ3_K: return 1760;
    case Fmt::kIQ4_XS: return 2176;
    default: return 288;
  }
}
constexpr size_t legacy_qs(Fmt f) {
  return f == Fmt::kQ4_1 ? 64 : f == Fmt::kQ5_0 ? 96 : f == Fmt::kQ5_1 ? 128 : 32;
}

// Q3_K's 16 signed scales for 16 rows from ggml's 12 packed bytes (blocks.h q3k_scale), each
// sign-extended to its 32-bit lane.
inline void q3k_scales(const uint8_t* p, __m512i sc[16]) {
  const __m512i u[3] = {vload(p), vload(p + 64), vload(p + 128)};
  const __m512i m4 = _mm512_set1_epi32(15), m2 = _mm512_set1_epi32(3);
  for (int s = 0; s < 16; ++s) {
    const int i = s % 8;
    const __m512i low = _mm512_and_si512(_mm512_srli_epi32(u[i / 4], 8 * (i % 4) + (s < 8 ? 0 : 4)), m4);
    const __m512i high = _mm512_and_si512(_mm512_srli_epi32(u[2], 8 * (s % 4) + 2 * (s / 4)), m2);
    sc[s] = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
  }
}

// Where interleave16 keeps the Q3_K high bit of shift k of half h: bit kQ3HmaskBit[4h + k] of the
// hmask byte.
constexpr int kQ3HmaskBit[8] = {2, 3, 6, 7, 0, 1, 4, 5};

// Quad u of the decoded group sits at out + 64 u. Values are the reference's integer quants
// (premultiplied formats: see the top of the file).
template <Fmt F>
void decode_group(const uint8_t* group, int64_t nb, uint8_t* out) {
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * packed_block_bytes(F);
    static_assert(F != Fmt::kQ8_0);  // read in place (decoded_quants)
    if constexpr (block_elems(F) == 32) {
      __m512i book;
      if constexpr (F == Fmt::kIQ4_NL)
        book = _mm512_broadcast_i32x4(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
      for (int v = 0; v < 4; ++v) {
        const __m512i p = vload(pb + legacy_qs(F) + 64 * v);
        __m512i q[2] = {lo_nib(p), hi_nib(p)};  // quads v and v + 4
        for (int h = 0; h < 2; ++h) {
          const int k = v + 4 * h;
          if constexpr (F == Fmt::kQ5_0 || F == Fmt::kQ5_1) {
            const __m512i qh = vload(pb + (F == Fmt::kQ5_0 ? 32 : 64));
            q[h] = _mm512_or_si512(q[h], _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh, _mm512_set1_epi8(int8_t(1 << k))), sixteen));
          }
          if constexpr (F == Fmt::kQ4_0) q[h] = _mm512_sub_epi8(q[h], _mm512_set1_epi8(8));
          if constexpr (F == Fmt::kQ5_0) q[h] = _mm512_sub_epi8(q[h], sixteen);
          if constexpr (F == Fmt::kIQ4_NL) q[h] = _mm512_shuffle_epi8(book, q[h]);
          vstore(out + size_t(b) * 512 + 64 * size_t(k), q[h]);
        }
      }
    } else if constexpr (F == Fmt::kQ4_K || F == Fmt::kQ5_K) {
      const size_t qs = F == Fmt::kQ5_K ? 768 : 256;
      uint8_t* ob = out + size_t(b) * 4096;
      for (int c = 0; c < 4; ++c)
        for (int m = 0; m < 8; ++m) {
          const __m512i p = vload(pb + qs + 64 * (8 * c + m));
          __m512i lo = lo_nib(p), hi = hi_nib(p);
          if constexpr (F == Fmt::kQ5_K) {
            const __m512i qh = vload(pb + 256 + 64 * m);
            lo = _mm512_or_si512(lo, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh, _mm512_set1_epi8(int8_t(1 << (2 * c)))), sixteen));
            hi = _mm512_or_si512(hi, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh, _mm512_set1_epi8(int8_t(1 << (2 * c + 1)))), sixteen));
          }
          vstore(ob + 64 * size_t(16 * c + m), lo);
          vstore(ob + 64 * size_t(16 * c + 8 + m), hi);
        }
    } else if constexpr (F == Fmt::kIQ4_XS) {
      const __m512i book =
          _mm512_broadcast_i32x4(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
      uint8_t* ob = out + size_t(b) * 4096;
      for (int s = 0; s < 8; ++s)
        for (int v = 0; v < 4; ++v) {
          const __m512i p = vload(pb + 128 + 64 * (4 * s + v));
          vstore(ob + 64 * size_t(8 * s + v), _mm512_shuffle_epi8(book, lo_nib(p)));
          vstore(ob + 64 * size_t(8 * s + 4 + v), _mm512_shuffle_epi8(book, hi_nib(p)));
        }
    } else if constexpr (premultiplied(F)) {
      // Quad m of half h at shift k is quad u = 32h + 8k + m of the block, in sub-block u / 4. The
      // scale of a row is the same in both 16-bit halves of its lane, so vpmullw multiplies each
      // byte pair at once: exactly for Q2_K (products below 256, no carry into the high byte); for
      // Q3_K even and odd bytes are multiplied apart and only the low 8 bits of each product are
      // kept, which is exact because the true value fits a signed byte.
      constexpr bool kQ3 = F == Fmt::kQ3_K;
      __m512i sc16[16];
      if constexpr (kQ3) {
        __m512i sc[16];
        q3k_scales(pb + 1536, sc);
        for (int s = 0; s < 16; ++s) {
          const __m512i neg = _mm512_and_si512(_mm512_sub_epi32(_mm512_setzero_si512(), sc[s]), _mm512_set1_epi32(0xffff));
          sc16[s] = _mm512_or_si512(neg, _mm512_slli_epi32(neg, 16));
        }
      } else {
        for (int s = 0; s < 16; ++s) {
          const __m512i v = _mm512_and_si512(_mm512_srli_epi32(vload(pb + 64 + 64 * (s / 4)), 8 * (s % 4)), _mm512_set1_epi32(15));
          sc16[s] = _mm512_or_si512(v, _mm512_slli_epi32(v, 16));
        }
      }
      const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
      const __m512i even = _mm512_set1_epi16(0x00ff), odd = _mm512_set1_epi16(int16_t(0xff00));
      uint8_t* ob = out + size_t(b) * 4096;
      for (int h = 0; h < 2; ++h)
        for (int m = 0; m < 8; ++m) {
          const __m512i Q = vload(pb + (kQ3 ? 512 : 320) + 64 * (8 * h + m));
          for (int k = 0; k < 4; ++k) {
            const int u = 32 * h + 8 * k + m;
            __m512i q = _mm512_and_si512(_mm512_srli_epi16(Q, 2 * k), three);
            if constexpr (kQ3) {
              const __mmask64 high =
                  _mm512_test_epi8_mask(vload(pb + 64 * m), _mm512_set1_epi8(int8_t(1 << kQ3HmaskBit[4 * h + k])));
              q = _mm512_mask_blend_epi8(high, _mm512_sub_epi8(q, four), q);  // high bit clear: q - 4
              const __m512i lo = _mm512_mullo_epi16(_mm512_and_si512(q, even), sc16[u / 4]);
              const __m512i hi = _mm512_mullo_epi16(_mm512_and_si512(q, odd), sc16[u / 4]);
              q = _mm512_mask_blend_epi8(__mmask64(0xaaaaaaaaaaaaaaaaull), lo, hi);
            } else {
              q = _mm512_mullo_epi16(q, sc16[u / 4]);
            }
            vstore(ob + 64 * size_t(u), q);
          }
        }
    } else {  // Q6_K: sub-block s is quads 4s..4s + 3
      const __m512i off = _mm512_set1_epi8(32);
      uint8_t* ob = out + size_t(b) * 4096;
      for (int s = 0; s < 16; ++s) {
        __m512i W[4];
        q6k_unpack(pb + interleave16::kQ6kSubBlocks + interleave16::kQ6kSubBlock * size_t(s), W);
        for (int k = 0; k < 4; ++k) vstore(ob + 64 * size_t(4 * s + k), _mm512_sub_epi8(W[k], off));
      }
    }
  }
}

// ---- Per-block scale steps (the canonical float part) -----------------------------------------

// The 8 scales and 4 min pairs of a Q4_K/Q5_K block for 16 rows (as in avx512_quant.cpp).
inline void k4_scales(const uint8_t* pb_scales, __m512i sc[8], __m512i mn_pairs[4]) {
  const __m512i u0 = vload(pb_scales), u1 = vload(pb_scales + 64), u2 = vload(pb_scales + 128);
  const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(15), m2 = _mm512_set1_epi32(3);
  __m512i mn[8];
  for (int i = 0; i < 4; ++i) {
    sc[i] = _mm512_and_si512(_mm512_srli_epi32(u0, 8 * i), m6);
    mn[i] = _mm512_and_si512(_mm512_srli_epi32(u1, 8 * i), m6);
    const __m512i b8 = _mm512_srli_epi32(u2, 8 * i);
    sc[i + 4] = _mm512_or_si512(_mm512_and_si512(b8, m4),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 8 * i + 6), m2), 4));
    mn[i + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(b8, 4), m4),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 8 * i + 6), m2), 4));
  }
  for (int p = 0; p < 4; ++p) mn_pairs[p] = _mm512_or_si512(mn[2 * p], _mm512_slli_epi32(mn[2 * p + 1], 16));
}

// Bytes from one decoded block of 32 to the next. Q8_0's packed blocks already hold their quants
// quad-major after the 32 bytes of scales, so its tiles load straight from the packed group.
constexpr size_t decoded_stride(Fmt f) { return f == Fmt::kQ8_0 ? packed_block_bytes(f) : 512; }
// Where block 0's decoded quants of a group are: in the group itself (Q8_0) or in `decoded`.
template <Fmt F>
const uint8_t* decoded_quants(const uint8_t* group, int64_t nb, uint8_t* decoded) {
  if constexpr (F == Fmt::kQ8_0) {
    return group + 32;
  } else {
    decode_group<F>(group, nb, decoded);
    return decoded;
  }
}

// Sub-blocks (tile products) per block and the int32 sums one block's products fill.
constexpr int products_per_block(Fmt f) {
  return f == Fmt::kQ6_K ? 16 : premultiplied(f) ? 1 : block_elems(f) == 256 ? 8 : 1;
}
constexpr size_t sums_per_block(Fmt f) { return size_t(products_per_block(f)) * 256; }

// The tile products of block b for tokens [t0, t0 + M) into sums (one 16 x 16 int32 tile per
// sub-block), alternating the two tile register sets.
template <Fmt F>
inline void block_products(const int8_t* q0, int64_t as, const uint8_t* decoded, int64_t b, int32_t* sums) {
  if constexpr (block_elems(F) == 32) {
    if (b & 1) tile_product<1>(q0 + 32 * b, as, decoded + size_t(b) * decoded_stride(F), sums);
    else tile_product<0>(q0 + 32 * b, as, decoded + size_t(b) * decoded_stride(F), sums);
  } else if constexpr (premultiplied(F)) {
    if (b & 1) block_sum<1>(q0 + 256 * b, as, decoded + size_t(b) * 4096, sums);
    else block_sum<0>(q0 + 256 * b, as, decoded + size_t(b) * 4096, sums);
  } else {
    constexpr int P = products_per_block(F), K = 256 / P;  // K elements per product
    const uint8_t* db = decoded + size_t(b) * 4096;
    for (int s = 0; s < P; s += 2) {
      tile_product<0>(q0 + 256 * b + K * s, as, db + size_t(16 * K) * size_t(s), sums + 256 * s);
      tile_product<1>(q0 + 256 * b + K * (s + 1), as, db + size_t(16 * K) * size_t(s + 1), sums + 256 * (s + 1));
    }
  }
}

// The canonical scale steps of block b for tokens [t0, t0 + M), from its products' sums.
template <Fmt F>
inline void block_scales(const ActRows& a, int64_t t0, int M, const uint8_t* pb, int64_t b, const int32_t* sums,
                         __m512* acc) {
  if constexpr (block_elems(F) == 32) {
    const __m512 dw = load_f16x16(pb);
    constexpr bool kMin = F == Fmt::kQ4_1 || F == Fmt::kQ5_1;
    __m512 mw = _mm512_setzero_ps();
    if constexpr (kMin) mw = load_f16x16(pb + 32);
    for (int t = 0; t < M; ++t) {
      const __m512 dav = _mm512_set1_ps(a.d(t0 + t)[b]);
      const __m512i isum = _mm512_load_si512(sums + 16 * t);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dav), acc[t]);
      if constexpr (kMin) acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(float(a.s32(t0 + t)[b])), _mm512_mul_ps(mw, dav), acc[t]);
    }
  } else if constexpr (F == Fmt::kQ4_K || F == Fmt::kQ5_K) {
    __m512i sc[8], mnp[4];
    k4_scales(pb + 64, sc, mnp);
    const __m512 d = load_f16x16(pb), dmin = load_f16x16(pb + 32);
    for (int t = 0; t < M; ++t) {
      __m512i I1 = _mm512_mullo_epi32(_mm512_load_si512(sums + 16 * t), sc[0]);
      for (int s = 1; s < 8; ++s)
        I1 = _mm512_add_epi32(I1, _mm512_mullo_epi32(_mm512_load_si512(sums + 256 * s + 16 * t), sc[s]));
      const int16_t* h32 = a.h32(t0 + t) + 8 * b;
      __m512i I2 = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) I2 = _mm512_dpwssd_epi32(I2, mnp[p], _mm512_set1_epi32(load_i32(h32 + 2 * p)));
      const __m512 dav = _mm512_set1_ps(a.d(t0 + t)[b]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1), _mm512_mul_ps(d, dav), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(I2), _mm512_mul_ps(dmin, dav), acc[t]);
    }
  } else if constexpr (F == Fmt::kQ2_K) {
    __m512i mnp[8];
    for (int v = 0; v < 4; ++v) {
      const __m512i sv = vload(pb + 64 + 64 * v);
      const __m512i m4 = _mm512_set1_epi32(15);
      __m512i mn[4];
      for (int i = 0; i < 4; ++i) mn[i] = _mm512_and_si512(_mm512_srli_epi32(sv, 8 * i + 4), m4);
      mnp[2 * v] = _mm512_or_si512(mn[0], _mm512_slli_epi32(mn[1], 16));
      mnp[2 * v + 1] = _mm512_or_si512(mn[2], _mm512_slli_epi32(mn[3], 16));
    }
    const __m512 d = load_f16x16(pb), dmin = load_f16x16(pb + 32);
    for (int t = 0; t < M; ++t) {
      const __m512i I1 = _mm512_load_si512(sums + 16 * t);
      const int16_t* s16 = a.s16(t0 + t) + 16 * b;
      __m512i I2 = _mm512_setzero_si512();
      for (int p = 0; p < 8; ++p) I2 = _mm512_dpwssd_epi32(I2, mnp[p], _mm512_set1_epi32(load_i32(s16 + 2 * p)));
      const __m512 dav = _mm512_set1_ps(a.d(t0 + t)[b]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1), _mm512_mul_ps(d, dav), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(I2), _mm512_mul_ps(dmin, dav), acc[t]);
    }
  } else if constexpr (F == Fmt::kQ3_K) {
    const __m512 d = load_f16x16(pb + 1728);
    for (int t = 0; t < M; ++t) {
      const __m512i I1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_load_si512(sums + 16 * t));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1), _mm512_mul_ps(d, _mm512_set1_ps(a.d(t0 + t)[b])), acc[t]);
    }
  } else if constexpr (F == Fmt::kIQ4_XS) {
    const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32)));
    const __m512i sl = vload(pb + 64);
    __m512i sc[8];
    for (int s = 0; s < 8; ++s)
      sc[s] = _mm512_sub_epi32(
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * s), _mm512_set1_epi32(15)),
                          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * s), _mm512_set1_epi32(3)), 4)),
          _mm512_set1_epi32(32));
    const __m512 d = load_f16x16(pb);
    for (int t = 0; t < M; ++t) {
      __m512i I1 = _mm512_mullo_epi32(_mm512_load_si512(sums + 16 * t), sc[0]);
      for (int s = 1; s < 8; ++s)
        I1 = _mm512_add_epi32(I1, _mm512_mullo_epi32(_mm512_load_si512(sums + 256 * s + 16 * t), sc[s]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1), _mm512_mul_ps(d, _mm512_set1_ps(a.d(t0 + t)[b])), acc[t]);
    }
  } else {  // Q6_K: 16 sub-blocks of 16
    __m512i sc[16];
    for (int s = 0; s < 16; ++s)
      sc[s] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + interleave16::kQ6kScales + 16 * s)));
    const __m512 d = load_f16x16(pb + interleave16::kQ6kD);
    for (int t = 0; t < M; ++t) {
      __m512i I1 = _mm512_mullo_epi32(_mm512_load_si512(sums + 16 * t), sc[0]);
      for (int s = 1; s < 16; ++s)
        I1 = _mm512_add_epi32(I1, _mm512_mullo_epi32(_mm512_load_si512(sums + 256 * s + 16 * t), sc[s]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1), _mm512_mul_ps(d, _mm512_set1_ps(a.d(t0 + t)[b])), acc[t]);
    }
  }
}

// One token tile [t0, t0 + M) of one group. The products of block b + 1 are issued before the
// scale steps of block b read block b's sums, so the tile unit and the vector units overlap (the
// sums go through memory: there is no move from a tile to a vector register).
template <Fmt F>
void group_tile(const ActRows& a, int64_t t0, int M, const uint8_t* group, const uint8_t* decoded, int64_t nb,
                float* y, int64_t ys, int64_t o, int64_t o_end, int32_t* sums) {
  __m512 acc[16];
  for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
  const int64_t as = int64_t(a.layout.row_bytes);
  const int8_t* q0 = a.q(t0);
  constexpr size_t S = sums_per_block(F);
  block_products<F>(q0, as, decoded, 0, sums);
  for (int64_t b = 0; b < nb; ++b) {
    if (b + 1 < nb) block_products<F>(q0, as, decoded, b + 1, sums + S * size_t((b + 1) & 1));
    block_scales<F>(a, t0, M, group + size_t(b) * packed_block_bytes(F), b, sums + S * size_t(b & 1), acc);
  }
  for (int t = 0; t < M; ++t) store_rows(y + (t0 + t) * ys, o, o_end, acc[t]);
}

// The four products of block b (blocks of 32) of token tiles t0, t0 + 16 (activations from q0)
// against groups 0 and 1: sums + 256 * (2 * token tile + group). One tile op per product as in
// tile_product, but each activation and weight tile load serves two of them, and four products
// are in flight at once instead of one.
template <Fmt F>
inline void block_products_2x2(const int8_t* q0, int64_t as, const uint8_t* dec0, const uint8_t* dec1, int64_t b,
                               int32_t* sums) {
  _tile_loadd(0, q0 + 32 * b, as);
  _tile_loadd(1, q0 + 16 * as + 32 * b, as);
  _tile_loadd(2, dec0 + size_t(b) * decoded_stride(F), 64);
  _tile_loadd(3, dec1 + size_t(b) * decoded_stride(F), 64);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  _tile_dpbssd(4, 0, 2);
  _tile_dpbssd(5, 0, 3);
  _tile_dpbssd(6, 1, 2);
  _tile_dpbssd(7, 1, 3);
  _tile_stored(4, sums, 64);
  _tile_stored(5, sums + 256, 64);
  _tile_stored(6, sums + 512, 64);
  _tile_stored(7, sums + 768, 64);
}

// Tokens [t0, t0 + 32) of the groups at rows o and o + 16 (o + 16 < o_end), blocks of 32: each
// output takes exactly group_tile's steps (its block sums, then the scale steps in block order),
// so the results are group_tile's bit for bit.
template <Fmt F>
void group_tile_2x2(const ActRows& a, int64_t t0, const uint8_t* group0, const uint8_t* group1, const uint8_t* dec0,
                    const uint8_t* dec1, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end, int32_t* sums) {
  static_assert(block_elems(F) == 32);
  __m512 acc[4][16];  // [2 * token tile + group][token]
  for (auto& tile : acc)
    for (__m512& v : tile) v = _mm512_setzero_ps();
  const int64_t as = int64_t(a.layout.row_bytes);
  const int8_t* q0 = a.q(t0);
  constexpr size_t P = packed_block_bytes(F);
  block_products_2x2<F>(q0, as, dec0, dec1, 0, sums);
  for (int64_t b = 0; b < nb; ++b) {
    if (b + 1 < nb) block_products_2x2<F>(q0, as, dec0, dec1, b + 1, sums + 1024 * size_t((b + 1) & 1));
    const int32_t* s = sums + 1024 * size_t(b & 1);
    block_scales<F>(a, t0, 16, group0 + size_t(b) * P, b, s, acc[0]);
    block_scales<F>(a, t0, 16, group1 + size_t(b) * P, b, s + 256, acc[1]);
    block_scales<F>(a, t0 + 16, 16, group0 + size_t(b) * P, b, s + 512, acc[2]);
    block_scales<F>(a, t0 + 16, 16, group1 + size_t(b) * P, b, s + 768, acc[3]);
  }
  for (int tt = 0; tt < 2; ++tt)
    for (int t = 0; t < 16; ++t) {
      float* yr = y + (t0 + 16 * tt + t) * ys;
      store_rows(yr, o, o_end, acc[2 * tt][t]);
      store_rows(yr, o + 16, o_end, acc[2 * tt + 1][t]);
    }
}

constexpr int kernel_k_bytes(Fmt f) { return f == Fmt::kQ6_K ? 16 : premultiplied(f) ? 64 : 32; }

// Blocks of fewer tokens than this go to the AVX-512 kernels (a tile op costs the same for 1 or
// 16 tokens).
constexpr int64_t kAmxMinTokens = 8;

template <Fmt F>
void qmatmul_amx(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys);

template <Fmt F>
struct Fallback {
  static QMatmulFn fn;
};
template <Fmt F>
QMatmulFn Fallback<F>::fn = nullptr;

template <Fmt F>
void qmatmul_amx(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  if (a.T < kAmxMinTokens) return Fallback<F>::fn(a, w, o_begin, o_end, y, ys);
  const int64_t nb = w.cols / block_elems(F);
  o_end = imin(o_end, w.rows);
  // Token chunks whose activations stay in L2 while every group of the row range passes.
  const int64_t chunk = imin(256, (int64_t(1) << 20) / w.cols / 16 * 16 + 16);
  // Blocks of 32 take pairs of groups and pairs of token tiles together where both are there.
  constexpr bool kPairs = block_elems(F) == 32;
  const size_t dec_bytes = size_t(w.cols) * 16;
  const size_t sums_bytes = (kPairs ? 8 * 256 : 2 * sums_per_block(F)) * sizeof(int32_t);
  uint8_t* decoded = thread_scratch_bytes(2 * dec_bytes + sums_bytes);
  int32_t* sums = reinterpret_cast<int32_t*>(decoded + 2 * dec_bytes);
  int configured_m = 0;  // -1: the 2 x 2 layout
  for (int64_t c0 = 0; c0 < a.T; c0 += chunk) {
    const int64_t c1 = imin(a.T, c0 + chunk);
    for (int64_t o = o_begin; o < o_end; o += 16) {
      const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(o / 16) * w.group_bytes;
      const bool pair = kPairs && o + 16 < o_end;
      const uint8_t* dec0 = decoded_quants<F>(group, nb, decoded);
      const uint8_t* dec1 = pair ? decoded_quants<F>(group + w.group_bytes, nb, decoded + dec_bytes) : nullptr;
      for (int64_t t0 = c0; t0 < c1; t0 += 16) {
        if constexpr (kPairs)
          if (pair && c1 - t0 >= 32) {
            if (configured_m != -1) {
              configure_2x2();
              configured_m = -1;
            }
            group_tile_2x2<F>(a, t0, group, group + w.group_bytes, dec0, dec1, nb, y, ys, o, o_end, sums);
            t0 += 16;
            continue;
          }
        const int M = int(imin(16, c1 - t0));
        if (M != configured_m) {
          configure(M, kernel_k_bytes(F));
          configured_m = M;
        }
        group_tile<F>(a, t0, M, group, dec0, nb, y, ys, o, o_end, sums);
        if (pair) group_tile<F>(a, t0, M, group + w.group_bytes, dec1, nb, y, ys, o + 16, o_end, sums);
      }
      if (pair) o += 16;
    }
  }
  _tile_release();
}

template <Fmt F>
void install(KernelTable& k, DType d) {
  Fallback<F>::fn = k.qmatmul[size_t(d)];
  k.qmatmul[size_t(d)] = qmatmul_amx<F>;
}

KernelTable make_amx(const KernelTable& base) {
  KernelTable k = base;
  k.name = "amx";
  k.act_tiles = false;  // its kernels take blocks of kActTile tokens and more from the rows
  install<Fmt::kQ8_0>(k, DType::Q8_0);
  install<Fmt::kQ4_0>(k, DType::Q4_0);
  install<Fmt::kIQ4_NL>(k, DType::IQ4_NL);
  install<Fmt::kQ4_1>(k, DType::Q4_1);
  install<Fmt::kQ5_0>(k, DType::Q5_0);
  install<Fmt::kQ5_1>(k, DType::Q5_1);
  install<Fmt::kQ4_K>(k, DType::Q4_K);
  install<Fmt::kQ5_K>(k, DType::Q5_K);
  install<Fmt::kQ6_K>(k, DType::Q6_K);
  install<Fmt::kQ2_K>(k, DType::Q2_K);
  install<Fmt::kQ3_K>(k, DType::Q3_K);
  install<Fmt::kIQ4_XS>(k, DType::IQ4_XS);
  return k;
}

}  // namespace

// Only called by dispatch.cpp after the CPU and permission checks; `avx512` is the table whose
// kernels serve small blocks and every other operation.
const KernelTable& amx_table_unchecked(const KernelTable& avx512) {
  static const KernelTable table = make_amx(avx512);
  return table;
}

}  // namespace qwen35::kernels
