// TextWeights and the MTP tensors from a qwen35 GGUF file (gguf.md sections 2-3, spec 11.2).
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/gguf.h"
#include "model/nextn_tensors.h"
#include "model/tensor_names.h"
#include "model/text_weights.h"

namespace qwen35 {
namespace {

std::string blk(int i, const char* name) { return "blk." + std::to_string(i) + "." + name; }

}  // namespace

MoeWeights bind_moe_gguf(const std::function<const TensorView*(const std::string&)>& find, const TextConfig& c,
                         const std::string& where) {
  const int64_t H = c.hidden_size, E = c.num_experts, I = c.moe_intermediate_size, Is = c.shared_expert_intermediate_size;
  auto get = [&](const std::string& name) -> const TensorView& {
    const TensorView* t = find(name);
    if (!t) fail(where, ": missing tensor '", name, "'");
    return *t;
  };
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    return matrix_view(where + name, get(name), rows, cols, true);
  };
  MoeWeights m;
  m.top_k = c.num_experts_per_tok;
  m.router = matrix("ffn_gate_inp.weight", E, H);
  // llama.cpp stores the shared expert's gate as a vector [H]; it is one row of the matrix [1, H].
  TensorView sg = get("ffn_gate_inp_shexp.weight");
  if (sg.shape == Shape{H}) sg.shape = Shape{1, H};
  m.shared_gate = matrix_view(where + "ffn_gate_inp_shexp.weight", sg, 1, H, true);
  m.shared.gate = matrix("ffn_gate_shexp.weight", Is, H);
  m.shared.up = matrix("ffn_up_shexp.weight", Is, H);
  m.shared.down = matrix("ffn_down_shexp.weight", H, Is);
  if (const TensorView* gu = find("ffn_gate_up_exps.weight")) {
    for (const WeightMatrix& e : expert_views(where + "ffn_gate_up_exps.weight", *gu, E, 2 * I, H, true)) {
      m.gate.push_back(row_slice(e, 0, I));
      m.up.push_back(row_slice(e, I, I));
    }
  } else {
    m.gate = expert_views(where + "ffn_gate_exps.weight", get("ffn_gate_exps.weight"), E, I, H, true);
    m.up = expert_views(where + "ffn_up_exps.weight", get("ffn_up_exps.weight"), E, I, H, true);
  }
  m.down = expert_views(where + "ffn_down_exps.weight", get("ffn_down_exps.weight"), E, H, I, true);
  return m;
}


TextWeights TextWeights::bind_gguf(const GgufFile& f, const TextConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  TextWeights w;
  w.embed = gguf_matrix(f, gguf_global_tensor_name("embed_tokens.weight"), V, H);
  w.final_norm = gguf_vector(f, gguf_global_tensor_name("norm.weight"), Shape{H});  // stored as 1 + w
  // No output.weight: tied to the embedding (the 0.8B-4B models; gguf.md D9).
  w.lm_head = f.find_tensor(gguf_global_tensor_name("lm_head.weight")) ? gguf_matrix(f, gguf_global_tensor_name("lm_head.weight"), V, H) : w.embed;

  for (int i = 0; i < c.num_layers; ++i) {
    LayerWeights L;
    L.kind = c.layer_kinds[size_t(i)];
    L.input_norm = gguf_vector(f, gguf_layer_tensor_name(i, "input_layernorm.weight"), Shape{H});
    L.post_norm = gguf_vector(f, gguf_layer_tensor_name(i, "post_attention_layernorm.weight"), Shape{H});
    if (c.is_moe()) {
      const std::string b = "blk." + std::to_string(i) + ".";
      std::deque<TensorView> views;  // find's answers, alive until bind_moe_gguf returns
      L.moe = bind_moe_gguf(
          [&](const std::string& name) -> const TensorView* {
            const GgufTensor* t = f.find_tensor(b + name);
            return t ? &views.emplace_back(t->view()) : nullptr;
          },
          c, f.path() + ": " + b);
    } else {
      L.mlp.gate = gguf_matrix(f, gguf_layer_tensor_name(i, "mlp.gate_proj.weight"), I, H);
      L.mlp.up = gguf_matrix(f, gguf_layer_tensor_name(i, "mlp.up_proj.weight"), I, H);
      L.mlp.down = gguf_matrix(f, gguf_layer_tensor_name(i, "mlp.down_proj.weight"), H, I);
    }
    if (L.kind == LayerKind::kDeltaNet) {
      if (f.find_tensor(gguf_layer_tensor_name(i, "self_attn.q_proj.weight")))
        fail(f.path(), ": layer ", i, " has attention tensors but the layer schedule makes it a DeltaNet layer");
      const int64_t C = c.conv_dim(), Hv = c.linear_value_heads, VS = c.deltanet_value_size();
      DeltaNetWeights& d = L.deltanet;
      d.in_qkv = gguf_matrix(f, gguf_layer_tensor_name(i, "linear_attn.in_proj_qkv.weight"), C, H);
      d.in_z = gguf_matrix(f, gguf_layer_tensor_name(i, "linear_attn.in_proj_z.weight"), VS, H);
      d.in_b = gguf_matrix(f, gguf_layer_tensor_name(i, "linear_attn.in_proj_b.weight"), Hv, H);
      d.in_a = gguf_matrix(f, gguf_layer_tensor_name(i, "linear_attn.in_proj_a.weight"), Hv, H);
      d.out = gguf_matrix(f, gguf_layer_tensor_name(i, "linear_attn.out_proj.weight"), H, VS);
      d.conv = gguf_vector(f, gguf_layer_tensor_name(i, "linear_attn.conv1d.weight"), Shape{C, c.conv_kernel});  // ne {K, C}
      d.dt_bias = gguf_vector(f, gguf_layer_tensor_name(i, "linear_attn.dt_bias"), Shape{Hv});
      d.neg_a = gguf_vector(f, gguf_layer_tensor_name(i, "linear_attn.A_log"), Shape{Hv});  // already -exp(A_log)
      d.norm = gguf_vector(f, gguf_layer_tensor_name(i, "linear_attn.norm.weight"), Shape{c.linear_value_dim});
      d.v_heads_tiled = true;
      finish_deltanet_weights(d, C, c.conv_kernel);
    } else {
      if (f.find_tensor(gguf_layer_tensor_name(i, "linear_attn.in_proj_qkv.weight")) || f.find_tensor(gguf_layer_tensor_name(i, "linear_attn.A_log")))
        fail(f.path(), ": layer ", i, " has DeltaNet tensors but the layer schedule makes it an attention layer");
      const int64_t hd = c.head_dim, q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
      AttentionWeights& a = L.attention;
      a.q = gguf_matrix(f, gguf_layer_tensor_name(i, "self_attn.q_proj.weight"), q_rows, H);
      a.k = gguf_matrix(f, gguf_layer_tensor_name(i, "self_attn.k_proj.weight"), int64_t(c.num_kv_heads) * hd, H);
      a.v = gguf_matrix(f, gguf_layer_tensor_name(i, "self_attn.v_proj.weight"), int64_t(c.num_kv_heads) * hd, H);
      a.o = gguf_matrix(f, gguf_layer_tensor_name(i, "self_attn.o_proj.weight"), H, int64_t(c.num_heads) * hd);
      a.q_norm = gguf_vector(f, gguf_layer_tensor_name(i, "self_attn.q_norm.weight"), Shape{hd});
      a.k_norm = gguf_vector(f, gguf_layer_tensor_name(i, "self_attn.k_norm.weight"), Shape{hd});
    }
    w.layers.push_back(std::move(L));
  }
  return w;
}

const TensorView* NextnTensors::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

NextnTensors bind_nextn(const GgufFile& f, const TextConfig& c) {
  NextnTensors out;
  // The MTP layer is the last block, in a bundled file and in a sidecar alike; llama.cpp looks for
  // its eh_proj to decide that a file can draft (gguf.md section 3).
  const int layer = int(f.get_int_opt(std::string(f.get_string("general.architecture")) + ".block_count").value_or(0)) - 1;
  if (layer < 0 || !f.find_tensor(blk(layer, "nextn.eh_proj.weight"))) return out;
  if (layer != c.num_layers)
    fail(f.path(), ": the MTP layer is block ", layer, " but the model has ", c.num_layers, " decoder layers");
  out.layer = layer;
  out.source = f.path();
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size, hd = c.head_dim;
  const int64_t q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1), kv = int64_t(c.num_kv_heads) * hd;
  struct Want {
    const char* name;
    Shape shape;
    bool matrix, required;
  };
  const Want wants[] = {
      {"nextn.eh_proj.weight", Shape{H, 2 * H}, true, true},
      {"nextn.enorm.weight", Shape{H}, false, true},
      {"nextn.hnorm.weight", Shape{H}, false, true},
      {"nextn.shared_head_norm.weight", Shape{H}, false, false},
      {"nextn.embed_tokens.weight", Shape{V, H}, true, false},
      {"nextn.shared_head_head.weight", Shape{V, H}, true, false},
      {"attn_norm.weight", Shape{H}, false, true},
      {"post_attention_norm.weight", Shape{H}, false, true},
      {"attn_q.weight", Shape{q_rows, H}, true, true},
      {"attn_k.weight", Shape{kv, H}, true, true},
      {"attn_v.weight", Shape{kv, H}, true, true},
      {"attn_output.weight", Shape{H, int64_t(c.num_heads) * hd}, true, true},
      {"attn_q_norm.weight", Shape{hd}, false, true},
      {"attn_k_norm.weight", Shape{hd}, false, true},
      {"ffn_gate.weight", Shape{I, H}, true, true},
      {"ffn_up.weight", Shape{I, H}, true, true},
      {"ffn_down.weight", Shape{H, I}, true, true},
  };
  for (const Want& want : wants) {
    // An MoE block's FFN tensors are checked by bind_moe_gguf when the head binds them.
    if (c.is_moe() && std::string_view(want.name).starts_with("ffn_")) continue;
    const std::string name = blk(out.layer, want.name);
    const GgufTensor* t = f.find_tensor(name);
    if (!t) {
      if (want.required) fail(f.path(), ": the MTP layer ", out.layer, " lacks tensor '", name, "'");
      continue;
    }
    const TensorView v = t->view();
    if (want.matrix) matrix_view(name, v, want.shape[0], want.shape[1], true);
    else vector_f32(name, v, want.shape);
    out.tensors.emplace(want.name, v);
  }
  if (c.is_moe()) {
    const std::string prefix = blk(out.layer, "ffn_");
    for (const GgufTensor& t : f.tensors())
      if (t.name.starts_with(prefix)) out.tensors.emplace(t.name.substr(prefix.size() - 4), t.view());
  }
  return out;
}

}  // namespace qwen35
