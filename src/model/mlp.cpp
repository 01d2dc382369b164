#include "model/mlp.h"

namespace qwen35 {

void MlpScratch::reserve(int64_t intermediate, int64_t tokens) {
  if (tokens <= capacity) return;
  capacity = tokens;
  gate.resize(size_t(tokens * intermediate));
  up.resize(size_t(tokens * intermediate));
}

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, kernels::Activations& x, MlpScratch& s, float* out) {
  const int64_t T = x.T(), I = w.gate.rows;
  s.reserve(I, T);
  kernels::linear_fused(c, x, {{&w.gate, s.gate.data(), I}, {&w.up, s.up.data(), I}});  // one pass over x
  c.pool->parallel_for(size_t(T), 16, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) c.k->swiglu(s.gate.data() + t * I, s.up.data() + t * I, s.gate.data() + t * I, I);
  });
  s.mid.bind(s.gate.data(), T, I);
  kernels::linear(c, s.mid, w.down, out, w.down.rows);
}

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out) {
  s.in.bind(x, T, w.gate.cols);
  mlp_forward(c, w, s.in, s, out);
}

}  // namespace qwen35
