// Quantization of f32 rows to the weight block formats, following ggml's reference quantizers
// (what llama-quantize does without an importance matrix): the same bytes for the closed-form
// formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1); for the searched formats (K-quants, IQ4_*) the same
// bytes or a squared error no larger than ggml's on the same input.
//
// Every block is quantized from its own elements only, so a row's bytes never depend on how many
// rows are quantized together or on which thread does it. The functions are pure and may run
// concurrently on different outputs.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace qwen35::kernels::quant {

// Quantizes n floats (a multiple of the block size of `dtype`) to one row of blocks at `out`.
void quantize_row(DType dtype, const float* x, void* out, int64_t n);

// Quantizes `rows` contiguous rows of `cols` floats to `rows` contiguous rows of blocks
// (dtype_bytes(dtype, cols) bytes each).
void quantize_rows(DType dtype, const float* x, int64_t rows, int64_t cols, void* out);

// Whether quantize_row supports `dtype` (the weight block formats).
bool can_quantize(DType dtype);

}  // namespace qwen35::kernels::quant
