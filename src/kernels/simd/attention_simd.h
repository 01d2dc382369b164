// Softmax attention over a KV cache (kernels.h AttnArgs) written once over a vector type V
// (x86_avx2/vec_avx2.h, x86_avx512/vec_avx512.h); the scalar twin is kernels/ref/attention.cpp.
// Include only from a file compiled with V's ISA flags; everything here has internal linkage.
//
// Online softmax (flash-attention style): keys go by in tiles of kAttnTile; each query row keeps
// its running maximum m, sum l and unnormalised output (in its output row), rescaled by
// e^{m_old - m_new} when the maximum grows. Up to V::kAttnRows query rows (the GQA heads of one or
// more tokens) go through the keys together, so each key and value row is loaded once for all of
// them. A row's arithmetic is fixed by its own data alone: each q.k dot is one accumulator per
// (row, key) reduced by one fixed tree (V::reduce_lanes, the same in every slot), the tiles start
// at key 0 whatever the block, and every output element takes its keys in ascending order, one
// fused multiply-add each, never a masked-out key. So a row gives the same bits alone, in any
// block, at any place in it and on any thread. Full attention over f32 keys (causal = false, the
// vision tower) takes attention_full instead, which keeps the same promise (see there).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

constexpr int64_t kAttnTile = 32;

constexpr int pow2_floor(int x) { return x >= 16 ? 16 : x >= 8 ? 8 : x >= 4 ? 4 : x >= 2 ? 2 : 1; }

template <bool F16>
using KvElem = std::conditional_t<F16, uint16_t, float>;

template <class V>
typename V::F load_kv(const float* p) {
  return V::load(p);
}
template <class V>
typename V::F load_kv(const uint16_t* p) {
  return V::load_f16(p);
}
template <class V>
typename V::F load_kv(const float* p, typename V::M m) {
  return V::load(p, m);
}
template <class V>
typename V::F load_kv(const uint16_t* p, typename V::M m) {
  return V::load_f16(p, m);
}

// The keys (or values) of positions [0, n): row j at base + j * stride.
template <bool F16>
struct KvRows {
  const KvElem<F16>* base;
  int64_t stride;
  int64_t n;
  const KvElem<F16>* row(int64_t j) const { return base + j * stride; }
};

// s[r][j] = scale * q_r . k_{j0 + j} for NR rows and keys j < nk; keys past the cache's last are
// read as the last one and their scores dropped. Prefetches the keys one tile ahead.
template <class V, bool F16, int NR>
void attn_scores(const float* const* q_rows, const KvRows<F16>& keys, int hd, float scale, int64_t j0, int64_t nk,
                 float (*s)[kAttnTile]) {
  using F = typename V::F;
  constexpr int W = V::kLanes, J = pow2_floor(V::kLanes / NR);  // J keys per pass: NR * J accumulators
  const int hd_full = hd - hd % W;
  const auto tail = V::mask(hd - hd_full);
  const float* q[NR];
  for (int r = 0; r < NR; ++r) q[r] = q_rows[r];
  for (int64_t jg = 0; jg < nk; jg += J) {
    const KvElem<F16>* kp[J];
    const KvElem<F16>* ahead[J];  // the same key of the next tile, or this one past the end
    for (int jj = 0; jj < J; ++jj) {
      const int64_t j = j0 + jg + jj < keys.n ? j0 + jg + jj : keys.n - 1;
      kp[jj] = keys.row(j);
      ahead[jj] = j + kAttnTile < keys.n ? keys.row(j + kAttnTile) : kp[jj];
    }
    F acc[W];
    for (int i = 0; i < W; ++i) acc[i] = V::zero();
    for (int d = 0; d < hd_full; d += W) {
      F kv[J];
      for (int jj = 0; jj < J; ++jj) {
        kv[jj] = load_kv<V>(kp[jj] + d);
        V::prefetch(ahead[jj] + d);
      }
      for (int r = 0; r < NR; ++r) {
        F qv = V::load(q[r] + d);
        V::keep_in_register(qv);  // one load of q for all J keys, not one folded into each FMA
        for (int jj = 0; jj < J; ++jj) acc[r * J + jj] = V::fma(qv, kv[jj], acc[r * J + jj]);
      }
    }
    if (hd_full < hd) {
      F kv[J];
      for (int jj = 0; jj < J; ++jj) kv[jj] = load_kv<V>(kp[jj] + hd_full, tail);
      for (int r = 0; r < NR; ++r) {
        const F qv = V::load(q[r] + hd_full, tail);
        for (int jj = 0; jj < J; ++jj) acc[r * J + jj] = V::fma(qv, kv[jj], acc[r * J + jj]);
      }
    }
    alignas(64) float sums[W];
    V::store(sums, V::mul(V::reduce_lanes(acc), V::set1(scale)));
    for (int r = 0; r < NR; ++r)
      for (int jj = 0; jj < J && jg + jj < nk; ++jj) s[r][jg + jj] = sums[r * J + jj];
  }
}

template <class V, bool F16, int NR = V::kAttnRows>
void attn_scores_rows(int nr, const float* const* q, const KvRows<F16>& keys, int hd, float scale, int64_t j0,
                      int64_t nk, float (*s)[kAttnTile]) {
  if constexpr (NR > 1)
    if (nr < NR) return attn_scores_rows<V, F16, NR - 1>(nr, q, keys, hd, scale, j0, nk, s);
  attn_scores<V, F16, NR>(q, keys, hd, scale, j0, nk, s);
}

// One row's tile of scores s[0, kAttnTile), the first nv valid: the running maximum m and sum l
// move on, s becomes the weights e^{s - m} (0 past nv); returns the factor for the old output.
template <class V>
float softmax_tile(float* s, int64_t nv, float& m, float& l) {
  using F = typename V::F;
  constexpr int W = V::kLanes, NC = int(kAttnTile / V::kLanes);
  const F neg_inf = V::set1(-std::numeric_limits<float>::infinity());
  F x[NC], mx = neg_inf;
  for (int c = 0; c < NC; ++c) {
    const int64_t valid = nv - c * W;
    x[c] = V::select(V::mask(valid <= 0 ? 0 : valid >= W ? W : int(valid)), V::load(s + c * W), neg_inf);
    mx = V::max(mx, x[c]);
  }
  const float tile_max = V::hmax(mx);
  const float m_new = m > tile_max ? m : tile_max;
  const float alpha = V::lane0(V::exp(V::set1(m - m_new)));  // 0 on the first tile (m = -inf)
  F sum = V::zero();
  const F mv = V::set1(m_new);
  for (int c = 0; c < NC; ++c) {
    const F p = V::exp(V::sub(x[c], mv));
    V::store(s + c * W, p);
    sum = V::add(sum, p);
  }
  l = l * alpha + V::hsum(sum);
  m = m_new;
  return alpha;
}

// y[0, n) *= a
template <class V>
void scale_row(float a, float* y, int n) {
  constexpr int W = V::kLanes;
  const auto av = V::set1(a);
  int i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::mul(av, V::load(y + i)));
  if (i < n) {
    const auto m = V::mask(n - i);
    V::store(y + i, m, V::mul(av, V::load(y + i, m)));
  }
}

// o_r[d0, d0 + ncols) += sum_{j in [ja, jb)} w_r[j - j0] v_j for NR rows, NS vectors of columns
// (the last one partial when kTail). Prefetches the values one tile ahead.
template <class V, bool F16, int NR, int NS, bool kTail>
void attn_pv_slice(float* const* o_rows, const float* const* w_rows, const KvRows<F16>& values, int64_t ja,
                   int64_t jb, int64_t j0, int d0, int ncols) {
  using F = typename V::F;
  constexpr int W = V::kLanes;
  const auto last = V::mask(ncols - (NS - 1) * W);
  float* o[NR];
  const float* w[NR];
  for (int r = 0; r < NR; ++r) {
    o[r] = o_rows[r] + d0;
    w[r] = w_rows[r];
  }
  F acc[NR][NS];
  for (int r = 0; r < NR; ++r)
    for (int x = 0; x < NS; ++x) acc[r][x] = kTail && x == NS - 1 ? V::load(o[r] + x * W, last) : V::load(o[r] + x * W);
  const int64_t stride = values.stride, ahead_end = values.n - kAttnTile;
  const KvElem<F16>* vp = values.row(ja) + d0;
  for (int64_t j = ja; j < jb; ++j, vp += stride) {
    F vv[NS];
    for (int x = 0; x < NS; ++x) vv[x] = kTail && x == NS - 1 ? load_kv<V>(vp + x * W, last) : load_kv<V>(vp + x * W);
    if (j < ahead_end)
      for (int x = 0; x < NS; ++x) V::prefetch(vp + kAttnTile * stride + x * W);
    for (int r = 0; r < NR; ++r) {
      const F pr = V::set1(w[r][j - j0]);
      for (int x = 0; x < NS; ++x) acc[r][x] = V::fma(pr, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int x = 0; x < NS; ++x) {
      if (kTail && x == NS - 1)
        V::store(o[r] + x * W, last, acc[r][x]);
      else
        V::store(o[r] + x * W, acc[r][x]);
    }
}

template <class V, bool F16, int NR, int NS>
void attn_pv_vecs(int nv, float* const* o, const float* const* w, const KvRows<F16>& values, int64_t ja, int64_t jb,
                  int64_t j0, int d0, int ncols) {
  if constexpr (NS > 1)
    if (nv < NS) return attn_pv_vecs<V, F16, NR, NS - 1>(nv, o, w, values, ja, jb, j0, d0, ncols);
  if (ncols < NS * V::kLanes)
    attn_pv_slice<V, F16, NR, NS, true>(o, w, values, ja, jb, j0, d0, ncols);
  else
    attn_pv_slice<V, F16, NR, NS, false>(o, w, values, ja, jb, j0, d0, ncols);
}

template <class V, bool F16, int NR>
void attn_pv(float* const* o, const float* const* w, const KvRows<F16>& values, int hd, int64_t ja, int64_t jb,
             int64_t j0) {
  // As many columns per pass as keep NR x NS accumulators in registers (AVX-512's 32 hold 8 x 3,
  // which takes a 72-wide vision head in two passes instead of three).
  constexpr int kFit = (V::kLanes == 16 ? 3 : 2) * V::kAttnRows / NR;
  constexpr int NS = kFit >= 4 ? 4 : kFit, W = V::kLanes;
  for (int d0 = 0; d0 < hd; d0 += NS * W) {
    const int nc = hd - d0 < NS * W ? hd - d0 : NS * W;
    attn_pv_vecs<V, F16, NR, NS>((nc + W - 1) / W, o, w, values, ja, jb, j0, d0, nc);
  }
}

template <class V, bool F16, int NR = V::kAttnRows>
void attn_pv_rows(int nr, float* const* o, const float* const* w, const KvRows<F16>& values, int hd, int64_t ja,
                  int64_t jb, int64_t j0) {
  if constexpr (NR > 1)
    if (nr < NR) return attn_pv_rows<V, F16, NR - 1>(nr, o, w, values, hd, ja, jb, j0);
  attn_pv<V, F16, NR>(o, w, values, hd, ja, jb, j0);
}

// Rows go through the keys in batches of up to kAttnBatchRows (8 groups of V::kAttnRows for
// AVX-512): for each tile of keys, every group of the batch takes its scores while the tile's
// keys are in L1, then every group its weighted values, so a tile comes from L2 once per batch.
constexpr int kAttnBatchRows = 64;

// ---- Full (non-causal) attention with the rows as lanes -----------------------------------------
//
// When every row sees the same keys (the vision tower's bidirectional attention), the rows of a
// batch go through the keys as the lanes of vectors instead of one accumulator per (row, key):
// qt holds the batch's queries transposed (qt[d][r]), so the scores of W rows against one key take
// one FMA per head element with the key's element broadcast, and no lane reduction at all; the
// softmax's running maxima and sums are lane-wise across the keys of a tile, and the output is
// kept transposed as well (ot[d][r]) while the values are weighed in, the value elements
// broadcast. A row's arithmetic is its own lane's: its scores are FMA chains over d in order, its
// output elements FMA chains over the keys in ascending order, rescaled at the same tiles from
// key 0. So a row gives the same bits alone, in any block and at any place in it, as the causal
// path does (its bits differ from that path's: another summation order of the same sums).
constexpr int kFullMaxHeadDim = 256;

// A micro-tile's accumulators (kRowVecs x kKeys) with its row vectors and one broadcast fill the
// registers: 29 of 32 with AVX-512, 15 of 16 with AVX2. AVX2 took 4 keys before (8 accumulators):
// 6 load fewer row vectors per FMA and keep more FMA chains in flight (Zen 5, the vision tower's
// attention on the avx2 table: 9.5% less time).
template <class V>
struct FullTiles {
  static constexpr int kRowVecs = V::kLanes == 16 ? 4 : 2;  // vectors of rows per micro-tile
  static constexpr int kKeys = 6;                            // keys per score micro-tile
  static constexpr int kCols = kKeys;                        // head elements per output micro-tile
  static constexpr int kTile = 8 * kKeys;                    // keys per softmax tile
};

// st[jj][r] = scale * q_r . k_jj for KJ keys (k_jj at k + jj * stride) and the RV row vectors of
// qt; prefetches the next tile's keys (those of the first n_ahead keys) and this tile's values.
template <class V, int RV, int KJ>
void full_scores(const float* qt, const float* k, const float* v, int64_t stride, int hd, float scale, int n_ahead,
                 bool prefetch, float* st) {
  using F = typename V::F;
  constexpr int W = V::kLanes, B = kAttnBatchRows;
  constexpr int64_t kAhead = FullTiles<V>::kTile;
  F acc[KJ][RV];
  for (int jj = 0; jj < KJ; ++jj)
    for (int rv = 0; rv < RV; ++rv) acc[jj][rv] = V::zero();
  for (int d0 = 0; d0 < hd; d0 += 16) {
    if (prefetch)
      for (int jj = 0; jj < KJ; ++jj) {
        if (jj < n_ahead) V::prefetch(k + (jj + kAhead) * stride + d0);
        V::prefetch(v + jj * stride + d0);
      }
    const int d1 = hd - d0 < 16 ? hd : d0 + 16;
    for (int d = d0; d < d1; ++d) {
      F qv[RV];
      for (int rv = 0; rv < RV; ++rv) qv[rv] = V::load(qt + d * B + rv * W);
      for (int jj = 0; jj < KJ; ++jj) {
        const F kd = V::set1(k[jj * stride + d]);
        for (int rv = 0; rv < RV; ++rv) acc[jj][rv] = V::fma(qv[rv], kd, acc[jj][rv]);
      }
    }
  }
  const F sv = V::set1(scale);
  for (int jj = 0; jj < KJ; ++jj)
    for (int rv = 0; rv < RV; ++rv) V::store(st + jj * B + rv * W, V::mul(acc[jj][rv], sv));
}

template <class V, int RV, int KJ = FullTiles<V>::kKeys>
void full_scores_keys(int nk, const float* qt, const float* k, const float* v, int64_t stride, int hd, float scale,
                      int n_ahead, bool prefetch, float* st) {
  if constexpr (KJ > 1)
    if (nk < KJ) return full_scores_keys<V, RV, KJ - 1>(nk, qt, k, v, stride, hd, scale, n_ahead, prefetch, st);
  full_scores<V, RV, KJ>(qt, k, v, stride, hd, scale, n_ahead, prefetch, st);
}

// ot[d][r] = alpha_r ot[d][r] + sum_{jj < kt} st[jj][r] v_jj[d] for the DJ elements d of [d0, d0 + DJ)
// and the RV row vectors of ot, st and alpha; the keys in ascending order.
template <class V, int RV, int DJ>
void full_pv(const float* st, const float* v, int64_t stride, int kt, int d0, const float* alpha, float* ot) {
  using F = typename V::F;
  constexpr int W = V::kLanes, B = kAttnBatchRows;
  F acc[DJ][RV];
  for (int rv = 0; rv < RV; ++rv) {
    const F al = V::load(alpha + rv * W);
    for (int dd = 0; dd < DJ; ++dd) acc[dd][rv] = V::mul(V::load(ot + (d0 + dd) * B + rv * W), al);
  }
  const float* vr = v + d0;
  for (int jj = 0; jj < kt; ++jj, vr += stride) {
    F p[RV];
    for (int rv = 0; rv < RV; ++rv) p[rv] = V::load(st + jj * B + rv * W);
    for (int dd = 0; dd < DJ; ++dd) {
      const F vd = V::set1(vr[dd]);
      for (int rv = 0; rv < RV; ++rv) acc[dd][rv] = V::fma(p[rv], vd, acc[dd][rv]);
    }
  }
  for (int dd = 0; dd < DJ; ++dd)
    for (int rv = 0; rv < RV; ++rv) V::store(ot + (d0 + dd) * B + rv * W, acc[dd][rv]);
}

template <class V, int RV, int DJ = FullTiles<V>::kCols>
void full_pv_cols(int nd, const float* st, const float* v, int64_t stride, int kt, int d0, const float* alpha,
                  float* ot) {
  if constexpr (DJ > 1)
    if (nd < DJ) return full_pv_cols<V, RV, DJ - 1>(nd, st, v, stride, kt, d0, alpha, ot);
  full_pv<V, RV, DJ>(st, v, stride, kt, d0, alpha, ot);
}

// One tile of kt keys from j0 for the RV row vectors at lane offset r0 of the batch buffers:
// scores (phase 0) or weighted values (phase 1).
template <class V, int RV>
void full_tile(int phase, const float* qt, const float* k, const float* v, int64_t stride, int hd, float scale,
               int64_t j0, int kt, int64_t n, bool prefetch, float* st, const float* alpha, float* ot) {
  constexpr int KJ = FullTiles<V>::kKeys, DJ = FullTiles<V>::kCols, KT = FullTiles<V>::kTile;
  if (phase == 0) {
    for (int jg = 0; jg < kt; jg += KJ) {
      const int nk = kt - jg < KJ ? kt - jg : KJ;
      const int64_t ahead = n - (j0 + jg + KT);
      const int n_ahead = ahead <= 0 ? 0 : ahead >= KJ ? KJ : int(ahead);
      full_scores_keys<V, RV>(nk, qt, k + (j0 + jg) * stride, v + (j0 + jg) * stride, stride, hd, scale, n_ahead,
                              prefetch, st + jg * kAttnBatchRows);
    }
  } else {
    for (int d0 = 0; d0 < hd; d0 += DJ)
      full_pv_cols<V, RV>(hd - d0 < DJ ? hd - d0 : DJ, st, v + j0 * stride, stride, kt, d0, alpha, ot);
  }
}

template <class V, int RV = FullTiles<V>::kRowVecs>
void full_tile_rows(int nrv, int phase, const float* qt, const float* k, const float* v, int64_t stride, int hd,
                    float scale, int64_t j0, int kt, int64_t n, bool prefetch, float* st, const float* alpha,
                    float* ot) {
  if constexpr (RV > 1)
    if (nrv < RV)
      return full_tile_rows<V, RV - 1>(nrv, phase, qt, k, v, stride, hd, scale, j0, kt, n, prefetch, st, alpha, ot);
  full_tile<V, RV>(phase, qt, k, v, stride, hd, scale, j0, kt, n, prefetch, st, alpha, ot);
}

// The softmax step of one tile (kt keys) for nrv row vectors: the running maxima m and sums l move
// on lane-wise, st becomes the weights e^{s - m}, alpha the factors for the old outputs.
template <class V>
void full_softmax(float* st, int kt, int nrv, typename V::F* m, typename V::F* l, float* alpha) {
  using F = typename V::F;
  constexpr int W = V::kLanes, B = kAttnBatchRows;
  for (int rv = 0; rv < nrv; ++rv) {
    float* s = st + rv * W;
    F mx = m[rv];
    for (int jj = 0; jj < kt; ++jj) mx = V::max(mx, V::load(s + jj * B));
    const F al = V::exp(V::sub(m[rv], mx));  // 0 on the first tile (m = -inf)
    F sum = V::zero();
    for (int jj = 0; jj < kt; ++jj) {
      const F p = V::exp(V::sub(V::load(s + jj * B), mx));
      V::store(s + jj * B, p);
      sum = V::add(sum, p);
    }
    l[rv] = V::add(V::mul(l[rv], al), sum);
    m[rv] = mx;
    V::store(alpha + rv * W, al);
  }
}

template <class V>
void attention_full(const AttnArgs& a) {
  using F = typename V::F;
  constexpr int W = V::kLanes, B = kAttnBatchRows, RV = FullTiles<V>::kRowVecs, KT = FullTiles<V>::kTile;
  static_assert(B % W == 0);
  const int hd = a.head_dim;
  const int64_t rows = a.n_q * a.group, n = a.n_kv0, stride = a.kv_stride;
  const float* const kb = static_cast<const float*>(a.k);
  const float* const vb = static_cast<const float*>(a.v);
  alignas(64) float qt[kFullMaxHeadDim * B], ot[kFullMaxHeadDim * B], st[KT * B], alpha[B], lsum[B];
  for (int64_t b0 = 0; b0 < rows; b0 += B) {
    const int nb = rows - b0 < B ? int(rows - b0) : B, nrv = (nb + W - 1) / W;
    const float* q[B];
    float* o[B];
    for (int i = 0; i < nb; ++i) {
      const int64_t t = (b0 + i) / a.group, g = (b0 + i) % a.group;
      q[i] = a.q + t * a.q_stride + g * hd;
      o[i] = a.o + t * a.o_stride + g * hd;
    }
    for (int d = 0; d < hd; ++d)
      for (int r = 0; r < nrv * W; ++r) {
        qt[d * B + r] = r < nb ? q[r][d] : 0.0f;  // lanes past the batch: zero queries, results dropped
        ot[d * B + r] = 0.0f;
      }
    F m[B / W], l[B / W];
    for (int rv = 0; rv < nrv; ++rv) {
      m[rv] = V::set1(-std::numeric_limits<float>::infinity());
      l[rv] = V::zero();
    }
    for (int64_t j0 = 0; j0 < n; j0 += KT) {
      const int kt = n - j0 < KT ? int(n - j0) : KT;
      for (int r0 = 0; r0 < nrv; r0 += RV)
        full_tile_rows<V>(nrv - r0, 0, qt + r0 * W, kb, vb, stride, hd, a.scale, j0, kt, n, r0 == 0, st + r0 * W,
                          alpha + r0 * W, ot + r0 * W);
      full_softmax<V>(st, kt, nrv, m, l, alpha);
      for (int r0 = 0; r0 < nrv; r0 += RV)
        full_tile_rows<V>(nrv - r0, 1, qt + r0 * W, kb, vb, stride, hd, a.scale, j0, kt, n, false, st + r0 * W,
                          alpha + r0 * W, ot + r0 * W);
    }
    for (int rv = 0; rv < nrv; ++rv) V::store(lsum + rv * W, l[rv]);
    for (int i = 0; i < nb; ++i) {
      const float inv = lsum[i] > 0.0f ? 1.0f / lsum[i] : 0.0f;
      for (int d = 0; d < hd; ++d) o[i][d] = ot[d * B + i] * inv;
    }
  }
}

template <class V, bool F16>
void attention_rows(const AttnArgs& a) {
  if constexpr (!F16)
    if (!a.causal && a.head_dim <= kFullMaxHeadDim) return attention_full<V>(a);
  constexpr int R = V::kAttnRows, B = kAttnBatchRows;
  const int hd = a.head_dim;
  const int64_t rows = a.n_q * a.group;  // row (t, g) is number t * group + g
  const KvElem<F16>* const kbase = static_cast<const KvElem<F16>*>(a.k);
  const KvElem<F16>* const vbase = static_cast<const KvElem<F16>*>(a.v);
  for (int64_t b0 = 0; b0 < rows; b0 += B) {
    const int nb = rows - b0 < B ? int(rows - b0) : B;
    const float* q[B];
    float* o[B];
    int64_t n[B];  // visible keys, non-decreasing over the rows
    float m[B], l[B];
    for (int i = 0; i < nb; ++i) {
      const int64_t t = (b0 + i) / a.group, g = (b0 + i) % a.group;
      q[i] = a.q + t * a.q_stride + g * hd;
      o[i] = a.o + t * a.o_stride + g * hd;
      n[i] = a.causal ? a.n_kv0 + t : a.n_kv0;
      m[i] = -std::numeric_limits<float>::infinity();
      l[i] = 0.0f;
      for (int d = 0; d < hd; ++d) o[i][d] = 0.0f;
    }
    const int64_t n_last = a.causal ? a.n_kv0 + (b0 + nb - 1) / a.group : a.n_kv0;  // = n[nb - 1]
    for (int64_t j0 = 0; j0 < n_last; j0 += kAttnTile) {
      alignas(64) float s[B][kAttnTile];
      // Scores, group by group; a group's keys end at its last row's.
      for (int g0 = 0; g0 < nb; g0 += R) {
        const int nr = nb - g0 < R ? nb - g0 : R;
        const int64_t n_group = n[g0 + nr - 1];
        if (n_group <= j0) continue;
        const int64_t nk = n_group - j0 < kAttnTile ? n_group - j0 : kAttnTile;
        attn_scores_rows<V, F16>(nr, q + g0, KvRows<F16>{kbase, a.kv_stride, n_group}, hd, a.scale, j0, nk, s + g0);
      }
      const float* p[B];
      int64_t end[B];  // row i takes keys [j0, end[i]) of this tile
      for (int i = 0; i < nb; ++i) {
        p[i] = s[i];
        end[i] = n[i] < j0 + kAttnTile ? n[i] : j0 + kAttnTile;
        if (end[i] <= j0) continue;
        const float alpha = softmax_tile<V>(s[i], end[i] - j0, m[i], l[i]);
        if (alpha != 1.0f) scale_row<V>(alpha, o[i], hd);
      }
      // Weighted values, group by group: the rows of a group share the keys they all see; the
      // later rows' extra keys follow, still in order.
      for (int g0 = 0; g0 < nb; g0 += R) {
        const int g1 = nb - g0 < R ? nb : g0 + R;
        const KvRows<F16> values{vbase, a.kv_stride, n[g1 - 1]};
        int64_t j = j0;
        for (int i = g0; i < g1; ++i)
          if (end[i] > j) {
            attn_pv_rows<V, F16>(g1 - i, o + i, p + i, values, hd, j, end[i], j0);
            j = end[i];
          }
      }
    }
    for (int i = 0; i < nb; ++i) scale_row<V>(l[i] > 0.0f ? 1.0f / l[i] : 0.0f, o[i], hd);
  }
}

}  // namespace
}  // namespace qwen35::kernels
