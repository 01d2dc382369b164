// SwiGLU MLP: down(silu(gate(x)) * up(x)).
#pragma once

#include <vector>

#include "kernels/compute.h"
#include "model/text_weights.h"

namespace qwen35 {

struct MlpScratch {
  int64_t capacity = 0;
  std::vector<float> gate;  // [T, I]
  std::vector<float> up;    // [T, I]
  void reserve(int64_t intermediate, int64_t tokens);
};

void mlp_forward(const kernels::Compute& c, const MlpWeights& w, const float* x, int64_t T, MlpScratch& s, float* out);

}  // namespace qwen35
