// Normalisations and activations of the decoder, computed in fp32 as the reference does.
#pragma once

#include <cmath>
#include <cstdint>

namespace qwen35 {

// y = x / sqrt(mean(x^2) + eps) * w, where w already holds (1 + weight) for the decoder norms.
inline void rms_norm(const float* x, const float* w, int64_t n, float eps, float* y) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * w[i];
}

inline void rms_norm_rows(const float* x, const float* w, int64_t rows, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) rms_norm(x + r * n, w, n, eps, y + r * n);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
// torch.nn.functional.softplus with its default threshold 20 (linear above it).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace qwen35
