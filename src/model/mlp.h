// SwiGLU MLP: down(silu(gate(x)) * up(x)).
#pragma once

#include <vector>

#include "kernels/compute.h"
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

// out[T, H] = MLP(x) for x's rows (x may already hold the quantized forms other matrices made).
void mlp_forward(const kernels::Compute& c, const MlpWeights& w, kernels::Activations& x, MlpScratch& s, float* out);
void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out);

}  // namespace qwen35
