// Softmax attention over a KV cache, plain C++: the oracle for the vector kernels. Two passes per
// query row (scores, then the weighted sum of values), one row at a time, as the model computed it
// before the kernel existed.
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels::ref {
namespace {

// Row j of a key or value cache as f32 (f16 rows converted into `buf`).
const float* kv_row(const AttnArgs& a, const void* base, int64_t j, float* buf) {
  if (a.kv_dtype == DType::F32) return static_cast<const float*>(base) + j * a.kv_stride;
  const uint16_t* h = static_cast<const uint16_t*>(base) + j * a.kv_stride;
  for (int d = 0; d < a.head_dim; ++d) buf[d] = f16_to_f32(h[d]);
  return buf;
}

}  // namespace

void attention(const AttnArgs& a) {
  if (a.kv_dtype != DType::F32 && a.kv_dtype != DType::F16)
    fail("attention: KV rows must be f32 or f16, not ", dtype_name(a.kv_dtype));
  thread_local std::vector<float> scores, row;
  row.resize(size_t(a.head_dim));
  const int hd = a.head_dim;
  for (int64_t t = 0; t < a.n_q; ++t)
    for (int g = 0; g < a.group; ++g) {
      const int64_t n = a.causal ? a.n_kv0 + t : a.n_kv0;
      const float* q = a.q + t * a.q_stride + int64_t(g) * hd;
      float* o = a.o + t * a.o_stride + int64_t(g) * hd;
      scores.resize(size_t(n));
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        scores[size_t(j)] = dot(q, kv_row(a, a.k, j, row.data()), hd) * a.scale;
        mx = std::max(mx, scores[size_t(j)]);
      }
      float sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (scores[size_t(j)] = std::exp(scores[size_t(j)] - mx));
      const float inv = 1.0f / sum;
      for (int d = 0; d < hd; ++d) o[d] = 0;
      for (int64_t j = 0; j < n; ++j) axpy(scores[size_t(j)] * inv, kv_row(a, a.v, j, row.data()), o, hd);
    }
}

}  // namespace qwen35::kernels::ref
