// The gated full-attention layer, spec 3.6: q/k RMSNorm, partial interleaved MRoPE, GQA causal
// attention over the KV cache, sigmoid output gate.
#pragma once

#include <span>
#include <vector>

#include "kernels/compute.h"
#include "model/config.h"
#include "model/decoder_state.h"
#include "model/layer_ops.h"
#include "model/rope.h"
#include "model/text_weights.h"

namespace qwen35 {

// kAttnBlock query rows of one span against its cache (attention.cpp hands them out per KV head).
struct AttentionBlock {
  const KvCache* kv = nullptr;
  int64_t t0 = 0;     // first row, in the whole call
  int64_t n = 0;      // rows
  int64_t n_kv0 = 0;  // keys the first row sees
};

struct AttentionScratch {
  int64_t capacity = 0;
  std::vector<float> qg;    // [T, q_proj rows]
  std::vector<float> q;     // [T, nq*hd]
  std::vector<float> k;     // [T, nkv*hd]
  std::vector<float> v;     // [T, nkv*hd]
  std::vector<float> attn;  // [T, nq*hd]
  std::vector<float> cos, sin;  // [T, rotary/2], shared by every attention layer of one call
  std::vector<AttentionBlock> blocks;
  kernels::Activations in;       // the layer input, when the caller passes plain rows
  kernels::Activations attn_in;  // attn, input of the output projection
  void reserve(const TextConfig& cfg, int64_t tokens);
  // Rotary angles of T tokens at positions [3, T] (rows t, h, w); once per forward, not per layer.
  void set_positions(const MRope& rope, const int32_t* positions, int64_t T);
};

// One sequence's consecutive rows in a batched call, with its own cache.
struct AttentionSpan {
  KvCache* kv = nullptr;
  int64_t T = 0;
};

// The layer's body (spec 3.6) on any backend: q (with its gates), k, v projections, per-head
// RMSNorms, MRoPE, the sequence's cache (index-th attention layer) and attention, the sigmoid
// output gate, o. Rows::kIn -> Rows::kOut.
void attention_layer(LayerOps& b, const TextConfig& cfg, const AttentionWeights& w, int index);

// out[T, H] = Attention(a[T, H]) on the CPU at the angles set by s.set_positions; appends T rows
// to `kv`. `a` may already hold quantized forms of its rows.
void attention_forward(const kernels::Compute& c, const TextConfig& cfg, const AttentionWeights& w, const MRope& rope,
                       kernels::Activations& a, KvCache& kv, AttentionScratch& s, float* out);

// The CPU's attention primitives (LayerOps, layer_ops_cpu.h) on T rows of the scratch.
void attention_head_norms(const kernels::Compute& c, const TextConfig& cfg, const AttentionWeights& w,
                          AttentionScratch& s, int64_t T);
void attention_rope(const kernels::Compute& c, const TextConfig& cfg, int half, AttentionScratch& s, int64_t T);
// Spans in row order, their T summing to T: each span's rows join its cache, then attend. A
// span's results are the bits it gets alone.
void attention_attend(const kernels::Compute& c, const TextConfig& cfg, std::span<const AttentionSpan> spans,
                      AttentionScratch& s, int64_t T);
void attention_output_gate(const kernels::Compute& c, const TextConfig& cfg, AttentionScratch& s, int64_t T);

}  // namespace qwen35
