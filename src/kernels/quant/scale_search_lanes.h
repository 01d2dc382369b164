// The scale searches with one candidate per vector lane (internal to kernels/quant): included by
// one .cpp per ISA, each compiled with that ISA's flags and -ffp-contract=off (a fused multiply-add
// would round differently from ggml, whose quantizers are compiled without FMA).
//
// Each lane performs exactly the float operations of the one-candidate-at-a-time search
// (scale_search.cpp, the "_ref" functions) in the same element order; the lanes only take
// candidates side by side, so results are bit-identical to the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/quant/blocks.h"
#include "kernels/quant/scale_search.h"

namespace qwen35::kernels::quant::lanes {

// W candidates side by side as GCC/Clang vector types; operators act lane by lane with IEEE
// semantics, like the scalar code.
template <int W>
struct V {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
};

// round_nearest in every lane, as a float (the integer is exact in a float, and clamping it as a
// float gives the clamp of the int).
template <int W>
inline typename V<W>::F rounded(typename V<W>::F v) {
  using I = typename V<W>::I;
  using F = typename V<W>::F;
  const I bits = reinterpret_cast<I>(v + 12582912.0f);
  return __builtin_convertvector((bits & 0x007fffff) - 0x00400000, F);
}
// v is never NaN here (it comes from rounded), so this is exactly the scalar clamp; written as
// max/min of splatted bounds so that it compiles to two instructions.
template <int W>
inline typename V<W>::F clamp(typename V<W>::F v, typename V<W>::F lo, typename V<W>::F hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}
template <int W>
inline typename V<W>::F absolute(typename V<W>::F v) {
  using I = typename V<W>::I;
  using F = typename V<W>::F;
  return reinterpret_cast<F>(reinterpret_cast<I>(v) & 0x7fffffff);
}

// The element of largest magnitude with its sign (first one on a tie), as in the reference.
inline float signed_absmax(int n, const float* x, float* absmax) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > amax) {
      amax = a;
      max = x[i];
    }
  }
  *absmax = amax;
  return max;
}

template <int W>
void fit_signed_scale(int n, int nmax, const float* x, int8_t* L, float* scale_out) {
  using F = typename V<W>::F;
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    *scale_out = 0;
    return;
  }
  // The 19 candidates k = -9..9 in lanes 0..18 of G vectors; they share no state, so only the
  // final in-order selection is sequential (k = 0, the plain fit, first; then ascending k).
  constexpr int kCandidates = 19, kCenter = 9, G = (kCandidates + W - 1) / W;
  float inv[G * W];
  for (int c = 0; c < G * W; ++c) {
    const int k = std::min(c, kCandidates - 1) - kCenter;
    inv[c] = k == 0 ? float(-nmax) / max : -(float(nmax) + 0.1f * float(k)) / max;
  }
  F vinv[G], sxl[G] = {}, sll[G] = {};
  for (int g = 0; g < G; ++g) std::memcpy(&vinv[g], inv + g * W, sizeof(F));
  const F lo = F{} + float(-nmax), hi = F{} + float(nmax - 1);
  for (int i = 0; i < n; ++i) {
    const float w = x[i] * x[i], wx = w * x[i];
    for (int g = 0; g < G; ++g) {
      const F l = clamp<W>(rounded<W>(vinv[g] * x[i]), lo, hi);
      sxl[g] += wx * l;
      sll[g] += w * l * l;
    }
  }
  float wxl[G * W], wll[G * W];
  std::memcpy(wxl, sxl, sizeof sxl);
  std::memcpy(wll, sll, sizeof sll);
  int pick = kCenter;
  float scale = wll[kCenter] != 0 ? wxl[kCenter] / wll[kCenter] : 0.0f;
  float best = scale * wxl[kCenter];
  for (int c = 0; c < kCandidates; ++c) {
    if (c == kCenter) continue;
    if (wll[c] > 0 && wxl[c] * wxl[c] > best * wll[c]) {
      scale = wxl[c] / wll[c];
      best = scale * wxl[c];
      pick = c;
    }
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, round_nearest(inv[pick] * x[i]))));
  *scale_out = scale;
}

template <int W>
void fit_signed_scales(int groups, int n, int nmax, const float* x, int8_t* L, float* scales) {
  for (int j = 0; j < groups; ++j) fit_signed_scale<W>(n, nmax, x + j * n, L + j * n, scales + j);
}

// The affine search: the plain min/max fit, then the grid's candidates in chunks of W, all
// computed with the current minimum. Accepting a candidate moves the minimum, which invalidates
// the lanes after it; the next chunk then starts right after the accepted candidate.
template <int W>
AffineFit fit_scale_and_min(int n, const float* x, const float* w, const AffineGrid& g, uint8_t* L) {
  using F = typename V<W>::F;
  using I = typename V<W>::I;
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    return {0.0f, -min};
  }
  const float top = float(g.nmax);
  float inv = top / (max - min);
  float scale = 1 / inv;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(std::max(0, std::min(g.nmax, round_nearest(inv * (x[i] - min)))));
    const float d = scale * float(L[i]) + min - x[i];
    best_error += w[i] * (g.abs_error ? std::fabs(d) : d * d);
  }
  if (g.nstep < 1) return {scale, -min};

  F lane_k;  // 0, 1, .., W - 1
  for (int c = 0; c < W; ++c) lane_k[c] = float(c);
  const F zero_v = {}, top_v = F{} + top;
  F q[32];
  for (int k0 = 0; k0 <= g.nstep;) {
    // (rmin + rdelta k + nmax) / (max - min) in every lane, as the scalar search forms it.
    const F vinv = (g.rmin + g.rdelta * (lane_k + float(k0)) + top) / (max - min);
    F sl = {}, sl2 = {}, sxl = {};
    for (int i = 0; i < n; ++i) {
      const F l = clamp<W>(rounded<W>(vinv * (x[i] - min)), zero_v, top_v);
      q[i] = l;
      sl += w[i] * l;
      sl2 += w[i] * l * l;
      sxl += w[i] * l * x[i];
    }
    const F det = sum_w * sl2 - sl * sl;
    F ts = (sum_w * sxl - sum_x * sl) / det;
    F tm = (sl2 * sum_x - sl * sxl) / det;
    const I positive_min = tm > 0.0f;  // the minimum is subtracted, never added: refit without it
    ts = positive_min ? sxl / sl2 : ts;
    tm = positive_min ? F{} : tm;
    F err = {};
    if (g.abs_error) {
      for (int i = 0; i < n; ++i) err += w[i] * absolute<W>(ts * q[i] + tm - x[i]);
    } else {
      for (int i = 0; i < n; ++i) {
        const F d = ts * q[i] + tm - x[i];
        err += w[i] * (d * d);
      }
    }
    const int lanes = std::min(W, g.nstep + 1 - k0);
    int next = k0 + lanes;
    for (int c = 0; c < lanes; ++c) {
      if (!(det[c] > 0) || !(err[c] < best_error)) continue;
      for (int i = 0; i < n; ++i) L[i] = uint8_t(q[i][c]);
      best_error = err[c];
      scale = ts[c];
      min = tm[c];
      next = k0 + c + 1;
      break;
    }
    k0 = next;
  }
  return {scale, -min};
}

template <int W>
void fit_scales_and_mins(int groups, int n, const float* x, const float* w, const AffineGrid& g, uint8_t* L,
                         AffineFit* fits) {
  for (int j = 0; j < groups; ++j) fits[j] = fit_scale_and_min<W>(n, x + j * n, w + j * n, g, L + j * n);
}

// The code book value nearest to v in every lane, with iq4_nearest_index's tie and NaN rules:
// lo/hi bracket v (lo = the largest entry not above it), then the nearer one wins, hi on a tie.
template <int W>
inline typename V<W>::F iq4_nearest_value(typename V<W>::F v) {
  using F = typename V<W>::F;
  F lo = F{} + float(kIQ4Values[0]), hi = F{} + float(kIQ4Values[1]);
  for (int k = 1; k < 15; ++k) {
    const auto above = !(v < float(kIQ4Values[k]));
    lo = above ? F{} + float(kIQ4Values[k]) : lo;
    hi = above ? F{} + float(kIQ4Values[k + 1]) : hi;
  }
  return v - lo < hi - v ? lo : hi;
}

// The lanes take the 7 tries the quantizers use; any other count runs the reference scan.
constexpr int kIq4Tries = 7;

// Lane 0: the first fit from d = -max / values[0]; lanes 1 .. 2 ntry + 1: k = -ntry..ntry. No
// state is shared between candidates.
template <int W>
float fit_iq4_scale(int n, const float* x) {
  using F = typename V<W>::F;
  constexpr int ntry = kIq4Tries, candidates = 2 * ntry + 2, G = (candidates + W - 1) / W;
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) return 0;
  const float d0 = -max / float(kIQ4Values[0]);
  float inv[G * W];
  for (int c = 0; c < G * W; ++c) {
    const int k = std::min(c, candidates - 1) - 1 - ntry;
    inv[c] = c == 0 ? 1 / d0 : float(k + kIQ4Values[0]) / max;
  }
  F vinv[G], sqx[G] = {}, sqq[G] = {};
  for (int g = 0; g < G; ++g) std::memcpy(&vinv[g], inv + g * W, sizeof(F));
  for (int i = 0; i < n; ++i) {
    const float w = x[i] * x[i];
    for (int g = 0; g < G; ++g) {
      const F q = iq4_nearest_value<W>(vinv[g] * x[i]);
      sqx[g] += w * q * x[i];
      sqq[g] += w * q * q;
    }
  }
  float qx[G * W], qq[G * W];
  std::memcpy(qx, sqx, sizeof sqx);
  std::memcpy(qq, sqq, sizeof sqq);
  float d = qq[0] > 0 ? qx[0] / qq[0] : 0.0f;
  float best = d * qx[0];
  for (int c = 1; c < candidates; ++c)
    if (qq[c] > 0 && qx[c] * qx[c] > best * qq[c]) {
      d = qx[c] / qq[c];
      best = d * qx[c];
    }
  return d;
}

template <int W>
void fit_iq4_scales(int groups, int n, const float* x, int ntry, float* scales) {
  for (int j = 0; j < groups; ++j)
    scales[j] = ntry == kIq4Tries ? fit_iq4_scale<W>(n, x + j * n) : fit_iq4_scale_ref(n, x + j * n, ntry);
}

}  // namespace qwen35::kernels::quant::lanes
