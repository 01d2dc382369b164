// The Gated DeltaNet (linear attention) layer, spec 3.5.
#pragma once

#include <span>
#include <vector>

#include "kernels/compute.h"
#include "model/config.h"
#include "model/decoder_state.h"
#include "model/layer_ops.h"
#include "model/text_weights.h"

namespace qwen35 {

// Which form of the delta rule a multi-token block uses. kAuto: chunkwise-parallel for blocks
// of more than one token, recurrent for single tokens. The others are diagnostic switches.
enum class DeltaRuleMode { kAuto, kRecurrent, kChunked };

// Buffers for one block of up to `capacity` tokens; sized once, reused by every layer.
struct DeltaNetScratch {
  int64_t capacity = 0;
  std::vector<float> qkv;    // [T, conv_dim] projections before the conv
  std::vector<float> mixed;  // [T, conv_dim] after conv + SiLU
  std::vector<float> z;      // [T, Hv*dv]
  std::vector<float> beta;   // [T, Hv]
  std::vector<float> g;      // [T, Hv]
  std::vector<float> q;      // [T, Hk*dk] normalised and scaled
  std::vector<float> k;      // [T, Hk*dk] normalised
  std::vector<float> core;   // [T, Hv*dv] delta-rule output, then gated-normed
  std::vector<int64_t> span_rows;  // first row of each span of the call, then the rows in all
  kernels::Activations core_in;  // core, input of the output projection
  void reserve(const TextConfig& cfg, int64_t tokens);
};

// The state in HF's grouped value-head order (what the reference's cache holds), whatever order
// the weights use: conv [conv_dim, K] (the V channels permuted) and recurrent [Hv, dk, dv].
void deltanet_state_hf_order(const TextConfig& cfg, const DeltaNetWeights& w, const DeltaNetState& state,
                             std::vector<float>& conv, std::vector<float>& recurrent);

// What a block's state update depends on beyond the state itself: the projections before the conv
// and the beta / decay logits of each token. With it, the state before the block can be advanced
// over any prefix of the block without the matmuls (rewinding a verified draft that was partly
// accepted), bit-identically to feeding that prefix again.
struct DeltaNetTrace {
  int64_t tokens = 0;
  std::vector<float> qkv;  // [T, conv_dim]
  std::vector<float> b;    // [T, Hv]
  std::vector<float> a;    // [T, Hv]
};

// One sequence's consecutive rows in a batched call: its own state, form of the delta rule and
// (optionally) trace.
struct DeltaNetSpan {
  DeltaNetState* state = nullptr;
  int64_t T = 0;
  DeltaRuleMode mode = DeltaRuleMode::kAuto;
  DeltaNetTrace* trace = nullptr;
};

// The layer's body (spec 3.5) on any backend: the q/k/v, z, beta and decay projections, the
// conv step, the gates and q/k norms, the delta rule (recurrent or chunked) and gated norm on the
// sequence's states of its index-th DeltaNet layer, the output projection. Rows::kIn -> Rows::kOut.
void deltanet_layer(LayerOps& b, const DeltaNetWeights& w, int index);

// The CPU's DeltaNet primitives (LayerOps, layer_ops_cpu.h) on T rows of the scratch for rows of
// several sequences (spans in row order, their T summing to T), each on its state. A span's
// results are the bits it gets alone. deltanet_fused comes first: it lays out the spans' rows and
// fills their traces, and for a decoded token in every span runs the whole core fused (true).
bool deltanet_fused(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                    std::span<const DeltaNetSpan> spans, DeltaNetScratch& s, int64_t T);
void deltanet_conv(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                   std::span<const DeltaNetSpan> spans, DeltaNetScratch& s, int64_t T);
void deltanet_gates(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w, DeltaNetScratch& s,
                    int64_t T);
void deltanet_delta(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                    std::span<const DeltaNetSpan> spans, DeltaNetScratch& s);

// Advances `state` (as it was before the traced block) by the block's first n tokens, with the
// recurrent delta rule: what the layer in kRecurrent mode leaves after those n tokens.
void deltanet_replay(const kernels::Compute& c, const TextConfig& cfg, const DeltaNetWeights& w,
                     const DeltaNetTrace& trace, int64_t n, DeltaNetState& state, DeltaNetScratch& s);

}  // namespace qwen35
