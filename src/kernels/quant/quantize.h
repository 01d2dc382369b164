// Quantization of f32 rows to the weight block formats, following ggml's reference quantizers
// (what llama-quantize does without an importance matrix): the same bytes for the closed-form
// formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1); for the searched formats (K-quants, IQ4_*) the same
// bytes or a squared error no larger than ggml's on the same input.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace qwen35::kernels::quant {

// Quantizes n floats (a multiple of the block size of `dtype`) to one row of blocks at `out`.
void quantize_row(DType dtype, const float* x, void* out, int64_t n);

}  // namespace qwen35::kernels::quant
