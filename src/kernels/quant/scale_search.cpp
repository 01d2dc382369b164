#include "kernels/quant/scale_search.h"

#include <algorithm>
#include <cmath>

#include "kernels/quant/blocks.h"
#include "kernels/kernels.h"

namespace qwen35::kernels::quant {
namespace {

// The element of largest magnitude, keeping its sign; the first one wins a tie.
float signed_absmax(int n, const float* x, float* absmax) {
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

int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// The weighted sums of one symmetric candidate: sum w x l and sum w l^2, w = x^2.
struct SymmetricSums {
  float wxl = 0, wll = 0;
};

SymmetricSums symmetric_sums(int n, int nmax, const float* x, float inv_scale) {
  SymmetricSums s;
  for (int i = 0; i < n; ++i) {
    const float l = float(clamp_int(round_nearest(inv_scale * x[i]), -nmax, nmax - 1));
    const float w = x[i] * x[i];
    s.wxl += w * x[i] * l;
    s.wll += w * l * l;
  }
  return s;
}

void symmetric_quants(int n, int nmax, const float* x, float inv_scale, int8_t* L) {
  for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + clamp_int(round_nearest(inv_scale * x[i]), -nmax, nmax - 1));
}

}  // namespace

float fit_signed_scale_ref(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0;
  }
  // Candidate k = 0 is the plain fit -nmax / max; the others are tried in ascending k and must
  // beat the best so far strictly, as in ggml.
  float inv = float(-nmax) / max;
  symmetric_quants(n, nmax, x, inv, L);
  SymmetricSums s = symmetric_sums(n, nmax, x, inv);
  float scale = s.wll != 0 ? s.wxl / s.wll : 0.0f;
  float best = scale * s.wxl;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    inv = -(float(nmax) + 0.1f * float(k)) / max;
    s = symmetric_sums(n, nmax, x, inv);
    if (s.wll > 0 && s.wxl * s.wxl > best * s.wll) {
      symmetric_quants(n, nmax, x, inv, L);
      scale = s.wxl / s.wll;
      best = scale * s.wxl;
    }
  }
  return scale;
}

float fit_signed_scale_refined(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0;
  }
  const float inv = float(-nmax) / max;
  float wxl = 0, wll = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(round_nearest(inv * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    wxl += w * x[i] * float(l);
    wll += w * float(l) * float(l);
  }
  // Coordinate descent: move one quant to the value that is optimal for it given the others,
  // keep the move if the fit (wxl^2 / wll) improves.
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float wxl_i = wxl - w * x[i] * float(L[i]);
      if (!(wxl_i > 0)) continue;
      float wll_i = wll - w * float(L[i]) * float(L[i]);
      const int l = clamp_int(round_nearest(x[i] * wll_i / wxl_i), -nmax, nmax - 1);
      if (l == L[i]) continue;
      wxl_i += w * x[i] * float(l);
      wll_i += w * float(l) * float(l);
      if (wll_i > 0 && wxl_i * wxl_i * wll > wxl * wxl * wll_i) {
        L[i] = int8_t(l);
        wxl = wxl_i;
        wll = wll_i;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return wll > 0.0f ? wxl / wll : 0.0f;
}

AffineFit fit_scale_and_min_ref(int n, const float* x, const float* w, const AffineGrid& g, uint8_t* L) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;  // the minimum is subtracted, never added
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    return {0.0f, -min};
  }
  const auto error_of = [&](float d) { return g.abs_error ? std::fabs(d) : d * d; };

  // The plain fit through min and max.
  float inv = float(g.nmax) / (max - min);
  float scale = 1 / inv;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(clamp_int(round_nearest(inv * (x[i] - min)), 0, g.nmax));
    best_error += w[i] * error_of(scale * float(L[i]) + min - x[i]);
  }
  if (g.nstep < 1) return {scale, -min};

  uint8_t trial[256];
  for (int k = 0; k <= g.nstep; ++k) {
    inv = (g.rmin + g.rdelta * float(k) + float(g.nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_nearest(inv * (x[i] - min)), 0, g.nmax);
      trial[i] = uint8_t(l);
      sum_l += w[i] * float(l);
      sum_l2 += w[i] * float(l) * float(l);
      sum_xl += w[i] * float(l) * x[i];
    }
    // Weighted least squares for scale and min given these quants.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) error += w[i] * error_of(this_scale * float(trial[i]) + this_min - x[i]);
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  return {scale, -min};
}

int iq4_nearest_index(float x) {
  const int8_t* v = kIQ4Values;
  if (x <= float(v[0])) return 0;
  if (x >= float(v[15])) return 15;
  // upper = the first entry above x (v[upper - 1] <= x < v[upper]).
  int upper = 1;
  while (upper < 15 && !(x < float(v[upper]))) ++upper;
  return x - float(v[upper - 1]) < float(v[upper]) - x ? upper - 1 : upper;
}

float fit_iq4_scale_ref(int n, const float* x, int ntry) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEps) return 0;
  const int8_t* v = kIQ4Values;
  const auto sums = [&](float inv, float& qx, float& qq) {
    qx = qq = 0;
    for (int i = 0; i < n; ++i) {
      const float q = float(v[iq4_nearest_index(inv * x[i])]);
      const float w = x[i] * x[i];
      qx += w * q * x[i];
      qq += w * q * q;
    }
  };
  float d = ntry > 0 ? -max / float(v[0]) : max / float(v[0]);
  float qx, qq;
  sums(1 / d, qx, qq);
  d = qq > 0 ? qx / qq : 0.0f;
  float best = d * qx;
  for (int k = -ntry; k <= ntry; ++k) {
    sums(float(k + v[0]) / max, qx, qq);
    if (qq > 0 && qx * qx > best * qq) {
      d = qx / qq;
      best = d * qx;
    }
  }
  return d;
}

// Defined in the ISA files, compiled with their ISA's flags: use only after the feature check.
const ScaleSearchTable& avx2_scale_search_unchecked();
const ScaleSearchTable& avx512_scale_search_unchecked();

namespace {

void ref_signed_scales(int groups, int n, int nmax, const float* x, int8_t* L, float* scales) {
  for (int j = 0; j < groups; ++j) scales[j] = fit_signed_scale_ref(n, nmax, x + j * n, L + j * n);
}
void ref_scales_and_mins(int groups, int n, const float* x, const float* w, const AffineGrid& grid, uint8_t* L,
                         AffineFit* fits) {
  for (int j = 0; j < groups; ++j) fits[j] = fit_scale_and_min_ref(n, x + j * n, w + j * n, grid, L + j * n);
}
void ref_iq4_scales(int groups, int n, const float* x, int ntry, float* scales) {
  for (int j = 0; j < groups; ++j) scales[j] = fit_iq4_scale_ref(n, x + j * n, ntry);
}

}  // namespace

const ScaleSearchTable& ref_scale_search() {
  static const ScaleSearchTable table{"ref", ref_signed_scales, ref_scales_and_mins, ref_iq4_scales};
  return table;
}

std::vector<const ScaleSearchTable*> supported_scale_searches() {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  static const bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  std::vector<const ScaleSearchTable*> out{&ref_scale_search()};
  if (has_avx2) out.push_back(&avx2_scale_search_unchecked());
  if (has_avx512) out.push_back(&avx512_scale_search_unchecked());
  return out;
}

const ScaleSearchTable& active_scale_search() {
  // The kernel table's ISA (QWEN35_ISA=ref forces the one-candidate-at-a-time oracle).
  static const ScaleSearchTable* chosen = [] {
    const std::vector<const ScaleSearchTable*> all = supported_scale_searches();
    for (const ScaleSearchTable* t : all)
      if (t->name == active_table().name) return t;
    return all.back();
  }();
  return *chosen;
}

void fit_signed_scales(int groups, int n, int nmax, const float* x, int8_t* L, float* scales) {
  active_scale_search().fit_signed_scales(groups, n, nmax, x, L, scales);
}
void fit_scales_and_mins(int groups, int n, const float* x, const float* w, const AffineGrid& grid, uint8_t* L,
                         AffineFit* fits) {
  active_scale_search().fit_scales_and_mins(groups, n, x, w, grid, L, fits);
}
void fit_iq4_scales(int groups, int n, const float* x, int ntry, float* scales) {
  active_scale_search().fit_iq4_scales(groups, n, x, ntry, scales);
}

}  // namespace qwen35::kernels::quant
