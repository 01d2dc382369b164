// The gated delta rule (spec 4) written once over a vector type V (x86_avx2/vec_avx2.h,
// x86_avx512/vec_avx512.h); the scalar twin is kernels/ref/delta_rule.cpp. Include only from a
// file compiled with V's ISA flags; everything here has internal linkage.
//
// What differs from the ref's arithmetic (all within fp32 rounding of it):
// - Recurrent step: two passes over S instead of four. With S' = e^g S, the output is
//   o = S'^T q + delta (k . q), so the first pass reads S once for both u = S'^T k and S'^T q, and
//   the second writes S' + k delta^T. S is taken in strips of columns that stay in L1 between
//   the passes.
// - Chunk: no explicit inverse. (I + A) V~ = diag(beta) V - diag(beta e^gamma) K S0 is solved by
//   forward substitution (spec 4.3 steps 3-5 in one), and everything of order C d or d^2 is a
//   GEMM. The cumulative decays are summed in double as in the ref, and every factor
//   e^{gamma_r - gamma_s} (s <= r only) is exponentiated in double and rounded to float, by a
//   vector exp (V::exp_to_float) whose floats are the ref's libm ones except at rounding ties.
// A token's recurrent step is one fixed sequence of operations, so T tokens in one call give the
// same bits as T calls of one token.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/simd/gemm_simd.h"

namespace qwen35::kernels {
namespace {

template <class V>
float dot_simd(const float* a, const float* b, int n) {
  constexpr int W = V::kLanes;
  auto acc = V::zero();
  int i = 0;
  for (; i + W <= n; i += W) acc = V::fma(V::load(a + i), V::load(b + i), acc);
  if (i < n) {
    const auto m = V::mask(n - i);
    acc = V::fma(V::load(a + i, m), V::load(b + i, m), acc);
  }
  return V::hsum(acc);
}

// Columns [j0, j0 + ncols) of one recurrent step, NV vectors wide (the last one may be partial).
template <class V, int NV>
void recurrent_strip(const float* q, const float* k, const float* v, float beta, float decay, float kq, int dk, int dv,
                     int j0, int ncols, float* S, float* o) {
  using F = typename V::F;
  constexpr int W = V::kLanes;
  const auto last = V::mask(ncols - (NV - 1) * W);
  const bool tail = ncols < NV * W;
  auto ld = [&](const float* p, int x) { return x == NV - 1 && tail ? V::load(p, last) : V::load(p); };
  auto st = [&](float* p, int x, F val) {
    if (x == NV - 1 && tail)
      V::store(p, last, val);
    else
      V::store(p, val);
  };
  const F dec = V::set1(decay);
  F u[NV], p[NV];
  for (int x = 0; x < NV; ++x) u[x] = p[x] = V::zero();
  // u = S'^T k and S'^T q, with S' = e^g S
  for (int i = 0; i < dk; ++i) {
    const float* row = S + int64_t(i) * dv + j0;
    const F ki = V::set1(k[i]), qi = V::set1(q[i]);
    for (int x = 0; x < NV; ++x) {
      const F s = V::mul(dec, ld(row + x * W, x));
      u[x] = V::fma(ki, s, u[x]);
      p[x] = V::fma(qi, s, p[x]);
    }
  }
  // delta = beta (v - u); o = S'^T q + delta (k . q)
  F d[NV];
  const F b = V::set1(beta), kqv = V::set1(kq);
  for (int x = 0; x < NV; ++x) {
    d[x] = V::mul(b, V::sub(ld(v + j0 + x * W, x), u[x]));
    st(o + j0 + x * W, x, V::fma(d[x], kqv, p[x]));
  }
  // S = S' + k delta^T
  for (int i = 0; i < dk; ++i) {
    float* row = S + int64_t(i) * dv + j0;
    const F ki = V::set1(k[i]);
    for (int x = 0; x < NV; ++x) st(row + x * W, x, V::fma(ki, d[x], V::mul(dec, ld(row + x * W, x))));
  }
}

template <class V, int NV = 4>
void recurrent_strip_vecs(int nv, const float* q, const float* k, const float* v, float beta, float decay, float kq,
                          int dk, int dv, int j0, int ncols, float* S, float* o) {
  if constexpr (NV > 1)
    if (nv < NV) return recurrent_strip_vecs<V, NV - 1>(nv, q, k, v, beta, decay, kq, dk, dv, j0, ncols, S, o);
  recurrent_strip<V, NV>(q, k, v, beta, decay, kq, dk, dv, j0, ncols, S, o);
}

template <class V>
void delta_recurrent_simd(const DeltaRuleHead& h, int64_t T, int dk, int dv, float* S) {
  constexpr int W = V::kLanes, SW = 4 * V::kLanes;  // strip: 4 vectors of columns
  for (int64_t t = 0; t < T; ++t) {
    const float* q = h.q + t * h.qk_stride;
    const float* k = h.k + t * h.qk_stride;
    const float* v = h.v + t * h.v_stride;
    const float decay = ::expf(h.g[t * h.gate_stride]);
    const float beta = h.beta[t * h.gate_stride];
    const float kq = dot_simd<V>(k, q, dk);
    float* o = h.o + t * h.o_stride;
    for (int j0 = 0; j0 < dv; j0 += SW) {
      const int nc = dv - j0 < SW ? dv - j0 : SW;
      recurrent_strip_vecs<V>((nc + W - 1) / W, q, k, v, beta, decay, kq, dk, dv, j0, nc, S, o);
    }
  }
}

// out = a * x + b * y
template <class V>
void scale_add(float a, const float* x, float b, const float* y, float* out, int n) {
  constexpr int W = V::kLanes;
  const auto av = V::set1(a), bv = V::set1(b);
  int i = 0;
  for (; i + W <= n; i += W) V::store(out + i, V::fma(av, V::load(x + i), V::mul(bv, V::load(y + i))));
  if (i < n) {
    const auto m = V::mask(n - i);
    V::store(out + i, m, V::fma(av, V::load(x + i, m), V::mul(bv, V::load(y + i, m))));
  }
}

// y += a * x
template <class V>
void axpy_simd(float a, const float* x, float* y, int n) {
  constexpr int W = V::kLanes;
  const auto av = V::set1(a);
  int i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::fma(av, V::load(x + i), V::load(y + i)));
  if (i < n) {
    const auto m = V::mask(n - i);
    V::store(y + i, m, V::fma(av, V::load(x + i, m), V::load(y + i, m)));
  }
}

template <class V>
void delta_chunk_simd(const DeltaRuleHead& h, int64_t n, int dk, int dv, float* S, float* work) {
  constexpr int64_t C = kDeltaChunk, MR = V::kGemmRows;
  // 64-byte aligned buffers inside `work` (delta_chunk_work_floats keeps 16 floats spare).
  float* Kt = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(work) + 63) & ~uintptr_t(63));  // [dk, C]
  float* G = Kt + int64_t(dk) * C;  // [2C, C]: rows r: -A_r (s < r); rows C + r: M o (Q K^T) (s <= r, zeros after)
  float* D = G + 2 * C * C;          // [C, C]: e^{gamma_r - gamma_s}, s <= r
  float* Vt = D + C * C;             // [C, dv]: K S0, then the right-hand side, then V~
  float* QS = Vt + C * dv;           // [C, dv]: Q S0
  float* eg = QS + C * dv;           // [C]: e^{gamma_r}
  double gam[kDeltaChunk];

  auto k = [&](int64_t r) { return h.k + r * h.qk_stride; };
  auto beta = [&](int64_t r) { return h.beta[r * h.gate_stride]; };

  // Decays as the ref computes them: cumulative sums in double, only differences s <= r
  // exponentiated, in double, rounded to float.
  double acc = 0;
  for (int64_t r = 0; r < n; ++r) {
    acc += double(h.g[r * h.gate_stride]);
    gam[r] = acc;
  }
  V::exp_to_float(gam, eg, n);
  for (int64_t r = 0; r < n; ++r) {
    double diff[kDeltaChunk];
    for (int64_t s = 0; s < r; ++s) diff[s] = gam[r] - gam[s];
    V::exp_to_float(diff, D + r * C, r);
    D[r * C + r] = 1.0f;
  }

  // K^T, by blocks of lanes x lanes.
  constexpr int W = V::kLanes;
  const int64_t n_full = n - n % W;
  const int dk_full = dk - dk % W;
  for (int64_t s0 = 0; s0 < n_full; s0 += W)
    for (int i0 = 0; i0 < dk_full; i0 += W) V::transpose(k(s0) + i0, h.qk_stride, Kt + i0 * C + s0, C);
  for (int64_t s = 0; s < n; ++s)
    for (int i = s < n_full ? dk_full : 0; i < dk; ++i) Kt[i * C + s] = k(s)[i];

  // K K^T and Q K^T, lower triangles.
  gemm<V>(n, n, dk, h.k, h.qk_stride, Kt, C, G, C, Tri::kCols);
  gemm<V>(n, n, dk, h.q, h.qk_stride, Kt, C, G + C * C, C, Tri::kCols);
  for (int64_t r = 0; r < n; ++r) {
    float* a = G + r * C;
    float* p = G + (C + r) * C;
    const float* d = D + r * C;
    const float b = beta(r);
    for (int64_t s = 0; s < r; ++s) a[s] = -(b * d[s] * a[s]);
    for (int64_t s = 0; s <= r; ++s) p[s] = d[s] * p[s];
    for (int64_t s = r + 1; s < n; ++s) p[s] = 0.0f;
  }

  // K S0 and Q S0.
  gemm<V>(n, dv, dk, h.k, h.qk_stride, S, dv, Vt, dv, Tri::kNone);
  gemm<V>(n, dv, dk, h.q, h.qk_stride, S, dv, QS, dv, Tri::kNone);

  // (I + A) V~ = beta (v - e^gamma K S0), forward substitution: for each micro-tile of rows the
  // earlier rows' terms as a GEMM, then the tile's own triangle. Every row sums its terms s < r
  // in ascending order.
  for (int64_t r = 0; r < n; ++r) {
    const float b = beta(r);
    scale_add<V>(b, h.v + r * h.v_stride, -(b * eg[r]), Vt + r * dv, Vt + r * dv, dv);
  }
  for (int64_t i0 = 0; i0 < n; i0 += MR) {
    const int64_t i1 = i0 + MR < n ? i0 + MR : n;
    if (i0 > 0) gemm<V>(i1 - i0, dv, i0, G + i0 * C, C, Vt, dv, Vt + i0 * dv, dv, Tri::kNone, {Vt + i0 * dv, dv});
    for (int64_t r = i0 + 1; r < i1; ++r)
      for (int64_t s = i0; s < r; ++s) axpy_simd<V>(G[r * C + s], Vt + s * dv, Vt + r * dv, dv);
  }

  // O = diag(e^gamma) Q S0 + (M o Q K^T) V~
  gemm<V>(n, dv, n, G + C * C, C, Vt, dv, h.o, h.o_stride, Tri::kDepth, {QS, dv, eg});

  // S = e^{gamma_n} S0 + (diag(e^{gamma_n - gamma}) K)^T V~
  const float* dn = D + (n - 1) * C;
  for (int i = 0; i < dk; ++i)
    for (int64_t s = 0; s < n; ++s) Kt[i * C + s] *= dn[s];
  gemm<V>(dk, dv, n, Kt, C, Vt, dv, S, dv, Tri::kNone, {S, dv, nullptr, eg[n - 1]});
}

}  // namespace
}  // namespace qwen35::kernels
