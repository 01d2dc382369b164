// The scalar kernels, callable directly (tests, and the chunked delta rule's building blocks).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernels.h"

namespace qwen35::kernels::ref {

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void delta_recurrent(const DeltaRuleHead& h, int64_t T, int dk, int dv, float* S);
void delta_chunk(const DeltaRuleHead& h, int64_t n, int dk, int dv, float* S, float* work);
void invert_unit_lower(const float* A, int64_t n, int64_t ld, float* Tinv, float* tmp);
void attention(const AttnArgs& a);

// ref/row_ops.cpp
void rms_norm(const float* x, const float* w, float eps, float* y, int64_t n);
void gated_rms_norm(const float* x, const float* w, const float* z, float eps, float* y, int64_t n);
void l2_norm(const float* x, float scale, float eps, float* y, int64_t n);
void add(const float* x, float* y, int64_t n);
void sigmoid_gate(const float* g, float* y, int64_t n);
void decay_gate(const float* neg_a, const float* dt_bias, float* g, int64_t n);
void gelu_erf(const float* x, float* y, int64_t n);
void rope(float* x, int64_t heads, int64_t head_stride, int half, const float* cos, const float* sin);
void causal_conv(const ConvArgs& a);

}  // namespace qwen35::kernels::ref
