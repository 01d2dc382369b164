// Plain scalar kernels: the oracle for every optimized table.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant/quant_ref.h"
#include "kernels/ref/ref_ops.h"

namespace qwen35::kernels {
namespace {

void ref_row_to_f32(DType dtype, const void* row, float* out, int64_t n) {
  switch (dtype) {
    case DType::F32: {
      const float* p = static_cast<const float*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = p[i];
      return;
    }
    case DType::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    case DType::F16: {
      const uint16_t* p = static_cast<const uint16_t*>(row);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    default:
      if (is_block_format(dtype) && dtype != DType::Q8_K) return quant::dequantize_row(dtype, row, out, n);
      fail("row_to_f32: unsupported dtype ", dtype_name(dtype));
  }
}

float ref_dot(const float* a, const float* b, int64_t n) { return ref::dot(a, b, n); }

void ref_axpy(float a, const float* x, float* y, int64_t n) { ref::axpy(a, x, y, n); }

void ref_silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}
void ref_sigmoid(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}
void ref_swiglu(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// u is computed by the same float steps in every table ((x * x) * x, then the products and sums
// left to right), so tables differ only by their e^x.
void ref_gelu_tanh(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = 0.7978845608028654f * (v + 0.044715f * (v * v * v));
    y[i] = v / (1.0f + std::exp(-2.0f * u));
  }
}

void ref_layer_norm(const float* x, const float* w, const float* b, double eps, float* y, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]);
  const float mean = float(sum / double(n));
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(x[i] - mean);
    ss += d * d;
  }
  const float r = float(1.0 / std::sqrt(ss / double(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * r * w[i] + b[i];
}

// Converts each weight row once, then dots it with every input row.
void ref_matmul(const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, int64_t o_begin, int64_t o_end,
                float* y, int64_t y_stride) {
  thread_local std::vector<float> row;
  row.resize(size_t(w.cols));
  for (int64_t o = o_begin; o < o_end; ++o) {
    ref_row_to_f32(w.dtype, w.row(o), row.data(), w.cols);
    for (int64_t t = 0; t < T; ++t) y[t * y_stride + o] = ref_dot(x + t * x_stride, row.data(), w.cols);
  }
}

void ref_qmatmul(const ActRows& a, const WeightMatrix& w, int64_t o_begin, int64_t o_end, float* y, int64_t y_stride) {
  for (int64_t o = o_begin; o < o_end; ++o)
    for (int64_t t = 0; t < a.T; ++t) y[t * y_stride + o] = quant::dot_row(w.dtype, w.row(o), a, t);
}

uint64_t ref_stream_read(const void* p, size_t n) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n / 8; i += 4) {
    a ^= w[i];
    b ^= w[i + 1];
    c ^= w[i + 2];
    d ^= w[i + 3];
  }
  return a ^ b ^ c ^ d;
}

KernelTable make_ref() {
  KernelTable k;
  k.name = "ref";
  k.matmul[size_t(DType::F32)] = ref_matmul;
  k.matmul[size_t(DType::BF16)] = ref_matmul;
  k.matmul[size_t(DType::F16)] = ref_matmul;
  for (DType d : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS})
    k.qmatmul[size_t(d)] = ref_qmatmul;
  k.quantize_act = quantize_act_ref;
  k.row_to_f32 = ref_row_to_f32;
  k.dot = ref_dot;
  k.axpy = ref_axpy;
  k.silu = ref_silu;
  k.sigmoid = ref_sigmoid;
  k.swiglu = ref_swiglu;
  k.gelu_tanh = ref_gelu_tanh;
  k.layer_norm = ref_layer_norm;
  k.gelu_erf = ref::gelu_erf;
  k.rms_norm = ref::rms_norm;
  k.gated_rms_norm = ref::gated_rms_norm;
  k.l2_norm = ref::l2_norm;
  k.add = ref::add;
  k.sigmoid_gate = ref::sigmoid_gate;
  k.decay_gate = ref::decay_gate;
  k.rope = ref::rope;
  k.causal_conv = ref::causal_conv;
  k.stream_read = ref_stream_read;
  k.delta_recurrent = ref::delta_recurrent;
  k.delta_chunk = ref::delta_chunk;
  k.attention = ref::attention;
  return k;
}

}  // namespace

const KernelTable& ref_table() {
  static const KernelTable table = make_ref();
  return table;
}

}  // namespace qwen35::kernels
