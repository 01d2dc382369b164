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
  int ncols;     // columns of this tile, (NV - 1) * lanes < ncols <= NV * lanes
  bool load_c;   // start from c_scale * C instead of zero
  float c_scale;
};

template <class V, int MR, int NV>
void gemm_tile(const GemmTile& t) {
  using F = typename V::F;
  constexpr int W = V::kLanes;
  const auto last = V::mask(t.ncols - (NV - 1) * W);
  const bool tail = t.ncols < NV * W;
  auto ld = [&](const float* p, int v) { return v == NV - 1 && tail ? V::load(p, last) : V::load(p); };
  F acc[MR][NV];
  const F cs = V::set1(t.c_scale);
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = t.load_c ? V::mul(cs, ld(t.c + i * t.ldc + v * W, v)) : V::zero();
  for (int64_t p = 0; p < t.k; ++p) {
    F bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = ld(t.b + p * t.ldb + v * W, v);
    for (int i = 0; i < MR; ++i) {
      const F ai = V::set1(t.a[i * t.lda + p]);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) {
      float* p = t.c + i * t.ldc + v * W;
      if (v == NV - 1 && tail)
        V::store(p, last, acc[i][v]);
      else
        V::store(p, acc[i][v]);
    }
}

template <class V, int MR, int NV = V::kGemmVecs>
void gemm_tile_vecs(int nv, const GemmTile& t) {
  if constexpr (NV > 1)
    if (nv < NV) return gemm_tile_vecs<V, MR, NV - 1>(nv, t);
  gemm_tile<V, MR, NV>(t);
}

template <class V, int MR = V::kGemmRows>
void gemm_tile_rows(int mr, int nv, const GemmTile& t) {
  if constexpr (MR > 1)
    if (mr < MR) return gemm_tile_rows<V, MR - 1>(mr, nv, t);
  gemm_tile_vecs<V, MR>(nv, t);
}

// C[m, n] = (load_c ? c_scale * C : 0) + A[m, k] B[k, n], restricted as `tri` says.
template <class V>
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, Tri tri, bool load_c, float c_scale = 1.0f) {
  constexpr int64_t MR = V::kGemmRows, W = V::kLanes, NW = V::kGemmVecs * V::kLanes;
  for (int64_t i0 = 0; i0 < m; i0 += MR) {
    const int64_t mr = m - i0 < MR ? m - i0 : MR;
    const int64_t ni = tri == Tri::kCols && i0 + mr < n ? i0 + mr : n;
    const int64_t ki = tri == Tri::kDepth && i0 + mr < k ? i0 + mr : k;
    for (int64_t j0 = 0; j0 < ni; j0 += NW) {
      const int64_t nc = ni - j0 < NW ? ni - j0 : NW;
      const GemmTile t{a + i0 * lda, lda, b + j0, ldb, ki, c + i0 * ldc + j0, ldc, int(nc), load_c, c_scale};
      gemm_tile_rows<V>(int(mr), int((nc + W - 1) / W), t);
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
