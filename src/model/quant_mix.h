// llama-quantize's presets for Qwen3.5: which dtype each GGUF tensor gets (llama.cpp
// src/llama-quant.cpp at 3f545be: tensor_allows_quantization, llama_tensor_get_type_impl,
// tensor_type_fallback; shared/spec/gguf.md section 6), without an importance matrix, for the
// presets a user of llama.cpp asks for by name. Pure functions.
//
// llama-quantize decides per tensor from its name (a substring category), the preset, and two
// running counters over the model's tensors in its output order: the index among the "V-like"
// tensors (attn_v, and also the DeltaNet attn_qkv, whose category llama.cpp groups with attn_v)
// and the index among the ffn_down tensors. preset_tensor_types() computes those counters from
// the whole tensor list; preset_tensor_type() takes them from the caller.
//
// Mixture-of-experts models (expert_count > 1) differ in two ways: an ffn_down tensor's layer is
// the one in its name (blk.N., so a layer's stacked experts ffn_down_exps and its shared expert's
// ffn_down_shexp both count as that layer), and a model of exactly 8 experts gets llama.cpp's
// Mixtral rules (attn_v-like and attn_k in Q8_0, attn_output in Q5_K under the mixes that name it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "model/tensor_names.h"

namespace qwen35 {

enum class QuantPreset {
  F32,
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K_S,
  Q3_K_M,
  Q3_K_L,
  Q4_K_S,
  Q4_K_M,
  Q5_K_S,
  Q5_K_M,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
};

// Every preset, in the order above.
const std::vector<QuantPreset>& all_quant_presets();
// Case-insensitive: "q4_k_m", "Q4_K_M", "bf16".
std::optional<QuantPreset> parse_quant_preset(std::string_view name);
// llama.cpp's spelling: "Q4_K_M", "BF16".
std::string_view preset_name(QuantPreset p);
// The llama_ftype number written to general.file_type (Q4_K_M: 15, BF16: 32, F32: 0).
int preset_file_type(QuantPreset p);
// The dtype of every quantizable tensor before the per-tensor rules (llama_ftype_get_default_type).
DType preset_default_type(QuantPreset p);

// What llama-quantize's rules need to know about one tensor besides its name.
struct QuantMixContext {
  int n_layers = 0;        // block_count, MTP blocks included (the ffn_down counter's range)
  int n_attention_wv = 0;  // V-like tensors in the whole model (attn_v, attn_qkv, attn_kv_b)
  int i_attention_wv = 0;  // this tensor's index among them (V-like tensors only)
  int i_ffn_down = 0;      // this tensor's index among the ffn_down tensors (ffn_down only; dense models)
  int n_expert = 0;        // expert_count (0 or 1: a dense model)
  int n_gqa = 0;           // attention heads / KV heads
  bool tied_embeddings = false;  // no output.weight: token_embd is also the output matrix
  int n_dims = 2;
  int64_t ne0 = 0;         // row length (ggml ne[0] = HF in-features)
};

// Whether llama-quantize may quantize the tensor at all: not < 2-D, name ends in "weight", no
// norms, no ssm_conv1d, no vision position/patch embeddings, no MoE router.
bool tensor_allows_quantization(std::string_view gguf_name, int n_dims);

// The dtype llama-quantize gives the tensor. Tensors it never quantizes keep the converter's
// dtype, which is F32 for every such Qwen3.5 tensor. Throws when the row length fits neither the
// chosen format nor its fallback's blocks and llama-quantize would fail too, and (MoE) when an
// ffn_down tensor's name has no layer below n_layers.
DType preset_tensor_type(QuantPreset p, const std::string& gguf_name, const QuantMixContext& ctx);

// The dtype of each tensor (same order as `tensors`, which may come in any order: the counters
// run in llama-quantize's order). n_layers: block_count including MTP blocks; n_gqa: heads/KV
// heads; n_expert: expert_count (0 for a dense model). A stacked expert tensor may come as one
// 3-D tensor or as its E per-expert matrices of the same name: the types are the same.
std::vector<DType> preset_tensor_types(QuantPreset p, const std::vector<GgufTensorShape>& tensors, int n_layers, int n_gqa,
                                       int n_expert = 0);

// Bytes of the tensor data of a mix (no GGUF header, no alignment padding).
uint64_t mix_bytes(const std::vector<GgufTensorShape>& tensors, const std::vector<DType>& types);

}  // namespace qwen35
