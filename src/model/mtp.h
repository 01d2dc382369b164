// The multi-token-prediction head's forward pass, spec 10 (vLLM's conventions, as the goldens):
//
//   e  = RMSNorm_pre_fc_norm_embedding(E[x_{t+1}])
//   hh = RMSNorm_pre_fc_norm_hidden(h_t)              h_t: the main model's final-normed hidden
//   z  = fc(concat(e, hh))                            [H <- 2H], embedding part first
//   z  = full-attention decoder layer(z)              its own KV cache; RoPE at the position of h_t
//   hm = RMSNorm_mtp.norm(z)                          fed back as the hidden of the next draft step
//   logits = lm_head(hm)                              a guess for x_{t+2}
//
// Pair t sits at the main model's position of h_t. Over a prompt x_0..x_{T-1} with greedy next
// token x_T, one call on the pairs (h_0, x_1) .. (h_{T-1}, x_T) fills T cache rows; the last
// row's logits give draft token d_1, and draft step k > 1 is a call on (hm of step k-1, d_{k-1})
// one position further on.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/compute.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/decoder_state.h"
#include "model/mlp.h"
#include "model/moe.h"
#include "model/mtp_weights.h"
#include "model/rope.h"

namespace qwen35 {

// Receives the head's intermediate results (for `qwen35 forward --dump mtp` and tests).
class MtpObserver {
 public:
  virtual ~MtpObserver() = default;
  virtual void on_fc_out(const float* z, int64_t T) {}     // [T, H] input of the decoder layer
  virtual void on_layer_out(const float* x, int64_t T) {}  // [T, H] residual stream before mtp.norm
  virtual void on_moe_routing(const MoeRouting& r) {}       // the layer's expert choices (MoE heads)
};

// Buffers of one call; grown on demand (reserve once to keep the decode loop allocation-free).
struct MtpWorkspace {
  int64_t capacity = 0;
  std::vector<float> cat;     // [T, 2H] normed embedding | normed hidden
  std::vector<float> x;       // [T, H] residual stream
  std::vector<float> normed;  // [T, H]
  std::vector<float> mixed;   // [T, H] attention / MLP output
  kernels::Activations normed_in;  // normed, shared by the matrices that read it (q/k/v, gate/up)
  kernels::Activations cat_in;  // cat, input of fc
  AttentionScratch attention;
  MlpScratch mlp;
  MoeScratch moe;
  void reserve(const TextConfig& cfg, int64_t tokens);
};

class MtpHead {
 public:
  MtpHead(const TextConfig& cfg, const MtpWeights& weights);

  const TextConfig& config() const { return cfg_; }
  const MtpWeights& weights() const { return w_; }
  // An empty cache of the head's one attention layer, with the trunk's element type (F32: the
  // reference's math, for the goldens).
  KvCache make_cache(DType dtype = DType::F32) const { return KvCache(cfg_.num_kv_heads, cfg_.head_dim, dtype); }

  // embeddings[T, H] of token ids (the shared embedding table).
  void embed(const int32_t* ids, int64_t T, float* out) const;

  // Runs T pairs: embeddings[t] = E[x_{t+1}] (image pads: the vision tower's rows, as the main
  // model saw them), hidden[t] = h_t, positions [3, T] = the main model's positions of h_t.
  // Appends T rows to `kv` and writes the post-mtp.norm hidden states [T, H] to `out`.
  void forward(const kernels::Compute& c, const float* embeddings, const float* hidden, const int32_t* positions,
               int64_t T, KvCache& kv, MtpWorkspace& ws, float* out, MtpObserver* observer = nullptr) const;

  // logits[n, vocab] = out[n, H] * lm_head^T.
  void logits(const kernels::Compute& c, const float* hidden, int64_t n, float* out) const;

 private:
  const TextConfig& cfg_;
  const MtpWeights& w_;
  MRope rope_;
};

}  // namespace qwen35
