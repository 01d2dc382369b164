// The router of a mixture-of-experts FFN for one token (transformers' Qwen3_5MoeTopKRouter). One
// plain function, not a kernel-table slot: which experts run must never depend on the table, and
// its cost (E exponentials and k passes over E per token) is small beside the experts' matmuls.
#pragma once

#include <cstdint>

namespace qwen35::kernels {

// probs[n] = softmax(logits[n]) over all n experts in f32 (max subtracted, e^x summed left to
// right); ids[k] = the k largest probabilities best first, equal ones lower id first; weights[k] =
// each chosen probability divided by the sum of the k (summed best first).
void moe_route(const float* logits, int64_t n, int k, float* probs, int32_t* ids, float* weights);

}  // namespace qwen35::kernels
