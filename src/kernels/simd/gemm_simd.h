// A small fp32 GEMM for the chunkwise delta rule, written once over a vector type V
// (x86_avx2/vec_avx2.h, x86_avx512/vec_avx512.h). Include only from a file compiled with V's ISA
// flags; everything here has internal linkage.
//
// Every output element is one accumulator that starts from zero or from its old value (times a
// scale) and takes the k products in ascending order, one fused multiply-add each: its value
// does not depend on the tile it falls in, on m or on n.
#pragma once

#include <cstdint>

namespace qwen35::kernels {
namespace {

// Which part of the product a row needs (row i in the micro-tile of rows [i0, i0 + mr)).
enum class Tri {
  kNone,   // all n columns, all k terms
  kCols,   // columns < i0 + mr: a lower triangle (and what the tile computes beside it)
  kDepth,  // terms p < i0 + mr: A is lower triangular (zero beyond the diagonal)
};

struct GemmTile {
  const float* a;  // A[i, p] = a[i * lda + p]
  int64_t lda;
  const float* b;  // B[p, j] = b[p * ldb + j]
  int64_t ldb;
  int64_t k;
  float* c;  // C[i, j] = c[i * ldc + j]
  int64_t ldc;
  int ncols;  // columns of this tile, (NV - 1) * lanes < ncols <= NV * lanes
  // The start: zero, or X[i, j] = x[i * ldx + j] times row_scale[i] (or c_scale if no row_scale).
  const float* x;
  int64_t ldx;
  const float* row_scale;
  float c_scale;
};

template <class V, int MR, int NV, bool kTail>
void gemm_tile(const GemmTile& t) {
  using F = typename V::F;
  constexpr int W = V::kLanes;
  // Locals, so that the stores through c cannot make the compiler reload them (or spill acc).
  const float* const a = t.a;
  const float* const b = t.b;
  float* const c = t.c;
  const int64_t lda = t.lda, ldb = t.ldb, ldc = t.ldc, k = t.k;
  const auto last = V::mask(t.ncols - (NV - 1) * W);
  F acc[MR][NV];
  if (t.x) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const F cs = V::set1(t.row_scale ? t.row_scale[i] : t.c_scale);
      const float* x = t.x + i * t.ldx;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul(cs, kTail && v == NV - 1 ? V::load(x + v * W, last) : V::load(x + v * W));
    }
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }
  for (int64_t p = 0; p < k; ++p) {
    F bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bv[v] = kTail && v == NV - 1 ? V::load(b + p * ldb + v * W, last) : V::load(b + p * ldb + v * W);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const F ai = V::set1(a[i * lda + p]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      if (kTail && v == NV - 1)
        V::store(c + i * ldc + v * W, last, acc[i][v]);
      else
        V::store(c + i * ldc + v * W, acc[i][v]);
    }
}

template <class V, int MR, int NV = V::kGemmVecs>
void gemm_tile_vecs(int nv, const GemmTile& t) {
  if constexpr (NV > 1)
    if (nv < NV) return gemm_tile_vecs<V, MR, NV - 1>(nv, t);
  if (t.ncols < NV * V::kLanes)
    gemm_tile<V, MR, NV, true>(t);
  else
    gemm_tile<V, MR, NV, false>(t);
}

template <class V, int MR = V::kGemmRows>
void gemm_tile_rows(int mr, int nv, const GemmTile& t) {
  if constexpr (MR > 1)
    if (mr < MR) return gemm_tile_rows<V, MR - 1>(mr, nv, t);
  gemm_tile_vecs<V, MR>(nv, t);
}

// Where a GEMM's C starts from: zero, or X scaled per row or by one factor (X may be C itself).
struct GemmInit {
  const float* x = nullptr;
  int64_t ldx = 0;
  const float* row_scale = nullptr;
  float scale = 1.0f;
};

// C[m, n] = X + A[m, k] B[k, n] (X from `init`), restricted as `tri` says. Column panels outside,
// row tiles inside, so a panel of B stays in L1 while every row tile passes over it.
template <class V>
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, Tri tri, GemmInit init = {}) {
  constexpr int64_t MR = V::kGemmRows, W = V::kLanes, NW = V::kGemmVecs * V::kLanes;
  for (int64_t j0 = 0; j0 < n; j0 += NW)
    for (int64_t i0 = 0; i0 < m; i0 += MR) {
      const int64_t mr = m - i0 < MR ? m - i0 : MR;
      const int64_t ni = tri == Tri::kCols && i0 + mr < n ? i0 + mr : n;
      const int64_t ki = tri == Tri::kDepth && i0 + mr < k ? i0 + mr : k;
      if (j0 >= ni) continue;
      const int64_t nc = ni - j0 < NW ? ni - j0 : NW;
      const GemmTile t{a + i0 * lda, lda, b + j0, ldb, ki, c + i0 * ldc + j0, ldc, int(nc),
                       init.x ? init.x + i0 * init.ldx + j0 : nullptr, init.ldx,
                       init.row_scale ? init.row_scale + i0 : nullptr, init.scale};
      gemm_tile_rows<V>(int(mr), int((nc + W - 1) / W), t);
    }
}

}  // namespace
}  // namespace qwen35::kernels
