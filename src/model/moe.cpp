#include "model/moe.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/moe_route.h"

namespace qwen35 {
namespace {

// One decoded token: its k experts read the row as it is (no gather, and the quantized forms the
// router's pass made are reused). Three passes over the pool in all: the router's, the k experts'
// gate and up projections, and their down projections with the shared expert's.
void experts_of_one_row(const kernels::Compute& c, const MoeWeights& w, kernels::Activations& x, MoeScratch& s) {
  const int k = w.top_k;
  const int64_t I = w.gate[0].rows, H = x.n(), Is = w.shared.gate.rows;
  s.expert.reserve(I, k);
  float* g = s.expert.gate.data();
  float* u = s.expert.up.data();
  s.outs.clear();
  for (int j = 0; j < k; ++j) {
    const size_t e = size_t(s.ids[size_t(j)]);
    s.outs.push_back({&w.gate[e], g + j * I, I});
    s.outs.push_back({&w.up[e], u + j * I, I});
  }
  kernels::linear_fused(c, x, s.outs);
  if (s.down_in.size() < size_t(k + 1)) s.down_in.resize(size_t(k + 1));
  s.outs.clear();
  s.down_x.clear();
  for (int j = 0; j < k; ++j) {
    c.k->swiglu(g + j * I, u + j * I, g + j * I, I);
    s.row_of[size_t(j)] = j;
    s.down_in[size_t(j)].bind(g + j * I, 1, I);
    s.down_x.push_back(&s.down_in[size_t(j)]);
    s.outs.push_back({&w.down[size_t(s.ids[size_t(j)])], s.y.data() + j * H, H});
  }
  c.k->swiglu(s.sg.data(), s.su.data(), s.sg.data(), Is);
  s.down_in[size_t(k)].bind(s.sg.data(), 1, Is);
  s.down_x.push_back(&s.down_in[size_t(k)]);
  s.outs.push_back({&w.shared.down, s.shared_out.data(), H});
  kernels::linear_each(c, s.down_x, s.outs);
}

// A block: the (token, slot) pairs grouped by expert (count, sort, gather), tokens in order within
// an expert and each expert's rows starting a token tile, and all the chosen experts run in a
// constant number of pool passes whatever the block: the gather, one quantization and one matmul
// pass for every expert's gate and up, the SwiGLU of all rows (the shared expert's too), and one
// quantization and one matmul pass for every down projection with the shared expert's. Each
// expert's matrices stream once for all its rows, and every row is what that expert's
// mlp_forward over its rows alone would give.
void experts_of_rows(const kernels::Compute& c, const MoeWeights& w, kernels::Activations& x, MoeScratch& s) {
  const int64_t T = x.T(), H = x.n(), E = w.num_experts(), I = w.gate[0].rows, Is = w.shared.gate.rows;
  const int k = w.top_k;
  std::fill(s.starts.begin(), s.starts.begin() + E + 1, 0);
  for (int64_t r = 0; r < T * k; ++r) ++s.starts[size_t(s.ids[size_t(r)]) + 1];
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = s.starts[size_t(e + 1)];
    s.starts[size_t(e + 1)] = s.starts[size_t(e)] + (n + kernels::kActTile - 1) / kernels::kActTile * kernels::kActTile;
    s.fill[size_t(e)] = s.starts[size_t(e)];
  }
  const int64_t R = s.starts[size_t(E)];  // grouped rows, padding included
  for (int64_t r = 0; r < T * k; ++r) s.row_of[size_t(r)] = int32_t(s.fill[size_t(s.ids[size_t(r)])]++);
  c.pool->parallel_for(size_t(T), 16, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t)
      for (int j = 0; j < k; ++j)
        std::memcpy(s.xg.data() + int64_t(s.row_of[t * size_t(k) + size_t(j)]) * H, x.x() + int64_t(t) * x.stride(),
                    size_t(H) * sizeof(float));
  });
  // The padding rows (quantized with the others, read by no expert) hold zeros, not stale values.
  for (int64_t e = 0; e < E; ++e)
    std::fill(s.xg.data() + s.fill[size_t(e)] * H, s.xg.data() + s.starts[size_t(e + 1)] * H, 0.0f);

  s.expert.reserve(I, R);
  float* g = s.expert.gate.data();
  float* u = s.expert.up.data();
  s.expert_in.bind(s.xg.data(), R, H);
  s.outs.clear();
  s.ranges.clear();
  s.down_x.clear();
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = s.starts[size_t(e)], n = s.fill[size_t(e)] - r0;
    if (n == 0) continue;
    s.outs.push_back({&w.gate[size_t(e)], g + r0 * I, I});
    s.outs.push_back({&w.up[size_t(e)], u + r0 * I, I});
    s.ranges.push_back({r0, n});
    s.ranges.push_back({r0, n});
    s.down_x.push_back(&s.expert_in);
    s.down_x.push_back(&s.expert_in);
  }
  kernels::linear_each(c, s.down_x, s.ranges, s.outs);
  for (int64_t e = 0; e < E; ++e) {  // no expert wrote the padding rows
    std::fill(g + s.fill[size_t(e)] * I, g + s.starts[size_t(e + 1)] * I, 0.0f);
    std::fill(u + s.fill[size_t(e)] * I, u + s.starts[size_t(e + 1)] * I, 0.0f);
  }

  // SwiGLU: every grouped row (the padding's zeros stay zeros), then the shared expert's rows.
  c.pool->parallel_for(size_t(R + T), 16, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      if (int64_t(r) < R) {
        c.k->swiglu(g + int64_t(r) * I, u + int64_t(r) * I, g + int64_t(r) * I, I);
      } else {
        float* sg = s.sg.data() + (int64_t(r) - R) * Is;
        c.k->swiglu(sg, s.su.data() + (int64_t(r) - R) * Is, sg, Is);
      }
    }
  });

  s.expert.mid.bind(g, R, I);
  s.mid.bind(s.sg.data(), T, Is);
  s.outs.clear();
  s.ranges.clear();
  s.down_x.clear();
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = s.starts[size_t(e)], n = s.fill[size_t(e)] - r0;
    if (n == 0) continue;
    s.outs.push_back({&w.down[size_t(e)], s.y.data() + r0 * H, H});
    s.ranges.push_back({r0, n});
    s.down_x.push_back(&s.expert.mid);
  }
  s.outs.push_back({&w.shared.down, s.shared_out.data(), H});
  s.ranges.push_back({0, T});
  s.down_x.push_back(&s.mid);
  kernels::linear_each(c, s.down_x, s.ranges, s.outs);
}

}  // namespace

void MoeScratch::reserve(const TextConfig& cfg, int64_t tokens) {
  const size_t T = size_t(tokens), E = size_t(cfg.num_experts), k = size_t(cfg.num_experts_per_tok),
               H = size_t(cfg.hidden_size), Is = size_t(cfg.shared_expert_intermediate_size);
  if (logits.size() >= T * E) return;
  logits.resize(T * E);
  probs.resize(T * E);
  ids.resize(T * k);
  weights.resize(T * k);
  shared_gate.resize(T);
  starts.resize(E + 1);
  fill.resize(E);
  row_of.resize(T * k);
  // Grouped rows: T * k, and each chosen expert's padded to a whole token tile.
  const size_t grouped = T * k + std::min(E, T * k) * size_t(kernels::kActTile - 1);
  xg.resize(grouped * H);
  y.resize(grouped * H);
  sg.resize(T * Is);
  su.resize(T * Is);
  shared_out.resize(T * H);
}

MoeRouting MoeScratch::routing(int64_t T, int E, int k) const {
  return MoeRouting{T, E, k, logits.data(), ids.data(), weights.data(), shared_gate.data()};
}

void moe_forward(const kernels::Compute& c, const MoeWeights& w, kernels::Activations& x, MoeScratch& s, float* out) {
  const kernels::KernelTable& K = *c.k;
  const int64_t T = x.T(), H = x.n(), E = w.num_experts(), Is = w.shared.gate.rows;
  const int k = w.top_k;
  if (s.logits.size() < size_t(T * E) || s.sg.size() < size_t(T * Is) || s.row_of.size() < size_t(T * k))
    fail("moe_forward: scratch reserved for fewer than ", T, " rows");

  // The router, the shared expert's gate and its gate/up projections: one pass over x.
  kernels::linear_fused(c, x, {{&w.router, s.logits.data(), E}, {&w.shared_gate, s.shared_gate.data(), 1},
                               {&w.shared.gate, s.sg.data(), Is}, {&w.shared.up, s.su.data(), Is}});
  K.sigmoid(s.shared_gate.data(), s.shared_gate.data(), T);
  c.pool->parallel_for(size_t(T), 4, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t)
      kernels::moe_route(s.logits.data() + t * size_t(E), E, k, s.probs.data() + t * size_t(E), s.ids.data() + t * size_t(k),
                         s.weights.data() + t * size_t(k));
  });

  if (T == 1) {
    experts_of_one_row(c, w, x, s);
  } else {
    experts_of_rows(c, w, x, s);
  }

  // Each row: its experts in its own top-k order, then the gated shared expert, in f32.
  c.pool->parallel_for(size_t(T), 16, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      float* o = out + int64_t(t) * H;
      std::fill(o, o + H, 0.0f);
      for (int j = 0; j < k; ++j) {
        const size_t r = t * size_t(k) + size_t(j);
        K.axpy(s.weights[r], s.y.data() + int64_t(s.row_of[r]) * H, o, H);
      }
      K.axpy(s.shared_gate[t], s.shared_out.data() + int64_t(t) * H, o, H);
    }
  });
}

}  // namespace qwen35
