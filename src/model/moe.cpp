#include "model/moe.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace qwen35 {

void MoeScratch::reserve(const TextConfig& cfg, int64_t tokens) {
  const size_t T = size_t(tokens), E = size_t(cfg.num_experts), k = size_t(cfg.num_experts_per_tok),
               H = size_t(cfg.hidden_size), I = size_t(cfg.moe_intermediate_size),
               Is = size_t(cfg.shared_expert_intermediate_size);
  if (logits.size() >= T * E) return;
  logits.resize(T * E);
  probs.resize(T * E);
  ids.resize(T * k);
  weights.resize(T * k);
  shared_gate.resize(T);
  starts.resize(E + 1);
  fill.resize(E);
  row_of.resize(T * k);
  xg.resize(T * k * H);
  g.resize(T * k * I);
  u.resize(T * k * I);
  y.resize(T * k * H);
  sg.resize(T * Is);
  su.resize(T * Is);
  shared_out.resize(T * H);
}

MoeRouting MoeScratch::routing(int64_t T, int E, int k) const {
  return MoeRouting{T, E, k, logits.data(), ids.data(), weights.data(), shared_gate.data()};
}

void moe_forward(const kernels::Compute& c, const MoeWeights& w, kernels::Activations& x, MoeScratch& s, float* out) {
  const kernels::KernelTable& K = *c.k;
  const int64_t T = x.T(), H = x.n(), E = w.num_experts(), I = w.gate[0].rows, Is = w.shared.gate.rows;
  const int k = w.top_k;
  if (s.logits.size() < size_t(T * E) || s.sg.size() < size_t(T * Is) || s.xg.size() < size_t(T * k * H) ||
      s.g.size() < size_t(T * k * I))
    fail("moe_forward: scratch reserved for fewer than ", T, " rows");

  // The router, the shared expert's gate and its gate/up projections: one pass over x.
  kernels::linear_fused(c, x, {{&w.router, s.logits.data(), E}, {&w.shared_gate, s.shared_gate.data(), 1},
                               {&w.shared.gate, s.sg.data(), Is}, {&w.shared.up, s.su.data(), Is}});
  K.sigmoid(s.shared_gate.data(), s.shared_gate.data(), T);
  for (int64_t t = 0; t < T; ++t)
    K.moe_route(s.logits.data() + t * E, E, k, s.probs.data() + t * E, s.ids.data() + t * k, s.weights.data() + t * k);

  // Group the (token, slot) pairs by expert, tokens in order within an expert, and gather inputs.
  std::fill(s.starts.begin(), s.starts.begin() + E + 1, 0);
  for (int64_t r = 0; r < T * k; ++r) ++s.starts[size_t(s.ids[size_t(r)]) + 1];
  for (int64_t e = 0; e < E; ++e) s.starts[size_t(e + 1)] += s.starts[size_t(e)];
  std::copy_n(s.starts.begin(), E, s.fill.begin());
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) {
      const int64_t r = s.fill[size_t(s.ids[size_t(t * k + j)])]++;
      s.row_of[size_t(t * k + j)] = int32_t(r);
      std::memcpy(s.xg.data() + r * H, x.x() + t * x.stride(), size_t(H) * sizeof(float));
    }

  // Each chosen expert over its rows: gate and up in one pass, SwiGLU, down.
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = s.starts[size_t(e)], n = s.starts[size_t(e + 1)] - r0;
    if (n == 0) continue;
    float* g = s.g.data() + r0 * I;
    s.expert_in.bind(s.xg.data() + r0 * H, n, H);
    kernels::linear_fused(c, s.expert_in, {{&w.gate[size_t(e)], g, I}, {&w.up[size_t(e)], s.u.data() + r0 * I, I}});
    for (int64_t r = 0; r < n; ++r) K.swiglu(g + r * I, s.u.data() + (r0 + r) * I, g + r * I, I);
    s.mid.bind(g, n, I);
    kernels::linear(c, s.mid, w.down[size_t(e)], s.y.data() + r0 * H, H);
  }
  // The shared expert.
  for (int64_t t = 0; t < T; ++t) K.swiglu(s.sg.data() + t * Is, s.su.data() + t * Is, s.sg.data() + t * Is, Is);
  s.mid.bind(s.sg.data(), T, Is);
  kernels::linear(c, s.mid, w.shared.down, s.shared_out.data(), H);

  // Each row: its experts in its own top-k order, then the gated shared expert, in f32.
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * H;
    std::fill(o, o + H, 0.0f);
    for (int j = 0; j < k; ++j)
      K.axpy(s.weights[size_t(t * k + j)], s.y.data() + int64_t(s.row_of[size_t(t * k + j)]) * H, o, H);
    K.axpy(s.shared_gate[size_t(t)], s.shared_out.data() + t * H, o, H);
  }
}

}  // namespace qwen35
