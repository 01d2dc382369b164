// AVX-512 kernels (F, BW, VL). Compiled with -mavx512*; only reached after a CPU check.
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <new>


#include "kernels/kernels.h"
#include "kernels/pack/interleave16.h"
#include "kernels/simd/isa_local.h"

namespace qwen35::kernels {

void install_avx512_quant(KernelTable& k);        // avx512_quant.cpp
void install_avx512_elementwise(KernelTable& k);  // avx512_elementwise.cpp
void install_avx512_delta(KernelTable& k);        // avx512_delta.cpp
void install_avx512_attention(KernelTable& k);    // avx512_attention.cpp

namespace {


template <DType D>
inline __m512 load16(const void* base, int64_t i) {
  if constexpr (D == DType::F32) return _mm512_loadu_ps(static_cast<const float*>(base) + i);
  if constexpr (D == DType::BF16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if constexpr (D == DType::F16)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
}

template <DType D>
inline __m512 load16_masked(const void* base, int64_t i, __mmask16 m) {
  if constexpr (D == DType::F32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + i);
  if constexpr (D == DType::BF16) {
    __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if constexpr (D == DType::F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i));
}

// One tile: R weight rows against C tokens, R * C accumulators in registers. Every output is
// summed over k in the same order whatever R, C and T are (16-lane vectors front to back, then
// the masked tail, then one horizontal reduce), so a token's results never depend on the block
// it was computed in: prompt lookup verification relies on that.
template <DType D, int R, int C>
inline void tile(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, float* y, int64_t ys, int64_t n16,
                 __mmask16 tail) {
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  const void* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = row_of(w, o + r);
  for (int64_t i = 0; i < n16; i += 16) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_loadu_ps(x + c * xs + i);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16<D>(rows[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if (tail) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_maskz_loadu_ps(tail, x + c * xs + n16);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16_masked<D>(rows[r], n16, tail);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[c * ys + o + r] = _mm512_reduce_add_ps(acc[r][c]);
}

template <DType D, int R>
inline void tile_tokens(const float* x, int64_t xs, int64_t C, const WeightMatrix& w, int64_t o, float* y, int64_t ys,
                        int64_t n16, __mmask16 tail) {
  switch (C) {
    case 1: return tile<D, R, 1>(x, xs, w, o, y, ys, n16, tail);
    case 2: return tile<D, R, 2>(x, xs, w, o, y, ys, n16, tail);
    case 3: return tile<D, R, 3>(x, xs, w, o, y, ys, n16, tail);
    default: return tile<D, R, 4>(x, xs, w, o, y, ys, n16, tail);
  }
}

// Blocks of many tokens (prefill, verification): the same 4x4 tiles, but a panel of kPanelRows
// rows walks the columns in blocks of kBlockCols, so one block of activations (T x kBlockCols
// floats, in L2) serves every row of the panel instead of being streamed again for each tile.
// The tiles' vector accumulators are parked in `acc` between blocks; storing and reloading a
// vector changes no bit, so each output is still summed in exactly the order of the small-block
// path (what keeps results independent of T).
constexpr int64_t kPanelRows = 32;

constexpr int64_t kBlockCols = 512;

template <DType D, int R, int C>
inline void tile_block(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, int64_t k0, int64_t k1,
                       float* acc_store) {
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_loadu_ps(acc_store + (c * 4 + r) * 16);
  const void* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = row_of(w, o + r);
  for (int64_t i = k0; i < k1; i += 16) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_loadu_ps(x + c * xs + i);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16<D>(rows[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(acc_store + (c * 4 + r) * 16, acc[r][c]);
}

template <DType D, int R, int C>
inline void tile_finish(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, float* y, int64_t ys,
                        int64_t n16, __mmask16 tail, const float* acc_store) {
  for (int r = 0; r < R; ++r) {
    const void* row = row_of(w, o + r);
    const __m512 wv = tail ? load16_masked<D>(row, n16, tail) : _mm512_setzero_ps();
    for (int c = 0; c < C; ++c) {
      __m512 acc = _mm512_loadu_ps(acc_store + (c * 4 + r) * 16);
      if (tail) acc = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(tail, x + c * xs + n16), acc);
      y[c * ys + o + r] = _mm512_reduce_add_ps(acc);
    }
  }
}

// Calls F<R, C> for runtime R, C in 1..4.
template <template <int, int> class F, typename... Args>
inline void dispatch_tile(int64_t R, int64_t C, Args&&... args) {
  auto by_c = [&]<int Rv>() {
    switch (C) {
      case 1: return F<Rv, 1>::run(args...);
      case 2: return F<Rv, 2>::run(args...);
      case 3: return F<Rv, 3>::run(args...);
      default: return F<Rv, 4>::run(args...);
    }
  };
  switch (R) {
    case 1: return by_c.template operator()<1>();
    case 2: return by_c.template operator()<2>();
    case 3: return by_c.template operator()<3>();
    default: return by_c.template operator()<4>();
  }
}

template <DType D>
struct BlockOp {
  template <int R, int C>
  struct F {
    static void run(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, int64_t k0, int64_t k1, float* acc) {
      tile_block<D, R, C>(x, xs, w, o, k0, k1, acc);
    }
  };
};

template <DType D>
struct FinishOp {
  template <int R, int C>
  struct F {
    static void run(const float* x, int64_t xs, const WeightMatrix& w, int64_t o, float* y, int64_t ys, int64_t n16,
                    __mmask16 tail, const float* acc) {
      tile_finish<D, R, C>(x, xs, w, o, y, ys, n16, tail, acc);
    }
  };
};

template <DType D>
void matmul_panels_chunk(const float* x, int64_t T, int64_t xs, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                         float* y, int64_t ys) {
  const int64_t n = w.cols, n16 = n & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (n - n16)) - 1);
  const int64_t groups = (T + 3) / 4;
  // Accumulators of one panel: [tile][token group][4 tokens x 4 rows][16 lanes], then the
  // f32 copy of one tile's weight block.
  const size_t tile_floats = size_t(groups) * 16 * 16, acc_floats = size_t(kPanelRows / 4) * tile_floats;
  const size_t scratch_floats = acc_floats + size_t(4 * kBlockCols);
  float* acc_buf = reinterpret_cast<float*>(thread_scratch_bytes(scratch_floats * sizeof(float)));
  float* wf32 = acc_buf + acc_floats;
  for (int64_t p0 = o_begin; p0 < o_end; p0 += kPanelRows) {
    const int64_t p1 = imin(p0 + kPanelRows, o_end);
    std::memset(acc_buf, 0, acc_floats * sizeof(float));
    for (int64_t k0 = 0; k0 < n16; k0 += kBlockCols) {
      const int64_t kn = imin(k0 + kBlockCols, n16) - k0;
      for (int64_t o = p0; o < p1; o += 4) {
        const int64_t R = imin(4, p1 - o);
        // The tile's weights for this block as f32, converted once (exactly) for all token groups.
        WeightMatrix block{DType::F32, wf32, R, kn, size_t(kn) * 4};
        for (int64_t r = 0; r < R; ++r)
          for (int64_t i = 0; i < kn; i += 16) _mm512_storeu_ps(wf32 + r * kn + i, load16<D>(row_of(w, o + r), k0 + i));
        float* tile_acc = acc_buf + size_t((o - p0) / 4) * tile_floats;
        for (int64_t g = 0; g < groups; ++g)
          dispatch_tile<BlockOp<DType::F32>::template F>(R, imin(4, T - 4 * g), x + 4 * g * xs + k0, xs,
                                                         block, 0, 0, kn, tile_acc + size_t(g) * 256);
      }
    }
    for (int64_t o = p0; o < p1; o += 4) {
      const float* tile_acc = acc_buf + size_t((o - p0) / 4) * tile_floats;
      for (int64_t g = 0; g < groups; ++g)
        dispatch_tile<FinishOp<D>::template F>(imin(4, p1 - o), imin(4, T - 4 * g),
                                               x + 4 * g * xs, xs, w, o, y + 4 * g * ys, ys, n16, tail,
                                               tile_acc + size_t(g) * 256);
    }
  }
}

// Tokens in chunks of kChunkTokens keep a panel's accumulators and one block of activations in L2.
constexpr int64_t kChunkTokens = 64;

template <DType D>
void matmul_panels(const float* x, int64_t T, int64_t xs, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                   float* y, int64_t ys) {
  for (int64_t t0 = 0; t0 < T; t0 += kChunkTokens)
    matmul_panels_chunk<D>(x + t0 * xs, imin(kChunkTokens, T - t0), xs, w, o_begin, o_end, y + t0 * ys, ys);
}

// Tiles of 4 rows x 4 tokens: per 16-wide step, 4 weight and 4 activation loads feed 16 FMAs,
// and a single token (decode) still has 4 independent accumulation chains.
template <DType D>
void matmul_avx512(const float* x, int64_t T, int64_t xs, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                   float* y, int64_t ys) {
  if (T >= 32) return matmul_panels<D>(x, T, xs, w, o_begin, o_end, y, ys);
  const int64_t n = w.cols, n16 = n & ~int64_t(15);
  const __mmask16 tail = __mmask16((1u << (n - n16)) - 1);
  for (int64_t o = o_begin; o < o_end; o += 4) {
    const int64_t R = imin(4, o_end - o);
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int64_t C = imin(4, T - t0);
      const float* xt = x + t0 * xs;
      float* yt = y + t0 * ys;
      switch (R) {
        case 1: tile_tokens<D, 1>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        case 2: tile_tokens<D, 2>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        case 3: tile_tokens<D, 3>(xt, xs, C, w, o, yt, ys, n16, tail); break;
        default: tile_tokens<D, 4>(xt, xs, C, w, o, yt, ys, n16, tail); break;
      }
    }
  }
}

float dot_avx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    __mmask16 m = __mmask16((1u << (n - i)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void axpy_avx512(float a, const float* x, float* y, int64_t n) {
  __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

KernelTable make_avx512() {
  KernelTable k = ref_table();
  k.name = "avx512";
  k.matmul[size_t(DType::F32)] = matmul_avx512<DType::F32>;
  k.matmul[size_t(DType::BF16)] = matmul_avx512<DType::BF16>;
  k.matmul[size_t(DType::F16)] = matmul_avx512<DType::F16>;
  k.dot = dot_avx512;
  k.axpy = axpy_avx512;
  k.packing = interleave16::format();
  install_avx512_quant(k);
  install_avx512_elementwise(k);
  install_avx512_delta(k);
  install_avx512_attention(k);
  return k;
}

}  // namespace

// Only called by dispatch.cpp after it checked the CPU's features.
const KernelTable& avx512_table_unchecked() {
  static const KernelTable table = make_avx512();
  return table;
}

}  // namespace qwen35::kernels
