#include "model/mlp.h"

#include "model/norm.h"

namespace qwen35 {

void MlpScratch::reserve(int64_t intermediate, int64_t tokens) {
  if (tokens <= capacity) return;
  capacity = tokens;
  gate.resize(size_t(tokens * intermediate));
  up.resize(size_t(tokens * intermediate));
}

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out) {
  s.reserve(w.gate.rows, T);
  kernels::linear(c, x, T, w.gate, s.gate.data());
  kernels::linear(c, x, T, w.up, s.up.data());
  const int64_t n = T * w.gate.rows;
  for (int64_t i = 0; i < n; ++i) s.gate[size_t(i)] = silu(s.gate[size_t(i)]) * s.up[size_t(i)];
  kernels::linear(c, s.gate.data(), T, w.down, out);
}

}  // namespace qwen35
