// What a forward pass computes with: the kernel table and the thread pool, plus the
// data-parallel wrappers the model calls (each splits its work over the pool).
#pragma once

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace qwen35::kernels {

struct Compute {
  const KernelTable* k = nullptr;
  ThreadPool* pool = nullptr;
};

// y[T, W.rows] = x[T, W.cols] * W^T, rows of y and x contiguous unless strides say otherwise.
void linear(const Compute& c, const float* x, int64_t T, const WeightMatrix& w, float* y);
void linear_strided(const Compute& c, const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, float* y,
                    int64_t y_stride);

}  // namespace qwen35::kernels
