#include "model/config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace qwen35 {
namespace {

using json = nlohmann::json;

// No count in a config (layers, heads, head dims, kernel or patch sizes) comes near this; a larger
// value is corrupt, and would wrap when narrowed to int.
constexpr int64_t kMaxCount = 1 << 20;

// Field access with "config.json: text_config.hidden_size ..." style messages.
class Reader {
 public:
  Reader(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }

  template <typename T>
  T get(const char* key) const {
    if (!has(key)) fail(where_, ".", key, " is missing");
    return as<T>(obj_[key], key);
  }
  template <typename T>
  T get(const char* key, T fallback) const {
    return has(key) ? as<T>(obj_[key], key) : fallback;
  }
  int64_t positive(const char* key) const {
    int64_t v = get<int64_t>(key);
    if (v <= 0) fail(where_, ".", key, " must be positive, got ", v);
    return v;
  }
  int64_t positive(const char* key, int64_t fallback) const { return has(key) ? positive(key) : fallback; }
  int count(const char* key) const {
    int64_t v = positive(key);
    if (v > kMaxCount) fail(where_, ".", key, " = ", v, " is too large (at most ", kMaxCount, ")");
    return int(v);
  }
  int count(const char* key, int fallback) const { return has(key) ? count(key) : fallback; }
  double positive_real(const char* key, double fallback) const {
    double v = get<double>(key, fallback);
    if (!(v > 0)) fail(where_, ".", key, " must be positive, got ", v);
    return v;
  }
  const json& raw(const char* key) const { return obj_[key]; }
  const std::string& where() const { return where_; }

 private:
  template <typename T>
  T as(const json& v, const char* key) const {
    try {
      if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw json::type_error::create(302, "not a boolean", nullptr);
      } else if constexpr (std::is_integral_v<T>) {
        if (!v.is_number_integer()) throw json::type_error::create(302, "not an integer", nullptr);
      } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) throw json::type_error::create(302, "not a number", nullptr);
      }
      return v.get<T>();
    } catch (const json::exception&) {
      fail(where_, ".", key, " has the wrong type (", v.dump(), ")");
    }
  }

  const json& obj_;
  std::string where_;
};

// The experts of qwen3_5_moe (configuration_qwen3_5_moe.py). Its code renormalises the chosen
// weights unconditionally and makes every layer sparse, so the keys other MoE families use to say
// otherwise are refused rather than ignored.
void parse_moe(const Reader& r, TextConfig& t) {
  const std::string& w = r.where();
  t.num_experts = r.count("num_experts");
  t.num_experts_per_tok = r.count("num_experts_per_tok");
  if (t.num_experts_per_tok > t.num_experts)
    fail(w, ".num_experts_per_tok (", t.num_experts_per_tok, ") exceeds num_experts (", t.num_experts, ")");
  t.moe_intermediate_size = r.positive("moe_intermediate_size");
  t.shared_expert_intermediate_size = r.positive("shared_expert_intermediate_size");
  if (r.has("norm_topk_prob") && !r.get<bool>("norm_topk_prob"))
    fail(w, ".norm_topk_prob = false is not supported (Qwen3.5 MoE renormalises the chosen experts' weights)");
  if (r.has("decoder_sparse_step") && r.get<int64_t>("decoder_sparse_step") != 1)
    fail(w, ".decoder_sparse_step must be 1 (every Qwen3.5 MoE layer is sparse)");
  if (r.has("mlp_only_layers") && !r.raw("mlp_only_layers").empty())
    fail(w, ".mlp_only_layers is not empty: every Qwen3.5 MoE layer is sparse");
}

void parse_text(const Reader& r, TextConfig& t, bool moe) {
  const std::string& w = r.where();
  t.vocab_size = r.positive("vocab_size");
  t.hidden_size = r.positive("hidden_size");
  if (moe) parse_moe(r, t);
  else t.intermediate_size = r.positive("intermediate_size");
  t.num_layers = r.count("num_hidden_layers");
  t.rms_norm_eps = float(r.positive_real("rms_norm_eps", 1e-6));
  t.max_position_embeddings = r.positive("max_position_embeddings", 262144);

  std::string act = r.get<std::string>("hidden_act", "silu");
  if (act != "silu") fail(w, ".hidden_act '", act, "' is not supported (Qwen3.5 uses 'silu')");
  if (r.get<bool>("attention_bias", false)) fail(w, ".attention_bias = true is not supported (Qwen3.5 has no biases)");

  if (r.has("layer_types")) {
    const json& lt = r.raw("layer_types");
    if (!lt.is_array()) fail(w, ".layer_types must be an array");
    if (int(lt.size()) != t.num_layers)
      fail(w, ".layer_types has ", lt.size(), " entries but num_hidden_layers is ", t.num_layers);
    for (const json& k : lt) {
      std::string s = k.is_string() ? k.get<std::string>() : k.dump();
      if (s == "linear_attention") t.layer_kinds.push_back(LayerKind::kDeltaNet);
      else if (s == "full_attention") t.layer_kinds.push_back(LayerKind::kAttention);
      else fail(w, ".layer_types: unknown layer type '", s, "' (expected linear_attention or full_attention)");
    }
  } else {
    int interval = r.count("full_attention_interval", 4);
    for (int i = 0; i < t.num_layers; ++i)
      t.layer_kinds.push_back((i + 1) % interval == 0 ? LayerKind::kAttention : LayerKind::kDeltaNet);
  }

  t.num_heads = r.count("num_attention_heads");
  t.num_kv_heads = r.count("num_key_value_heads");
  const int64_t head_dim = r.has("head_dim") ? r.count("head_dim") : t.hidden_size / t.num_heads;
  if (head_dim <= 0 || head_dim > kMaxCount)
    fail(w, ": head_dim ", head_dim, " (hidden_size / num_attention_heads when absent) must be in [1, ", kMaxCount, "]");
  t.head_dim = int(head_dim);
  t.attn_output_gate = r.get<bool>("attn_output_gate", true);
  if (t.num_heads % t.num_kv_heads != 0)
    fail(w, ": num_attention_heads (", t.num_heads, ") must be a multiple of num_key_value_heads (", t.num_kv_heads, ")");

  // rope_parameters (new schema) or the older flat rope_theta / rope_scaling keys.
  json rope = r.has("rope_parameters") ? r.raw("rope_parameters") : json::object();
  if (!rope.is_object()) fail(w, ".rope_parameters must be an object");
  Reader rp(rope, w + ".rope_parameters");
  std::string rope_type = rp.get<std::string>("rope_type", "default");
  if (rope_type != "default") fail(w, ".rope_parameters.rope_type '", rope_type, "' is not supported (expected 'default')");
  t.rope_theta = rp.has("rope_theta") ? rp.positive_real("rope_theta", 0) : r.positive_real("rope_theta", 1e7);
  double prf = rp.has("partial_rotary_factor") ? rp.get<double>("partial_rotary_factor")
                                               : r.get<double>("partial_rotary_factor", 0.25);
  double rot = prf * t.head_dim;
  if (prf <= 0 || prf > 1 || rot != std::floor(rot) || int(rot) % 2 != 0)
    fail(w, ": partial_rotary_factor ", prf, " * head_dim ", t.head_dim, " must give an even number of rotary dims");
  t.rotary_dim = int(rot);
  if (rp.has("mrope_interleaved") && !rp.get<bool>("mrope_interleaved"))
    fail(w, ".rope_parameters.mrope_interleaved = false is not supported (Qwen3.5 interleaves MRoPE sections)");
  if (rp.has("mrope_section")) {
    const json& s = rope["mrope_section"];
    if (!s.is_array() || s.size() != 3) fail(w, ".rope_parameters.mrope_section must have 3 entries, got ", s.dump());
    for (int i = 0; i < 3; ++i) {
      // Read wide: a huge entry must not wrap to a plausible int.
      const json& e = s[size_t(i)];
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > t.rotary_dim / 2)
        fail(w, ".rope_parameters.mrope_section has a bad entry ", s.dump());
      t.mrope_section[size_t(i)] = int(e.get<int64_t>());
    }
  } else {
    t.mrope_section = {11, 11, 10};
  }
  int slots = t.mrope_section[0] + t.mrope_section[1] + t.mrope_section[2];
  if (slots != t.rotary_dim / 2)
    fail(w, ".rope_parameters.mrope_section sums to ", slots, " but the rotary dims need ", t.rotary_dim / 2, " slots");

  t.conv_kernel = r.count("linear_conv_kernel_dim", 4);
  if (t.conv_kernel > 16) fail(w, ".linear_conv_kernel_dim ", t.conv_kernel, " is larger than the supported 16");
  t.linear_key_heads = r.count("linear_num_key_heads");
  t.linear_value_heads = r.count("linear_num_value_heads");
  t.linear_key_dim = r.count("linear_key_head_dim");
  t.linear_value_dim = r.count("linear_value_head_dim");
  if (t.linear_value_heads % t.linear_key_heads != 0)
    fail(w, ": linear_num_value_heads (", t.linear_value_heads, ") must be a multiple of linear_num_key_heads (",
         t.linear_key_heads, ")");

  const int64_t mtp = r.get<int64_t>("mtp_num_hidden_layers", 0);
  if (mtp < 0 || mtp > kMaxCount) fail(w, ".mtp_num_hidden_layers must be >= 0, got ", mtp);
  t.mtp_num_hidden_layers = int(mtp);
  t.mtp_use_dedicated_embeddings = r.get<bool>("mtp_use_dedicated_embeddings", false);
}

void parse_vision(const Reader& r, VisionConfig& v) {
  const std::string& w = r.where();
  v.present = true;
  v.depth = r.count("depth");
  v.hidden_size = r.positive("hidden_size");
  v.num_heads = r.count("num_heads");
  v.intermediate_size = r.positive("intermediate_size");
  v.in_channels = r.count("in_channels", 3);
  v.patch_size = r.count("patch_size", 16);
  v.temporal_patch_size = r.count("temporal_patch_size", 2);
  v.spatial_merge_size = r.count("spatial_merge_size", 2);
  v.num_position_embeddings = r.count("num_position_embeddings");
  v.out_hidden_size = r.positive("out_hidden_size");
  std::string act = r.get<std::string>("hidden_act", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh") fail(w, ".hidden_act '", act, "' is not supported (expected gelu_pytorch_tanh)");
  if (v.hidden_size % v.num_heads != 0) fail(w, ": hidden_size must be a multiple of num_heads");
  int64_t side = int64_t(std::llround(std::sqrt(double(v.num_position_embeddings))));
  if (side * side != v.num_position_embeddings)
    fail(w, ".num_position_embeddings (", v.num_position_embeddings, ") must be a square");
  if (r.has("deepstack_visual_indexes") && !r.raw("deepstack_visual_indexes").empty())
    fail(w, ".deepstack_visual_indexes is not empty: DeepStack is not part of Qwen3.5");
}

void read_eos(const json& j, std::vector<int64_t>& out) {
  if (j.is_number_integer()) out.push_back(j.get<int64_t>());
  else if (j.is_array())
    for (const json& x : j)
      if (x.is_number_integer()) out.push_back(x.get<int64_t>());
}

}  // namespace

int TextConfig::num_deltanet_layers() const {
  int n = 0;
  for (LayerKind k : layer_kinds) n += k == LayerKind::kDeltaNet;
  return n;
}

int TextConfig::num_attention_layers() const { return num_layers - num_deltanet_layers(); }

ModelConfig ModelConfig::parse(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(origin, ": not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) fail(origin, ": expected a JSON object");
  Reader top(j, origin);
  ModelConfig c;
  std::string model_type = top.get<std::string>("model_type", "");
  bool has_text = j.contains("text_config") && j["text_config"].is_object();
  if ((model_type == "qwen3_5" || model_type == "qwen3_5_moe") && !has_text)
    fail(origin, ": text_config is missing or not an object");
  if (has_text) {
    if (model_type != "qwen3_5" && model_type != "qwen3_5_moe")
      fail(origin, ": model_type '", model_type, "' is not supported (expected 'qwen3_5' or 'qwen3_5_moe')");
    Reader text(j["text_config"], origin + ": text_config");
    parse_text(text, c.text, model_type == "qwen3_5_moe");
    c.text.tie_word_embeddings =
        top.has("tie_word_embeddings") ? top.get<bool>("tie_word_embeddings") : text.get<bool>("tie_word_embeddings", false);
    if (text.has("eos_token_id")) read_eos(j["text_config"]["eos_token_id"], c.eos_token_ids);
  } else {
    if (model_type != "qwen3_5_text" && model_type != "qwen3_5_moe_text")
      fail(origin, ": model_type '", model_type,
           "' is not supported (expected 'qwen3_5', 'qwen3_5_moe', 'qwen3_5_text' or 'qwen3_5_moe_text')");
    parse_text(top, c.text, model_type == "qwen3_5_moe_text");
    c.text.tie_word_embeddings = top.get<bool>("tie_word_embeddings", false);
  }
  if (top.has("eos_token_id")) read_eos(j["eos_token_id"], c.eos_token_ids);
  if (top.has("vision_config")) {
    if (!j["vision_config"].is_object()) fail(origin, ": vision_config must be an object");
    parse_vision(Reader(j["vision_config"], origin + ": vision_config"), c.vision);
  }
  c.image_token_id = top.get<int64_t>("image_token_id", c.image_token_id);
  c.video_token_id = top.get<int64_t>("video_token_id", c.video_token_id);
  c.vision_start_token_id = top.get<int64_t>("vision_start_token_id", c.vision_start_token_id);
  c.vision_end_token_id = top.get<int64_t>("vision_end_token_id", c.vision_end_token_id);
  if (c.vision.present && c.vision.out_hidden_size != c.text.hidden_size)
    fail(origin, ": vision_config.out_hidden_size (", c.vision.out_hidden_size, ") must equal text hidden_size (",
         c.text.hidden_size, ")");
  return c;
}

ModelConfig ModelConfig::load(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  std::ifstream in(path);
  if (!in) fail("cannot read ", path, ": is '", model_dir, "' a Qwen3.5 model folder?");
  std::ostringstream os;
  os << in.rdbuf();
  return parse(os.str(), path);
}

}  // namespace qwen35
