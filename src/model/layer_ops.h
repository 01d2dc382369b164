// The primitives a decoder layer's body is written against (deltanet_layer, attention_layer,
// mlp_layer): the bodies say once which projections, gates, norms and state updates a layer runs
// and in which order; a backend runs each primitive where its rows live (the CPU: the kernel
// table on host rows, layer_ops_cpu.h; Vulkan: shaders on device buffers, model/vulkan).
//
// A primitive works on the rows of the current call (or layer, in a batch with layer ranges), its
// tensors named by Rows. Each computes every row the same way whatever the rows of the call: PLD,
// prefix reuse and batching rest on it on every backend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "kernels/compute.h"
#include "model/text_weights.h"

namespace qwen35 {

// The tensors of a layer body, [T, width]; a backend keeps each where it computes.
enum class Rows : uint8_t {
  kIn,    // [T, H] the layer's (normed) input
  kOut,   // [T, H] its output
  kQkv,   // DeltaNet: [T, conv_dim] q, k, v projections before the conv
  kZ,     //           [T, Hv*dv] output gate input
  kBeta,  //           [T, Hv] beta logits
  kG,     //           [T, Hv] decay input
  kCore,  //           [T, Hv*dv] the delta rule's gated-normed output
  kQg,    // attention: [T, q_proj rows] queries (and their output gates, interleaved per head)
  kQ,     //            [T, nq*hd] normed, rotated queries
  kK,     //            [T, nkv*hd] keys
  kV,     //            [T, nkv*hd] values
  kAttn,  //            [T, nq*hd] attention output (gated in place)
  kGate,  // MLP: [T, I] gate projection, then silu(gate) * up
  kUp,    //      [T, I] up projection
};

// One matrix of a linear primitive: out = in * w^T.
struct LinearTo {
  const kernels::WeightMatrix* w;
  Rows out;
};

class LayerOps {
 public:
  virtual ~LayerOps() = default;

  // Each out = in * w^T ([T, w.rows]); the matrices read the same rows: one pass over them, one
  // quantization of them.
  virtual void linear(Rows in, std::span<const LinearTo> outs) = 0;
  void linear(Rows in, std::initializer_list<LinearTo> outs) {
    linear(in, std::span<const LinearTo>(outs.begin(), outs.size()));
  }

  // DeltaNet's core, kQkv, kZ, kBeta, kG -> kCore, each sequence on its states of its index-th
  // DeltaNet layer. delta_rule_fused comes first: a backend that runs the whole core as one fused
  // step where that pays does so there and returns true (the CPU, for a decoded token in every
  // sequence: one task per key head, conv to norm, in one parallel pass); otherwise the body runs
  // conv, gates and delta.
  virtual bool delta_rule_fused(const DeltaNetWeights& w, int index) = 0;
  // The causal conv step over kQkv (+ SiLU, conv state update).
  virtual void conv(const DeltaNetWeights& w, int index) = 0;
  // kBeta = sigmoid(kBeta), kG = -exp(A) softplus(kG + dt_bias) in place; q (scaled by 1/sqrt(dk))
  // and k l2-normed from the conv's output.
  virtual void gates(const DeltaNetWeights& w) = 0;
  // The delta rule over the tokens (recurrent steps, or chunks where the sequence's mode says:
  // DeltaRuleMode), recurrent state update, then norm(o) * w.norm * silu(kZ) per value head.
  virtual void delta(const DeltaNetWeights& w, int index) = 0;

  // Attention: kQ = RMSNorm(the query part of each head of kQg) * q_norm; kK normed per head in
  // place (* k_norm).
  virtual void head_norms(const AttentionWeights& w) = 0;
  // MRoPE (rotate-half over the rotary dims) of kQ and kK at the rows' angles.
  virtual void rope() = 0;
  // kK and kV join each sequence's cache of its index-th attention layer; kAttn = causal GQA
  // attention of kQ over the cache.
  virtual void attend(int index) = 0;
  // kAttn *= sigmoid(the gate part of each head of kQg).
  virtual void output_gate() = 0;

  // kGate = silu(kGate) * kUp.
  virtual void swiglu() = 0;
};

}  // namespace qwen35
