// The activations and row operations of the kernel table (kernels.h), written once over a vector
// type V (x86_avx2/vec_avx2.h, x86_avx512/vec_avx512.h); their scalar twins are in kernels/ref/.
// Include only from a file compiled with V's ISA flags (and -ffp-contract=off: every product and
// sum rounds as written); everything here has internal linkage.
//
// Every element goes through the same vector code wherever it sits: a row's tail is a masked
// vector (the masked-out lanes read 0 and are not stored), never a scalar loop, so a value's
// result does not depend on its index, the row's length or its alignment. The norms' sums of
// squares are the exception that proves the rule: they run left to right in float, as the
// reference's do, so that a norm gives the reference's bits on every table (a vector sum would
// reorder them; the scaling after it is vectorised).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

// Calls f(i, mask) for the vectors of [0, n): full ones, then the masked tail.
template <class V, typename F>
inline void each_vector(int64_t n, F f) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) f(i, V::mask(V::kLanes));
  if (i < n) f(i, V::mask(int(n - i)));
}

template <class V>
inline typename V::F sigmoid_v(typename V::F x) {
  using F = typename V::F;
  const F one = V::set1(1.0f);
  const F y = V::div(one, V::add(one, V::exp(V::sub(V::zero(), x))));
  return V::select(V::is_nan(x), x, y);  // NaN stays NaN (e^x clamps its input)
}

template <class V>
inline typename V::F silu_v(typename V::F x) {
  return V::mul(x, sigmoid_v<V>(x));
}

template <class V>
void silu_simd(const float* x, float* y, int64_t n) {
  each_vector<V>(n, [&](int64_t i, auto m) { V::store(y + i, m, silu_v<V>(V::load(x + i, m))); });
}

template <class V>
void sigmoid_simd(const float* x, float* y, int64_t n) {
  each_vector<V>(n, [&](int64_t i, auto m) { V::store(y + i, m, sigmoid_v<V>(V::load(x + i, m))); });
}

template <class V>
void swiglu_simd(const float* g, const float* u, float* y, int64_t n) {
  each_vector<V>(
      n, [&](int64_t i, auto m) { V::store(y + i, m, V::mul(silu_v<V>(V::load(g + i, m)), V::load(u + i, m))); });
}

// The same float steps as the reference's gelu_tanh, then e^x.
template <class V>
void gelu_tanh_simd(const float* x, float* y, int64_t n) {
  const auto k = V::set1(0.7978845608028654f), c = V::set1(0.044715f);
  const auto minus2 = V::set1(-2.0f), one = V::set1(1.0f);
  each_vector<V>(n, [&](int64_t i, auto m) {
    const auto v = V::load(x + i, m);
    const auto cube = V::mul(V::mul(v, v), v);
    const auto u = V::mul(k, V::add(v, V::mul(c, cube)));
    V::store(y + i, m, V::div(v, V::add(one, V::exp(V::mul(minus2, u)))));
  });
}

// Sum of x[i]^2, left to right in float (see the top of the file).
inline float sum_of_squares(const float* x, int64_t n) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  return ss;
}

template <class V>
void rms_norm_simd(const float* x, const float* w, float eps, float* y, int64_t n) {
  const auto inv = V::set1(1.0f / std::sqrt(sum_of_squares(x, n) / float(n) + eps));
  each_vector<V>(
      n, [&](int64_t i, auto m) { V::store(y + i, m, V::mul(V::mul(V::load(x + i, m), inv), V::load(w + i, m))); });
}

template <class V>
void gated_rms_norm_simd(const float* x, const float* w, const float* z, float eps, float* y, int64_t n) {
  const auto inv = V::set1(1.0f / std::sqrt(sum_of_squares(x, n) / float(n) + eps));
  each_vector<V>(n, [&](int64_t i, auto m) {
    const auto normed = V::mul(V::mul(V::load(x + i, m), inv), V::load(w + i, m));
    V::store(y + i, m, V::mul(normed, silu_v<V>(V::load(z + i, m))));
  });
}

template <class V>
void l2_norm_simd(const float* x, float scale, float eps, float* y, int64_t n) {
  const auto inv = V::set1(1.0f / std::sqrt(sum_of_squares(x, n) + eps)), s = V::set1(scale);
  each_vector<V>(n, [&](int64_t i, auto m) { V::store(y + i, m, V::mul(V::mul(V::load(x + i, m), inv), s)); });
}

template <class V>
void add_simd(const float* x, float* y, int64_t n) {
  each_vector<V>(n, [&](int64_t i, auto m) { V::store(y + i, m, V::add(V::load(y + i, m), V::load(x + i, m))); });
}

template <class V>
void sigmoid_gate_simd(const float* g, float* y, int64_t n) {
  each_vector<V>(
      n, [&](int64_t i, auto m) { V::store(y + i, m, V::mul(V::load(y + i, m), sigmoid_v<V>(V::load(g + i, m)))); });
}

template <class V>
void rope_simd(float* x, int64_t heads, int64_t head_stride, int half, const float* cos, const float* sin) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_stride;
    each_vector<V>(half, [&](int64_t d, auto m) {
      const auto a = V::load(v + d, m), b = V::load(v + half + d, m);
      const auto c = V::load(cos + d, m), s = V::load(sin + d, m);
      V::store(v + d, m, V::sub(V::mul(a, c), V::mul(b, s)));
      V::store(v + half + d, m, V::add(V::mul(b, c), V::mul(a, s)));
    });
  }
}

// Channels in vectors: tap j of a token reads its input row (or, for the first K - 1 tokens, the
// state's column K - 1 - ..., K floats apart per channel) and adds its product to the channel's
// sum, as the reference's loops do for each channel. The state then takes the last K inputs.
template <class V>
void causal_conv_simd(const ConvArgs& a) {
  const int64_t C = a.C, T = a.T, K = a.K;
  for (int64_t t = 0; t < T; ++t) {
    float* yt = a.y + t * C;
    each_vector<V>(a.c1 - a.c0, [&](int64_t i, auto m) {
      const int64_t ch = a.c0 + i;
      auto acc = V::zero();
      for (int64_t j = 0; j < K; ++j) {
        const int64_t src = t - (K - 1) + j;  // < 0: from the state
        const auto in = src >= 0 ? V::load(a.x + src * C + ch, m) : V::gather(a.state + ch * K + K + src, K, m);
        acc = V::add(acc, V::mul(V::load(a.taps + j * C + ch, m), in));
      }
      V::store(yt + ch, m, silu_v<V>(acc));
    });
  }
  const int64_t keep = K - T > 0 ? K - T : 0;  // old columns that survive
  for (int64_t ch = a.c0; ch < a.c1; ++ch) {
    float* st = a.state + ch * K;
    for (int64_t j = 0; j < keep; ++j) st[j] = st[K - keep + j];
    for (int64_t j = keep; j < K; ++j) st[j] = a.x[(T - (K - j)) * C + ch];
  }
}

template <class V>
void install_elementwise(KernelTable& k) {
  k.silu = silu_simd<V>;
  k.sigmoid = sigmoid_simd<V>;
  k.swiglu = swiglu_simd<V>;
  k.gelu_tanh = gelu_tanh_simd<V>;
  k.rms_norm = rms_norm_simd<V>;
  k.gated_rms_norm = gated_rms_norm_simd<V>;
  k.l2_norm = l2_norm_simd<V>;
  k.add = add_simd<V>;
  k.sigmoid_gate = sigmoid_gate_simd<V>;
  k.rope = rope_simd<V>;
  k.causal_conv = causal_conv_simd<V>;
}

}  // namespace
}  // namespace qwen35::kernels
