#include "model/mtp.h"

#include "core/error.h"

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
  if (cfg.is_moe()) moe.reserve(cfg, tokens);
  else mlp.reserve(cfg.intermediate_size, tokens);
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
  const kernels::KernelTable& k = *c.k;
  auto norm_rows = [&](const float* in, const std::vector<float>& w, float* y) {
    for (int64_t t = 0; t < T; ++t) k.rms_norm(in + t * H, w.data(), eps, y + t * H, H);
  };
  for (int64_t t = 0; t < T; ++t) {  // [T, 2H]: embedding part first
    k.rms_norm(embeddings + t * H, w_.pre_fc_norm_embedding.data(), eps, ws.cat.data() + t * 2 * H, H);
    k.rms_norm(hidden + t * H, w_.pre_fc_norm_hidden.data(), eps, ws.cat.data() + t * 2 * H + H, H);
  }
  float* x = ws.x.data();
  ws.cat_in.bind(ws.cat.data(), T, 2 * H);
  kernels::linear(c, ws.cat_in, w_.fc, x, w_.fc.rows);  // [T, H]
  if (observer) observer->on_fc_out(x, T);

  // One pre-norm full-attention decoder layer, as in the main model.
  const LayerWeights& L = w_.layer;
  ws.attention.set_positions(rope_, positions, T);
  norm_rows(x, L.input_norm, ws.normed.data());
  ws.normed_in.bind(ws.normed.data(), T, H);
  attention_forward(c, cfg_, L.attention, rope_, ws.normed_in, kv, ws.attention, ws.mixed.data());
  k.add(ws.mixed.data(), x, T * H);
  norm_rows(x, L.post_norm, ws.normed.data());
  ws.normed_in.bind(ws.normed.data(), T, H);
  if (L.is_moe()) {
    moe_forward(c, L.moe, ws.normed_in, ws.moe, ws.mixed.data());
    if (observer) observer->on_moe_routing(ws.moe.routing(T, L.moe.num_experts(), L.moe.top_k));
  } else {
    mlp_forward(c, L.mlp, ws.normed_in, ws.mlp, ws.mixed.data());
  }
  k.add(ws.mixed.data(), x, T * H);
  if (observer) observer->on_layer_out(x, T);

  norm_rows(x, w_.norm, out);
}

void MtpHead::logits(const kernels::Compute& c, const float* hidden, int64_t n, float* out) const {
  kernels::linear(c, hidden, n, w_.lm_head, out);
}

}  // namespace qwen35
