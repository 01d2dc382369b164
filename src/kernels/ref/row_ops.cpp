// The row operations of the decoder and the vision tower in plain scalar C++: the oracle of
// kernels/simd/elementwise_simd.h, and the reference's float steps as written.
#include <cmath>
#include <cstring>

#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels::ref {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x / (1.0f + std::exp(-x)); }

float sum_of_squares(const float* x, int64_t n) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  return ss;
}

// Token t >= K - 1 of the conv reads only new inputs; the first K - 1 reach into the state.
void conv_token(const ConvArgs& a, int64_t t) {
  const int64_t C = a.C, K = a.K;
  float* yt = a.y + t * C;
  if (t >= K - 1) {
    for (int64_t ch = a.c0; ch < a.c1; ++ch) yt[ch] = 0;
    for (int64_t j = 0; j < K; ++j) {
      const float* wj = a.taps + j * C;
      const float* xs = a.x + (t - (K - 1) + j) * C;
      for (int64_t ch = a.c0; ch < a.c1; ++ch) yt[ch] += wj[ch] * xs[ch];
    }
  } else {
    for (int64_t ch = a.c0; ch < a.c1; ++ch) {
      float acc = 0;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t src = t - (K - 1) + j;
        acc += a.taps[j * C + ch] * (src >= 0 ? a.x[src * C + ch] : a.state[ch * K + K + src]);
      }
      yt[ch] = acc;
    }
  }
  for (int64_t ch = a.c0; ch < a.c1; ++ch) yt[ch] = silu(yt[ch]);
}

}  // namespace

void rms_norm(const float* x, const float* w, float eps, float* y, int64_t n) {
  const float inv = 1.0f / std::sqrt(sum_of_squares(x, n) / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * w[i];
}

void gated_rms_norm(const float* x, const float* w, const float* z, float eps, float* y, int64_t n) {
  const float inv = 1.0f / std::sqrt(sum_of_squares(x, n) / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] * inv) * w[i]) * silu(z[i]);
}

void l2_norm(const float* x, float scale, float eps, float* y, int64_t n) {
  const float inv = 1.0f / std::sqrt(sum_of_squares(x, n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * scale;
}

void add(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void sigmoid_gate(const float* g, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= sigmoid(g[i]);
}

void decay_gate(const float* neg_a, const float* dt_bias, float* g, int64_t n) {
  for (int64_t h = 0; h < n; ++h) {
    const float v = g[h] + dt_bias[h];
    const float softplus = v > 20.0f ? v : std::log1p(std::exp(v));
    g[h] = neg_a[h] * softplus;
  }
}

void gelu_erf(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.7071067811865476f));
}

void rope(float* x, int64_t heads, int64_t head_stride, int half, const float* cos, const float* sin) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_stride;
    for (int d = 0; d < half; ++d) {
      const float a = v[d], b = v[d + half];
      v[d] = a * cos[d] - b * sin[d];
      v[d + half] = b * cos[d] + a * sin[d];
    }
  }
}

void causal_conv(const ConvArgs& a) {
  const int64_t C = a.C, K = a.K;
  for (int64_t t = 0; t < a.T; ++t) conv_token(a, t);
  const int64_t keep = K - a.T > 0 ? K - a.T : 0;  // old columns that survive
  for (int64_t ch = a.c0; ch < a.c1; ++ch) {
    float* st = a.state + ch * K;
    float window[16];
    for (int64_t j = 0; j < keep; ++j) window[j] = st[K - keep + j];
    for (int64_t j = keep; j < K; ++j) window[j] = a.x[(a.T - (K - j)) * C + ch];
    std::memcpy(st, window, size_t(K) * sizeof(float));
  }
}

}  // namespace qwen35::kernels::ref
