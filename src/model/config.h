// The model's config.json (qwen3_5 schema), validated, with the derived sizes the code uses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qwen35 {

class GgufFile;

enum class LayerKind { kDeltaNet, kAttention };

struct TextConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;        // H
  int64_t intermediate_size = 0;  // SwiGLU inner size (dense models; 0 in a mixture of experts)
  int num_layers = 0;
  std::vector<LayerKind> layer_kinds;
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 262144;

  // Gated full attention.
  int num_heads = 0;     // query heads
  int num_kv_heads = 0;  // key/value heads (GQA)
  int head_dim = 0;
  bool attn_output_gate = true;  // q_proj packs [query; gate] per head
  int rotary_dim = 0;            // head_dim * partial_rotary_factor (leading dims rotated)
  double rope_theta = 1e7;
  std::array<int, 3> mrope_section{};  // frequency slots taken from (T, H, W), interleaved

  // Gated DeltaNet.
  int conv_kernel = 4;
  int linear_key_heads = 0;    // Hk
  int linear_value_heads = 0;  // Hv
  int linear_key_dim = 0;      // dk
  int linear_value_dim = 0;    // dv

  // Multi-token prediction (spec 10): extra layers stored under mtp.* (0: none declared).
  int mtp_num_hidden_layers = 0;
  bool mtp_use_dedicated_embeddings = false;  // true is not supported (no released checkpoint has it)

  // Mixture of experts (qwen3_5_moe; GGUF qwen35moe): every layer's FFN, the MTP layer's too, is a
  // router over num_experts SwiGLU experts of moe_intermediate_size, num_experts_per_tok of them
  // per token (weights renormalised to sum 1), plus one shared expert scaled by a sigmoid gate.
  // num_experts 0: the dense SwiGLU MLP of intermediate_size.
  int num_experts = 0;           // E
  int num_experts_per_tok = 0;   // k
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;

  bool is_moe() const { return num_experts > 0; }
  int64_t conv_dim() const { return 2 * int64_t(linear_key_heads) * linear_key_dim + int64_t(linear_value_heads) * linear_value_dim; }
  int64_t deltanet_value_size() const { return int64_t(linear_value_heads) * linear_value_dim; }
  int num_deltanet_layers() const;
  int num_attention_layers() const;
};

struct VisionConfig {
  bool present = false;
  int depth = 0;
  int64_t hidden_size = 0;
  int num_heads = 0;
  int64_t intermediate_size = 0;
  int in_channels = 3;
  int patch_size = 16;
  int temporal_patch_size = 2;
  int spatial_merge_size = 2;
  int64_t num_position_embeddings = 0;
  int64_t out_hidden_size = 0;
  // Fixed at 1e-6 in the HF code (as an f32, like the f32 clip.vision.attention.layer_norm_epsilon of an mmproj).
  double layer_norm_eps = 1e-6f;
};

struct ModelConfig {
  TextConfig text;
  VisionConfig vision;
  int64_t image_token_id = 248056;
  int64_t video_token_id = 248057;
  int64_t vision_start_token_id = 248053;
  int64_t vision_end_token_id = 248054;
  std::vector<int64_t> eos_token_ids;  // from config / generation_config; may be empty

  // Reads and validates <model_dir>/config.json. Throws qwen35::Error with a clear message.
  static ModelConfig load(const std::string& model_dir);
  static ModelConfig parse(const std::string& json_text, const std::string& origin);
  // From the metadata of a qwen35 GGUF (gguf.md sections 2-3) and, when given, a clip mmproj
  // (section 4). Special token ids come from the file's token list. Throws naming the key.
  static ModelConfig from_gguf(const GgufFile& text, const GgufFile* mmproj);
  static VisionConfig vision_from_mmproj(const GgufFile& mmproj);
};

}  // namespace qwen35
