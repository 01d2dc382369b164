// The text decoder's weights: typed views into the mapped checkpoint for the matrices (any
// storage dtype the kernel table handles), f32 copies for the small vectors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "kernels/kernels.h"
#include "model/config.h"

namespace qwen35 {

using kernels::WeightMatrix;

struct DeltaNetWeights {
  WeightMatrix in_qkv;  // [conv_dim, H]: rows [q (Hk*dk) | k (Hk*dk) | v (Hv*dv)]
  WeightMatrix in_z;    // [Hv*dv, H]
  WeightMatrix in_b;    // [Hv, H]   beta logits
  WeightMatrix in_a;    // [Hv, H]   decay input
  WeightMatrix out;     // [H, Hv*dv]
  std::vector<float> conv;       // [conv_dim, K]; tap K-1 multiplies the current token
  std::vector<float> conv_t;     // [K, conv_dim]: the same taps, channel-contiguous (vector loops)
  std::vector<float> dt_bias;    // [Hv]
  std::vector<float> neg_a;      // [Hv] = -exp(A_log)
  std::vector<float> norm;       // [dv] gated RMSNorm weight (plain multiplier)
  // Order of the value heads in every value-indexed tensor (z, b, a, dt_bias, neg_a, the V part of
  // in_qkv and conv, the columns of out). false: HF's grouped order, value head p reads key head
  // p / (Hv/Hk). true: llama.cpp's tiled order (GGUF files), value head p reads key head p % Hk.
  bool v_heads_tiled = false;
};

struct AttentionWeights {
  WeightMatrix q;  // [nq * hd * (gate ? 2 : 1), H]: per head [query(hd) ; gate(hd)]
  WeightMatrix k;  // [nkv * hd, H]
  WeightMatrix v;  // [nkv * hd, H]
  WeightMatrix o;  // [H, nq * hd]
  std::vector<float> q_norm;  // [hd] as (1 + w)
  std::vector<float> k_norm;  // [hd] as (1 + w)
};

struct MlpWeights {
  WeightMatrix gate;  // [I, H]
  WeightMatrix up;    // [I, H]
  WeightMatrix down;  // [H, I]
};

// A mixture-of-experts FFN (qwen3_5_moe). The routed experts are per-expert views into the stored
// tensors (HF's fused [E, 2I, H] gate_up_proj and [E, H, I] down_proj, or one tensor per expert);
// nothing is copied at bind.
struct MoeWeights {
  WeightMatrix router;              // [E, H]: logits = x W^T
  std::vector<WeightMatrix> gate;   // E x [I, H]
  std::vector<WeightMatrix> up;     // E x [I, H]
  std::vector<WeightMatrix> down;   // E x [H, I]
  MlpWeights shared;                // the shared expert: [Is, H], [Is, H], [H, Is]
  WeightMatrix shared_gate;         // [1, H]: sigmoid(x . w) scales the shared expert
  int top_k = 0;                    // experts per token

  int num_experts() const { return int(gate.size()); }
};

struct LayerWeights {
  LayerKind kind;
  std::vector<float> input_norm;  // [H] as (1 + w)
  std::vector<float> post_norm;   // [H] as (1 + w)
  DeltaNetWeights deltanet;       // when kind == kDeltaNet
  AttentionWeights attention;     // when kind == kAttention
  MlpWeights mlp;                 // dense models
  MoeWeights moe;                 // mixture-of-experts models (then mlp is empty)

  bool is_moe() const { return !moe.gate.empty(); }
};

struct TextWeights {
  WeightMatrix embed;    // [V, H]
  WeightMatrix lm_head;  // [V, H]; the embedding when tied
  std::vector<float> final_norm;  // [H] as (1 + w)
  std::vector<LayerWeights> layers;

  // Binds every tensor of the text decoder, checking names, dtypes and shapes against the config.
  // The checkpoint must outlive the weights.
  static TextWeights bind(const Checkpoint& ck, const TextConfig& cfg);
  // The same from a GGUF file of architecture qwen35 (gguf.md section 3): llama.cpp's tensor
  // names, norms already stored as 1 + w, ssm_a as -exp(A_log), tiled value heads. Matrices may be
  // any weight block format (plain views into the file); vectors are converted to f32. The file
  // must outlive the weights.
  static TextWeights bind_gguf(const GgufFile& file, const TextConfig& cfg);
};

// Calls f(name, matrix) for each matrix of a layer (LayerWeights, const or not), named as in GGUF
// files without the "blk.N." prefix, in the order a decode step reads them: the projections, then
// the MLP. An MoE layer gives the router, the shared expert's gate and matrices, then every routed
// expert's matrix under the name of the GGUF tensor that stacks them (ffn_gate_exps.weight: E
// calls, expert 0 first): all E experts, though a token reads only k of them.
template <class Layer, class F>
void for_each_layer_matrix(Layer& L, F&& f) {
  if (L.kind == LayerKind::kDeltaNet) {
    f("attn_qkv.weight", L.deltanet.in_qkv);
    f("attn_gate.weight", L.deltanet.in_z);
    f("ssm_beta.weight", L.deltanet.in_b);
    f("ssm_alpha.weight", L.deltanet.in_a);
    f("ssm_out.weight", L.deltanet.out);
  } else {
    f("attn_q.weight", L.attention.q);
    f("attn_k.weight", L.attention.k);
    f("attn_v.weight", L.attention.v);
    f("attn_output.weight", L.attention.o);
  }
  if (L.is_moe()) {
    auto& m = L.moe;
    f("ffn_gate_inp.weight", m.router);
    f("ffn_gate_inp_shexp.weight", m.shared_gate);
    f("ffn_gate_shexp.weight", m.shared.gate);
    f("ffn_up_shexp.weight", m.shared.up);
    f("ffn_down_shexp.weight", m.shared.down);
    for (auto& e : m.gate) f("ffn_gate_exps.weight", e);
    for (auto& e : m.up) f("ffn_up_exps.weight", e);
    for (auto& e : m.down) f("ffn_down_exps.weight", e);
    return;
  }
  f("ffn_gate.weight", L.mlp.gate);
  f("ffn_up.weight", L.mlp.up);
  f("ffn_down.weight", L.mlp.down);
}

// The matrices one decode step reads whole, in the order it reads them: each layer's, then the LM
// head (the embedding is read one row per token). Of an MoE layer's routed experts, a step reads
// k (which ones depends on the token; all have the same size): experts 0..k-1 stand for them.
std::vector<const WeightMatrix*> decode_matrices(const TextWeights& w);

// Fills the derived fields (conv_t) from the bound ones; every loader calls it.
void finish_deltanet_weights(DeltaNetWeights& d, int64_t conv_dim, int conv_kernel);

// Helpers shared with the vision tower's loader.
// The prefix of the text decoder's tensors in this checkpoint ("model.language_model." or "model.").
std::string text_prefix(const Checkpoint& ck);
WeightMatrix bind_matrix(const Checkpoint& ck, const std::string& name, int64_t rows, int64_t cols);
std::vector<float> bind_vector(const Checkpoint& ck, const std::string& name, const Shape& shape);
// The checkpoint stores these RMSNorm weights as w - 1 (the decoder multiplies by 1 + w).
std::vector<float> one_plus(std::vector<float> w);
// One decoder layer of a Hugging Face checkpoint, its tensors under `lp` ("...layers.N."); also
// the MTP head's layer. An MoE config binds the MoE FFN (bind_moe) instead of the MLP.
LayerWeights bind_layer(const Checkpoint& ck, const TextConfig& c, const std::string& lp, LayerKind kind);
// The same checks on a view: a matrix of a plain float type (or, with allow_blocks, any weight
// block format) and shape [rows, cols]; a plain float vector of `shape` converted to f32.
WeightMatrix matrix_view(const std::string& name, const TensorView& t, int64_t rows, int64_t cols, bool allow_blocks);
// The n experts of a stacked tensor [n, rows, cols] (HF's fused experts, GGUF's *_exps) as views.
std::vector<WeightMatrix> expert_views(const std::string& name, const TensorView& t, int64_t n, int64_t rows,
                                       int64_t cols, bool allow_blocks);
// Rows [r0, r0 + n) of a plain-rows matrix, as a view.
WeightMatrix row_slice(const WeightMatrix& m, int64_t r0, int64_t n);
// The MoE FFN of a Hugging Face layer, its tensors under `mp` ("...layers.N.mlp."): the routed
// experts fused (experts.gate_up_proj, experts.down_proj: Qwen3.5 decoder layers, Qwen3.6 MTP) or
// one by one (experts.J.{gate,up,down}_proj.weight: the Qwen3.5 MTP layer).
MoeWeights bind_moe(const Checkpoint& ck, const TextConfig& c, const std::string& mp);
// The same from GGUF tensors (llama.cpp's qwen35moe names without the "blk.N." prefix, looked up
// by `find`; nullptr: absent): ffn_gate_inp [E, H], ffn_gate_inp_shexp [H], ffn_{gate,up,down}_shexp,
// and the experts as ffn_gate_up_exps [E, 2I, H] (gate rows first) or ffn_gate_exps and
// ffn_up_exps [E, I, H], and ffn_down_exps [E, H, I]. Any weight block format. `where` names the
// block in errors.
MoeWeights bind_moe_gguf(const std::function<const TensorView*(const std::string&)>& find, const TextConfig& c,
                         const std::string& where);
std::vector<float> vector_f32(const std::string& name, const TensorView& t, const Shape& shape);
// A GGUF tensor as a matrix or f32 vector (types the engine lacks are an error naming the tensor).
WeightMatrix gguf_matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols);
std::vector<float> gguf_vector(const GgufFile& f, const std::string& name, const Shape& shape);

}  // namespace qwen35
