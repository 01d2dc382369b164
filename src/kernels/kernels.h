// The kernel table: every hot loop of the engine behind one struct of function pointers.
// One table per ISA; `ref` is plain scalar C++ and is the oracle every other table is tested
// against. Tables are chosen once from the CPU's features (QWEN35_ISA=ref|avx2|avx512 overrides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace qwen35::kernels {

// A weight matrix in HF orientation [rows = out features, cols = in features], any storage dtype.
struct WeightMatrix {
  DType dtype = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;  // bytes between consecutive rows

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + size_t(r) * row_bytes; }
};

// y[t, o] = sum_i x[t, i] * W[o, i] for t < T and o in [o_begin, o_end).
// x rows are x_stride floats apart; y rows y_stride floats apart (y points at column 0).
using MatmulFn = void (*)(const float* x, int64_t T, int64_t x_stride, const WeightMatrix& w, int64_t o_begin,
                          int64_t o_end, float* y, int64_t y_stride);
// Converts n elements of one row of a weight (starting at element 0 of `row`) to f32.
using RowToF32Fn = void (*)(DType dtype, const void* row, float* out, int64_t n);
using DotFn = float (*)(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
using AxpyFn = void (*)(float a, const float* x, float* y, int64_t n);

struct KernelTable {
  std::string_view name;
  MatmulFn matmul[size_t(DType::kCount)] = {};  // nullptr: dtype not handled by this table
  RowToF32Fn row_to_f32 = nullptr;
  DotFn dot = nullptr;
  AxpyFn axpy = nullptr;
};

const KernelTable& ref_table();
// Tables this CPU can run, ref first.
std::vector<const KernelTable*> supported_tables();
// The table used by the engine: the best supported one, or QWEN35_ISA's choice.
const KernelTable& active_table();

}  // namespace qwen35::kernels
