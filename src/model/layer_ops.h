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

  // DeltaNet's recurrent core over kQkv, kZ, kBeta, kG into kCore, each sequence on the state of
  // its index-th DeltaNet layer: the causal conv step (+ SiLU, conv state update), the gates
  // (beta = sigmoid, g = -exp(A) softplus(a + dt_bias)), the l2-normed q (scaled by 1/sqrt(dk))
  // and k, the delta rule over the tokens (recurrent steps or chunks, recurrent state update),
  // then norm(o) * w.norm * silu(z) per value head. One primitive: the CPU runs it for a decoded
  // token as one task per key head, conv to norm, in one parallel pass.
  virtual void delta_rule(const DeltaNetWeights& w, int index) = 0;

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
