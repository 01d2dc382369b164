#include "model/deltanet.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/norm.h"

namespace qwen35 {

void DeltaNetScratch::reserve(const TextConfig& cfg, int64_t tokens) {
  if (tokens <= capacity) return;
  capacity = tokens;
  const size_t T = size_t(tokens), C = size_t(cfg.conv_dim()), VS = size_t(cfg.deltanet_value_size());
  const size_t Hv = size_t(cfg.linear_value_heads), QK = size_t(cfg.linear_key_heads) * size_t(cfg.linear_key_dim);
  qkv.resize(T * C);
  mixed.resize(T * C);
  z.resize(T * VS);
  beta.resize(T * Hv);
  g.resize(T * Hv);
  q.resize(T * QK);
  k.resize(T * QK);
  core.resize(T * VS);
}

namespace {

// Causal depthwise conv over [cached K inputs | T new inputs], then SiLU. The state keeps the
// last K pre-conv inputs (oldest first), as the reference cache does.
void causal_conv_silu(const TextConfig& cfg, const std::vector<float>& weight, const float* x, int64_t T,
                      std::vector<float>& conv_state, float* y) {
  const int64_t C = cfg.conv_dim(), K = cfg.conv_kernel;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t ch = 0; ch < C; ++ch) {
      const float* w = weight.data() + ch * K;
      float acc = 0;
      for (int64_t j = 0; j < K; ++j) {
        // Input at time t - (K-1) + j; negative times come from the state's last K-1 columns.
        const int64_t src = t - (K - 1) + j;
        const float v = src >= 0 ? x[src * C + ch] : conv_state[size_t(ch * K + K + src)];
        acc += w[j] * v;
      }
      y[t * C + ch] = silu(acc);
    }
  }
  // New state: the last K of [old state | new inputs].
  for (int64_t ch = 0; ch < C; ++ch) {
    float* st = conv_state.data() + ch * K;
    float window[16];
    const int64_t keep = std::max<int64_t>(0, K - T);  // old columns that survive
    for (int64_t j = 0; j < keep; ++j) window[j] = st[K - keep + j];
    for (int64_t j = keep; j < K; ++j) window[j] = x[(T - (K - j)) * C + ch];
    std::memcpy(st, window, size_t(K) * sizeof(float));
  }
}

// x / sqrt(sum x^2 + 1e-6) * scale, the reference's l2norm (eps inside the root, fixed 1e-6).
void l2_normalize(const float* x, int64_t n, float scale, float* y) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss + 1e-6f);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * scale;
}

// beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias) in place, and the normalised q, k of
// every token from the conv output.
void gates_and_qk(const TextConfig& cfg, const DeltaNetWeights& w, int64_t T, DeltaNetScratch& s) {
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim;
  const int64_t QK = Hk * dk;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      float& b = s.beta[size_t(t * Hv + h)];
      float& g = s.g[size_t(t * Hv + h)];
      b = sigmoid(b);
      g = w.neg_a[size_t(h)] * softplus(g + w.dt_bias[size_t(h)]);
    }
    const float* row = s.mixed.data() + t * C;
    const float q_scale = 1.0f / std::sqrt(float(dk));
    for (int64_t h = 0; h < Hk; ++h) {
      l2_normalize(row + h * dk, dk, q_scale, s.q.data() + t * QK + h * dk);
      l2_normalize(row + QK + h * dk, dk, 1.0f, s.k.data() + t * QK + h * dk);
    }
  }
}

// The delta rule of every value head over T tokens, from and into state.recurrent; outputs to s.core.
void delta_rule(const kernels::Compute& c, const TextConfig& cfg, int64_t T, bool chunked, DeltaNetState& state,
                DeltaNetScratch& s) {
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  const int64_t QK = Hk * dk, VS = Hv * int64_t(dv);
  // Value head h reads key head h / (Hv / Hk) (consecutive value heads share a key head).
  const int64_t group = Hv / Hk;
  c.pool->parallel_for(size_t(Hv), 1, [&](size_t hb, size_t he) {
    thread_local std::vector<float> work;
    work.resize(kernels::delta_chunk_work_floats(dk, dv));
    for (size_t hv = hb; hv < he; ++hv) {
      const int64_t h = int64_t(hv), kh = h / group;
      kernels::DeltaRuleHead head;
      head.q = s.q.data() + kh * dk;
      head.k = s.k.data() + kh * dk;
      head.qk_stride = QK;
      head.v = s.mixed.data() + 2 * QK + h * dv;
      head.v_stride = C;
      head.beta = s.beta.data() + h;
      head.g = s.g.data() + h;
      head.gate_stride = Hv;
      head.o = s.core.data() + h * dv;
      head.o_stride = VS;
      float* S = state.recurrent.data() + h * dk * dv;
      if (!chunked) {
        c.k->delta_recurrent(head, T, dk, dv, S);
        continue;
      }
      for (int64_t t0 = 0; t0 < T; t0 += kernels::kDeltaChunk) {
        const int64_t n = std::min(kernels::kDeltaChunk, T - t0);
        kernels::DeltaRuleHead part = head;
        part.q += t0 * QK;
        part.k += t0 * QK;
        part.v += t0 * C;
        part.beta += t0 * Hv;
        part.g += t0 * Hv;
        part.o += t0 * VS;
        c.k->delta_chunk(part, n, dk, dv, S, work.data());
      }
    }
  });
}

}  // namespace

void deltanet_forward(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* a,
                      int64_t T, DeltaNetState& state, DeltaNetScratch& s, DeltaRuleMode mode, float* out,
                      DeltaNetTrace* trace) {
  s.reserve(cfg, T);
  const int64_t C = cfg.conv_dim(), Hv = cfg.linear_value_heads;
  const int dv = cfg.linear_value_dim;
  const int64_t VS = Hv * int64_t(dv);

  kernels::linear(c, a, T, w.in_qkv, s.qkv.data());  // [T, C]
  kernels::linear(c, a, T, w.in_z, s.z.data());      // [T, VS]
  kernels::linear(c, a, T, w.in_b, s.beta.data());   // [T, Hv] logits
  kernels::linear(c, a, T, w.in_a, s.g.data());      // [T, Hv] decay input
  if (trace) {
    trace->tokens = T;
    trace->qkv.assign(s.qkv.begin(), s.qkv.begin() + T * C);
    trace->b.assign(s.beta.begin(), s.beta.begin() + T * Hv);
    trace->a.assign(s.g.begin(), s.g.begin() + T * Hv);
  }

  causal_conv_silu(cfg, w.conv, s.qkv.data(), T, state.conv, s.mixed.data());
  gates_and_qk(cfg, w, T, s);
  delta_rule(c, cfg, T, mode == DeltaRuleMode::kChunked || (mode == DeltaRuleMode::kAuto && T > 1), state, s);

  // Gated RMSNorm per head: norm(o) * w * silu(z), with the plain (not 1 + w) weight.
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      float* o = s.core.data() + t * VS + h * dv;
      const float* z = s.z.data() + t * VS + h * dv;
      rms_norm(o, w.norm.data(), dv, cfg.rms_norm_eps, o);
      for (int j = 0; j < dv; ++j) o[j] *= silu(z[j]);
    }
  }
  kernels::linear(c, s.core.data(), T, w.out, out);
}

void deltanet_replay(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                     const DeltaNetTrace& trace, int64_t n, DeltaNetState& state, DeltaNetScratch& s) {
  if (n <= 0) return;
  if (n > trace.tokens) fail("deltanet_replay: ", n, " tokens asked of a trace of ", trace.tokens);
  s.reserve(cfg, n);
  const int64_t Hv = cfg.linear_value_heads;
  std::copy_n(trace.b.begin(), n * Hv, s.beta.begin());
  std::copy_n(trace.a.begin(), n * Hv, s.g.begin());
  causal_conv_silu(cfg, w.conv, trace.qkv.data(), n, state.conv, s.mixed.data());
  gates_and_qk(cfg, w, n, s);
  delta_rule(c, cfg, n, /*chunked=*/false, state, s);
}

}  // namespace qwen35
