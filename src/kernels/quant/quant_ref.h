// Scalar reference of the block formats: the oracle every table is tested against.
//
// The integer form. Every block decodes to integer quants q, integer sub-block scales sc_i and
// mins mn_i, and two f32 factors d and dmin, such that element j of sub-block i is
//   d * sc_i * q_j - dmin * mn_i
// (ggml's formulas; legacy formats have one sub-block with sc = 1, and Q4_1/Q5_1 store their
// added minimum m as dmin = -m with mn = 1).
//
// The canonical dot product of a weight row with a quantized activation row (block scale da,
// quants a, sums of a per sub-block) is, block by block in ascending order,
//   I1  = sum_i sc_i * sum_{j in i} q_j * a_j                    (exact, int32)
//   I2  = sum_i mn_i * sum_{j in i} a_j                          (exact, int32)
//   acc = fma(float(I1), d * da, acc)
//   acc = fma(float(I2), -(dmin * da), acc)                      (formats with mins only)
// starting from acc = 0. Only the last two lines round, in a fixed order, so any kernel that gets
// the integers right (in any order, with any instructions) returns the same bits: every table,
// block size, token position and thread count gives identical results.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/quant/act_format.h"

namespace qwen35::kernels::quant {

struct DecodedBlock {
  int n = 0;             // elements: 32 or 256
  int sub = 0;           // elements per sub-block: 16, 32 (n for legacy formats)
  bool has_min = false;  // dmin and mn are used
  float d = 0, dmin = 0;
  int8_t q[256];
  int16_t sc[16];
  int16_t mn[16];
};

// Decodes block `index` of a row stored as `dtype` (a weight block format).
void decode_block(DType dtype, const void* row, int64_t index, DecodedBlock& out);

// Dequantizes n elements of a row (n a multiple of the block size) to f32 with ggml's formulas.
void dequantize_row(DType dtype, const void* row, float* out, int64_t n);

// The canonical dot product of a weight row (n elements) with activation row t.
float dot_row(DType dtype, const void* row, const ActRows& a, int64_t t);

}  // namespace qwen35::kernels::quant
