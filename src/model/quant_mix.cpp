#include "model/quant_mix.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace qwen35 {
namespace {

struct PresetRow {
  QuantPreset preset;
  std::string_view name;
  int file_type;  // llama_ftype
  DType base;     // llama_ftype_get_default_type
};

constexpr PresetRow kPresets[] = {
    {QuantPreset::F32, "F32", 0, DType::F32},          {QuantPreset::F16, "F16", 1, DType::F16},
    {QuantPreset::BF16, "BF16", 32, DType::BF16},      {QuantPreset::Q8_0, "Q8_0", 7, DType::Q8_0},
    {QuantPreset::Q4_0, "Q4_0", 2, DType::Q4_0},       {QuantPreset::Q4_1, "Q4_1", 3, DType::Q4_1},
    {QuantPreset::Q5_0, "Q5_0", 8, DType::Q5_0},       {QuantPreset::Q5_1, "Q5_1", 9, DType::Q5_1},
    {QuantPreset::Q2_K, "Q2_K", 10, DType::Q2_K},      {QuantPreset::Q3_K_S, "Q3_K_S", 11, DType::Q3_K},
    {QuantPreset::Q3_K_M, "Q3_K_M", 12, DType::Q3_K},  {QuantPreset::Q3_K_L, "Q3_K_L", 13, DType::Q3_K},
    {QuantPreset::Q4_K_S, "Q4_K_S", 14, DType::Q4_K},  {QuantPreset::Q4_K_M, "Q4_K_M", 15, DType::Q4_K},
    {QuantPreset::Q5_K_S, "Q5_K_S", 16, DType::Q5_K},  {QuantPreset::Q5_K_M, "Q5_K_M", 17, DType::Q5_K},
    {QuantPreset::Q6_K, "Q6_K", 18, DType::Q6_K},      {QuantPreset::IQ4_NL, "IQ4_NL", 25, DType::IQ4_NL},
    {QuantPreset::IQ4_XS, "IQ4_XS", 30, DType::IQ4_XS},
};

// llama-quantize's own short names for the medium mixes.
constexpr std::pair<std::string_view, QuantPreset> kAliases[] = {
    {"Q3_K", QuantPreset::Q3_K_M},
    {"Q4_K", QuantPreset::Q4_K_M},
    {"Q5_K", QuantPreset::Q5_K_M},
};

const PresetRow& row(QuantPreset p) {
  for (const PresetRow& r : kPresets)
    if (r.preset == p) return r;
  fail("unknown quantization preset ", int(p));
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// llama-quantize's tensor categories: by substring, first match wins (the order matters: the
// DeltaNet attn_qkv lands in kQkv, which counts as V-like).
enum class Category { kTokenEmbd, kOutput, kQkv, kKvB, kV, kAttnK, kQ, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOther };

Category categorize(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  if (contains(name, "attn_qkv.weight")) return Category::kQkv;
  if (contains(name, "attn_kv_b.weight")) return Category::kKvB;
  if (contains(name, "attn_v.weight")) return Category::kV;
  if (contains(name, "attn_k.weight")) return Category::kAttnK;
  if (contains(name, "attn_q.weight")) return Category::kQ;
  if (contains(name, "attn_output.weight")) return Category::kAttnOutput;
  if (contains(name, "ffn_up")) return Category::kFfnUp;
  if (contains(name, "ffn_gate")) return Category::kFfnGate;
  if (contains(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_v_like(Category c) { return c == Category::kV || c == Category::kQkv || c == Category::kKvB; }

// llama.cpp's "use more bits" layers: the first and last eighth, and every third in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int64_t block_of(DType t) { return int64_t(dtype_info(t).block_elems); }

// tensor_type_fallback: a row length the chosen blocks do not tile takes a 32-element format,
// and F16 if even that does not fit.
DType shape_fallback(DType t, int64_t ne0, const std::string& name) {
  if (ne0 % block_of(t) == 0) return t;
  DType fallback;
  switch (t) {
    case DType::IQ4_XS: fallback = DType::IQ4_NL; break;
    case DType::Q2_K:
    case DType::Q3_K: fallback = DType::Q4_0; break;
    case DType::Q4_K: fallback = DType::Q5_0; break;
    case DType::Q5_K: fallback = DType::Q5_1; break;
    case DType::Q6_K: fallback = DType::Q8_0; break;
    default: fail("tensor '", name, "': rows of ", ne0, " elements do not fit ", dtype_name(t), " blocks of ", block_of(t));
  }
  return ne0 % block_of(fallback) == 0 ? fallback : DType::F16;
}

// An expert model's ffn_down layer: the N of "blk.N." (llama.cpp parses the name, since some
// models' expert tensors do not come in layer order).
int moe_layer(const std::string& name, int n_layers) {
  const int i = gguf_layer_index(name);
  if (i < 0) fail("tensor '", name, "': no layer in its name (an expert model's ffn_down must have one)");
  if (i >= n_layers) fail("tensor '", name, "': layer ", i, " is not below the model's ", n_layers, " blocks");
  return i;
}

// llama_tensor_get_type_impl for the presets above (no importance matrix, not Falcon, not 70B).
// `base` is the preset's default type.
DType mix_rule(QuantPreset p, DType base, const std::string& name, Category cat, const QuantMixContext& ctx) {
  using P = QuantPreset;
  if (cat == Category::kOutput || (ctx.tied_embeddings && cat == Category::kTokenEmbd)) {
    if (ctx.ne0 % block_of(base) != 0) return DType::Q8_0;
    return base == DType::Q8_0 ? DType::Q8_0 : DType::Q6_K;
  }
  if (cat == Category::kTokenEmbd) return base;
  if (is_v_like(cat)) {
    const int i = ctx.i_attention_wv;
    // llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB", whatever the
    // preset chose (the DeltaNet attn_qkv is V-like, so it too).
    if (ctx.n_expert == 8) return DType::Q8_0;
    if (p == P::Q2_K) return ctx.n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
    if (p == P::Q3_K_M) return i < 2 ? DType::Q5_K : DType::Q4_K;
    if (p == P::Q3_K_L) return DType::Q5_K;
    if ((p == P::IQ4_NL || p == P::IQ4_XS) && ctx.n_gqa >= 4) return DType::Q5_K;
    if ((p == P::Q4_K_M || p == P::Q5_K_M) && use_more_bits(i, ctx.n_attention_wv)) return DType::Q6_K;
    if (p == P::Q4_K_S && i < 4) return DType::Q5_K;
    return base;
  }
  if (cat == Category::kAttnK && ctx.n_expert == 8) return DType::Q8_0;
  if (cat == Category::kFfnDown) {
    const int i = ctx.n_expert > 1 ? moe_layer(name, ctx.n_layers) : ctx.i_ffn_down, n = ctx.n_layers;
    if (p == P::Q2_K) return DType::Q3_K;
    if (p == P::Q3_K_M) return i < n / 16 ? DType::Q5_K : DType::Q4_K;
    if (p == P::Q3_K_L) return DType::Q5_K;
    if (p == P::Q4_K_M) return use_more_bits(i, n) ? DType::Q6_K : base;
    if ((p == P::IQ4_NL || p == P::IQ4_XS) && i < n / 8) return DType::Q5_K;  // imatrix-less rule
    if (p == P::Q5_K_M && use_more_bits(i, n)) return DType::Q6_K;
    if (p == P::Q4_K_S && i < n / 8) return DType::Q5_K;
    return base;
  }
  if (cat == Category::kAttnOutput && ctx.n_expert == 8) {
    const bool q5 = p == P::Q2_K || p == P::Q3_K_S || p == P::Q3_K_M || p == P::IQ4_NL || p == P::Q4_K_S ||
                    p == P::Q4_K_M || p == P::IQ4_XS;
    return q5 ? DType::Q5_K : base;
  }
  if (cat == Category::kAttnOutput) {
    if (p == P::Q2_K) return DType::Q3_K;
    if (p == P::Q3_K_M) return DType::Q4_K;
    if (p == P::Q3_K_L) return DType::Q5_K;
    return base;
  }
  // attn_q, attn_k, ffn_gate, ffn_up and the rest change only for the IQ1/IQ2/IQ3 mixes.
  return base;
}

}  // namespace

const std::vector<QuantPreset>& all_quant_presets() {
  static const std::vector<QuantPreset> all = [] {
    std::vector<QuantPreset> v;
    for (const PresetRow& r : kPresets) v.push_back(r.preset);
    return v;
  }();
  return all;
}

std::optional<QuantPreset> parse_quant_preset(std::string_view name) {
  for (const PresetRow& r : kPresets)
    if (iequal(r.name, name)) return r.preset;
  for (const auto& [alias, preset] : kAliases)
    if (iequal(alias, name)) return preset;
  return std::nullopt;
}

std::string_view preset_name(QuantPreset p) { return row(p).name; }
int preset_file_type(QuantPreset p) { return row(p).file_type; }
DType preset_default_type(QuantPreset p) { return row(p).base; }

bool tensor_allows_quantization(std::string_view name, int n_dims) {
  if (n_dims < 2) return false;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  for (std::string_view never : {"_norm.weight", "ssm_conv1d", ".position_embd", ".patch_embd", "ffn_gate_inp.weight"})
    if (contains(name, never)) return false;
  return true;
}

DType preset_tensor_type(QuantPreset p, const std::string& name, const QuantMixContext& ctx) {
  if (!tensor_allows_quantization(name, ctx.n_dims)) return DType::F32;
  const DType base = preset_default_type(p);
  if (!is_block_format(base)) return base;  // F32 / F16 / BF16: no per-tensor rules, no fallback
  return shape_fallback(mix_rule(p, base, name, categorize(name), ctx), ctx.ne0, name);
}

std::vector<DType> preset_tensor_types(QuantPreset p, const std::vector<GgufTensorShape>& tensors, int n_layers, int n_gqa,
                                       int n_expert) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // llama-quantize's order (sort_like_llama_quantize), as indices into `tensors`.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = gguf_layer_index(tensors[a].name), lb = gguf_layer_index(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  QuantMixContext ctx;
  ctx.n_layers = n_layers;
  ctx.n_gqa = n_gqa;
  ctx.n_expert = n_expert;
  ctx.tied_embeddings = true;
  for (const GgufTensorShape& t : tensors) {
    const Category c = categorize(t.name);
    if (is_v_like(c)) ++ctx.n_attention_wv;
    if (c == Category::kOutput) ctx.tied_embeddings = false;
  }
  // The counters advance for every tensor that goes through the per-tensor rules.
  const bool has_rules = is_block_format(preset_default_type(p));
  std::vector<DType> types(tensors.size());
  int i_wv = 0, i_down = 0;
  for (size_t k : order) {
    const GgufTensorShape& t = tensors[k];
    ctx.n_dims = int(t.ne.size());
    ctx.ne0 = t.ne.empty() ? 0 : t.ne[0];
    ctx.i_attention_wv = i_wv;
    ctx.i_ffn_down = i_down;
    types[k] = preset_tensor_type(p, t.name, ctx);
    if (has_rules && tensor_allows_quantization(t.name, ctx.n_dims)) {
      const Category c = categorize(t.name);
      // Output and tied token_embd take their own branch first and count as neither.
      const bool output_branch = c == Category::kOutput || (ctx.tied_embeddings && c == Category::kTokenEmbd);
      if (!output_branch && is_v_like(c)) ++i_wv;
      if (!output_branch && c == Category::kFfnDown) ++i_down;
    }
  }
  return types;
}

uint64_t mix_bytes(const std::vector<GgufTensorShape>& tensors, const std::vector<DType>& types) {
  if (tensors.size() != types.size()) fail("mix_bytes: ", tensors.size(), " tensors but ", types.size(), " types");
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) total += dtype_bytes(types[i], size_t(tensors[i].elements()));
  return total;
}

}  // namespace qwen35
