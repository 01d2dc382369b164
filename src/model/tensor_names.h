// The one tensor-name table of the text decoder: Hugging Face checkpoint names <-> GGUF names
// (shared/spec/qwen35-model.md section 11.2, llama.cpp's converter), plus the decoder's tensor
// inventory (names and shapes) for a config.
//
// Names only: the converter also transforms some tensors on the way (V-head reorder, 1 + w
// norms, -exp(A_log), squeezed conv1d); that is the GGUF reader's / writer's business.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace qwen35 {

// HF -> GGUF. `num_layers` is text_config.num_hidden_layers: the MTP block mtp.layers.i becomes
// blk.{num_layers + i}. Accepts the "model.language_model." and "model." text prefixes. nullopt
// for names outside the text decoder and MTP head (vision tower, unknown tensors).
std::optional<std::string> gguf_tensor_name(std::string_view hf_name, int num_layers);
// GGUF -> HF (with the "model.language_model." prefix); nullopt for unknown names.
std::optional<std::string> hf_tensor_name(std::string_view gguf_name, int num_layers);

// Shorthands of gguf_tensor_name for code that binds or writes tensors by their HF role: decoder
// layer `layer`'s tensor ("linear_attn.A_log" -> "blk.3.ssm_a"), and the tensors outside the
// layers ("embed_tokens.weight", "norm.weight", "lm_head.weight"). Throw for a name not in the table.
std::string gguf_layer_tensor_name(int layer, std::string_view hf_in_layer);
std::string gguf_global_tensor_name(std::string_view hf);

// The vision tower in an mmproj file (spec 11.3): HF "model.visual.<x>" (or "visual.<x>") <->
// "v.*" / "mm.*". The Conv3d patch kernel is not in the table: it becomes two tensors,
// v.patch_embd.weight and v.patch_embd.weight.1 (its time slices), see VisionWeights::bind_mmproj.
std::optional<std::string> gguf_vision_tensor_name(std::string_view hf_name);
// mmproj GGUF -> HF (with the "model.visual." prefix); nullopt for unknown names.
std::optional<std::string> hf_vision_tensor_name(std::string_view gguf_name);

// A tensor of the GGUF text model: its name and its shape in ggml order (ne[0] = the row length,
// i.e. the reversed HF shape).
struct GgufTensorShape {
  std::string name;
  std::vector<int64_t> ne;

  int64_t elements() const;
};

// Every tensor llama.cpp's converter writes for this config: 427 for the 9B model without MTP,
// 442 with one MTP layer (shared/spec/gguf.md section 2). In llama-quantize's output order.
std::vector<GgufTensorShape> gguf_text_tensors(const TextConfig& c, int mtp_layers);

// Sorts like llama-quantize lays out its output (llama_model_loader's weight_name_comparer):
// tensors outside any layer first, then by layer number, by name within a layer.
void sort_like_llama_quantize(std::vector<GgufTensorShape>& tensors);
// The layer number of "blk.N.*", -1 for other names.
int gguf_layer_index(std::string_view gguf_name);

}  // namespace qwen35
