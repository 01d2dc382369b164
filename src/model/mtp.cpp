#include "model/mtp.h"

#include "core/error.h"
#include "model/norm.h"

namespace qwen35 {

void MtpWorkspace::reserve(const TextConfig& cfg, int64_t tokens) {
  if (tokens > capacity) {
    capacity = tokens;
    const size_t n = size_t(tokens * cfg.hidden_size);
    cat.resize(2 * n);
    x.resize(n);
    normed.resize(n);
    mixed.resize(n);
  }
  attention.reserve(cfg, tokens);
  mlp.reserve(cfg.intermediate_size, tokens);
}

MtpHead::MtpHead(const TextConfig& cfg, const MtpWeights& weights) : cfg_(cfg), w_(weights), rope_(cfg) {}

void MtpHead::embed(const int32_t* ids, int64_t T, float* out) const {
  for (int64_t t = 0; t < T; ++t) {
    if (ids[t] < 0 || ids[t] >= cfg_.vocab_size) fail("token id ", ids[t], " is outside the vocabulary [0, ", cfg_.vocab_size, ")");
    kernels::weight_row_to_f32(w_.embed, ids[t], out + t * cfg_.hidden_size);
  }
}

void MtpHead::forward(const kernels::Compute& c, const float* embeddings, const float* hidden, const int32_t* positions,
                      int64_t T, KvCache& kv, MtpWorkspace& ws, float* out, MtpObserver* observer) const {
  if (T <= 0) return;
  ws.reserve(cfg_, T);
  const int64_t H = cfg_.hidden_size;
  const float eps = cfg_.rms_norm_eps;
  for (int64_t t = 0; t < T; ++t) {  // [T, 2H]: embedding part first
    rms_norm(embeddings + t * H, w_.pre_fc_norm_embedding.data(), H, eps, ws.cat.data() + t * 2 * H);
    rms_norm(hidden + t * H, w_.pre_fc_norm_hidden.data(), H, eps, ws.cat.data() + t * 2 * H + H);
  }
  float* x = ws.x.data();
  kernels::linear(c, ws.cat.data(), T, w_.fc, x);  // [T, H]
  if (observer) observer->on_fc_out(x, T);

  // One pre-norm full-attention decoder layer, as in the main model.
  const LayerWeights& L = w_.layer;
  ws.attention.set_positions(rope_, positions, T);
  rms_norm_rows(x, L.input_norm.data(), T, H, eps, ws.normed.data());
  ws.normed_in.bind(ws.normed.data(), T, H);
  attention_forward(c, cfg_, L.attention, rope_, ws.normed_in, kv, ws.attention, ws.mixed.data());
  for (int64_t j = 0; j < T * H; ++j) x[j] += ws.mixed[size_t(j)];
  rms_norm_rows(x, L.post_norm.data(), T, H, eps, ws.normed.data());
  ws.normed_in.bind(ws.normed.data(), T, H);
  mlp_forward(c, L.mlp, ws.normed_in, ws.mlp, ws.mixed.data());
  for (int64_t j = 0; j < T * H; ++j) x[j] += ws.mixed[size_t(j)];
  if (observer) observer->on_layer_out(x, T);

  rms_norm_rows(x, w_.norm.data(), T, H, eps, out);
}

void MtpHead::logits(const kernels::Compute& c, const float* hidden, int64_t n, float* out) const {
  kernels::linear(c, hidden, n, w_.lm_head, out);
}

}  // namespace qwen35
