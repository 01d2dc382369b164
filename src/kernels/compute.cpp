#include "kernels/compute.h"

#include "core/error.h"

namespace qwen35::kernels {

void linear_strided(const Compute& c, const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, float* y,
                    int64_t y_stride) {
  MatmulFn fn = c.k->matmul[size_t(w.dtype)];
  if (!fn) fn = ref_table().matmul[size_t(w.dtype)];
  if (!fn) fail("no matmul kernel for weights of dtype ", dtype_name(w.dtype));
  // Split output rows; 16-row grains keep each thread's weight reads contiguous.
  c.pool->parallel_for(size_t(w.rows), 16, [&](size_t b, size_t e) {
    fn(x, T, x_stride, w, int64_t(b), int64_t(e), y, y_stride);
  });
}

void linear(const Compute& c, const float* x, int64_t T, const WeightMatrix& w, float* y) {
  linear_strided(c, x, T, w.cols, w, y, w.rows);
}

}  // namespace qwen35::kernels
