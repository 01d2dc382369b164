#include "model/gguf_export.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "core/half.h"
#include "kernels/compute.h"
#include "kernels/quant/quantize.h"
#include "model/tensor_names.h"

namespace qwen35 {
namespace {

// Rows of a tensor to export: f32 values of row r, and the stored bytes of row r when the
// source keeps them in a type a target may share (copied as they are).
struct Rows {
  int64_t rows = 0, cols = 0;
  std::function<void(int64_t r, float* out)> f32;
  DType raw_dtype = DType::F32;
  std::function<const uint8_t*(int64_t r)> raw;  // empty: no raw rows
};

void encode_row(DType t, const float* x, uint8_t* out, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(out, x, size_t(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    default:
      if (!kernels::quant::can_quantize(t)) fail("cannot write tensors of type ", dtype_name(t));
      kernels::quant::quantize_row(t, x, out, n);
  }
}

// Collects the tensors first, so the type plan can see all of them, then adds them to the writer.
class Exporter {
 public:
  Exporter(GgufWriter& w, const GgufExportOptions& o) : w_(w), o_(o) {}

  // A tensor of `shape` (outermost first) whose last dim is the row; `matrix` says whether it is
  // a quantizable matrix (else F32, or `forced`).
  void add(const std::string& name, const Shape& shape, Rows src, bool matrix, std::optional<DType> forced = {}) {
    if (src.rows * src.cols != shape.numel()) fail("export: '", name, "' rows do not cover its shape");
    ExportTensor t{name, {}, matrix && !forced};
    for (int d = shape.ndim - 1; d >= 0; --d) t.ne.push_back(shape[d]);
    pending_.push_back({std::move(t), shape, std::move(src), forced});
  }

  // Chooses every type and hands the tensors to the writer.
  void finish() {
    std::vector<ExportTensor> list;
    for (const Pending& p : pending_) list.push_back(p.info);
    std::vector<DType> planned;
    if (o_.plan_types) {
      planned = o_.plan_types(list);
      if (planned.size() != list.size()) fail("export: the type plan has ", planned.size(), " entries for ", list.size(), " tensors");
    }
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      DType type = DType::F32;
      if (p.forced) type = *p.forced;
      else if (p.info.quantizable && o_.plan_types) type = planned[i];
      else if (p.info.quantizable && o_.matrix_type) type = o_.matrix_type(p.info.name, p.src.rows, p.src.cols);
      write(p.info.name, p.shape, std::move(p.src), type);
    }
    pending_.clear();
  }

 private:
  struct Pending {
    ExportTensor info;
    Shape shape;
    Rows src;
    std::optional<DType> forced;
  };

  void write(const std::string& name, const Shape& shape, Rows src, DType type) {
    const size_t row_bytes = dtype_bytes(type, size_t(src.cols));
    ThreadPool* pool = o_.pool;
    w_.add_tensor(name, type, shape, [src = std::move(src), type, row_bytes, pool](uint8_t* out) {
      auto work = [&](size_t r0, size_t r1) {
        std::vector<float> buf(size_t(src.cols));
        for (size_t r = r0; r < r1; ++r) {
          if (src.raw && src.raw_dtype == type) {
            std::memcpy(out + r * row_bytes, src.raw(int64_t(r)), row_bytes);
            continue;
          }
          src.f32(int64_t(r), buf.data());
          encode_row(type, buf.data(), out + r * row_bytes, src.cols);
        }
      };
      if (pool) pool->parallel_for(size_t(src.rows), 16, work);
      else work(0, size_t(src.rows));
    });
  }

  GgufWriter& w_;
  const GgufExportOptions& o_;
  std::vector<Pending> pending_;
};

// Output row r of a matrix reads source row perm[r] (identity when empty), with the column blocks
// of `col_block` permuted the same way when col_perm is set.
Rows matrix_rows(const WeightMatrix& m, std::vector<int64_t> perm = {}, std::vector<int64_t> col_perm = {},
                 int64_t col_block = 0) {
  Rows r;
  r.rows = perm.empty() ? m.rows : int64_t(perm.size());
  r.cols = m.cols;
  r.f32 = [m, perm, col_perm, col_block](int64_t row, float* out) {
    const int64_t src = perm.empty() ? row : perm[size_t(row)];
    if (col_perm.empty()) return kernels::weight_row_to_f32(m, src, out);
    std::vector<float> tmp(size_t(m.cols));
    kernels::weight_row_to_f32(m, src, tmp.data());
    for (size_t k = 0; k < col_perm.size(); ++k)
      std::memcpy(out + int64_t(k) * col_block, tmp.data() + col_perm[k] * col_block, size_t(col_block) * 4);
  };
  if (m.layout == 0 && col_perm.empty()) {
    r.raw_dtype = m.dtype;
    r.raw = [m, perm](int64_t row) { return m.row(perm.empty() ? row : perm[size_t(row)]); };
  }
  return r;
}

// An f32 vector seen as rows of `cols`, optionally with permuted rows.
Rows vector_rows(std::vector<float> v, int64_t cols, std::vector<int64_t> perm = {}) {
  Rows r;
  r.cols = cols;
  r.rows = int64_t(v.size()) / cols;
  auto data = std::make_shared<std::vector<float>>(std::move(v));
  r.f32 = [data, cols, perm](int64_t row, float* out) {
    const int64_t src = perm.empty() ? row : perm[size_t(row)];
    std::memcpy(out, data->data() + src * cols, size_t(cols) * 4);
  };
  return r;
}

Rows view_rows(const TensorView& t, int64_t cols, bool plus_one = false) {
  WeightMatrix m;
  m.dtype = t.dtype;
  m.data = t.data;
  m.cols = cols;
  m.rows = t.numel() / cols;
  m.row_bytes = dtype_bytes(t.dtype, size_t(cols));
  Rows r = matrix_rows(m);
  if (plus_one) {
    auto base = r.f32;
    r.f32 = [base, cols](int64_t row, float* out) {
      base(row, out);
      for (int64_t i = 0; i < cols; ++i) out[i] += 1.0f;
    };
    r.raw = nullptr;
  }
  return r;
}

// Value-head order: HF groups the r = Hv/Hk value heads of key head g together (head g*r + j);
// llama.cpp tiles them (position j*Hk + g). perm[p] = the HF head at tiled position p.
std::vector<int64_t> tiled_heads(int64_t Hk, int64_t Hv) {
  std::vector<int64_t> perm(static_cast<size_t>(Hv));
  const int64_t r = Hv / Hk;
  for (int64_t p = 0; p < Hv; ++p) perm[size_t(p)] = (p % Hk) * r + p / Hk;
  return perm;
}

// Row permutation for a tensor of `before` untouched rows followed by Hv heads of `hd` rows.
std::vector<int64_t> head_rows(const std::vector<int64_t>& heads, int64_t before, int64_t hd) {
  if (heads.empty()) return {};
  std::vector<int64_t> perm(size_t(before + int64_t(heads.size()) * hd));
  for (int64_t i = 0; i < before; ++i) perm[size_t(i)] = i;
  for (size_t p = 0; p < heads.size(); ++p)
    for (int64_t e = 0; e < hd; ++e) perm[size_t(before + int64_t(p) * hd + e)] = before + heads[p] * hd + e;
  return perm;
}

std::string blk(int i, const std::string& name) { return "blk." + std::to_string(i) + "." + name; }


// The layer schedule as llama.cpp keys it: full_attention_interval when the layers follow one,
// else the per-layer recurrent flags (which llama.cpp reads first, gguf.md D1).
void write_schedule(const TextConfig& c, const std::string& a, int block_count, GgufWriter& w) {
  for (int interval = 1; interval <= c.num_layers; ++interval) {
    bool match = true;
    for (int i = 0; i < c.num_layers && match; ++i)
      match = (c.layer_kinds[size_t(i)] == LayerKind::kAttention) == ((i + 1) % interval == 0);
    if (match) return w.set_u32(a + ".full_attention_interval", uint32_t(interval));
  }
  std::vector<bool> recurrent(size_t(block_count), false);
  for (int i = 0; i < c.num_layers; ++i) recurrent[size_t(i)] = c.layer_kinds[size_t(i)] == LayerKind::kDeltaNet;
  w.set_array_bool(a + ".attention.recurrent_layers", recurrent);
}

// E expert matrices of one shape as one stacked tensor [E, rows, cols] (llama.cpp's *_exps).
Rows expert_rows(const std::vector<WeightMatrix>& experts) {
  const WeightMatrix& m0 = experts.front();
  Rows r;
  r.rows = int64_t(experts.size()) * m0.rows;
  r.cols = m0.cols;
  const int64_t per = m0.rows;
  r.f32 = [experts, per](int64_t row, float* out) { kernels::weight_row_to_f32(experts[size_t(row / per)], row % per, out); };
  bool plain = true;
  for (const WeightMatrix& e : experts) plain &= e.layout == 0 && e.dtype == m0.dtype;
  if (plain) {
    r.raw_dtype = m0.dtype;
    r.raw = [experts, per](int64_t row) { return experts[size_t(row / per)].row(row % per); };
  }
  return r;
}

// An MoE FFN under llama.cpp's qwen35moe names, `b` = "blk.N.": the router and the shared
// expert's gate stay f32 (as llama.cpp's converter keeps them), the experts stacked with gate and
// up apart (ffn_gate_exps, ffn_up_exps: what every llama.cpp build reads).
void add_moe(Exporter& ex, const std::string& b, const MoeWeights& m) {
  const int64_t E = m.num_experts(), H = m.router.cols, I = m.gate[0].rows, Is = m.shared.gate.rows;
  ex.add(b + "ffn_gate_inp.weight", Shape{E, H}, matrix_rows(m.router), true, DType::F32);
  ex.add(b + "ffn_gate_inp_shexp.weight", Shape{H}, matrix_rows(m.shared_gate), false, DType::F32);
  ex.add(b + "ffn_gate_exps.weight", Shape{E, I, H}, expert_rows(m.gate), true);
  ex.add(b + "ffn_up_exps.weight", Shape{E, I, H}, expert_rows(m.up), true);
  ex.add(b + "ffn_down_exps.weight", Shape{E, H, I}, expert_rows(m.down), true);
  ex.add(b + "ffn_gate_shexp.weight", Shape{Is, H}, matrix_rows(m.shared.gate), true);
  ex.add(b + "ffn_up_shexp.weight", Shape{Is, H}, matrix_rows(m.shared.up), true);
  ex.add(b + "ffn_down_shexp.weight", Shape{H, Is}, matrix_rows(m.shared.down), true);
}

// The MTP block as blk.<n>.*: from HF's mtp.* (norms get + 1) or the GGUF one loaded.
void export_mtp(const Model& model, const Checkpoint* ck, bool hf_mtp, int n, Exporter& ex);

}  // namespace

std::function<DType(const std::string&, int64_t, int64_t)> uniform_matrix_type(DType type) {
  return [type](const std::string&, int64_t, int64_t cols) {
    return cols % int64_t(dtype_info(type).block_elems) == 0 ? type : DType::F16;
  };
}

void export_text_gguf(const Model& model, const GgufExportOptions& o, GgufWriter& w) {
  const TextConfig& c = model.config().text;
  const TextWeights& tw = model.text_weights();
  // The MTP block: HF's mtp.* tensors, or the GGUF one the model was loaded with.
  const Checkpoint* ck = model.is_gguf() ? nullptr : &model.checkpoint();
  const bool hf_mtp = ck && ck->find("mtp.fc.weight");
  const bool mtp = o.mtp && (hf_mtp || !model.nextn().empty());
  const int block_count = c.num_layers + (mtp ? 1 : 0);

  // llama.cpp's architecture: qwen35 (dense) or qwen35moe, which prefixes every model key.
  const std::string a = c.is_moe() ? "qwen35moe" : "qwen35";
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  if (!o.name.empty()) w.set_string("general.name", o.name);
  if (const GgufFile* src = model.gguf())  // provenance keys of a GGUF being requantized
    for (const auto& [key, value] : src->metadata())
      if (key.rfind("general.", 0) == 0 && key != "general.architecture" && key != "general.type" &&
          key != "general.name" && key != "general.file_type" && key != "general.quantization_version" &&
          key != "general.alignment")
        w.set_value(key, value);
  w.set_u32(a + ".block_count", uint32_t(block_count));
  w.set_u32(a + ".context_length", uint32_t(c.max_position_embeddings));
  w.set_u32(a + ".embedding_length", uint32_t(c.hidden_size));
  if (c.is_moe()) {
    // As llama.cpp's converter writes a Qwen3.5 MoE config (no feed_forward_length: it has no dense MLP).
    w.set_u32(a + ".expert_count", uint32_t(c.num_experts));
    w.set_u32(a + ".expert_used_count", uint32_t(c.num_experts_per_tok));
    w.set_u32(a + ".expert_feed_forward_length", uint32_t(c.moe_intermediate_size));
    w.set_u32(a + ".expert_shared_feed_forward_length", uint32_t(c.shared_expert_intermediate_size));
  } else {
    w.set_u32(a + ".feed_forward_length", uint32_t(c.intermediate_size));
  }
  w.set_u32(a + ".attention.head_count", uint32_t(c.num_heads));
  w.set_u32(a + ".attention.head_count_kv", uint32_t(c.num_kv_heads));
  w.set_f32(a + ".rope.freq_base", float(c.rope_theta));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  w.set_u32(a + ".attention.key_length", uint32_t(c.head_dim));
  w.set_u32(a + ".attention.value_length", uint32_t(c.head_dim));
  w.set_u32("general.file_type", uint32_t(o.file_type));
  w.set_array_i32(a + ".rope.dimension_sections", {c.mrope_section[0], c.mrope_section[1], c.mrope_section[2], 0});
  w.set_u32(a + ".ssm.conv_kernel", uint32_t(c.conv_kernel));
  w.set_u32(a + ".ssm.state_size", uint32_t(c.linear_key_dim));
  w.set_u32(a + ".ssm.group_count", uint32_t(c.linear_key_heads));
  w.set_u32(a + ".ssm.time_step_rank", uint32_t(c.linear_value_heads));
  w.set_u32(a + ".ssm.inner_size", uint32_t(c.deltanet_value_size()));
  write_schedule(c, a, block_count, w);
  w.set_u32(a + ".rope.dimension_count", uint32_t(c.rotary_dim));
  if (mtp) w.set_u32(a + ".nextn_predict_layers", 1);
  w.set_u32("general.quantization_version", 2);
  if (!c.attn_output_gate)
    fail("llama.cpp's qwen35 graph always splits attn_q into query and gate; this model has no output gate");
  if (c.linear_key_dim != c.linear_value_dim)
    fail("GGUF stores one DeltaNet head size (ssm.state_size); this model has key ", c.linear_key_dim, " and value ",
         c.linear_value_dim);

  Exporter ex(w, o);
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  ex.add(gguf_global_tensor_name("embed_tokens.weight"), Shape{V, H}, matrix_rows(tw.embed), true);
  ex.add(gguf_global_tensor_name("norm.weight"), Shape{H}, vector_rows(tw.final_norm, H), false);
  if (!c.tie_word_embeddings) ex.add(gguf_global_tensor_name("lm_head.weight"), Shape{V, H}, matrix_rows(tw.lm_head), true);

  const int64_t Hk = c.linear_key_heads, Hv = c.linear_value_heads, dk = c.linear_key_dim, dv = c.linear_value_dim;
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerWeights& L = tw.layers[size_t(i)];
    ex.add(gguf_layer_tensor_name(i, "input_layernorm.weight"), Shape{H}, vector_rows(L.input_norm, H), false);
    ex.add(gguf_layer_tensor_name(i, "post_attention_layernorm.weight"), Shape{H}, vector_rows(L.post_norm, H), false);
    if (L.kind == LayerKind::kDeltaNet) {
      const DeltaNetWeights& d = L.deltanet;
      // HF order is reordered to tiled; a GGUF source already is.
      const std::vector<int64_t> heads = d.v_heads_tiled || Hk == Hv ? std::vector<int64_t>() : tiled_heads(Hk, Hv);
      const int64_t C = c.conv_dim(), VS = c.deltanet_value_size();
      ex.add(gguf_layer_tensor_name(i, "linear_attn.in_proj_qkv.weight"), Shape{C, H}, matrix_rows(d.in_qkv, head_rows(heads, 2 * Hk * dk, dv)), true);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.in_proj_z.weight"), Shape{VS, H}, matrix_rows(d.in_z, head_rows(heads, 0, dv)), true);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.in_proj_b.weight"), Shape{Hv, H}, matrix_rows(d.in_b, head_rows(heads, 0, 1)), true);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.in_proj_a.weight"), Shape{Hv, H}, matrix_rows(d.in_a, head_rows(heads, 0, 1)), true);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.conv1d.weight"), Shape{C, c.conv_kernel},
             vector_rows(d.conv, c.conv_kernel, head_rows(heads, 2 * Hk * dk, dv)), false);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.dt_bias"), Shape{Hv}, vector_rows(d.dt_bias, 1, head_rows(heads, 0, 1)), false);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.A_log"), Shape{Hv}, vector_rows(d.neg_a, 1, head_rows(heads, 0, 1)), false);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.norm.weight"), Shape{dv}, vector_rows(d.norm, dv), false);
      ex.add(gguf_layer_tensor_name(i, "linear_attn.out_proj.weight"), Shape{H, VS}, matrix_rows(d.out, {}, heads, dv), true);
    } else {
      const AttentionWeights& a = L.attention;
      const int64_t hd = c.head_dim;
      ex.add(gguf_layer_tensor_name(i, "self_attn.q_proj.weight"), Shape{a.q.rows, H}, matrix_rows(a.q), true);
      ex.add(gguf_layer_tensor_name(i, "self_attn.k_proj.weight"), Shape{a.k.rows, H}, matrix_rows(a.k), true);
      ex.add(gguf_layer_tensor_name(i, "self_attn.v_proj.weight"), Shape{a.v.rows, H}, matrix_rows(a.v), true);
      ex.add(gguf_layer_tensor_name(i, "self_attn.o_proj.weight"), Shape{H, a.o.cols}, matrix_rows(a.o), true);
      ex.add(gguf_layer_tensor_name(i, "self_attn.q_norm.weight"), Shape{hd}, vector_rows(a.q_norm, hd), false);
      ex.add(gguf_layer_tensor_name(i, "self_attn.k_norm.weight"), Shape{hd}, vector_rows(a.k_norm, hd), false);
    }
    if (L.is_moe()) {
      add_moe(ex, blk(i, ""), L.moe);
    } else {
      ex.add(gguf_layer_tensor_name(i, "mlp.gate_proj.weight"), Shape{I, H}, matrix_rows(L.mlp.gate), true);
      ex.add(gguf_layer_tensor_name(i, "mlp.up_proj.weight"), Shape{I, H}, matrix_rows(L.mlp.up), true);
      ex.add(gguf_layer_tensor_name(i, "mlp.down_proj.weight"), Shape{H, I}, matrix_rows(L.mlp.down), true);
    }
  }
  if (mtp) export_mtp(model, ck, hf_mtp, c.num_layers, ex);
  ex.finish();
}

namespace {

void export_mtp(const Model& model, const Checkpoint* ck, bool hf_mtp, int n, Exporter& ex) {
  // (GGUF name, view, + 1?) for every tensor of the block, named by the one HF <-> GGUF table.
  struct Item {
    std::string name;
    TensorView view;
    bool plus_one;
  };
  std::vector<Item> items;
  if (hf_mtp) {
    // HF's mtp.* in the order written (the GGUF names come from the table).
    static const char* const kOrder[] = {
        "fc.weight", "pre_fc_norm_embedding.weight", "pre_fc_norm_hidden.weight", "norm.weight",
        "layers.0.input_layernorm.weight", "layers.0.post_attention_layernorm.weight",
        "layers.0.self_attn.q_proj.weight", "layers.0.self_attn.k_proj.weight", "layers.0.self_attn.v_proj.weight",
        "layers.0.self_attn.o_proj.weight", "layers.0.self_attn.q_norm.weight", "layers.0.self_attn.k_norm.weight",
        "layers.0.mlp.gate_proj.weight", "layers.0.mlp.up_proj.weight", "layers.0.mlp.down_proj.weight"};
    const bool moe = model.config().text.is_moe();
    for (const char* suffix : kOrder) {
      // An MoE block's FFN (experts one by one or fused) is written from its bound weights below.
      if (moe && std::string_view(suffix).starts_with("layers.0.mlp.")) continue;
      const std::string hf = std::string("mtp.") + suffix;
      const TensorView* t = ck->find(hf);
      if (!t) fail("checkpoint has mtp.fc.weight but no ", hf);
      const std::optional<std::string> gguf = gguf_tensor_name(hf, n);
      if (!gguf) fail("checkpoint tensor '", hf, "' has no GGUF name");
      // The converter's rule, applied after renaming (so enorm/hnorm count): every *norm.weight
      // gets + 1 (the MTP block has no linear_attn.norm, the one exception).
      items.push_back({*gguf, *t, std::string_view(*gguf).ends_with("norm.weight")});
    }
  } else {
    for (const auto& [name, view] : model.nextn().tensors) items.push_back({blk(n, name), view, false});
  }
  for (const Item& it : items) {
    const TensorView& v = it.view;
    if (!dtype_info(v.dtype).is_float && v.shape.ndim < 2) fail("MTP tensor ", it.name, " has an unsupported type");
    const int64_t cols = v.shape[v.shape.ndim - 1];
    ex.add(it.name, v.shape, view_rows(v, cols, it.plus_one), v.shape.ndim >= 2);
  }
  if (hf_mtp && model.config().text.is_moe()) add_moe(ex, blk(n, ""), model.mtp()->weights().layer.moe);
}

}  // namespace

void export_mmproj_gguf(const Model& model, const GgufExportOptions& o, const std::array<double, 3>& image_mean,
                        const std::array<double, 3>& image_std, GgufWriter& w) {
  const VisionTower* vt = model.vision();
  if (!vt) fail("the model has no vision tower to write as an mmproj");
  export_mmproj_gguf(vt->config(), vt->weights(), model.config().text.rms_norm_eps, o, image_mean, image_std, w);
}

void export_mmproj_gguf(const VisionConfig& v, const VisionWeights& vw, float layer_norm_eps, const GgufExportOptions& o,
                        const std::array<double, 3>& image_mean, const std::array<double, 3>& image_std, GgufWriter& w) {
  const int64_t side = int64_t(std::llround(std::sqrt(double(v.num_position_embeddings))));
  w.set_string("general.architecture", "clip");
  w.set_string("general.type", "mmproj");
  if (!o.name.empty()) w.set_string("general.name", o.name);
  w.set_u32("general.file_type", uint32_t(o.file_type));
  w.set_bool("clip.has_vision_encoder", true);
  w.set_u32("clip.vision.projection_dim", uint32_t(v.out_hidden_size));
  w.set_u32("clip.vision.image_size", uint32_t(side * v.patch_size));
  w.set_u32("clip.vision.patch_size", uint32_t(v.patch_size));
  w.set_u32("clip.vision.embedding_length", uint32_t(v.hidden_size));
  w.set_u32("clip.vision.feed_forward_length", uint32_t(v.intermediate_size));
  w.set_u32("clip.vision.block_count", uint32_t(v.depth));
  w.set_u32("clip.vision.attention.head_count", uint32_t(v.num_heads));
  w.set_array_f32("clip.vision.image_mean", {float(image_mean[0]), float(image_mean[1]), float(image_mean[2])});
  w.set_array_f32("clip.vision.image_std", {float(image_std[0]), float(image_std[1]), float(image_std[2])});
  w.set_string("clip.projector_type", "qwen3vl_merger");
  w.set_bool("clip.use_gelu", true);
  w.set_u32("clip.vision.spatial_merge_size", uint32_t(v.spatial_merge_size));
  w.set_f32("clip.vision.attention.layer_norm_epsilon", layer_norm_eps);
  w.set_array_bool("clip.vision.is_deepstack_layers", std::vector<bool>(size_t(v.depth), false));
  w.set_u32("general.quantization_version", 2);

  Exporter ex(w, o);
  const int64_t D = v.hidden_size, C = v.in_channels, P = v.patch_size, T = v.temporal_patch_size;
  if (T != 2) fail("an mmproj patch embedding has two frames; this model has temporal_patch_size ", T);
  const DType patch_type = o.file_type == 1 ? DType::F16 : DType::F32;
  for (int64_t frame = 0; frame < 2; ++frame) {
    // Row (d, c, y) of frame `frame` is row ((d*C + c)*T + frame)*P + y of the Conv3d seen as rows of P.
    WeightMatrix m = vw.patch_embed.w;
    m.cols = P;
    m.rows = D * C * T * P;
    m.row_bytes = dtype_bytes(m.dtype, size_t(P));
    std::vector<int64_t> perm(size_t(D * C * P));
    for (int64_t dc = 0; dc < D * C; ++dc)
      for (int64_t y = 0; y < P; ++y) perm[size_t(dc * P + y)] = (dc * T + frame) * P + y;
    ex.add(frame ? "v.patch_embd.weight.1" : "v.patch_embd.weight", Shape{D, C, P, P}, matrix_rows(m, perm), false,
           patch_type);
  }
  auto name = [](const std::string& hf) { return *gguf_vision_tensor_name("model.visual." + hf); };
  ex.add(name("patch_embed.proj.bias"), Shape{D}, vector_rows(vw.patch_embed.b, D), false);
  ex.add(name("pos_embed.weight"), Shape{v.num_position_embeddings, D}, vector_rows(vw.pos_table, D), false);
  auto linear = [&](const std::string& hf, const LinearWeights& l) {
    ex.add(name(hf + ".weight"), Shape{l.w.rows, l.w.cols}, matrix_rows(l.w), true);
    ex.add(name(hf + ".bias"), Shape{l.w.rows}, vector_rows(l.b, l.w.rows), false);
  };
  auto norm = [&](const std::string& hf, const LayerNormWeights& n) {
    ex.add(name(hf + ".weight"), Shape{D}, vector_rows(n.weight, D), false);
    ex.add(name(hf + ".bias"), Shape{D}, vector_rows(n.bias, D), false);
  };
  for (int j = 0; j < v.depth; ++j) {
    const VisionBlockWeights& b = vw.blocks[size_t(j)];
    const std::string p = "blocks." + std::to_string(j) + ".";
    norm(p + "norm1", b.norm1);
    linear(p + "attn.qkv", b.qkv);
    linear(p + "attn.proj", b.proj);
    norm(p + "norm2", b.norm2);
    linear(p + "mlp.linear_fc1", b.fc1);
    linear(p + "mlp.linear_fc2", b.fc2);
  }
  norm("merger.norm", vw.merger_norm);
  linear("merger.linear_fc1", vw.merger_fc1);
  linear("merger.linear_fc2", vw.merger_fc2);
  ex.finish();
}

}  // namespace qwen35
