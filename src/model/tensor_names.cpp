#include "model/tensor_names.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "core/error.h"

namespace qwen35 {
namespace {

struct NamePair {
  std::string_view hf, gguf;
};

// Outside the layers. The HF names of the first two carry the text prefix.
constexpr NamePair kGlobal[] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"norm.weight", "output_norm.weight"},
};
constexpr NamePair kLmHead{"lm_head.weight", "output.weight"};

// Inside layer N: HF "<prefix>layers.N.<hf>" (MTP: "mtp.layers.i.<hf>") <-> GGUF "blk.N.<gguf>".
constexpr NamePair kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.A_log", "ssm_a"},
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
};

// The MTP head's own tensors, in the first MTP block: HF "mtp.<hf>" <-> GGUF "blk.N.<gguf>".
constexpr NamePair kMtpHead[] = {
    {"fc.weight", "nextn.eh_proj.weight"},
    {"pre_fc_norm_embedding.weight", "nextn.enorm.weight"},
    {"pre_fc_norm_hidden.weight", "nextn.hnorm.weight"},
    {"norm.weight", "nextn.shared_head_norm.weight"},
};

constexpr std::string_view kTextPrefix = "model.language_model.";

// The vision tower outside its blocks (HF names after "model.visual.").
constexpr NamePair kVisionGlobal[] = {
    {"patch_embed.proj.bias", "v.patch_embd.bias"},       {"pos_embed.weight", "v.position_embd.weight"},
    {"merger.norm.weight", "v.post_ln.weight"},           {"merger.norm.bias", "v.post_ln.bias"},
    {"merger.linear_fc1.weight", "mm.0.weight"},          {"merger.linear_fc1.bias", "mm.0.bias"},
    {"merger.linear_fc2.weight", "mm.2.weight"},          {"merger.linear_fc2.bias", "mm.2.bias"},
};
// Inside vision block j: HF "blocks.j.<hf>" <-> GGUF "v.blk.j.<gguf>".
constexpr NamePair kVisionBlock[] = {
    {"norm1.weight", "ln1.weight"},         {"norm1.bias", "ln1.bias"},
    {"attn.qkv.weight", "attn_qkv.weight"}, {"attn.qkv.bias", "attn_qkv.bias"},
    {"attn.proj.weight", "attn_out.weight"}, {"attn.proj.bias", "attn_out.bias"},
    {"norm2.weight", "ln2.weight"},         {"norm2.bias", "ln2.bias"},
    {"mlp.linear_fc1.weight", "ffn_up.weight"}, {"mlp.linear_fc1.bias", "ffn_up.bias"},
    {"mlp.linear_fc2.weight", "ffn_down.weight"}, {"mlp.linear_fc2.bias", "ffn_down.bias"},
};
constexpr std::string_view kVisionPrefix = "model.visual.";

bool consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// "N.<rest>" -> N, leaving rest; nullopt without a number.
std::optional<int> consume_index(std::string_view& s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || end == s.data() + s.size() || *end != '.') return std::nullopt;
  s.remove_prefix(size_t(end - s.data()) + 1);
  return v;
}

template <size_t N>
const NamePair* find_hf(const NamePair (&table)[N], std::string_view hf) {
  for (const NamePair& p : table)
    if (p.hf == hf) return &p;
  return nullptr;
}
template <size_t N>
const NamePair* find_gguf(const NamePair (&table)[N], std::string_view gguf) {
  for (const NamePair& p : table)
    if (p.gguf == gguf) return &p;
  return nullptr;
}

std::string blk(int layer, std::string_view rest) { return "blk." + std::to_string(layer) + "." + std::string(rest); }

}  // namespace

std::optional<std::string> gguf_tensor_name(std::string_view hf, int num_layers) {
  if (hf == kLmHead.hf) return std::string(kLmHead.gguf);
  std::string_view s = hf;
  if (consume(s, "mtp.")) {
    if (consume(s, "layers.")) {
      const std::optional<int> i = consume_index(s);
      const NamePair* p = i ? find_hf(kLayer, s) : nullptr;
      return p ? std::optional(blk(num_layers + *i, p->gguf)) : std::nullopt;
    }
    const NamePair* p = find_hf(kMtpHead, s);
    return p ? std::optional(blk(num_layers, p->gguf)) : std::nullopt;
  }
  if (!consume(s, kTextPrefix) && !consume(s, "model.")) return std::nullopt;
  if (consume(s, "layers.")) {
    const std::optional<int> i = consume_index(s);
    const NamePair* p = i ? find_hf(kLayer, s) : nullptr;
    return p ? std::optional(blk(*i, p->gguf)) : std::nullopt;
  }
  const NamePair* p = find_hf(kGlobal, s);
  return p ? std::optional(std::string(p->gguf)) : std::nullopt;
}

std::optional<std::string> hf_tensor_name(std::string_view gguf, int num_layers) {
  if (gguf == kLmHead.gguf) return std::string(kLmHead.hf);
  std::string_view s = gguf;
  if (!consume(s, "blk.")) {
    const NamePair* p = find_gguf(kGlobal, s);
    return p ? std::optional(std::string(kTextPrefix) + std::string(p->hf)) : std::nullopt;
  }
  const std::optional<int> i = consume_index(s);
  if (!i) return std::nullopt;
  if (*i >= num_layers) {
    if (const NamePair* p = find_gguf(kMtpHead, s)) return *i == num_layers ? std::optional("mtp." + std::string(p->hf)) : std::nullopt;
    const NamePair* p = find_gguf(kLayer, s);
    return p ? std::optional("mtp.layers." + std::to_string(*i - num_layers) + "." + std::string(p->hf)) : std::nullopt;
  }
  const NamePair* p = find_gguf(kLayer, s);
  return p ? std::optional(std::string(kTextPrefix) + "layers." + std::to_string(*i) + "." + std::string(p->hf))
           : std::nullopt;
}

std::string gguf_layer_tensor_name(int layer, std::string_view hf) {
  const std::optional<std::string> g =
      gguf_tensor_name(std::string(kTextPrefix) + "layers." + std::to_string(layer) + "." + std::string(hf), layer + 1);
  if (!g) throw std::invalid_argument("no GGUF name for layer tensor " + std::string(hf));
  return *g;
}

std::string gguf_global_tensor_name(std::string_view hf) {
  const std::optional<std::string> g =
      gguf_tensor_name(hf == kLmHead.hf ? std::string(hf) : std::string(kTextPrefix) + std::string(hf), 0);
  if (!g) throw std::invalid_argument("no GGUF name for tensor " + std::string(hf));
  return *g;
}

std::optional<std::string> gguf_vision_tensor_name(std::string_view hf) {
  std::string_view s = hf;
  if (!consume(s, kVisionPrefix) && !consume(s, "visual.")) return std::nullopt;
  if (consume(s, "blocks.")) {
    const std::optional<int> j = consume_index(s);
    const NamePair* p = j ? find_hf(kVisionBlock, s) : nullptr;
    return p ? std::optional("v.blk." + std::to_string(*j) + "." + std::string(p->gguf)) : std::nullopt;
  }
  const NamePair* p = find_hf(kVisionGlobal, s);
  return p ? std::optional(std::string(p->gguf)) : std::nullopt;
}

std::optional<std::string> hf_vision_tensor_name(std::string_view gguf) {
  std::string_view s = gguf;
  if (consume(s, "v.blk.")) {
    const std::optional<int> j = consume_index(s);
    const NamePair* p = j ? find_gguf(kVisionBlock, s) : nullptr;
    return p ? std::optional(std::string(kVisionPrefix) + "blocks." + std::to_string(*j) + "." + std::string(p->hf))
             : std::nullopt;
  }
  const NamePair* p = find_gguf(kVisionGlobal, s);
  return p ? std::optional(std::string(kVisionPrefix) + std::string(p->hf)) : std::nullopt;
}

int64_t GgufTensorShape::elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int gguf_layer_index(std::string_view name) {
  if (!consume(name, "blk.")) return -1;
  const std::optional<int> i = consume_index(name);
  return i ? *i : -1;
}

void sort_like_llama_quantize(std::vector<GgufTensorShape>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const GgufTensorShape& a, const GgufTensorShape& b) {
    const int la = gguf_layer_index(a.name), lb = gguf_layer_index(b.name);
    return la != lb ? la < lb : a.name < b.name;
  });
}

std::vector<GgufTensorShape> gguf_text_tensors(const TextConfig& c, int mtp_layers) {
  if (c.is_moe()) fail("the GGUF tensor inventory of a mixture-of-experts model is not supported yet");
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  std::vector<GgufTensorShape> out;
  const auto add = [&](std::string name, std::vector<int64_t> ne) { out.push_back({std::move(name), std::move(ne)}); };
  add("token_embd.weight", {H, V});
  add("output_norm.weight", {H});
  if (!c.tie_word_embeddings) add("output.weight", {H, V});

  const int64_t hd = c.head_dim, q_rows = int64_t(c.num_heads) * hd * (c.attn_output_gate ? 2 : 1);
  const int64_t kv_rows = int64_t(c.num_kv_heads) * hd, o_cols = int64_t(c.num_heads) * hd;
  const auto attention_and_mlp = [&](int i, bool attention) {
    add(blk(i, "attn_norm.weight"), {H});
    add(blk(i, "post_attention_norm.weight"), {H});
    add(blk(i, "ffn_gate.weight"), {H, I});
    add(blk(i, "ffn_up.weight"), {H, I});
    add(blk(i, "ffn_down.weight"), {I, H});
    if (attention) {
      add(blk(i, "attn_q.weight"), {H, q_rows});
      add(blk(i, "attn_k.weight"), {H, kv_rows});
      add(blk(i, "attn_v.weight"), {H, kv_rows});
      add(blk(i, "attn_output.weight"), {o_cols, H});
      add(blk(i, "attn_q_norm.weight"), {hd});
      add(blk(i, "attn_k_norm.weight"), {hd});
    } else {
      const int64_t C = c.conv_dim(), Hv = c.linear_value_heads, VS = c.deltanet_value_size();
      add(blk(i, "attn_qkv.weight"), {H, C});
      add(blk(i, "attn_gate.weight"), {H, VS});
      add(blk(i, "ssm_beta.weight"), {H, Hv});
      add(blk(i, "ssm_alpha.weight"), {H, Hv});
      add(blk(i, "ssm_conv1d.weight"), {c.conv_kernel, C});
      add(blk(i, "ssm_dt.bias"), {Hv});
      add(blk(i, "ssm_a"), {Hv});
      add(blk(i, "ssm_norm.weight"), {c.linear_value_dim});
      add(blk(i, "ssm_out.weight"), {VS, H});
    }
  };
  for (int i = 0; i < c.num_layers; ++i) attention_and_mlp(i, c.layer_kinds[size_t(i)] == LayerKind::kAttention);
  for (int m = 0; m < mtp_layers; ++m) {
    const int i = c.num_layers + m;
    attention_and_mlp(i, true);
    if (m == 0) {
      add(blk(i, "nextn.eh_proj.weight"), {2 * H, H});
      add(blk(i, "nextn.enorm.weight"), {H});
      add(blk(i, "nextn.hnorm.weight"), {H});
      add(blk(i, "nextn.shared_head_norm.weight"), {H});
    }
  }
  sort_like_llama_quantize(out);
  return out;
}

}  // namespace qwen35
