// What the text decoder's forward runs on. TextDecoder::forward_on (text_decoder.cpp) is the one
// forward: the layer loop, which rows each layer takes, pre-norm, mixer, residual, FFN, final
// norm and LM head, in that order, and the layers' bodies (deltanet_layer, attention_layer,
// mlp_layer) are written once against the primitives of layer_ops.h; a backend runs each step and
// primitive where its tensors live. The CPU backend (decoder_cpu.h) runs the kernel table on host
// rows; the Vulkan backend (model/vulkan/decoder_vulkan.h) records the same steps into one command
// buffer on device-resident tensors.
//
// A backend holds the call's residual stream x, the normed rows (the layer bodies' Rows::kIn) and
// the mixer / FFN output (Rows::kOut); each step names what it reads and writes. A step computes
// every row the same way whatever the rows of the call (PLD, prefix reuse and batching rest on it
// on every backend).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "model/decoder_state.h"
#include "model/layer_ops.h"
#include "model/text_weights.h"

namespace qwen35 {

class DecoderObserver;
struct DecoderSegment;

class DecoderBackend : public LayerOps {
 public:
  virtual ~DecoderBackend() = default;

  // Takes the call's rows inputs [T, H] (the segments' rows in order, T in all, checked by the
  // caller) at positions [3, T] as the residual stream x.
  virtual void begin(const float* inputs, const int32_t* positions, std::span<const DecoderSegment> segments,
                     int64_t T) = 0;
  // Lays out the rows of layer i; false when no segment with rows is in its range.
  virtual bool enter_layer(int i) = 0;

  // normed = RMSNorm(x) * w.
  virtual void norm(const std::vector<float>& w) = 0;
  // The mixer (mixed = deltanet_layer / attention_layer over normed) runs on the primitives, each
  // segment on its own state: its index-th DeltaNet layer or attention layer.
  // x += mixed, then normed = RMSNorm(x) * w.
  virtual void add_norm(const std::vector<float>& w) = 0;
  // mixed = FFN(normed): SwiGLU (mlp_layer on the primitives), or the mixture of experts (layer:
  // what the observer is told).
  virtual void moe(const MoeWeights& w, int layer, DecoderObserver* observer) = 0;
  // x += mixed.
  virtual void add() = 0;
  virtual void observe(int layer, DecoderObserver& observer) = 0;

  // The rows leave the decoder: a segment through the last layer final-normed (its state's n_past
  // advances), others as the residual stream after their last layer. out [T, H] on the host may be
  // null where only logits are wanted.
  virtual void finish(const std::vector<float>& final_norm, float* out) = 0;
  // logits[rows.size(), vocab] = the call's output rows `rows` * lm_head^T.
  virtual void logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) = 0;

  // Advances `state`'s DeltaNet states, taken back to what they were before its last traced block
  // (DecoderSegment::traces), over that block's first n tokens from the traces the backend kept:
  // the conv steps, gates and recurrent delta rule only, no matmuls; the states the block in
  // recurrent mode left after those n tokens, bit for bit. For a backend that keeps its traces
  // where its states live (a device); the CPU's traces are the host's (TextDecoder::replay_deltanet).
  virtual void replay_deltanet(DecoderState& state, int64_t n);
};

inline void DecoderBackend::replay_deltanet(DecoderState&, int64_t) {
  fail("this decoder backend keeps no traces of its own (its traces are the host's)");
}

}  // namespace qwen35
