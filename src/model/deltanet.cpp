#include "model/deltanet.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/layer_ops.h"

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

// The conv of channels [c0, c1) of T rows of qkv on a span's state, into s.mixed's rows.
kernels::ConvArgs conv_args(const TextConfig& cfg, const DeltaNetWeights& w, const float* qkv, int64_t T,
                            DeltaNetState& state, float* mixed, int64_t c0, int64_t c1) {
  kernels::ConvArgs a;
  a.x = qkv;
  a.T = T;
  a.C = cfg.conv_dim();
  a.K = cfg.conv_kernel;
  a.taps = w.conv_t.data();
  a.state = state.conv.data();
  a.y = mixed;
  a.c0 = c0;
  a.c1 = c1;
  return a;
}

// Key head kh of token row t: its q (scaled by 1/sqrt(dk)) and k, l2-normalised (the reference's
// l2norm: eps 1e-6 inside the root) from s.mixed into s.q and s.k.
void normalize_qk(const kernels::Compute& c, const TextConfig& cfg, DeltaNetScratch& s, int64_t t, int64_t kh) {
  const int64_t C = cfg.conv_dim(), QK = cfg.linear_key_heads * cfg.linear_key_dim;
  const int dk = cfg.linear_key_dim;
  const float* row = s.mixed.data() + t * C;
  c.k->l2_norm(row + kh * dk, 1.0f / std::sqrt(float(dk)), 1e-6f, s.q.data() + t * QK + kh * dk, dk);
  c.k->l2_norm(row + QK + kh * dk, 1.0f, 1e-6f, s.k.data() + t * QK + kh * dk, dk);
}

// Value heads [h, h + n) of token row t: the decay and beta logits in s.g and s.beta turned into
// gates in place.
void head_gates(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s,
                int64_t t, int64_t h, int64_t n) {
  const size_t i = size_t(t * cfg.linear_value_heads + h);
  c.k->decay_gate(w.neg_a.data() + h, w.dt_bias.data() + h, &s.g[i], n);
  c.k->sigmoid(&s.beta[i], &s.beta[i], n);
}

// Runs fn(begin, end) over [0, n) on the pool when the block is long, inline otherwise.
template <typename F>
void for_range(const kernels::Compute& c, int64_t T, int64_t n, int64_t grain, F&& fn) {
  if (T < kParallelTokens) return fn(int64_t(0), n);
  c.pool->parallel_for(size_t(n), size_t(grain), [&](size_t b, size_t e) { fn(int64_t(b), int64_t(e)); });
}

// The conv (with its state update) of the spans' tokens (T in all, in span order): qkv -> s.mixed.
void conv_rows(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, const float* qkv,
               std::span<const DeltaNetSpan> spans, int64_t T, DeltaNetScratch& s) {
  const int64_t C = cfg.conv_dim();
  // Conv over channel blocks (each channel is independent along time), every span on its state.
  for_range(c, T, C, 256, [&](int64_t c0, int64_t c1) {
    int64_t t0 = 0;
    for (const DeltaNetSpan& sp : spans) {
      c.k->causal_conv(conv_args(cfg, w, qkv + t0 * C, sp.T, *sp.state, s.mixed.data() + t0 * C, c0, c1));
      t0 += sp.T;
    }
  });
}

// The gates and q/k norms of T rows: the beta and decay logits in s.beta, s.g turned into gates in
// place; s.mixed -> s.q, s.k.
void gate_rows(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, int64_t T,
               DeltaNetScratch& s) {
  const int64_t Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  for_range(c, T, T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      head_gates(c, cfg, w, s, t, 0, Hv);
      for (int64_t kh = 0; kh < Hk; ++kh) normalize_qk(c, cfg, s, t, kh);
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

namespace {

// The delta rule of one value head over a span's T tokens from row t_first, chunkwise-parallel or
// recurrent, then the gated RMSNorm of its outputs, norm(o) * w * silu(z), with the plain (not
// 1 + w) weight. `work` is resized for the chunked form on first use.
void value_head(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s,
                const DeltaNetSpan& sp, int64_t t_first, int64_t h, std::vector<float>& work) {
  const int64_t C = cfg.conv_dim(), Hv = cfg.linear_value_heads, QK = cfg.linear_key_heads * cfg.linear_key_dim;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  const int64_t VS = Hv * int64_t(dv), T = sp.T;
  const kernels::DeltaRuleHead head = head_of(cfg, w, s, h, t_first);
  float* S = sp.state->recurrent.data() + h * dk * dv;
  const bool chunked = sp.mode == DeltaRuleMode::kChunked || (sp.mode == DeltaRuleMode::kAuto && T > 1);
  if (!chunked) {
    c.k->delta_recurrent(head, T, dk, dv, S);
  } else {
    work.resize(kernels::delta_chunk_work_floats(dk, dv));
    for (int64_t t0 = 0; t0 < T; t0 += kernels::kDeltaChunk) {
      kernels::DeltaRuleHead part = head;
      part.q += t0 * QK;
      part.k += t0 * QK;
      part.v += t0 * C;
      part.beta += t0 * Hv;
      part.g += t0 * Hv;
      part.o += t0 * VS;
      c.k->delta_chunk(part, std::min(kernels::kDeltaChunk, T - t0), dk, dv, S, work.data());
    }
  }
  for (int64_t t = t_first; t < t_first + T; ++t) {
    float* o = s.core.data() + t * VS + h * dv;
    c.k->gated_rms_norm(o, w.norm.data(), s.z.data() + t * VS + h * dv, cfg.rms_norm_eps, o, dv);
  }
}

// The delta rule and gated norm of a block whose conv and gates are done: one task per span and
// value head.
void delta_heads(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                 std::span<const DeltaNetSpan> spans, DeltaNetScratch& s) {
  const size_t Hv = size_t(cfg.linear_value_heads);
  c.pool->parallel_for(spans.size() * Hv, 1, [&](size_t b, size_t e) {
    std::vector<float> work;
    for (size_t task = b; task < e; ++task)
      value_head(c, cfg, w, s, spans[task / Hv], s.span_rows[task / Hv], int64_t(task % Hv), work);
  });
}

// One new token in every span (decoding): one task per span and key head runs the conv of its q,
// k and v channels, the q/k norms and its value heads' gates itself, in the parallel pass, instead
// of the calling thread running them for every channel first while the other threads wait (on the
// 0.8B shapes that was a fifth of the calling thread's time outside the passes). The taps, gates
// and norms are computed as conv_rows and gate_rows compute them, so the bits are the same.
void decode_heads(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                  std::span<const DeltaNetSpan> spans, DeltaNetScratch& s) {
  const int64_t C = cfg.conv_dim(), Hk = cfg.linear_key_heads, Hv = cfg.linear_value_heads;
  const int dk = cfg.linear_key_dim, dv = cfg.linear_value_dim;
  const int64_t QK = Hk * dk, heads_per_key = Hv / Hk;
  c.pool->parallel_for(spans.size() * size_t(Hk), 1, [&](size_t b, size_t e) {
    std::vector<float> work;  // stays empty: one token takes the recurrent form
    for (size_t task = b; task < e; ++task) {
      const DeltaNetSpan& sp = spans[task / size_t(Hk)];
      const int64_t t = s.span_rows[task / size_t(Hk)], kh = int64_t(task % size_t(Hk));
      auto conv = [&](int64_t c0, int64_t c1) {
        c.k->causal_conv(conv_args(cfg, w, s.qkv.data() + t * C, 1, *sp.state, s.mixed.data() + t * C, c0, c1));
      };
      conv(kh * dk, (kh + 1) * dk);            // q
      conv(QK + kh * dk, QK + (kh + 1) * dk);  // k
      normalize_qk(c, cfg, s, t, kh);
      for (int64_t j = 0; j < heads_per_key; ++j) {
        // The value heads that read key head kh: consecutive in HF's order, every Hk-th in
        // llama.cpp's tiled order (head_of).
        const int64_t h = w.v_heads_tiled ? kh + j * Hk : kh * heads_per_key + j;
        conv(2 * QK + h * dv, 2 * QK + (h + 1) * dv);
        head_gates(c, cfg, w, s, t, h, 1);
        value_head(c, cfg, w, s, sp, t, h, work);
      }
    }
  });
}

}  // namespace

void deltanet_layer(LayerOps& b, const DeltaNetWeights& w, int index) {
  // The four projections read the same normed rows: one pass, one quantization of them.
  b.linear(Rows::kIn, {{&w.in_qkv, Rows::kQkv}, {&w.in_z, Rows::kZ}, {&w.in_b, Rows::kBeta}, {&w.in_a, Rows::kG}});
  if (!b.delta_rule_fused(w, index)) {
    b.conv(w, index);   // SiLU(causal conv(qkv)), each sequence on its conv state
    b.gates(w);         // beta, decay; q, k l2-normed
    b.delta(w, index);  // core = gated norm of the delta rule's outputs, each sequence on its state
  }
  b.linear(Rows::kCore, {{&w.out, Rows::kOut}});
}

bool deltanet_fused(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                    std::span<const DeltaNetSpan> spans, DeltaNetScratch& s, int64_t T) {
  s.span_rows.assign(spans.size() + 1, 0);
  for (size_t i = 0; i < spans.size(); ++i) s.span_rows[i + 1] = s.span_rows[i] + spans[i].T;
  if (s.span_rows.back() != T) fail("deltanet: spans cover ", s.span_rows.back(), " rows of ", T);
  const int64_t C = cfg.conv_dim(), Hv = cfg.linear_value_heads;
  if (w.conv_t.size() != size_t(C * cfg.conv_kernel)) fail("DeltaNet weights were bound without finish_deltanet_weights");
  for (size_t i = 0; i < spans.size(); ++i) {
    DeltaNetTrace* trace = spans[i].trace;
    if (!trace) continue;
    const int64_t t0 = s.span_rows[i], n = spans[i].T;
    trace->tokens = n;
    trace->qkv.assign(s.qkv.begin() + t0 * C, s.qkv.begin() + (t0 + n) * C);
    trace->b.assign(s.beta.begin() + t0 * Hv, s.beta.begin() + (t0 + n) * Hv);
    trace->a.assign(s.g.begin() + t0 * Hv, s.g.begin() + (t0 + n) * Hv);
  }
  bool decoding = true;
  for (const DeltaNetSpan& sp : spans) decoding = decoding && sp.T == 1;
  if (decoding) decode_heads(c, cfg, w, spans, s);
  return decoding;
}

void deltanet_conv(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                   std::span<const DeltaNetSpan> spans, DeltaNetScratch& s, int64_t T) {
  conv_rows(c, cfg, w, s.qkv.data(), spans, T, s);
}

void deltanet_gates(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s,
                    int64_t T) {
  gate_rows(c, cfg, w, T, s);
}

void deltanet_delta(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                    std::span<const DeltaNetSpan> spans, DeltaNetScratch& s) {
  delta_heads(c, cfg, w, spans, s);
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
  conv_rows(c, cfg, w, trace.qkv.data(), std::span<const DeltaNetSpan>(&span, 1), n, s);
  gate_rows(c, cfg, w, n, s);
  c.pool->parallel_for(size_t(Hv), 1, [&](size_t hb, size_t he) {
    for (size_t h = hb; h < he; ++h)
      c.k->delta_recurrent(head_of(cfg, w, s, int64_t(h)), n, dk, dv, state.recurrent.data() + int64_t(h) * dk * dv);
  });
}

}  // namespace qwen35
