#include "model/text_weights.h"

#include <cmath>
#include <string_view>

#include "core/error.h"

namespace qwen35 {
namespace {

void check_view(const std::string& name, const TensorView& t, const Shape& shape, bool allow_blocks) {
  const bool weight_block = is_block_format(t.dtype) && t.dtype != DType::Q8_K;
  if (!dtype_info(t.dtype).is_float && !(allow_blocks && weight_block))
    fail("tensor '", name, "': expected dtype F32, F16 or BF16", allow_blocks ? " or a weight block format" : "", ", got ",
         dtype_name(t.dtype));
  if (!(t.shape == shape)) fail("tensor '", name, "': expected shape ", shape.to_string(), ", got ", t.shape.to_string());
}

}  // namespace

std::vector<float> one_plus(std::vector<float> w) {
  for (float& x : w) x = 1.0f + x;
  return w;
}

void finish_deltanet_weights(DeltaNetWeights& d, int64_t conv_dim, int conv_kernel) {
  d.conv_t.assign(d.conv.size(), 0.0f);
  for (int64_t ch = 0; ch < conv_dim; ++ch)
    for (int j = 0; j < conv_kernel; ++j) d.conv_t[size_t(j * conv_dim + ch)] = d.conv[size_t(ch * conv_kernel + j)];
}

std::string text_prefix(const Checkpoint& ck) {
  for (const char* p : {"model.language_model.", "model."})
    if (ck.find(std::string(p) + "embed_tokens.weight")) return p;
  fail("checkpoint has no embedding table (looked for model.language_model.embed_tokens.weight and model.embed_tokens.weight)");
}

WeightMatrix matrix_view(const std::string& name, const TensorView& t, int64_t rows, int64_t cols, bool allow_blocks) {
  check_view(name, t, Shape{rows, cols}, allow_blocks);
  WeightMatrix m;
  m.dtype = t.dtype;
  m.data = t.data;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = dtype_bytes(t.dtype, size_t(cols));
  return m;
}

std::vector<WeightMatrix> expert_views(const std::string& name, const TensorView& t, int64_t n, int64_t rows,
                                       int64_t cols, bool allow_blocks) {
  check_view(name, t, Shape{n, rows, cols}, allow_blocks);
  std::vector<WeightMatrix> out;
  const size_t row_bytes = dtype_bytes(t.dtype, size_t(cols));
  for (int64_t e = 0; e < n; ++e)
    out.push_back(WeightMatrix{t.dtype, static_cast<const uint8_t*>(t.data) + size_t(e * rows) * row_bytes, rows, cols,
                               row_bytes});
  return out;
}

WeightMatrix row_slice(const WeightMatrix& m, int64_t r0, int64_t n) {
  if (m.layout != 0 || r0 < 0 || n < 0 || r0 + n > m.rows) fail("row_slice: rows [", r0, ", ", r0 + n, ") of ", m.rows);
  WeightMatrix s = m;
  s.data = m.row(r0);
  s.rows = n;
  return s;
}

MoeWeights bind_moe(const Checkpoint& ck, const TextConfig& c, const std::string& mp) {
  const int64_t H = c.hidden_size, E = c.num_experts, I = c.moe_intermediate_size,
                Is = c.shared_expert_intermediate_size;
  MoeWeights m;
  m.top_k = c.num_experts_per_tok;
  m.router = bind_matrix(ck, mp + "gate.weight", E, H);
  m.shared_gate = bind_matrix(ck, mp + "shared_expert_gate.weight", 1, H);
  m.shared.gate = bind_matrix(ck, mp + "shared_expert.gate_proj.weight", Is, H);
  m.shared.up = bind_matrix(ck, mp + "shared_expert.up_proj.weight", Is, H);
  m.shared.down = bind_matrix(ck, mp + "shared_expert.down_proj.weight", H, Is);
  const std::string fused = mp + "experts.gate_up_proj";
  if (ck.find(fused)) {
    // Per expert, rows [0, I) of gate_up_proj are gate_proj and rows [I, 2I) up_proj.
    for (const WeightMatrix& gu : expert_views(fused, ck.get(fused), E, 2 * I, H, false)) {
      m.gate.push_back(row_slice(gu, 0, I));
      m.up.push_back(row_slice(gu, I, I));
    }
    m.down = expert_views(mp + "experts.down_proj", ck.get(mp + "experts.down_proj"), E, H, I, false);
  } else {
    if (!ck.find(mp + "experts.0.gate_proj.weight"))
      fail("checkpoint has neither ", fused, " (fused experts) nor ", mp, "experts.0.gate_proj.weight (one by one)");
    for (int64_t e = 0; e < E; ++e) {
      const std::string ep = mp + "experts." + std::to_string(e) + ".";
      m.gate.push_back(bind_matrix(ck, ep + "gate_proj.weight", I, H));
      m.up.push_back(bind_matrix(ck, ep + "up_proj.weight", I, H));
      m.down.push_back(bind_matrix(ck, ep + "down_proj.weight", H, I));
    }
  }
  return m;
}

std::vector<float> vector_f32(const std::string& name, const TensorView& t, const Shape& shape) {
  check_view(name, t, shape, false);
  return to_f32(t);
}

WeightMatrix bind_matrix(const Checkpoint& ck, const std::string& name, int64_t rows, int64_t cols) {
  return matrix_view(name, ck.get(name), rows, cols, false);
}

std::vector<float> bind_vector(const Checkpoint& ck, const std::string& name, const Shape& shape) {
  return vector_f32(name, ck.get(name), shape);
}

WeightMatrix gguf_matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  return matrix_view(name, f.get_tensor(name).view(), rows, cols, true);
}

std::vector<float> gguf_vector(const GgufFile& f, const std::string& name, const Shape& shape) {
  return vector_f32(name, f.get_tensor(name).view(), shape);
}

LayerWeights bind_layer(const Checkpoint& ck, const TextConfig& c, const std::string& lp, LayerKind kind) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  LayerWeights L;
  L.kind = kind;
  L.input_norm = one_plus(bind_vector(ck, lp + "input_layernorm.weight", Shape{H}));
  L.post_norm = one_plus(bind_vector(ck, lp + "post_attention_layernorm.weight", Shape{H}));
  if (c.is_moe()) {
    L.moe = bind_moe(ck, c, lp + "mlp.");
  } else {
    L.mlp.gate = bind_matrix(ck, lp + "mlp.gate_proj.weight", I, H);
    L.mlp.up = bind_matrix(ck, lp + "mlp.up_proj.weight", I, H);
    L.mlp.down = bind_matrix(ck, lp + "mlp.down_proj.weight", H, I);
  }
  if (L.kind == LayerKind::kDeltaNet) {
    const std::string dp = lp + "linear_attn.";
    const int64_t C = c.conv_dim(), Hv = c.linear_value_heads, VS = c.deltanet_value_size();
    DeltaNetWeights& d = L.deltanet;
    d.in_qkv = bind_matrix(ck, dp + "in_proj_qkv.weight", C, H);
    d.in_z = bind_matrix(ck, dp + "in_proj_z.weight", VS, H);
    d.in_b = bind_matrix(ck, dp + "in_proj_b.weight", Hv, H);
    d.in_a = bind_matrix(ck, dp + "in_proj_a.weight", Hv, H);
    d.out = bind_matrix(ck, dp + "out_proj.weight", H, VS);
    d.conv = bind_vector(ck, dp + "conv1d.weight", Shape{C, 1, c.conv_kernel});
    d.dt_bias = bind_vector(ck, dp + "dt_bias", Shape{Hv});
    d.neg_a = bind_vector(ck, dp + "A_log", Shape{Hv});
    for (float& a : d.neg_a) a = -std::exp(a);
    d.norm = bind_vector(ck, dp + "norm.weight", Shape{c.linear_value_dim});
    finish_deltanet_weights(d, C, c.conv_kernel);
  } else {
    const std::string ap = lp + "self_attn.";
    const int64_t hd = c.head_dim, q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
    AttentionWeights& a = L.attention;
    a.q = bind_matrix(ck, ap + "q_proj.weight", q_rows, H);
    a.k = bind_matrix(ck, ap + "k_proj.weight", int64_t(c.num_kv_heads) * hd, H);
    a.v = bind_matrix(ck, ap + "v_proj.weight", int64_t(c.num_kv_heads) * hd, H);
    a.o = bind_matrix(ck, ap + "o_proj.weight", H, int64_t(c.num_heads) * hd);
    a.q_norm = one_plus(bind_vector(ck, ap + "q_norm.weight", Shape{hd}));
    a.k_norm = one_plus(bind_vector(ck, ap + "k_norm.weight", Shape{hd}));
  }
  return L;
}

TextWeights TextWeights::bind(const Checkpoint& ck, const TextConfig& c) {
  const std::string p = text_prefix(ck);
  const int64_t H = c.hidden_size, V = c.vocab_size;
  TextWeights w;
  w.embed = bind_matrix(ck, p + "embed_tokens.weight", V, H);
  w.final_norm = one_plus(bind_vector(ck, p + "norm.weight", Shape{H}));
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed;
  } else {
    if (!ck.find("lm_head.weight"))
      fail("tie_word_embeddings is false but the checkpoint has no lm_head.weight");
    w.lm_head = bind_matrix(ck, "lm_head.weight", V, H);
  }

  for (int i = 0; i < c.num_layers; ++i)
    w.layers.push_back(bind_layer(ck, c, p + "layers." + std::to_string(i) + ".", c.layer_kinds[size_t(i)]));
  return w;
}

std::vector<const WeightMatrix*> decode_matrices(const TextWeights& w) {
  std::vector<const WeightMatrix*> out;
  for (const LayerWeights& L : w.layers) {
    std::string_view last;
    int nth = 0;  // the matrix's index among those of its name (an expert's id)
    for_each_layer_matrix(L, [&](const char* name, const WeightMatrix& m) {
      nth = name == last ? nth + 1 : 0;
      last = name;
      if (last.ends_with("_exps.weight") && nth >= L.moe.top_k) return;
      out.push_back(&m);
    });
  }
  out.push_back(&w.lm_head);
  return out;
}

}  // namespace qwen35
