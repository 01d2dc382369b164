#include "kernels/quant/quantize.h"

#include "core/error.h"
#include "kernels/quant/quantize_formats.h"

namespace qwen35::kernels::quant {
namespace {

using BlockQuantizer = void (*)(const float* x, void* out, int64_t nblocks);

struct QuantizerRow {
  DType dtype;
  BlockQuantizer fn;
};

constexpr QuantizerRow kQuantizers[] = {
    {DType::Q8_0, quantize_q8_0}, {DType::Q4_0, quantize_q4_0},     {DType::Q4_1, quantize_q4_1},
    {DType::Q5_0, quantize_q5_0}, {DType::Q5_1, quantize_q5_1},     {DType::Q2_K, quantize_q2_k},
    {DType::Q3_K, quantize_q3_k}, {DType::Q4_K, quantize_q4_k},     {DType::Q5_K, quantize_q5_k},
    {DType::Q6_K, quantize_q6_k}, {DType::IQ4_NL, quantize_iq4_nl}, {DType::IQ4_XS, quantize_iq4_xs},
};

BlockQuantizer quantizer_for(DType dtype) {
  for (const QuantizerRow& row : kQuantizers)
    if (row.dtype == dtype) return row.fn;
  return nullptr;
}

BlockQuantizer checked_quantizer(DType dtype, int64_t n) {
  const BlockQuantizer fn = quantizer_for(dtype);
  if (!fn) fail("quantize: ", dtype_name(dtype), " is not a weight block format");
  const int64_t block = int64_t(dtype_info(dtype).block_elems);
  if (n < 0 || n % block != 0) fail("quantize: row of ", n, " elements is not a multiple of the ", dtype_name(dtype), " block of ", block);
  return fn;
}

}  // namespace

bool can_quantize(DType dtype) { return quantizer_for(dtype) != nullptr; }

void quantize_row(DType dtype, const float* x, void* out, int64_t n) {
  checked_quantizer(dtype, n)(x, out, n / int64_t(dtype_info(dtype).block_elems));
}

void quantize_rows(DType dtype, const float* x, int64_t rows, int64_t cols, void* out) {
  const BlockQuantizer fn = checked_quantizer(dtype, cols);
  if (rows < 0) fail("quantize: negative row count ", rows);
  // Blocks never straddle rows (cols is a multiple of the block), so the rows are one long row.
  fn(x, out, rows * (cols / int64_t(dtype_info(dtype).block_elems)));
}

}  // namespace qwen35::kernels::quant
