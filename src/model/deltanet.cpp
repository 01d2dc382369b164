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

// Blocks this long split their token or channel loops over the pool; shorter ones (decoding)
// run on the calling thread, where the loops cost less than a hand-over.
constexpr int64_t kParallelTokens = 8;

// Causal depthwise conv over [cached K inputs | T new inputs] for channels [c0, c1), then SiLU.
// The state keeps the last K pre-conv inputs (oldest first), as the reference cache does. Taps
// are summed in tap order for every channel and token.
void causal_conv_silu(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* x,
                      int64_t T, const float* state, float* y, int64_t c0, int64_t c1) {
  const int64_t C = cfg.conv_dim(), K = cfg.conv_kernel;
  for (int64_t t = 0; t < T; ++t) {
    float* yt = y + t * C;
    if (t >= K - 1) {
      for (int64_t ch = c0; ch < c1; ++ch) yt[ch] = 0;
      for (int64_t j = 0; j < K; ++j) {
        const float* wj = w.conv_t.data() + j * C;
        const float* xs = x + (t - (K - 1) + j) * C;
        for (int64_t ch = c0; ch < c1; ++ch) yt[ch] += wj[ch] * xs[ch];
      }
    } else {
      // Inputs before this block come from the state's last K-1 columns.
      for (int64_t ch = c0; ch < c1; ++ch) {
        float acc = 0;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t src = t - (K - 1) + j;
          acc += w.conv_t[size_t(j * C + ch)] * (src >= 0 ? x[src * C + ch] : state[ch * K + K + src]);
        }
        yt[ch] = acc;
      }
    }
    c.k->silu(yt + c0, yt + c0, c1 - c0);
  }
}

// New conv state: the last K of [old state | new inputs], for channels [c0, c1).
void update_conv_state(const TextConfig& cfg, const float* x, int64_t T, float* state, int64_t c0, int64_t c1) {
  const int64_t C = cfg.conv_dim(), K = cfg.conv_kernel;
  const int64_t keep = std::max<int64_t>(0, K - T);  // old columns that survive
  for (int64_t ch = c0; ch < c1; ++ch) {
    float* st = state + ch * K;
    float window[16];
    for (int64_t j = 0; j < keep; ++j) window[j] = st[K - keep + j];
    for (int64_t j = keep; j < K; ++j) window[j] = x[(T - (K - j)) * C + ch];
    std::memcpy(st, window, size_t(K) * sizeof(float));
  }
}

// One new token (decoding), channels [c0, c1): causal_conv_silu and update_conv_state in one
// pass, without their general window handling and per-channel copy, which cost more than the
// taps here. The taps are summed in the same order from the same zero, so the bits are the same.
// K is a constant so that the state's shift stays in registers (as a loop GCC made it a memmove
// call per channel).
template <int K>
void conv_step_silu(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* x,
                    float* state, float* y, int64_t c0, int64_t c1) {
  const int64_t C = cfg.conv_dim();
  const float* taps = w.conv_t.data();
  for (int64_t ch = c0; ch < c1; ++ch) {
    float* st = state + ch * K;
    float win[K];
    for (int j = 0; j + 1 < K; ++j) win[j] = st[j + 1];
    win[K - 1] = x[ch];
    float acc = 0;
    for (int j = 0; j < K; ++j) acc += taps[j * C + ch] * win[j];
    for (int j = 0; j < K; ++j) st[j] = win[j];
    y[ch] = acc;
  }
  c.k->silu(y + c0, y + c0, c1 - c0);
}

// x / sqrt(sum x^2 + 1e-6) * scale, the reference's l2norm (eps inside the root, fixed 1e-6).
void l2_normalize(const float* x, int64_t n, float scale, float* y) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss + 1e-6f);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * scale;
}

// Key head kh of token row t: its q (scaled by 1/sqrt(dk)) and k, l2-normalised from s.mixed
// into s.q and s.k.
void normalize_qk(const TextConfig& cfg, DeltaNetScratch& s, int64_t t, int64_t kh) {
  const int64_t C = cfg.conv_dim(), QK = cfg.linear_key_heads * cfg.linear_key_dim;
  const int dk = cfg.linear_key_dim;
  const float* row = s.mixed.data() + t * C;
  l2_normalize(row + kh * dk, dk, 1.0f / std::sqrt(float(dk)), s.q.data() + t * QK + kh * dk);
  l2_normalize(row + QK + kh * dk, dk, 1.0f, s.k.data() + t * QK + kh * dk);
}

// Value head h of token row t: the decay and beta logits in s.g and s.beta turned into gates in
// place.
void head_gates(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s,
                int64_t t, int64_t h) {
  const size_t i = size_t(t * cfg.linear_value_heads + h);
  s.g[i] = w.neg_a[size_t(h)] * softplus(s.g[i] + w.dt_bias[size_t(h)]);
  c.k->sigmoid(&s.beta[i], &s.beta[i], 1);
}

// Runs fn(begin, end) over [0, n) on the pool when the block is long, inline otherwise.
template <typename F>
void for_range(const kernels::Compute& c, int64_t T, int64_t n, int64_t grain, F&& fn) {
  if (T < kParallelTokens) return fn(int64_t(0), n);
  c.pool->parallel_for(size_t(n), size_t(grain), [&](size_t b, size_t e) { fn(int64_t(b), int64_t(e)); });
}

// The conv (with its state update) and the gates of the spans' tokens (T in all, in span order):
// qkv -> s.mixed, s.q, s.k; the beta and decay logits in s.beta, s.g turned into gates in place.
void conv_and_gates(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* qkv,
                    std::span<const DeltaNetSpan> spans, int64_t T, DeltaNetScratch& s) {
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  // Conv over channel blocks (each channel is independent along time), every span on its state.
  for_range(c, T, C, 256, [&](int64_t c0, int64_t c1) {
    int64_t t0 = 0;
    for (const DeltaNetSpan& sp : spans) {
      if (sp.T == 1 && cfg.conv_kernel == 4) {
        conv_step_silu<4>(c, cfg, w, qkv + t0 * C, sp.state->conv.data(), s.mixed.data() + t0 * C, c0, c1);
      } else {
        causal_conv_silu(c, cfg, w, qkv + t0 * C, sp.T, sp.state->conv.data(), s.mixed.data() + t0 * C, c0, c1);
        update_conv_state(cfg, qkv + t0 * C, sp.T, sp.state->conv.data(), c0, c1);
      }
      t0 += sp.T;
    }
  });

  // Gates and q/k normalisation per token.
  for_range(c, T, T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t h = 0; h < Hv; ++h) head_gates(c, cfg, w, s, t, h);
      for (int64_t kh = 0; kh < Hk; ++kh) normalize_qk(cfg, s, t, kh);
    }
  });
}

// Value head h of the block in the scratch, from row t0 on. It reads key head h / (Hv / Hk) in
// HF's grouped order (consecutive value heads share a key head), h % Hk in llama.cpp's tiled order
// (GGUF weights).
kernels::DeltaRuleHead head_of(const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s, int64_t h,
                               int64_t t0 = 0) {
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  const int64_t QK = Hk * dk, kh = w.v_heads_tiled ? h % Hk : h / (Hv / Hk);
  kernels::DeltaRuleHead head;
  head.q = s.q.data() + t0 * QK + kh * dk;
  head.k = s.k.data() + t0 * QK + kh * dk;
  head.qk_stride = QK;
  head.v = s.mixed.data() + t0 * C + 2 * QK + h * dv;
  head.v_stride = C;
  head.beta = s.beta.data() + t0 * Hv + h;
  head.g = s.g.data() + t0 * Hv + h;
  head.gate_stride = Hv;
  head.o = s.core.data() + t0 * Hv * int64_t(dv) + h * dv;
  head.o_stride = Hv * int64_t(dv);
  return head;
}

}  // namespace

void deltanet_state_hf_order(const TextConfig& cfg, const DeltaNetWeights& w, const DeltaNetState& state,
                             std::vector<float>& conv, std::vector<float>& recurrent) {
  conv = state.conv;
  recurrent = state.recurrent;
  if (!w.v_heads_tiled) return;
  const int64_t Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads, r = Hv / Hk;
  const int64_t K = cfg.conv_kernel, dv = cfg.linear_value_dim, S = int64_t(cfg.linear_key_dim) * dv;
  const int64_t v0 = 2 * Hk * cfg.linear_key_dim;  // first V channel of the conv
  for (int64_t p = 0; p < Hv; ++p) {  // tiled position p holds HF head (p % Hk) * r + p / Hk
    const int64_t hf = (p % Hk) * r + p / Hk;
    std::copy_n(state.conv.data() + (v0 + p * dv) * K, dv * K, conv.data() + (v0 + hf * dv) * K);
    std::copy_n(state.recurrent.data() + p * S, S, recurrent.data() + hf * S);
  }
}

void deltanet_forward(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                      kernels::Activations& a, std::span<const DeltaNetSpan> spans, DeltaNetScratch& s, float* out) {
  const int64_t T = a.T();
  {
    int64_t rows = 0;
    for (const DeltaNetSpan& sp : spans) rows += sp.T;
    if (rows != T) fail("deltanet_forward: spans cover ", rows, " rows of ", T);
  }
  s.reserve(cfg, T);
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  const int64_t QK = Hk * dk, VS = Hv * int64_t(dv);
  if (w.conv_t.size() != size_t(C * cfg.conv_kernel)) fail("DeltaNet weights were bound without finish_deltanet_weights");

  // The four projections read the same normed rows: one pass, one quantization of them.
  kernels::linear_fused(c, a,
                        {{&w.in_qkv, s.qkv.data(), C},     // [T, C]
                         {&w.in_z, s.z.data(), VS},        // [T, VS]
                         {&w.in_b, s.beta.data(), Hv},     // [T, Hv] logits
                         {&w.in_a, s.g.data(), Hv}});      // [T, Hv] decay input

  thread_local std::vector<int64_t> span_rows;  // the caller's; the tasks read it through the reference
  std::vector<int64_t>& span_row = span_rows;
  span_row.assign(spans.size() + 1, 0);
  for (size_t i = 0; i < spans.size(); ++i) span_row[i + 1] = span_row[i] + spans[i].T;
  for (size_t i = 0; i < spans.size(); ++i) {
    DeltaNetTrace* trace = spans[i].trace;
    if (!trace) continue;
    const int64_t t0 = span_row[i], n = spans[i].T;
    trace->tokens = n;
    trace->qkv.assign(s.qkv.begin() + t0 * C, s.qkv.begin() + (t0 + n) * C);
    trace->b.assign(s.beta.begin() + t0 * Hv, s.beta.begin() + (t0 + n) * Hv);
    trace->a.assign(s.g.begin() + t0 * Hv, s.g.begin() + (t0 + n) * Hv);
  }
  // One new token in every span (decoding): each key head's task runs the conv of its q, k and v
  // channels, the q/k norms and its value heads' gates itself, in the parallel pass, instead of
  // the calling thread running them for every channel first while the other threads wait (on
  // the 0.8B shapes that was a fifth of the calling thread's time outside the passes). A channel's
  // taps, a head's gates and norms are computed as conv_and_gates computes them, so the bits are
  // the same.
  bool per_key_head = cfg.conv_kernel == 4;
  for (const DeltaNetSpan& sp : spans) per_key_head = per_key_head && sp.T == 1;
  if (!per_key_head) conv_and_gates(c, cfg, w, s.qkv.data(), spans, T, s);
  const int64_t heads_per_task = per_key_head ? Hv / Hk : 1;

  // Per span and value head (or key head with its value heads): the delta rule over the span's
  // tokens, then the gated RMSNorm of its outputs, norm(o) * w * silu(z), with the plain (not
  // 1 + w) weight.
  c.pool->parallel_for(spans.size() * size_t(Hv / heads_per_task), 1, [&](size_t hb, size_t he) {
    thread_local std::vector<float> work, gate;
    work.resize(kernels::delta_chunk_work_floats(dk, dv));
    gate.resize(size_t(dv));
    const size_t tasks_per_span = size_t(Hv / heads_per_task);
    for (size_t task = hb; task < he; ++task) {
      const DeltaNetSpan& sp = spans[task / tasks_per_span];
      const int64_t t_first = span_row[task / tasks_per_span], T = sp.T;
      const bool chunked = sp.mode == DeltaRuleMode::kChunked || (sp.mode == DeltaRuleMode::kAuto && T > 1);
      const int64_t first = int64_t(task % tasks_per_span);  // value head, or key head if per_key_head
      if (per_key_head) {
        const int64_t kh = first;
        const float* x = s.qkv.data() + t_first * C;
        float* conv = sp.state->conv.data();
        float* mixed = s.mixed.data() + t_first * C;
        conv_step_silu<4>(c, cfg, w, x, conv, mixed, kh * dk, (kh + 1) * dk);
        conv_step_silu<4>(c, cfg, w, x, conv, mixed, QK + kh * dk, QK + (kh + 1) * dk);
        normalize_qk(cfg, s, t_first, kh);
      }
      for (int64_t j = 0; j < heads_per_task; ++j) {
        // The value heads that read key head `first`: consecutive in HF's order, every Hk-th in
        // llama.cpp's tiled order (head_of).
        const int64_t h = !per_key_head ? first : w.v_heads_tiled ? first + j * Hk : first * heads_per_task + j;
        if (per_key_head) {
          conv_step_silu<4>(c, cfg, w, s.qkv.data() + t_first * C, sp.state->conv.data(),
                            s.mixed.data() + t_first * C, 2 * QK + h * dv, 2 * QK + (h + 1) * dv);
          head_gates(c, cfg, w, s, t_first, h);
        }
        const kernels::DeltaRuleHead head = head_of(cfg, w, s, h, t_first);
        float* S = sp.state->recurrent.data() + h * dk * dv;
        if (!chunked) {
          c.k->delta_recurrent(head, T, dk, dv, S);
        } else {
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
        for (int64_t t = t_first; t < t_first + T; ++t) {
          float* o = s.core.data() + t * VS + h * dv;
          rms_norm(o, w.norm.data(), dv, cfg.rms_norm_eps, o);
          c.k->silu(s.z.data() + t * VS + h * dv, gate.data(), dv);
          for (int j2 = 0; j2 < dv; ++j2) o[j2] *= gate[size_t(j2)];
        }
      }
    }
  });

  s.core_in.bind(s.core.data(), T, VS);
  kernels::linear(c, s.core_in, w.out, out, w.out.rows);
}

void deltanet_forward(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                      kernels::Activations& a, DeltaNetState& state, DeltaNetScratch& s, DeltaRuleMode mode,
                      float* out, DeltaNetTrace* trace) {
  const DeltaNetSpan span{&state, a.T(), mode, trace};
  deltanet_forward(c, cfg, w, a, std::span<const DeltaNetSpan>(&span, 1), s, out);
}

void deltanet_forward(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* a,
                      int64_t T, DeltaNetState& state, DeltaNetScratch& s, DeltaRuleMode mode, float* out) {
  s.in.bind(a, T, cfg.hidden_size);
  deltanet_forward(c, cfg, w, s.in, state, s, mode, out);
}

void deltanet_replay(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                     const DeltaNetTrace& trace, int64_t n, DeltaNetState& state, DeltaNetScratch& s) {
  if (n <= 0) return;
  if (n > trace.tokens) fail("deltanet_replay: ", n, " tokens asked of a trace of ", trace.tokens);
  s.reserve(cfg, n);
  const int64_t Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  std::copy_n(trace.b.begin(), n * Hv, s.beta.begin());
  std::copy_n(trace.a.begin(), n * Hv, s.g.begin());
  const DeltaNetSpan span{&state, n, DeltaRuleMode::kRecurrent, nullptr};
  conv_and_gates(c, cfg, w, trace.qkv.data(), std::span<const DeltaNetSpan>(&span, 1), n, s);
  c.pool->parallel_for(size_t(Hv), 1, [&](size_t hb, size_t he) {
    for (size_t h = hb; h < he; ++h)
      c.k->delta_recurrent(head_of(cfg, w, s, int64_t(h)), n, dk, dv, state.recurrent.data() + int64_t(h) * dk * dv);
  });
}

}  // namespace qwen35
