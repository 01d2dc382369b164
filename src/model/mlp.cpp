#include "model/mlp.h"

#include "model/layer_ops_cpu.h"

namespace qwen35 {

void MlpScratch::reserve(int64_t intermediate, int64_t tokens) {
  if (tokens <= capacity) return;
  capacity = tokens;
  gate.resize(size_t(tokens * intermediate));
  up.resize(size_t(tokens * intermediate));
}

void mlp_layer(LayerOps& b, const MlpWeights& w) {
  b.linear(Rows::kIn, {{&w.gate, Rows::kGate}, {&w.up, Rows::kUp}});  // one pass over the input
  b.swiglu();
  b.linear(Rows::kGate, {{&w.down, Rows::kOut}});
}

void mlp_swiglu(const kernels::Compute& c, MlpScratch& s, int64_t T, int64_t I) {
  c.pool->parallel_for(size_t(T), 16, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) c.k->swiglu(s.gate.data() + t * I, s.up.data() + t * I, s.gate.data() + t * I, I);
  });
}

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, kernels::Activations& x, MlpScratch& s, float* out) {
  s.reserve(w.gate.rows, x.T());
  CpuLayerOps ops(c, nullptr, x, out);
  ops.mlp = &s;
  mlp_layer(ops, w);
}

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out) {
  s.in.bind(x, T, w.gate.cols);
  mlp_forward(c, w, s.in, s, out);
}

}  // namespace qwen35
