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
template <int W>
inline typename V<W>::F clamp(typename V<W>::F v, float lo, float hi) {
  using F = typename V<W>::F;
  v = v < lo ? F{} + lo : v;
  return v > hi ? F{} + hi : v;
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
float fit_signed_scale(int n, int nmax, const float* x, int8_t* L) {
  using F = typename V<W>::F;
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0;
  }
  // The 19 candidates k = -9..9 in lanes 0..18; they share no state, so only the final in-order
  // selection is sequential (k = 0, the plain fit, first; then ascending k, strictly better).
  constexpr int kCandidates = 19, kCenter = 9, kGroups = (kCandidates + W - 1) / W;
  float inv[kGroups * W], wxl[kGroups * W], wll[kGroups * W];
  for (int c = 0; c < kGroups * W; ++c) {
    const int k = std::min(c, kCandidates - 1) - kCenter;
    inv[c] = k == 0 ? float(-nmax) / max : -(float(nmax) + 0.1f * float(k)) / max;
  }
  const float lo = float(-nmax), hi = float(nmax - 1);
  for (int g = 0; g < kGroups; ++g) {
    F vinv, sxl = {}, sll = {};
    std::memcpy(&vinv, inv + g * W, sizeof vinv);
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const F l = clamp<W>(rounded<W>(vinv * x[i]), lo, hi);
      sxl += w * x[i] * l;
      sll += w * l * l;
    }
    std::memcpy(wxl + g * W, &sxl, sizeof sxl);
    std::memcpy(wll + g * W, &sll, sizeof sll);
  }
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
  for (int i = 0; i < n; ++i)
    L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, round_nearest(inv[pick] * x[i]))));
  return scale;
}

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

  // Candidates go in chunks of W, all computed with the current minimum. Accepting a candidate
  // moves the minimum, which invalidates the lanes after it; the next chunk then starts right
  // after the accepted candidate.
  F q[32];
  for (int k0 = 0; k0 <= g.nstep;) {
    F vinv;
    for (int c = 0; c < W; ++c) vinv[c] = (g.rmin + g.rdelta * float(k0 + c) + top) / (max - min);
    F sl = {}, sl2 = {}, sxl = {};
    for (int i = 0; i < n; ++i) {
      const F l = clamp<W>(rounded<W>(vinv * (x[i] - min)), 0.0f, top);
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

template <int W>
float fit_iq4_scale(int n, const float* x, int ntry) {
  using F = typename V<W>::F;
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) return 0;
  // Lane 0: the first fit from d = -max / values[0]; lanes 1..2 ntry + 1: k = -ntry..ntry.
  const int candidates = 2 * ntry + 2;
  const int groups = (candidates + W - 1) / W;
  float inv[64], qx[64] = {}, qq[64] = {};
  const float d0 = ntry > 0 ? -max / float(kIQ4Values[0]) : max / float(kIQ4Values[0]);
  for (int c = 0; c < groups * W; ++c) {
    const int k = std::min(c, candidates - 1) - 1 - ntry;
    inv[c] = c == 0 ? 1 / d0 : float(k + kIQ4Values[0]) / max;
  }
  for (int gr = 0; gr < groups; ++gr) {
    F vinv, sqx = {}, sqq = {};
    std::memcpy(&vinv, inv + gr * W, sizeof vinv);
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const F q = iq4_nearest_value<W>(vinv * x[i]);
      sqx += w * q * x[i];
      sqq += w * q * q;
    }
    std::memcpy(qx + gr * W, &sqx, sizeof sqx);
    std::memcpy(qq + gr * W, &sqq, sizeof sqq);
  }
  float d = qq[0] > 0 ? qx[0] / qq[0] : 0.0f;
  float best = d * qx[0];
  for (int c = 1; c < candidates; ++c)
    if (qq[c] > 0 && qx[c] * qx[c] > best * qq[c]) {
      d = qx[c] / qq[c];
      best = d * qx[c];
    }
  return d;
}

}  // namespace qwen35::kernels::quant::lanes
