// AVX-512 VNNI kernels of the block formats: activation quantization and matmuls over weights in
// the interleave16 layout (kernels/pack/interleave16.h). Compiled with -mavx512* -mavx512vnni;
// only reached after a CPU check.
//
// One 64-byte vector holds the same 4 quant bytes of 16 weight rows, so vpdpbusd against one
// broadcast group of 4 activation bytes gives 16 per-row partial sums at once, and the
// canonical per-block scale step (quant_ref.h) runs on 16 rows per instruction. Integer sums are
// exact whatever the instruction order, and the float steps are exactly the reference's, so the
// results equal the ref table's bit for bit.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu_tuning.h"
#include "kernels/kernels.h"
#include "kernels/pack/interleave16.h"
#include "kernels/x86_avx512/int512.h"

namespace qwen35::kernels {
namespace {


// A block's bytes prefetch_distance further on, requested as this block starts: with the
// hardware prefetchers alone a decoding core streamed weights at 9-11 GB/s. The distance must
// cover the memory latency at the rate a core consumes bytes, so it depends on the machine
// (qmatmul_bench, 12288 x 4096): on the Sapphire Rapids VM 1 KiB measured best (T = 1, 2
// threads: Q4_0 +12%, Q6_K +21% over none; T = 4: Q6_K +50%; 0.5 and 1.5 KiB less, L2-only
// hints no better); a Zen 5 core streams ~36 GB/s, and there 8 KiB did (one thread, T = 4,
// against 1 KiB: Q4_0 17.7 -> 34.3 GB/s, Q4_K 21.1 -> 31.0, Q6_K 22.3 -> 26.0; T = 1 +3-18%;
// 4 KiB measured less, as did L2-only hints at 8, 16 and 32 KiB). A Zen 4 core reads a plain
// stream at ~29 GB/s with the hardware prefetchers alone and less with requests into L1 or L2;
// there most formats stream fastest with no requests at all. So the distance and each format's
// level are the CPU's (kernels/cpu_tuning.h). A prefetch past the matrix end does not fault.
size_t prefetch_distance = 1024;

// Where a prefetched line goes (cpu_tuning.h's Prefetch) is a template argument of every kernel,
// since a branch per prefetch (the level chosen per call) cost Zen 5 half of the kernels' speed.
template <Prefetch P>
inline void prefetch_line(const uint8_t* p) {
  if constexpr (P != Prefetch::kNone) _mm_prefetch(reinterpret_cast<const char*>(p), P == Prefetch::kL1 ? _MM_HINT_T0 : _MM_HINT_T1);
}
template <Prefetch P>
inline void prefetch_ahead(const uint8_t* block, size_t bytes) {
  const uint8_t* ahead = block + prefetch_distance;
  for (size_t i = 0; i < bytes; i += 64) prefetch_line<P>(ahead + i);
}

// Part `part` of `parts` of prefetch_ahead, for the K-quant blocks (21-53 lines for 16 rows), one
// part per sub-block step: requested in one burst at the block's start, they queue behind the
// core's few fill buffers. Sapphire Rapids VM, qmatmul_bench T = 1, 2 threads, 4 interleaved runs:
// Q4_K 16.9 -> 21.1 GB/s, Q6_K 15.6 -> 19.6, Q5_K 18.9 -> 20.4, Q3_K 8.0 -> 14.4, IQ4_XS 17.3 ->
// 19.7. Q2_K measured slower spread (15.7 -> 10-14) and keeps the one burst, as do the legacy
// blocks (one burst per step of eight blocks, see legacy_group).
template <int parts, Prefetch P>
inline void prefetch_part(const uint8_t* block, size_t bytes, int part) {
  const size_t lines = (bytes + 63) / 64, l0 = lines * size_t(part) / parts, l1 = lines * size_t(part + 1) / parts;
  const uint8_t* ahead = block + prefetch_distance;
  for (size_t l = l0; l < l1; ++l) prefetch_line<P>(ahead + 64 * l);
}

// ---- Activation quantization (act_format.h's exact rules) ------------------------------------

inline float hmax(__m512 v) { return _mm512_reduce_max_ps(v); }

void quantize_act_avx512(ActFormat fmt, const float* x, int64_t T, int64_t x_stride, int64_t n, uint8_t* out) {
  const ActLayout l = act_layout(fmt, n);
  const int64_t B = fmt == ActFormat::kQ8x256 ? 256 : 32;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 big = _mm512_set1_ps(3.4028234663852886e38f);
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x + t * x_stride;
    uint8_t* row = out + size_t(t) * l.row_bytes;
    int8_t* q = reinterpret_cast<int8_t*>(row + l.q);
    float* d = reinterpret_cast<float*>(row + l.d);
    for (int64_t b = 0; b < n / B; ++b) {
      const float* xb = xr + b * B;
      __m512 amax = _mm512_setzero_ps();
      __mmask16 finite = 0xffff;
      for (int64_t j = 0; j < B; j += 16) {
        const __m512 a = _mm512_and_ps(_mm512_loadu_ps(xb + j), abs_mask);
        finite &= _mm512_cmp_ps_mask(a, big, _CMP_LE_OQ);
        amax = _mm512_max_ps(amax, a);
      }
      int8_t* qb = q + b * B;
      const float m = hmax(amax);
      if (finite != 0xffff || m < 1e-30f) {
        d[b] = finite != 0xffff ? __builtin_nanf("") : 0.0f;
        std::memset(qb, 0, size_t(B));
        continue;
      }
      const float db = m / 127.0f, id = 1.0f / db;
      d[b] = db;
      const __m512 idv = _mm512_set1_ps(id);
      for (int64_t j = 0; j < B; j += 16) {
        const __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + j), idv));  // nearest even
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + j), _mm512_cvtsepi32_epi8(qi));
      }
    }
    // Sums of q per 32 (and per 16): vpdpbusd with ones adds groups of 4 signed bytes.
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t g = 0; g < n / 32; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + g * 32));
      const __m512i s4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_castsi256_si512(v));
      // Lanes 0..7 hold the 8 groups of 4; lanes 8..15 are zero (upper half of v was undefined).
      const __m256i lo = _mm512_castsi512_si256(s4);
      const __m128i h0 = _mm_add_epi32(_mm256_castsi256_si128(lo), _mm_shuffle_epi32(_mm256_castsi256_si128(lo), 0x4e));
      const __m128i h1 = _mm_add_epi32(_mm256_extracti128_si256(lo, 1), _mm_shuffle_epi32(_mm256_extracti128_si256(lo, 1), 0x4e));
      // h0: lanes 0,1 = sums of groups {0,2},{1,3} -> first 16 = lane0 + lane1; h1 likewise for the last 16.
      const int32_t first16 = _mm_cvtsi128_si32(h0) + _mm_extract_epi32(h0, 1);
      const int32_t last16 = _mm_cvtsi128_si32(h1) + _mm_extract_epi32(h1, 1);
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

// ---- Shared pieces of the matmuls ------------------------------------------------------------

// Token tiles: up to TT tokens share one unpacking of a block's weights. 8 rather than 4 (the
// 32 zmm registers hold 8 tokens' sums beside a sub-block's weights): on Zen 5, one thread at
// T = 64, Q8_0 +17%, Q4_K +10%, Q6_K +26%, Q2_K/Q3_K +18-25%, Q4_0 and IQ4_XS level.
constexpr int kTokenTile = 8;
static_assert(kTokenTile == kActTile, "a full token tile is one tile of ActRows::tiles");

// acc + vpdpbusd(w, the 4 activation bytes at p broadcast), the broadcast folded into the
// instruction ({1to16}): one uop instead of two, which GCC does not fold by itself. Zen 5: Q4_0 /
// Q8_0 token tiles from the caches +2.5-4%; one token streaming Q4_K / Q6_K from memory +17-18%
// at two threads (fewer uops per block leave more loads in flight).
inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const void* p) {
  asm("vpdpbusd %[m]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [m] "m"(*static_cast<const int32_t*>(p)));
  return acc;
}

// ---- Where the kernels find a token's activations for block b ----------------------------------
//
// RowActs: TT tokens from t0 on, one pointer per token and section (any T). TileActs: one full tile
// of ActRows::tiles, every section at a fixed offset from one pointer per block. The kernels are
// written once against this interface; both give the same integers and floats in the same order.

template <ActFormat F, int TT>
struct RowActs {
  static constexpr int64_t B = F == ActFormat::kQ8x256 ? 256 : 32;
  const int8_t* q_[TT];
  const float* d_[TT];
  const int32_t* s32_[TT];
  const int16_t* h32_[TT];
  const int16_t* s16_[TT];
  RowActs(const ActRows& a, int64_t t0) {
    for (int t = 0; t < TT; ++t) {
      q_[t] = a.q(t0 + t);
      d_[t] = a.d(t0 + t);
      if constexpr (F == ActFormat::kQ8x32) {
        s32_[t] = a.s32(t0 + t);
      } else {
        h32_[t] = a.h32(t0 + t);
        s16_[t] = a.s16(t0 + t);
      }
    }
  }
  const int8_t* q(int t, int64_t b) const { return q_[t] + B * b; }
  float d(int t, int64_t b) const { return d_[t][b]; }
  // -c * (sum of block b's quants), c a power of two.
  template <int c>
  __m512i offset(int t, int64_t b) const { return _mm512_set1_epi32(-c * s32_[t][b]); }
  // acc + (sum of block b's quants) * m.
  __m512 add_sum_times(int t, int64_t b, __m512 m, __m512 acc) const {
    return _mm512_fmadd_ps(_mm512_set1_ps(float(s32_[t][b])), m, acc);
  }
  const int16_t* h32(int t, int64_t b) const { return h32_[t] + B / 32 * b; }
  const int16_t* s16(int t, int64_t b) const { return s16_[t] + B / 16 * b; }
};

template <ActFormat F>
struct TileActs {
  static constexpr ActTileLayout L = act_tile_layout(F);
  static constexpr int64_t B = F == ActFormat::kQ8x256 ? 256 : 32;
  const uint8_t* p;
  const uint8_t* at(int64_t b) const { return p + L.block_bytes * size_t(b); }
  const int8_t* q(int t, int64_t b) const { return reinterpret_cast<const int8_t*>(at(b) + L.q + B * t); }
  float d(int t, int64_t b) const { return *reinterpret_cast<const float*>(at(b) + L.d + 4 * t); }
  template <int c>
  __m512i offset(int t, int64_t b) const {
    return _mm512_slli_epi32(bcast32(at(b) + L.ns32 + 4 * t), __builtin_ctz(c));
  }
  __m512 add_sum_times(int t, int64_t b, __m512 m, __m512 acc) const {  // the tile holds minus the sum
    return _mm512_fnmadd_ps(_mm512_set1_ps(float(load_i32(at(b) + L.ns32 + 4 * t))), m, acc);
  }
  const int16_t* h32(int t, int64_t b) const {
    return reinterpret_cast<const int16_t*>(at(b) + L.h32 + B / 16 * t);
  }
  const int16_t* s16(int t, int64_t b) const {
    return reinterpret_cast<const int16_t*>(at(b) + L.s16 + B / 8 * t);
  }
};

// ---- Legacy formats (blocks of 32; activations kQ8x32) ----------------------------------------

enum class Legacy { kQ8_0, kQ4_0, kIQ4_NL, kQ4_1, kQ5_0, kQ5_1 };

template <Legacy L>
constexpr bool legacy_has_min() {
  return L == Legacy::kQ4_1 || L == Legacy::kQ5_1;
}

// Byte offsets of the packed block's parts (interleave16.h) and its size.
template <Legacy L>
struct LegacyLayout {
  static constexpr size_t kMin = 32;
  static constexpr size_t kQh = L == Legacy::kQ5_0 ? 32 : 64;
  static constexpr size_t kQs = L == Legacy::kQ8_0 || L == Legacy::kQ4_0 || L == Legacy::kIQ4_NL ? 32
                                : L == Legacy::kQ4_1                                          ? 64
                                : L == Legacy::kQ5_0                                          ? 96
                                                                                              : 128;
  static constexpr size_t kBlock = L == Legacy::kQ8_0 ? 544 : L == Legacy::kQ4_1 ? 320 : L == Legacy::kQ5_0 ? 352 : L == Legacy::kQ5_1 ? 384 : 288;
};

// The offset c of unpack_legacy's unsigned weights: w_u8 = w + c, so sum(w * a) = sum(w_u8 * a) -
// c * sum(a).
template <Legacy L>
constexpr int legacy_offset() {
  return L == Legacy::kQ8_0 || L == Legacy::kIQ4_NL ? 128 : L == Legacy::kQ4_0 ? 8 : L == Legacy::kQ5_0 ? 16 : 0;
}

// A block's 8 weight vectors as unsigned bytes (quad k = elements 4k..4k+3 of every row), each
// carrying the offset legacy_offset<L>(), from its quant vectors (8 for Q8_0, else 4 of nibbles);
// the fifth bits of Q5_0 / Q5_1 are unpack_legacy's.
template <Legacy L>
inline void unpack_legacy_qs(const __m512i* qs, __m512i W[8]) {
  if constexpr (L == Legacy::kQ8_0) {
    const __m512i flip = _mm512_set1_epi8(int8_t(0x80));
    for (int k = 0; k < 8; ++k) W[k] = _mm512_xor_si512(qs[k], flip);
  } else {
    for (int v = 0; v < 4; ++v) {
      W[v] = lo_nib(qs[v]);
      W[v + 4] = hi_nib(qs[v]);
    }
    if constexpr (L == Legacy::kIQ4_NL) {
      // Code book + 128 as unsigned bytes: vpshufb looks up each nibble.
      const __m512i book = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                                                (char)153, (char)166, (char)181, (char)197, (char)217,
                                                                (char)241));
      for (int k = 0; k < 8; ++k) W[k] = _mm512_shuffle_epi8(book, W[k]);
    }
  }
}

// The same from the packed block at pb.
template <Legacy L>
inline void unpack_legacy(const uint8_t* pb, __m512i W[8]) {
  using Lay = LegacyLayout<L>;
  constexpr int nq = L == Legacy::kQ8_0 ? 8 : 4;
  __m512i qs[nq];
  for (int k = 0; k < nq; ++k) qs[k] = vload(pb + Lay::kQs + 64 * k);
  unpack_legacy_qs<L>(qs, W);
  if constexpr (L == Legacy::kQ5_0 || L == Legacy::kQ5_1) {
    const __m512i qh = vload(pb + Lay::kQh);
    const __m512i sixteen = _mm512_set1_epi8(16);
    for (int k = 0; k < 8; ++k) {
      const __mmask64 bit = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(int8_t(1 << k)));
      W[k] = _mm512_or_si512(W[k], _mm512_maskz_mov_epi8(bit, sixteen));
    }
  }
}

// One block's products for TT tokens, added to acc.
template <Legacy L, int TT, class Acts>
inline void legacy_block(const Acts& x, int64_t b, const __m512i W[8], __m512 dw, __m512 mw, __m512 acc[TT]) {
  constexpr int c = legacy_offset<L>();
#pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) {
    const int8_t* qa = x.q(t, b);
    __m512i isum = c ? x.template offset<c>(t, b) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) isum = dpbusd_bcast(isum, W[k], qa + 4 * k);
    const __m512 dav = _mm512_set1_ps(x.d(t, b));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dav), acc[t]);
    if constexpr (legacy_has_min<L>()) acc[t] = x.add_sum_times(t, b, _mm512_mul_ps(mw, dav), acc[t]);
  }
}

// Blocks b, b + 1 of a Q8_0 / Q4_0 / IQ4_NL group (pb: block b) from whole lines. Their blocks
// span 8.5 or 4.5 cache lines, so every other block's quant vectors straddle two lines; the first
// block's quants are shifted out of line pairs (valignq) instead. Zen 5, qmatmul_bench from memory,
// T = 1: Q8_0 +8-11%, IQ4_NL +8-10%, Q4_0 +2-6% (+29% from L2); T = 4, 2 threads: Q8_0 +19%, Q4_0
// +5%. Token tiles keep one block at a time: there the extra vectors cost spills (from the caches,
// T = 8 and 64: -4% to -20%).
template <Legacy L, int TT, class Acts>
[[gnu::always_inline]] inline void legacy_pair(const Acts& x, const uint8_t* pb, int64_t b, __m512 acc[TT]) {
  using Lay = LegacyLayout<L>;
  static_assert(Lay::kQs == 32);
  constexpr int nq = Lay::kBlock / 64;  // quant vectors: 4 or 8
  __m512i V[nq + 1], Q[nq], W[8];
#pragma GCC unroll 9
  for (int j = 0; j <= nq; ++j) V[j] = vload(pb + 64 * j);
#pragma GCC unroll 8
  for (int k = 0; k < nq; ++k) Q[k] = _mm512_alignr_epi64(V[k + 1], V[k], 4);
  unpack_legacy_qs<L>(Q, W);
  legacy_block<L, TT>(x, b, W, _mm512_cvtph_ps(_mm512_castsi512_si256(V[0])), _mm512_setzero_ps(), acc);
#pragma GCC unroll 8
  for (int k = 0; k < nq; ++k) Q[k] = vload(pb + 64 * (nq + 1 + k));
  unpack_legacy_qs<L>(Q, W);
  legacy_block<L, TT>(x, b + 1, W, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(V[nq], 1)), _mm512_setzero_ps(), acc);
}

// Block b of any legacy group (pb: block b), on its own.
template <Legacy L, int TT, class Acts>
[[gnu::always_inline]] inline void legacy_single(const Acts& x, const uint8_t* pb, int64_t b, __m512 acc[TT]) {
  using Lay = LegacyLayout<L>;
  __m512i W[8];
  unpack_legacy<L>(pb, W);
  const __m512 dw = load_f16x16(pb);
  __m512 mw = _mm512_setzero_ps();
  if constexpr (legacy_has_min<L>()) mw = load_f16x16(pb + Lay::kMin);
  legacy_block<L, TT>(x, b, W, dw, mw, acc);
}

template <Legacy L, int Step, int TT, Prefetch P, class Acts>
void legacy_group(const Acts& x, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  using Lay = LegacyLayout<L>;
  __m512 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  int64_t b = 0;
  if constexpr (TT <= 4) {
    // Eight blocks a step (2.3-4.3 KB), one prefetch burst for them all. A step of one block or
    // pair (288-1088 bytes) left the core streaming at 20-24 GB/s whatever its arithmetic (half
    // the vpdpbusd: level) or prefetch (none, 2-64 KiB ahead, T1, twice: level), where the Q4_K
    // kernel, one 2304-byte block a step, streamed the same bytes at 28-32; perhaps a core's
    // per-instruction stride prefetcher, which sees each load step by the step's size (a guess:
    // no counters on that VM). Zen 5, qmatmul_bench from memory, T = 1, 2 threads: Q4_0 41 -> 62
    // GB/s, Q8_0 44 -> 63, IQ4_NL 40 -> 54, Q4_1 / Q5_0 / Q5_1 40 -> 63-66; T = 4 +19-48%. Four
    // blocks a step gained nothing (two pairs for Q8_0: half of it). Token tiles keep one block a
    // step: eight cost them 13-19% (T = 16).
    // Step blocks a step (cpu_tuning.h's legacy_step): Zen 4 streams Q8_0 from memory at 11-20
    // GB/s eight blocks a step and at 27-29 a pair a step (one thread).
    for (; b + Step <= nb; b += Step) {
      const uint8_t* pb = group + size_t(b) * Lay::kBlock;
      prefetch_ahead<P>(pb, Step * Lay::kBlock);
      if constexpr (Lay::kQs == 32) {
#pragma GCC unroll 4
        for (int j = 0; j < Step; j += 2) legacy_pair<L, TT>(x, pb + j * Lay::kBlock, b + j, acc);
      } else {
#pragma GCC unroll 8
        for (int j = 0; j < Step; ++j) legacy_single<L, TT>(x, pb + j * Lay::kBlock, b + j, acc);
      }
    }
    if constexpr (Lay::kQs == 32) {
      for (; b + 2 <= nb; b += 2) {
        const uint8_t* pb = group + size_t(b) * Lay::kBlock;
        prefetch_ahead<P>(pb, 2 * Lay::kBlock);
        legacy_pair<L, TT>(x, pb, b, acc);
      }
    }
  }
  for (; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * Lay::kBlock;
    prefetch_ahead<P>(pb, Lay::kBlock);
    legacy_single<L, TT>(x, pb, b, acc);
  }
  for (int t = 0; t < TT; ++t) store_rows(y + t * ys, o, o_end, acc[t]);
}

// ---- Q4_K / Q5_K (super-blocks of 256, 8 sub-blocks of 32 with scales and mins; kQ8x256) ------

template <bool kFive>
struct K4Layout {
  static constexpr size_t kDmin = 32, kScales = 64, kQh = 256;
  static constexpr size_t kQs = kFive ? 768 : 256;
  static constexpr size_t kBlock = kFive ? 2816 : 2304;
};

// The scales of a block for 16 rows, from ggml's 12 packed bytes (three dwords per row: u0 = bytes
// 0..3, u1 = 4..7, u2 = 8..11), bytewise once per block: byte k of `lo` is scale k (the low 6 bits
// of byte k), byte k of `hi` scale 4 + k (the low nibble of byte 8 + k, its high 2 bits from the top
// of byte k).
struct K4Scales {
  __m512i lo, hi;
  K4Scales(__m512i u0, __m512i u2)
      : lo(_mm512_and_si512(u0, _mm512_set1_epi8(63))),
        hi(_mm512_ternarylogic_epi32(_mm512_and_si512(u2, _mm512_set1_epi8(15)), _mm512_srli_epi32(u0, 2),
                                     _mm512_set1_epi8(0x30), 0xf8)) {}  // low | (hi & 0x30)
};

// Scale s of every row in its lane: one vpshufb of byte s % 4, where shifts and masks out of the
// packed dwords cost two to four instructions a scale. Zen 4, one token, one thread: a copy of the
// loop streaming 1 GB (variants in random order, 9 rounds) 26.2 -> 28.8 GB/s from memory and 66.6
// -> 72.2 from L2; qmatmul_bench on a 450 MB matrix, 4 alternating runs, 21.0-21.6 -> 19.6-23.2
// (medians 21.3 -> 22.6), from L2 +2-3%; Q5_K, token tiles and two threads level.
template <int s>
inline __m512i k4_scale(const K4Scales& sc) {
  constexpr char k = s % 4, z = char(0x80);
  const __m512i pick = _mm512_broadcast_i32x4(_mm_setr_epi8(k, z, z, z, k + 4, z, z, z, k + 8, z, z, z, k + 12, z, z, z));
  return _mm512_shuffle_epi8(s < 4 ? sc.lo : sc.hi, pick);
}

// Mins s, s + 1 (s even) of a block for 16 rows as the int16 halves of each lane. Min s < 4 is the
// low 6 bits of byte 4 + s; min s >= 4 the high nibble of byte 4 + s, its high 2 bits from the top
// of byte s. vpshufb spreads bytes j, j + 1 of each lane to its two int16 halves, so a pair costs
// a few instructions instead of two field extractions and a merge.
template <int s>
inline __m512i k4_min_pair(__m512i u1, __m512i u2) {
  constexpr char j = s % 4, z = char(0x80);
  const __m512i spread = _mm512_broadcast_i32x4(
      _mm_setr_epi8(j, z, j + 1, z, j + 4, z, j + 5, z, j + 8, z, j + 9, z, j + 12, z, j + 13, z));
  if constexpr (s < 4) return _mm512_and_si512(_mm512_shuffle_epi8(u1, spread), _mm512_set1_epi16(63));
  const __m512i low = _mm512_srli_epi16(_mm512_shuffle_epi8(u2, spread), 4);
  const __m512i high = _mm512_srli_epi16(_mm512_shuffle_epi8(u1, spread), 2);
  return _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi16(0x30), 0xf8);  // low | (high & 0x30)
}

// One token's odd sub-blocks take the high nibbles in place (p & 0xf0, 16 times the quant) rather
// than shifted down: their sums go to a second accumulator, exactly 16 times the true sum, shifted
// back once per block. One instruction per weight vector fewer. With the scale and min extraction
// above (shuffles and vpternlogd in place of shift-mask-merge chains), Zen 5, qmatmul_bench, 6
// alternating runs: T = 1 from L2 72.1 -> 77.2 GB/s, from memory at 2 threads T = 1 52.4 -> 53.6,
// T = 4 49.7 -> 52.3; one thread from memory level (26.4 / 26.2).
template <bool kFive, int TT>
constexpr bool k4_high_in_place() {
  return !kFive && TT == 1;
}

// Sub-block s's integer part for every token: I1[t] += sc_s * sum(u * a) over its 32 elements.
// Each sub-block's 8 weight vectors are unpacked right before use (the low nibbles of the 8 vectors
// of pair s / 2 for even s, the high ones for odd s), so a token tile of 4 fits the registers. I1 may
// be the odd accumulator of k4_high_in_place.
template <bool kFive, int TT, Prefetch P, int s, class Acts>
inline void k4_sub_block(const Acts& x, int64_t b, const uint8_t* pb, const K4Scales& scales, __m512i I1[TT]) {
  using Lay = K4Layout<kFive>;
  constexpr int c = s / 2;
  prefetch_part<8, P>(pb, Lay::kBlock, s);
  __m512i W[8];
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m) {
    const __m512i p = vload(pb + Lay::kQs + 64 * (8 * c + m));
    if constexpr (s % 2 == 0) {
      W[m] = lo_nib(p);
    } else if constexpr (k4_high_in_place<kFive, TT>()) {
      W[m] = _mm512_and_si512(p, _mm512_set1_epi8(int8_t(0xf0)));
    } else {
      W[m] = hi_nib(p);
    }
    if constexpr (kFive) {
      const __mmask64 bit = _mm512_test_epi8_mask(vload(pb + Lay::kQh + 64 * m), _mm512_set1_epi8(int8_t(1 << s)));
      W[m] = _mm512_or_si512(W[m], _mm512_maskz_mov_epi8(bit, _mm512_set1_epi8(16)));
    }
  }
  const __m512i sc = k4_scale<s>(scales);
#pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) {
    const int8_t* qa = x.q(t, b) + 32 * s;
    if constexpr (!kFive && TT > 1) {
      // Token tiles: each half of the sub-block (16 elements, |sum| <= 16 * 15 * 128) fits an
      // int16 and sc's high half is zero, so two vpdpwssd add half * sc exactly, in place of a
      // vpmulld (port 0 only) per token. Sapphire Rapids VM, T = 4: +5-12% from the caches, +4-9%
      // four-stream decode. One token keeps the vpmulld: it is memory-bound, and this form
      // measured 2-6% slower there (more uops in flight per block leave fewer loads in flight).
      __m512i lo = dpbusd_bcast(_mm512_setzero_si512(), W[0], qa);
      __m512i hi = dpbusd_bcast(_mm512_setzero_si512(), W[4], qa + 16);
#pragma GCC unroll 3
      for (int m = 1; m < 4; ++m) {
        lo = dpbusd_bcast(lo, W[m], qa + 4 * m);
        hi = dpbusd_bcast(hi, W[m + 4], qa + 16 + 4 * m);
      }
      I1[t] = _mm512_add_epi32(I1[t], _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(_mm512_setzero_si512(), lo, sc), hi, sc));
    } else {
      // One token (above), and five-bit quants: a half can reach 16 * 31 * 127, past int16.
      __m512i part = dpbusd_bcast(_mm512_setzero_si512(), W[0], qa);
#pragma GCC unroll 7
      for (int m = 1; m < 8; ++m) part = dpbusd_bcast(part, W[m], qa + 4 * m);
      I1[t] = _mm512_add_epi32(I1[t], _mm512_mullo_epi32(part, sc));
    }
  }
}

template <bool kFive, int TT, Prefetch P, class Acts>
void k4_group(const Acts& x, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  using Lay = K4Layout<kFive>;
  __m512 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * Lay::kBlock;
    const __m512i u0 = vload(pb + Lay::kScales), u1 = vload(pb + Lay::kScales + 64), u2 = vload(pb + Lay::kScales + 128);
    __m512i I1[TT];
    for (int t = 0; t < TT; ++t) I1[t] = _mm512_setzero_si512();
    __m512i I1h[TT];  // odd sub-blocks, 16 times over where k4_high_in_place
    for (int t = 0; t < TT; ++t) I1h[t] = _mm512_setzero_si512();
    __m512i* odd = k4_high_in_place<kFive, TT>() ? I1h : I1;
    const K4Scales scales(u0, u2);
    k4_sub_block<kFive, TT, P, 0>(x, b, pb, scales, I1);
    k4_sub_block<kFive, TT, P, 1>(x, b, pb, scales, odd);
    k4_sub_block<kFive, TT, P, 2>(x, b, pb, scales, I1);
    k4_sub_block<kFive, TT, P, 3>(x, b, pb, scales, odd);
    k4_sub_block<kFive, TT, P, 4>(x, b, pb, scales, I1);
    k4_sub_block<kFive, TT, P, 5>(x, b, pb, scales, odd);
    k4_sub_block<kFive, TT, P, 6>(x, b, pb, scales, I1);
    k4_sub_block<kFive, TT, P, 7>(x, b, pb, scales, odd);
    if constexpr (k4_high_in_place<kFive, TT>())
      for (int t = 0; t < TT; ++t) I1[t] = _mm512_add_epi32(I1[t], _mm512_srai_epi32(I1h[t], 4));
    const __m512i mnp[4] = {k4_min_pair<0>(u1, u2), k4_min_pair<2>(u1, u2), k4_min_pair<4>(u1, u2),
                            k4_min_pair<6>(u1, u2)};
    const __m512 d = load_f16x16(pb), dmin = load_f16x16(pb + Lay::kDmin);
#pragma GCC unroll 8
    for (int t = 0; t < TT; ++t) {
      __m512i I2 = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) I2 = _mm512_dpwssd_epi32(I2, mnp[p], bcast32(x.h32(t, b) + 2 * p));
      const __m512 dav = _mm512_set1_ps(x.d(t, b));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1[t]), _mm512_mul_ps(d, dav), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(I2), _mm512_mul_ps(dmin, dav), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) store_rows(y + t * ys, o, o_end, acc[t]);
}

// ---- Q6_K (16 sub-blocks of 16 with int8 scales; kQ8x256) --------------------------------------

using interleave16::kQ6kBlock, interleave16::kQ6kD, interleave16::kQ6kScales, interleave16::kQ6kSubBlock,
    interleave16::kQ6kSubBlocks;

// Quants are taken unsigned (u = q + 32), so a sub-block's integer sum is sc * (sum(u * a) - 32 *
// s16), its part starting from -32 * s16 (a broadcast per token and sub-block). Zen 4, one token,
// one thread, from memory (a copy of the loop streaming 1 GB, 7 rounds in random order): the
// previous layout's kernel (ggml's ql / qh, a shift, two masks and a merge per weight vector, the
// scales extracted from packed dwords) 13.9 GB/s, this one 23.3; from L2 59 -> 69.
template <int TT, Prefetch P, class Acts>
void q6k_group(const Acts& x, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  __m512 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * kQ6kBlock;
    __m512i I1[TT];
    for (int t = 0; t < TT; ++t) I1[t] = _mm512_setzero_si512();
    // Two sub-blocks a step: all sixteen unrolled had GCC spill parts and scales to the stack
    // (a 10 KB frame); Zen 4, qmatmul_bench from L2, T = 1 / 4 / 8: +0-7%, from memory level.
#pragma GCC unroll 2
    for (int s = 0; s < 16; ++s) {
      prefetch_part<16, P>(pb, kQ6kBlock, s);
      __m512i W[4];
      q6k_unpack(pb + kQ6kSubBlocks + kQ6kSubBlock * s, W);
      const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kQ6kScales + 16 * s)));
#pragma GCC unroll 8
      for (int t = 0; t < TT; ++t) {
        const int8_t* qa = x.q(t, b) + 16 * s;
        __m512i part = _mm512_set1_epi32(-32 * int32_t(x.s16(t, b)[s]));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) part = dpbusd_bcast(part, W[k], qa + 4 * k);
        I1[t] = _mm512_add_epi32(I1[t], _mm512_mullo_epi32(part, sc));
      }
    }
    const __m512 d = load_f16x16(pb + kQ6kD);
    for (int t = 0; t < TT; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1[t]), _mm512_mul_ps(d, _mm512_set1_ps(x.d(t, b))), acc[t]);
  }
  for (int t = 0; t < TT; ++t) store_rows(y + t * ys, o, o_end, acc[t]);
}

// ---- Q2_K / Q3_K (16 sub-blocks of 16, 2-bit quants in four shifts of 64 bytes; kQ8x256) -------
//
// Quad m of half h at shift k holds elements 128h + 32k + 4m + j, so quads 0..3 and 4..7 of a
// shift are the sub-blocks 8h + 2k and 8h + 2k + 1. A sub-block's integer part fits int16
// (|q| <= 4, 16 elements), so vpdpwssd with the scale in the low half of each lane (high half 0)
// multiplies it exactly and adds it to I1 in one instruction.

constexpr size_t kQ2Dmin = 32, kQ2Scales = 64, kQ2Qs = 320, kQ2Block = 1344;
constexpr size_t kQ3Qs = 512, kQ3Scales = 1536, kQ3D = 1728, kQ3Block = 1760;

// Q3_K's 16 signed scales for 16 rows from ggml's 12 packed bytes (blocks.h q3k_scale), each in the
// low 16 bits of its lane with the high 16 bits zero. Bytewise first: byte i of B[j] is scale
// 4j + i, its low nibble from byte i of u0 / u1 (j = 0, 1; their high nibbles for j = 2, 3) and its
// bits 4-5 from bits 2j, 2j + 1 of byte i of u2.
inline void q3k_scales(const uint8_t* p, __m512i sc[16]) {
  const __m512i u0 = vload(p), u1 = vload(p + 64), u2 = vload(p + 128);
  const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), off = _mm512_set1_epi8(32);
  const __m512i B[4] = {
      _mm512_or_si512(_mm512_and_si512(u0, m4), _mm512_and_si512(_mm512_slli_epi16(u2, 4), m30)),
      _mm512_or_si512(_mm512_and_si512(u1, m4), _mm512_and_si512(_mm512_slli_epi16(u2, 2), m30)),
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(u0, 4), m4), _mm512_and_si512(u2, m30)),
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(u1, 4), m4), _mm512_and_si512(_mm512_srli_epi16(u2, 2), m30))};
  for (int s = 0; s < 16; ++s) {
    const __m512i v = _mm512_sub_epi8(B[s / 4], off);
    sc[s] = _mm512_and_si512(_mm512_srai_epi32(_mm512_slli_epi32(v, 8 * (3 - s % 4)), 24), _mm512_set1_epi32(0xffff));
  }
}

template <bool kQ3, int TT, Prefetch P, class Acts>
void k2_group(const Acts& x, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  __m512 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i three = _mm512_set1_epi8(3), seven = _mm512_set1_epi8(7);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * (kQ3 ? kQ3Block : kQ2Block);
    if constexpr (!kQ3) prefetch_ahead<P>(pb, kQ2Block);
    const uint8_t* qs = pb + (kQ3 ? kQ3Qs : kQ2Qs);
    __m512i sc[16], mnp[8];
    if constexpr (kQ3) {
      q3k_scales(pb + kQ3Scales, sc);
    } else {
      // Byte i of scale vector v is sub-block 4v + i: scale in the low nibble, min in the high one.
      const __m512i m4 = _mm512_set1_epi32(15);
      for (int v = 0; v < 4; ++v) {
        const __m512i sv = vload(pb + kQ2Scales + 64 * v);
        __m512i mn[4];
        for (int i = 0; i < 4; ++i) {
          sc[4 * v + i] = _mm512_and_si512(_mm512_srli_epi32(sv, 8 * i), m4);
          mn[i] = _mm512_and_si512(_mm512_srli_epi32(sv, 8 * i + 4), m4);
        }
        mnp[2 * v] = _mm512_or_si512(mn[0], _mm512_slli_epi32(mn[1], 16));
        mnp[2 * v + 1] = _mm512_or_si512(mn[2], _mm512_slli_epi32(mn[3], 16));
      }
    }
    __m512i I1[TT];
    for (int t = 0; t < TT; ++t) I1[t] = _mm512_setzero_si512();
    // Unsigned quants: Q2_K's as stored, Q3_K's + 4 (its high bit set means +4). Shifts kp and
    // kp + 2 come from one vector X per quad: 2-bit fields at bits 0-1 and 4-5 of each byte, Q3_K's
    // high bits blended in at bits 2 and 6 (interleave16.h).
    for (int h = 0; h < 2; ++h)
      for (int kp = 0; kp < 2; ++kp) {
        __m512i X[8];
        for (int m = 0; m < 8; ++m) {
          X[m] = _mm512_srli_epi16(vload(qs + 64 * (8 * h + m)), 2 * kp);
          if constexpr (kQ3) {
            const int left = 2 * h - kp;
            const __m512i hm = vload(pb + 64 * m);
            const __m512i hb = left > 0 ? _mm512_slli_epi16(hm, left) : left < 0 ? _mm512_srli_epi16(hm, -left) : hm;
            X[m] = _mm512_ternarylogic_epi32(X[m], hb, _mm512_set1_epi8(0x33), 0xe4);  // X & 0x33 | hb & ~0x33
          }
        }
        for (int e = 0; e < 2; ++e) {
          const int k = kp + 2 * e;
          if constexpr (kQ3) prefetch_part<8, P>(pb, kQ3Block, 4 * h + 2 * kp + e);
          __m512i W[8];
          for (int m = 0; m < 8; ++m) W[m] = _mm512_and_si512(e ? _mm512_srli_epi16(X[m], 4) : X[m], kQ3 ? seven : three);
          const int s0 = 8 * h + 2 * k;
          for (int t = 0; t < TT; ++t) {
            const int8_t* qa = x.q(t, b) + 128 * h + 32 * k;
            __m512i p0, p1;
            if constexpr (kQ3) {
              const int16_t* s16 = x.s16(t, b) + s0;
              p0 = _mm512_set1_epi32(-4 * int32_t(load_i16(s16)));
              p1 = _mm512_set1_epi32(-4 * int32_t(load_i16(s16 + 1)));
            } else {
              p0 = p1 = _mm512_setzero_si512();
            }
            for (int m = 0; m < 4; ++m) {
              p0 = dpbusd_bcast(p0, W[m], qa + 4 * m);
              p1 = dpbusd_bcast(p1, W[m + 4], qa + 16 + 4 * m);
            }
            I1[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(I1[t], p0, sc[s0]), p1, sc[s0 + 1]);
          }
        }
      }
    const __m512 d = load_f16x16(pb + (kQ3 ? kQ3D : 0));
    for (int t = 0; t < TT; ++t) {
      const __m512 dav = _mm512_set1_ps(x.d(t, b));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1[t]), _mm512_mul_ps(d, dav), acc[t]);
      if constexpr (!kQ3) {
        const int16_t* s16 = x.s16(t, b);
        __m512i I2 = _mm512_setzero_si512();
        for (int p = 0; p < 8; ++p) I2 = _mm512_dpwssd_epi32(I2, mnp[p], bcast32(s16 + 2 * p));
        acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(I2), _mm512_mul_ps(load_f16x16(pb + kQ2Dmin), dav), acc[t]);
      }
    }
  }
  for (int t = 0; t < TT; ++t) store_rows(y + t * ys, o, o_end, acc[t]);
}

// ---- IQ4_XS (8 sub-blocks of 32 with signed 6-bit scales, IQ4_NL's code book; kQ8x256) ---------

constexpr size_t kXsScalesH = 32, kXsScalesL = 64, kXsQs = 128, kXsBlock = 2176;

template <int TT, Prefetch P, class Acts>
void iq4xs_group(const Acts& x, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o, int64_t o_end) {
  __m512 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  // Code book + 128 as unsigned bytes (as for IQ4_NL): sum(w * a) = sum(w_u8 * a) - 128 * sum(a).
  const __m512i book = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                                            (char)153, (char)166, (char)181, (char)197, (char)217,
                                                            (char)241));
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = group + size_t(b) * kXsBlock;
    const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + kXsScalesH)));
    const __m512i sl = vload(pb + kXsScalesL);
    __m512i I1[TT];
    for (int t = 0; t < TT; ++t) I1[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      const __m512i sc = _mm512_sub_epi32(
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * s), _mm512_set1_epi32(15)),
                          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * s), _mm512_set1_epi32(3)), 4)),
          _mm512_set1_epi32(32));
      prefetch_part<8, P>(pb, kXsBlock, s);
      __m512i W[8];
      for (int v = 0; v < 4; ++v) {
        const __m512i p = vload(pb + kXsQs + 64 * (4 * s + v));
        W[v] = _mm512_shuffle_epi8(book, lo_nib(p));
        W[v + 4] = _mm512_shuffle_epi8(book, hi_nib(p));
      }
      for (int t = 0; t < TT; ++t) {
        const int8_t* qa = x.q(t, b) + 32 * s;
        __m512i part = _mm512_set1_epi32(-128 * int32_t(x.h32(t, b)[s]));
        for (int k = 0; k < 8; ++k) part = dpbusd_bcast(part, W[k], qa + 4 * k);
        I1[t] = _mm512_add_epi32(I1[t], _mm512_mullo_epi32(part, sc));
      }
    }
    const __m512 d = load_f16x16(pb);
    for (int t = 0; t < TT; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I1[t]), _mm512_mul_ps(d, _mm512_set1_ps(x.d(t, b))), acc[t]);
  }
  for (int t = 0; t < TT; ++t) store_rows(y + t * ys, o, o_end, acc[t]);
}

// ---- Dispatch over groups and token tiles ----------------------------------------------------

// Each format's kernel as K::run<TT>(acts, group, blocks, y, ...), with the activation format F.
template <Legacy L, int Step>
struct LegacyK {
  static constexpr ActFormat F = ActFormat::kQ8x32;
  template <int TT, Prefetch P, class Acts>
  static void run(const Acts& x, const uint8_t* g, int64_t nb, float* y, int64_t ys, int64_t o, int64_t oe) {
    legacy_group<L, Step, TT, P>(x, g, nb, y, ys, o, oe);
  }
};
template <bool kFive>
struct K4K {
  static constexpr ActFormat F = ActFormat::kQ8x256;
  template <int TT, Prefetch P, class Acts>
  static void run(const Acts& x, const uint8_t* g, int64_t nb, float* y, int64_t ys, int64_t o, int64_t oe) {
    k4_group<kFive, TT, P>(x, g, nb, y, ys, o, oe);
  }
};
struct Q6K {
  static constexpr ActFormat F = ActFormat::kQ8x256;
  template <int TT, Prefetch P, class Acts>
  static void run(const Acts& x, const uint8_t* g, int64_t nb, float* y, int64_t ys, int64_t o, int64_t oe) {
    q6k_group<TT, P>(x, g, nb, y, ys, o, oe);
  }
};
template <bool kQ3>
struct K2K {
  static constexpr ActFormat F = ActFormat::kQ8x256;
  template <int TT, Prefetch P, class Acts>
  static void run(const Acts& x, const uint8_t* g, int64_t nb, float* y, int64_t ys, int64_t o, int64_t oe) {
    k2_group<kQ3, TT, P>(x, g, nb, y, ys, o, oe);
  }
};
struct XsK {
  static constexpr ActFormat F = ActFormat::kQ8x256;
  template <int TT, Prefetch P, class Acts>
  static void run(const Acts& x, const uint8_t* g, int64_t nb, float* y, int64_t ys, int64_t o, int64_t oe) {
    iq4xs_group<TT, P>(x, g, nb, y, ys, o, oe);
  }
};

// The last a.T - t0 <= kTile tokens as one tile (none when t0 == a.T).
template <class K, Prefetch P, int kTile>
void remainder_tile(const ActRows& a, int64_t t0, const uint8_t* group, int64_t nb, float* y, int64_t ys, int64_t o,
                    int64_t o_end) {
  if constexpr (kTile > 0) {
    if (a.T - t0 == kTile)
      return K::template run<kTile, P>(RowActs<K::F, kTile>(a, t0), group, nb, y + t0 * ys, ys, o, o_end);
    remainder_tile<K, P, kTile - 1>(a, t0, group, nb, y, ys, o, o_end);
  }
}

template <class K, Prefetch P>
void run_groups(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  const int64_t nb = w.cols / act_block(K::F);
  o_end = imin(o_end, w.rows);
  auto group = [&](int64_t o) { return static_cast<const uint8_t*>(w.data) + size_t(o / 16) * w.group_bytes; };
  // Token tiles outer, the range's groups inner: the groups' weights stay in L2 while each tile's
  // activations pass once, rather than every group sweeping all T tokens' activations.
  const int64_t full = a.T / kTokenTile * kTokenTile;
  for (int64_t t0 = 0; t0 < full; t0 += kTokenTile)
    for (int64_t o = o_begin; o < o_end; o += 16) {
      if (a.tiles) {
        K::template run<kTokenTile, P>(TileActs<K::F>{a.tile(t0 / kTokenTile)}, group(o), nb, y + t0 * ys, ys, o,
                                       o_end);
      } else {
        K::template run<kTokenTile, P>(RowActs<K::F, kTokenTile>(a, t0), group(o), nb, y + t0 * ys, ys, o, o_end);
      }
    }
  for (int64_t o = o_begin; o < o_end; o += 16)
    remainder_tile<K, P, kTokenTile - 1>(a, full, group(o), nb, y, ys, o, o_end);
}

// One token with the prefetch P1, blocks of tokens with PN (cpu_tuning.h: prefetch, prefetch_tokens).
// A prefetch moves no arithmetic, so a row's output is the same under either.
template <class K, Prefetch P1, Prefetch PN>
void run_by_tokens(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t ys) {
  if (a.T == 1) {
    run_groups<K, P1>(a, w, o_begin, o_end, y, ys);
  } else {
    run_groups<K, PN>(a, w, o_begin, o_end, y, ys);
  }
}
template <class K, Prefetch P1>
QMatmulFn with_tokens_prefetch(Prefetch pn) {
  return pn == Prefetch::kNone ? run_by_tokens<K, P1, Prefetch::kNone>
         : pn == Prefetch::kL1 ? run_by_tokens<K, P1, Prefetch::kL1>
                               : run_by_tokens<K, P1, Prefetch::kL2>;
}
// A format's kernel with the prefetches the CPU's tuning names for it.
template <class K>
QMatmulFn with_prefetch(const CpuTuning& t, DType f) {
  const Prefetch p1 = t.prefetch[size_t(f)], pn = t.prefetch_tokens[size_t(f)];
  return p1 == Prefetch::kNone ? with_tokens_prefetch<K, Prefetch::kNone>(pn)
         : p1 == Prefetch::kL1 ? with_tokens_prefetch<K, Prefetch::kL1>(pn)
                               : with_tokens_prefetch<K, Prefetch::kL2>(pn);
}
template <Legacy L>
QMatmulFn legacy_kernel(const CpuTuning& t, DType f) {
  return t.legacy_step == 2 ? with_prefetch<LegacyK<L, 2>>(t, f) : with_prefetch<LegacyK<L, 8>>(t, f);
}

}  // namespace

// Filled into the AVX-512 table by avx512_kernels.cpp.
void install_avx512_quant(KernelTable& k) {
  const CpuTuning& t = cpu_tuning();
  prefetch_distance = t.prefetch_distance;
  k.quantize_act = quantize_act_avx512;
  k.act_tiles = true;
  k.qmatmul[size_t(DType::Q8_0)] = legacy_kernel<Legacy::kQ8_0>(t, DType::Q8_0);
  k.qmatmul[size_t(DType::Q4_0)] = legacy_kernel<Legacy::kQ4_0>(t, DType::Q4_0);
  k.qmatmul[size_t(DType::IQ4_NL)] = legacy_kernel<Legacy::kIQ4_NL>(t, DType::IQ4_NL);
  k.qmatmul[size_t(DType::Q4_1)] = legacy_kernel<Legacy::kQ4_1>(t, DType::Q4_1);
  k.qmatmul[size_t(DType::Q5_0)] = legacy_kernel<Legacy::kQ5_0>(t, DType::Q5_0);
  k.qmatmul[size_t(DType::Q5_1)] = legacy_kernel<Legacy::kQ5_1>(t, DType::Q5_1);
  k.qmatmul[size_t(DType::Q4_K)] = with_prefetch<K4K<false>>(t, DType::Q4_K);
  k.qmatmul[size_t(DType::Q5_K)] = with_prefetch<K4K<true>>(t, DType::Q5_K);
  k.qmatmul[size_t(DType::Q6_K)] = with_prefetch<Q6K>(t, DType::Q6_K);
  k.qmatmul[size_t(DType::Q2_K)] = with_prefetch<K2K<false>>(t, DType::Q2_K);
  k.qmatmul[size_t(DType::Q3_K)] = with_prefetch<K2K<true>>(t, DType::Q3_K);
  k.qmatmul[size_t(DType::IQ4_XS)] = with_prefetch<XsK>(t, DType::IQ4_XS);
}

}  // namespace qwen35::kernels
