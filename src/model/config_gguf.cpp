// ModelConfig from GGUF metadata: the qwen35 keys llama.cpp's converter writes and its loader
// reads (gguf.md sections 1-3, with its defaults), and the clip keys of an mmproj (section 4).
#include <cmath>
#include <string>

#include "core/error.h"
#include "io/gguf.h"
#include "model/config.h"

namespace qwen35 {
namespace {

constexpr int64_t kMaxCount = 1 << 20;

// A count key: a positive integer, or (for llama.cpp's per-layer keys) an array whose entries are
// all equal; Qwen3.5 has no per-layer variation.
int64_t count_key(const GgufFile& f, const std::string& key, std::optional<int64_t> fallback = std::nullopt,
                  int64_t max = kMaxCount) {
  const GgufValue* v = f.find(key);
  int64_t n = 0;
  if (!v) {
    if (!fallback) fail(f.path(), ": missing key '", key, "'");
    n = *fallback;
  } else if (v->is_array()) {
    if (!v->is_integer() || v->count == 0) fail(f.path(), ": key '", key, "' must be an integer or integer array");
    n = v->int_at(0);
    for (uint64_t i = 1; i < v->count; ++i)
      if (v->int_at(i) != n) fail(f.path(), ": key '", key, "' varies per layer, which Qwen3.5 does not do");
  } else {
    n = f.get_int(key);
  }
  if (n <= 0 || n > max) fail(f.path(), ": key '", key, "' = ", n, " must be in [1, ", max, "]");
  return n;
}

// The id of a token spelled `text` in tokenizer.ggml.tokens, or `fallback`.
int64_t token_id(const GgufFile& f, std::string_view text, int64_t fallback) {
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->elem_type != GgufType::kString) return fallback;
  for (uint64_t i = 0; i < tokens->count; ++i)
    if (tokens->string_at(i) == text) return int64_t(i);
  return fallback;
}

void layer_kinds(const GgufFile& f, const std::string& a, int block_count, TextConfig& t) {
  t.layer_kinds.clear();
  if (const GgufValue* r = f.find(a + ".attention.recurrent_layers")) {
    // Per-layer flags (MTP layers included), or one flag for all (gguf.md D1).
    if (!r->is_integer()) fail(f.path(), ": key '", a, ".attention.recurrent_layers' must be bools or integers");
    if (r->is_array() && r->count != uint64_t(block_count))
      fail(f.path(), ": key '", a, ".attention.recurrent_layers' has ", r->count, " entries but block_count is ",
           block_count);
    for (int i = 0; i < t.num_layers; ++i)
      t.layer_kinds.push_back(r->int_at(r->is_array() ? uint64_t(i) : 0) ? LayerKind::kDeltaNet : LayerKind::kAttention);
    return;
  }
  const int64_t interval = count_key(f, a + ".full_attention_interval", 4);
  for (int i = 0; i < t.num_layers; ++i)
    t.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::kAttention : LayerKind::kDeltaNet);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f, const GgufFile* mmproj) {
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "qwen35" && arch != "qwen35moe")
    fail(f.path(), ": architecture '", arch,
         "' is not supported (expected qwen35 or qwen35moe, the dense and mixture-of-experts Qwen3.5 text models)");
  const std::string a = arch;
  ModelConfig c;
  TextConfig& t = c.text;
  const int block_count = int(count_key(f, a + ".block_count"));
  const int64_t nextn = f.get_int_opt(a + ".nextn_predict_layers").value_or(0);
  if (nextn < 0 || nextn >= block_count)
    fail(f.path(), ": ", a, ".nextn_predict_layers = ", nextn, " must be in [0, block_count = ", block_count, ")");
  t.num_layers = block_count - int(nextn);
  t.hidden_size = count_key(f, a + ".embedding_length");
  if (arch == "qwen35moe") {
    t.num_experts = int(count_key(f, a + ".expert_count"));
    t.num_experts_per_tok = int(count_key(f, a + ".expert_used_count"));
    if (t.num_experts_per_tok > t.num_experts)
      fail(f.path(), ": ", a, ".expert_used_count (", t.num_experts_per_tok, ") exceeds expert_count (", t.num_experts, ")");
    t.moe_intermediate_size = count_key(f, a + ".expert_feed_forward_length");
    t.shared_expert_intermediate_size = count_key(f, a + ".expert_shared_feed_forward_length");
    // The qwen35moe graph renormalises the chosen weights and scales them by this key when it is
    // neither 0 nor 1; the official model does not scale.
    if (auto s = f.get_float_opt(a + ".expert_weights_scale"); s && *s != 0.0 && *s != 1.0)
      fail(f.path(), ": ", a, ".expert_weights_scale = ", *s, " is not supported (Qwen3.5 MoE does not scale)");
  } else {
    t.intermediate_size = count_key(f, a + ".feed_forward_length");
  }
  t.max_position_embeddings = count_key(f, a + ".context_length", std::nullopt, int64_t(1) << 26);
  t.num_heads = int(count_key(f, a + ".attention.head_count"));
  t.num_kv_heads = int(count_key(f, a + ".attention.head_count_kv", t.num_heads));
  t.head_dim = int(count_key(f, a + ".attention.key_length", t.hidden_size / t.num_heads));
  const int64_t value_length = count_key(f, a + ".attention.value_length", t.hidden_size / t.num_heads);
  if (value_length != t.head_dim)
    fail(f.path(), ": ", a, ".attention.value_length (", value_length, ") must equal key_length (", t.head_dim, ")");
  if (t.num_heads % t.num_kv_heads != 0)
    fail(f.path(), ": head_count (", t.num_heads, ") must be a multiple of head_count_kv (", t.num_kv_heads, ")");
  t.attn_output_gate = true;  // the qwen35 graph always splits attn_q into query and gate
  const double eps = f.get_float(a + ".attention.layer_norm_rms_epsilon");
  if (!(eps > 0 && eps < 1)) fail(f.path(), ": ", a, ".attention.layer_norm_rms_epsilon = ", eps, " is not in (0, 1)");
  t.rms_norm_eps = float(eps);
  t.rope_theta = f.get_float_opt(a + ".rope.freq_base").value_or(10000.0);
  if (!(t.rope_theta > 0)) fail(f.path(), ": ", a, ".rope.freq_base must be positive");
  t.rotary_dim = int(count_key(f, a + ".rope.dimension_count", t.head_dim));
  if (t.rotary_dim % 2 != 0 || t.rotary_dim > t.head_dim)
    fail(f.path(), ": ", a, ".rope.dimension_count ", t.rotary_dim, " must be even and at most the head size ", t.head_dim);
  const GgufValue& sections = f.get_array(a + ".rope.dimension_sections");
  if (!sections.is_integer() || sections.count != 4)
    fail(f.path(), ": ", a, ".rope.dimension_sections must be 4 integers");
  for (int i = 0; i < 3; ++i) {
    const int64_t s = sections.int_at(uint64_t(i));
    if (s < 0 || s > t.rotary_dim / 2) fail(f.path(), ": ", a, ".rope.dimension_sections has a bad entry ", s);
    t.mrope_section[size_t(i)] = int(s);
  }
  if (sections.int_at(3) != 0) fail(f.path(), ": ", a, ".rope.dimension_sections[3] must be 0 for Qwen3.5");
  if (t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2] != t.rotary_dim / 2)
    fail(f.path(), ": ", a, ".rope.dimension_sections sums to ",
         t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2], " but the rotary dims need ", t.rotary_dim / 2);
  if (f.has(a + ".rope.scaling.type") && f.get_string(a + ".rope.scaling.type") != "none")
    fail(f.path(), ": rope scaling '", f.get_string(a + ".rope.scaling.type"), "' is not supported");

  t.conv_kernel = int(count_key(f, a + ".ssm.conv_kernel"));
  if (t.conv_kernel > 16) fail(f.path(), ": ", a, ".ssm.conv_kernel ", t.conv_kernel, " is larger than the supported 16");
  t.linear_key_dim = t.linear_value_dim = int(count_key(f, a + ".ssm.state_size"));
  t.linear_key_heads = int(count_key(f, a + ".ssm.group_count"));
  t.linear_value_heads = int(count_key(f, a + ".ssm.time_step_rank"));
  if (t.linear_value_heads % t.linear_key_heads != 0)
    fail(f.path(), ": ", a, ".ssm.time_step_rank (", t.linear_value_heads, ") must be a multiple of ssm.group_count (",
         t.linear_key_heads, ")");
  const int64_t inner = count_key(f, a + ".ssm.inner_size");
  if (inner != t.deltanet_value_size())
    fail(f.path(), ": ", a, ".ssm.inner_size (", inner, ") must be time_step_rank * state_size (", t.deltanet_value_size(), ")");
  layer_kinds(f, a, block_count, t);

  // The vocabulary is the embedding's row count (the token list must agree; checked by the tokenizer).
  if (!f.find_tensor("blk.0.attn_norm.weight"))  // how llama.cpp recognises an MTP sidecar
    fail(f.path(), ": this is an MTP-only file (no decoder layers); open the main model and pass this file with --mtp");
  const GgufTensor& embd_t = f.get_tensor("token_embd.weight");
  const GgufTensor* embd = &embd_t;
  if (embd->n_dims != 2) fail(f.path(), ": token_embd.weight must be 2-D");
  t.vocab_size = embd->ne[1];
  t.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;

  c.image_token_id = token_id(f, "<|image_pad|>", c.image_token_id);
  c.video_token_id = token_id(f, "<|video_pad|>", c.video_token_id);
  c.vision_start_token_id = token_id(f, "<|vision_start|>", c.vision_start_token_id);
  c.vision_end_token_id = token_id(f, "<|vision_end|>", c.vision_end_token_id);
  if (auto eos = f.get_int_opt("tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(*eos);

  if (mmproj) {
    c.vision = vision_from_mmproj(*mmproj);
    if (c.vision.out_hidden_size != t.hidden_size)
      fail(mmproj->path(), ": clip.vision.projection_dim (", c.vision.out_hidden_size, ") does not match the text model's ",
           "embedding_length (", t.hidden_size, "): is this the projector of another model?");
  }
  return c;
}

VisionConfig ModelConfig::vision_from_mmproj(const GgufFile& f) {
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "clip") fail(f.path(), ": architecture '", arch, "' is not a vision projector (expected clip)");
  const std::string projector(f.get_string_opt("clip.projector_type").value_or(""));
  if (projector != "qwen3vl_merger")
    fail(f.path(), ": clip.projector_type '", projector, "' is not supported (expected qwen3vl_merger, Qwen3.5's)");
  if (f.get_bool_opt("clip.has_vision_encoder") == false) fail(f.path(), ": clip.has_vision_encoder is false");
  VisionConfig v;
  v.present = true;
  const std::string p = "clip.vision.";
  v.depth = int(count_key(f, p + "block_count"));
  v.hidden_size = count_key(f, p + "embedding_length");
  v.num_heads = int(count_key(f, p + "attention.head_count"));
  v.intermediate_size = count_key(f, p + "feed_forward_length");
  v.patch_size = int(count_key(f, p + "patch_size"));
  v.spatial_merge_size = int(count_key(f, p + "spatial_merge_size", 2));
  v.out_hidden_size = count_key(f, p + "projection_dim");
  v.layer_norm_eps = f.get_float_opt(p + "attention.layer_norm_epsilon").value_or(v.layer_norm_eps);
  if (!(v.layer_norm_eps > 0 && v.layer_norm_eps < 1)) fail(f.path(), ": ", p, "attention.layer_norm_epsilon is not in (0, 1)");
  const int64_t image_size = count_key(f, p + "image_size");
  if (image_size % v.patch_size != 0)
    fail(f.path(), ": ", p, "image_size ", image_size, " is not a multiple of patch_size ", v.patch_size);
  v.num_position_embeddings = (image_size / v.patch_size) * (image_size / v.patch_size);
  if (v.hidden_size % v.num_heads != 0) fail(f.path(), ": ", p, "embedding_length must be a multiple of head_count");
  if (const GgufValue* ds = f.find(p + "is_deepstack_layers"); ds && ds->is_integer())
    for (uint64_t i = 0; i < ds->count; ++i)
      if (ds->int_at(i)) fail(f.path(), ": ", p, "is_deepstack_layers marks layer ", i, ": DeepStack is not part of Qwen3.5");
  return v;
}

}  // namespace qwen35
