// The MTP block of a GGUF file as named, validated views (gguf.md D2, D9, D13; spec section 10):
// blk.<n>.* with n = block_count - nextn_predict_layers, in a bundled model file or an MTP-only
// sidecar (`--mtp FILE`). The MTP head itself (src/model/mtp*) binds its weights from these.
//
// Names are the GGUF ones without the "blk.<n>." prefix, with their HF counterparts:
//   nextn.eh_proj.weight [E, 2E]   mtp.fc.weight (input = concat(enorm(embedding), hnorm(hidden)))
//   nextn.enorm.weight [E]         mtp.pre_fc_norm_embedding.weight
//   nextn.hnorm.weight [E]         mtp.pre_fc_norm_hidden.weight
//   nextn.shared_head_norm.weight  mtp.norm.weight (optional: falls back to output_norm)
//   nextn.embed_tokens.weight      optional, falls back to token_embd
//   nextn.shared_head_head.weight  optional, falls back to output (or token_embd when tied)
//   attn_norm, post_attention_norm, attn_q (query+gate), attn_k, attn_v, attn_output, attn_q_norm,
//   attn_k_norm, ffn_gate, ffn_up, ffn_down   mtp.layers.0.* (input_layernorm, ..., mlp.*)
// Unlike HF's mtp.* norms, every norm weight here is already 1 + w (kNormsIncludeOne).
// Matrices may be any weight block format; vectors are plain float types.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"
#include "model/config.h"

namespace qwen35 {

class GgufFile;

struct NextnTensors {
  static constexpr bool kNormsIncludeOne = true;
  int layer = -1;      // GGUF block index of the MTP layer
  std::string source;  // the file they live in (it must outlive the views)
  std::map<std::string, TensorView> tensors;

  bool empty() const { return tensors.empty(); }
  const TensorView* find(const std::string& name) const;
};

// Validates and collects the MTP tensors of `file` for a decoder of `cfg` (file may be the model
// itself or an MTP-only sidecar, whose block_count names the MTP layer). Empty when the file has
// none. Throws naming the tensor for a missing required tensor, a wrong shape or an unsupported type.
NextnTensors bind_nextn(const GgufFile& file, const TextConfig& cfg);

}  // namespace qwen35
