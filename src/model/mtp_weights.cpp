#include "model/mtp_weights.h"

#include "core/error.h"

namespace qwen35 {

bool has_mtp_weights(const Checkpoint& ck) { return ck.find("mtp.fc.weight") != nullptr; }

MtpWeights bind_mtp_weights(const Checkpoint& ck, const TextConfig& c, const TextWeights& text) {
  if (c.mtp_use_dedicated_embeddings)
    fail("config.json: mtp_use_dedicated_embeddings = true is not supported (the MTP head must share embed_tokens)");
  const int64_t H = c.hidden_size;
  MtpWeights w;
  w.pre_fc_norm_embedding = one_plus(bind_vector(ck, "mtp.pre_fc_norm_embedding.weight", Shape{H}));
  w.pre_fc_norm_hidden = one_plus(bind_vector(ck, "mtp.pre_fc_norm_hidden.weight", Shape{H}));
  w.fc = bind_matrix(ck, "mtp.fc.weight", H, 2 * H);
  w.norm = one_plus(bind_vector(ck, "mtp.norm.weight", Shape{H}));

  w.layer = bind_layer(ck, c, "mtp.layers.0.", LayerKind::kAttention);
  w.embed = text.embed;
  w.lm_head = text.lm_head;
  return w;
}

MtpWeights bind_mtp_weights(const NextnTensors& n, const TextConfig& c, const TextWeights& text) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size, hd = c.head_dim;
  auto view = [&](const char* name) -> const TensorView& {
    const TensorView* t = n.find(name);
    if (!t) fail(n.source, ": the MTP block lacks '", name, "'");
    return *t;
  };
  auto matrix = [&](const char* name, int64_t rows, int64_t cols) {
    return matrix_view(name, view(name), rows, cols, /*allow_blocks=*/true);
  };
  // GGUF norm weights are stored as 1 + w already (NextnTensors::kNormsIncludeOne).
  static_assert(NextnTensors::kNormsIncludeOne);
  auto norm = [&](const char* name, int64_t size) { return vector_f32(name, view(name), Shape{size}); };
  MtpWeights w;
  w.pre_fc_norm_embedding = norm("nextn.enorm.weight", H);
  w.pre_fc_norm_hidden = norm("nextn.hnorm.weight", H);
  w.fc = matrix("nextn.eh_proj.weight", H, 2 * H);
  w.norm = n.find("nextn.shared_head_norm.weight") ? norm("nextn.shared_head_norm.weight", H) : text.final_norm;
  LayerWeights& L = w.layer;
  L.kind = LayerKind::kAttention;
  L.input_norm = norm("attn_norm.weight", H);
  L.post_norm = norm("post_attention_norm.weight", H);
  const int64_t q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
  L.attention.q = matrix("attn_q.weight", q_rows, H);
  L.attention.k = matrix("attn_k.weight", int64_t(c.num_kv_heads) * hd, H);
  L.attention.v = matrix("attn_v.weight", int64_t(c.num_kv_heads) * hd, H);
  L.attention.o = matrix("attn_output.weight", H, int64_t(c.num_heads) * hd);
  L.attention.q_norm = norm("attn_q_norm.weight", hd);
  L.attention.k_norm = norm("attn_k_norm.weight", hd);
  if (c.is_moe()) {
    L.moe = bind_moe_gguf([&](const std::string& name) { return n.find(name); }, c,
                          n.source + ": blk." + std::to_string(n.layer) + ".");
  } else {
    L.mlp.gate = matrix("ffn_gate.weight", I, H);
    L.mlp.up = matrix("ffn_up.weight", I, H);
    L.mlp.down = matrix("ffn_down.weight", H, I);
  }
  w.embed = n.find("nextn.embed_tokens.weight") ? matrix("nextn.embed_tokens.weight", V, H) : text.embed;
  w.lm_head = n.find("nextn.shared_head_head.weight") ? matrix("nextn.shared_head_head.weight", V, H) : text.lm_head;
  return w;
}

std::vector<NamedMatrix> mtp_named_matrices(MtpWeights& w, int layer, const TextWeights& text) {
  const std::string b = "blk." + std::to_string(layer) + ".";
  std::vector<NamedMatrix> out;
  for_each_layer_matrix(w.layer, [&](const char* name, WeightMatrix& m) { out.push_back({b + name, &m}); });
  out.push_back({b + "nextn.eh_proj.weight", &w.fc});
  if (w.embed.data != text.embed.data) out.push_back({b + "nextn.embed_tokens.weight", &w.embed, /*row_lookup=*/true});
  if (w.lm_head.data != text.lm_head.data) out.push_back({b + "nextn.shared_head_head.weight", &w.lm_head});
  return out;
}

}  // namespace qwen35
