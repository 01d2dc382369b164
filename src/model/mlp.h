// SwiGLU MLP: down(silu(gate(x)) * up(x)).
#pragma once

#include <vector>

#include "kernels/compute.h"
#include "model/layer_ops.h"
#include "model/text_weights.h"

namespace qwen35 {

struct MlpScratch {
  int64_t capacity = 0;
  std::vector<float> gate;  // [T, I], then silu(gate) * up
  std::vector<float> up;    // [T, I]
  kernels::Activations in;  // x, when the caller passes plain rows
  kernels::Activations mid;  // the SwiGLU product, input of down
  void reserve(int64_t intermediate, int64_t tokens);
};

// The layer's body on any backend: down(silu(gate(x)) * up(x)), Rows::kIn -> Rows::kOut.
void mlp_layer(LayerOps& b, const MlpWeights& w);
// The CPU's LayerOps::swiglu on T rows of the scratch: gate = silu(gate) * up ([T, I]).
void mlp_swiglu(const kernels::Compute& c, MlpScratch& s, int64_t T, int64_t I);

// out[T, H] = MLP(x) on the CPU for x's rows (x may already hold the quantized forms other matrices made).
void mlp_forward(const kernels::Compute& c, const MlpWeights& w, kernels::Activations& x, MlpScratch& s, float* out);
void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out);

}  // namespace qwen35
