// The per-format quantizers behind quantize_row (internal to kernels/quant). Each quantizes
// `nblocks` consecutive blocks of its format from nblocks * block_elems floats.
#pragma once

#include <cstdint>

namespace qwen35::kernels::quant {

// C's float -> integer conversion as x86 does it (cvttss2si): truncation toward zero, and
// INT32_MIN for NaN and out-of-range values, which C leaves undefined; ggml's reference
// quantizers convert that way on the machines that make GGUF files.
inline int32_t truncate_like_x86(float v) {
  return v >= -2147483648.0f && v < 2147483648.0f ? int32_t(v) : INT32_MIN;
}

void quantize_q8_0(const float* x, void* out, int64_t nblocks);
void quantize_q4_0(const float* x, void* out, int64_t nblocks);
void quantize_q4_1(const float* x, void* out, int64_t nblocks);
void quantize_q5_0(const float* x, void* out, int64_t nblocks);
void quantize_q5_1(const float* x, void* out, int64_t nblocks);
void quantize_q2_k(const float* x, void* out, int64_t nblocks);
void quantize_q3_k(const float* x, void* out, int64_t nblocks);
void quantize_q4_k(const float* x, void* out, int64_t nblocks);
void quantize_q5_k(const float* x, void* out, int64_t nblocks);
void quantize_q6_k(const float* x, void* out, int64_t nblocks);
void quantize_iq4_nl(const float* x, void* out, int64_t nblocks);
void quantize_iq4_xs(const float* x, void* out, int64_t nblocks);

}  // namespace qwen35::kernels::quant
