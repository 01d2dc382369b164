// The mixture-of-experts FFN of qwen3_5_moe (modeling_qwen3_5_moe.py, Qwen3_5MoeSparseMoeBlock):
// out = sum_j w_j expert_{id_j}(x) + sigmoid(x . shared_gate) shared_expert(x), every expert a
// SwiGLU MLP, the k experts and weights chosen per token by the router (kernels' moe_route).
//
// The rows of a call are grouped by expert (count, sort, gather), so each chosen expert's matrices
// stream once for all the rows that chose it through the ordinary matmul kernels, and all the
// experts run together: their gate and up projections in one pass over the pool, their down
// projections and the shared expert's in another (kernels::linear_each over row ranges).
// A single row (decoding) reads only its k experts and skips the grouping: their gate and up
// projections run as one pass over the row as it is (quantized once, for the router), their down
// projections and the shared expert's as one more (kernels::linear_each). A row's k expert
// outputs are then summed in the row's own top-k order, so its result never depends on the other
// rows of the block, the block size or the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/compute.h"
#include "model/config.h"
#include "model/mlp.h"
#include "model/text_weights.h"

namespace qwen35 {

// One call's routing decisions (for observers and tests), rows [T].
struct MoeRouting {
  int64_t T = 0;
  int num_experts = 0, top_k = 0;
  const float* logits = nullptr;       // [T, E] router logits, before the softmax
  const int32_t* ids = nullptr;        // [T, k] chosen experts, best first
  const float* weights = nullptr;      // [T, k] their renormalised weights
  const float* shared_gate = nullptr;  // [T] sigmoid(x . shared_gate), the shared expert's scale
};

struct MoeScratch {
  std::vector<float> logits, probs;       // [T, E]
  std::vector<int32_t> ids;               // [T, k]
  std::vector<float> weights;             // [T, k]
  std::vector<float> shared_gate;         // [T]
  std::vector<int64_t> starts;            // [E + 1]: expert e's rows in the grouped order (tile-aligned)
  std::vector<int64_t> fill;              // [E]: then the end of expert e's rows, before its padding
  std::vector<int32_t> row_of;            // [T * k]: grouped row of (token t, slot j)
  std::vector<float> xg;                  // [grouped rows, H] inputs gathered by expert
  std::vector<float> y;                   // [grouped rows, H] expert outputs
  std::vector<float> sg, su;              // [T, Is] shared expert
  std::vector<float> shared_out;          // [T, H]
  MlpScratch expert;                      // the experts' gate and up outputs (a decoded token's: k rows)
  std::vector<kernels::LinearOut> outs;   // one pass's outputs: every chosen expert's gate and up, then downs
  std::vector<kernels::RowRange> ranges;  // a block's: each output's rows of its input
  std::vector<kernels::Activations> down_in;  // [k + 1]: a decoded token's down inputs (its experts', the shared one's)
  std::vector<kernels::Activations*> down_x;  // each output's input
  kernels::Activations expert_in, mid;    // a block's gathered rows; the shared expert's SwiGLU
  void reserve(const TextConfig& cfg, int64_t tokens);
  // The routing of the last moe_forward call.
  MoeRouting routing(int64_t T, int E, int k) const;
};

// out[T, H] = MoE(x) for x's rows (x may already hold quantized forms other matrices made).
void moe_forward(const kernels::Compute& c, const MoeWeights& w, kernels::Activations& x, MoeScratch& s, float* out);

}  // namespace qwen35
