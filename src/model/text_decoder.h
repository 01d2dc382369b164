// The hybrid text decoder, top to bottom: embedding, N pre-norm residual layers (Gated DeltaNet
// or gated attention, then SwiGLU), final norm, LM head.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/compute.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/decoder_backend.h"
#include "model/decoder_state.h"
#include "model/deltanet.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "model/rope.h"
#include "model/text_weights.h"

namespace qwen35 {

// Receives intermediate results (for `qwen35 forward --dump` and tests); default: ignore.
class DecoderObserver {
 public:
  virtual ~DecoderObserver() = default;
  virtual void on_layer_output(int layer, const float* x, int64_t T) {}  // residual stream [T, H]
  virtual void on_moe_routing(int layer, const MoeRouting& r) {}         // an MoE layer's choices
};

// Buffers of one forward call; grown on demand, so a session that reserves its block size once
// does not allocate while decoding.
struct DecoderWorkspace {
  int64_t capacity = 0;
  std::vector<float> x;       // [T, H] residual stream
  std::vector<float> normed;  // [T, H]
  std::vector<float> mixed;   // [T, H] mixer / MLP output
  std::vector<DeltaNetSpan> deltanet_spans;
  std::vector<AttentionSpan> attention_spans;
  // A layer whose rows are a strict subset of the call's (segments with layer ranges) runs on a
  // compact copy of them.
  std::vector<float> x_sub;
  std::vector<int32_t> positions_sub;
  std::vector<int64_t> segment_rows;  // first row of each segment
  std::vector<uint8_t> segment_active, segment_was_active;
  kernels::Activations normed_in;  // normed, shared by every matrix that reads it
  DeltaNetScratch deltanet;
  AttentionScratch attention;
  MlpScratch mlp;
  MoeScratch moe;
  // With `trace` on, forward() keeps each DeltaNet layer's block inputs in traces[i], for
  // replay_deltanet (one per DeltaNet layer, in layer order).
  bool trace = false;
  std::vector<DeltaNetTrace> traces;
  void reserve(const TextConfig& cfg, int64_t tokens);
};

// One sequence's consecutive rows in a batched forward, through layers [first_layer, end_layer)
// (end_layer -1: to the last). A block may go through the decoder a few layers per call: its
// rows enter a call as the residual stream after first_layer - 1 (the embeddings at 0) and
// leave it as the residual stream after end_layer - 1, or final-normed after the last layer.
// Every layer computes a row the same way in any call, so the pieces give the bits of one pass.
struct DecoderSegment {
  DecoderState* state = nullptr;
  int64_t T = 0;
  DeltaRuleMode mode = DeltaRuleMode::kAuto;
  // Each DeltaNet layer's block inputs, kept for TextDecoder::replay_deltanet (one per DeltaNet
  // layer, in layer order; resized here). nullptr: not traced.
  std::vector<DeltaNetTrace>* traces = nullptr;
  int first_layer = 0;
  int end_layer = -1;
};

class TextDecoder {
 public:
  TextDecoder(const TextConfig& cfg, const TextWeights& weights);

  const TextConfig& config() const { return cfg_; }

  // embeddings[T, H] of token ids (ids must be < vocab_size).
  void embed(const int32_t* ids, int64_t T, float* out) const;

  // Runs T new tokens after state.n_past ones: embeddings [T, H], positions [3, T] (rows t, h, w).
  // Writes the final-normed hidden states [T, H] to `hidden` and advances the state.
  void forward(const kernels::Compute& c, const float* embeddings, const int32_t* positions, int64_t T,
               DecoderState& state, DecoderWorkspace& ws, float* hidden, DeltaRuleMode mode = DeltaRuleMode::kAuto,
               DecoderObserver* observer = nullptr) const;

  // The same for the rows of several sequences at once (segments in row order; inputs
  // [sum T, H], positions [3, sum T]): every matrix streams once for all the rows that go through
  // it, each segment's mixers run on its own state. A segment's output rows are the bits
  // forward() gives it alone. Its state's n_past advances when its rows pass the last layer.
  // `inputs` and `out` may be the same array.
  void forward_batch(const kernels::Compute& c, const float* inputs, const int32_t* positions,
                     std::span<const DecoderSegment> segments, DecoderWorkspace& ws, float* out,
                     DecoderObserver* observer = nullptr) const;

  // The one forward, on any backend (decoder_backend.h): forward_batch is this on the CPU backend.
  // out [sum T, H] on the host may be null when only logits_on follows (the rows stay where the
  // backend computed them).
  void forward_on(DecoderBackend& b, const float* inputs, const int32_t* positions,
                  std::span<const DecoderSegment> segments, float* out, DecoderObserver* observer = nullptr) const;
  // logits[rows.size(), vocab] of rows `rows` of b's last forward_on.
  void logits_on(DecoderBackend& b, std::span<const int64_t> rows, float* out) const {
    b.logits(w_.lm_head, rows, out);
  }

  // Advances the DeltaNet states, as they were before the last traced forward() of ws, by that
  // block's first n tokens, recurrently and without the matmuls: the DeltaNet side of feeding
  // those n tokens again (attention KV and n_past are the caller's).
  void replay_deltanet(const kernels::Compute& c, DecoderWorkspace& ws, int64_t n, DecoderState& state) const;

  // logits[n, vocab] = hidden[n, H] * lm_head^T.
  void logits(const kernels::Compute& c, const float* hidden, int64_t n, float* out) const;

 private:
  // Checks the segments' tokens and layer ranges; the rows in all.
  int64_t count_rows(std::span<const DecoderSegment> segments) const;

  const TextConfig& cfg_;
  const TextWeights& w_;
  MRope rope_;
};

}  // namespace qwen35
