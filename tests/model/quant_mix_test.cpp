// llama-quantize's per-tensor type choice for Qwen3.5 (shared/spec/gguf.md section 6, llama.cpp
// src/llama-quant.cpp at 3f545be), checked against the spec's statements, against the sizes of
// files stock llama-quantize made from Qwen3.5-9B (gguf.md section 7.1), and for qwen35moe against
// llama-quantize's own choices for every tensor of four MoE files (tests/data/gguf/README.md).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/config.h"
#include "model/quant_mix.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

TextConfig config_9b() {
  return ModelConfig::parse(test::read_text_file(test::data_path("configs/qwen3.5-9b.json")), "9b").text;
}

// name -> dtype of the 9B mix (n_gqa 16 / 4 = 4).
std::map<std::string, DType> mix_9b(QuantPreset p, int mtp) {
  const TextConfig c = config_9b();
  const std::vector<GgufTensorShape> t = gguf_text_tensors(c, mtp);
  const std::vector<DType> types = preset_tensor_types(p, t, c.num_layers + mtp, c.num_heads / c.num_kv_heads);
  std::map<std::string, DType> out;
  for (size_t i = 0; i < t.size(); ++i) out[t[i].name] = types[i];
  return out;
}

std::string blk(int i, const char* rest) { return "blk." + std::to_string(i) + "." + rest; }

const std::set<int> kMoreBits32 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};

TEST(QuantMix, PresetNamesNumbersAndDefaults) {
  EXPECT_EQ(parse_quant_preset("q4_k_m"), QuantPreset::Q4_K_M);
  EXPECT_EQ(parse_quant_preset("Q4_K_M"), QuantPreset::Q4_K_M);
  EXPECT_EQ(parse_quant_preset("bf16"), QuantPreset::BF16);
  EXPECT_EQ(parse_quant_preset("iq4_xs"), QuantPreset::IQ4_XS);
  EXPECT_EQ(parse_quant_preset("Q4_K"), QuantPreset::Q4_K_M);  // llama-quantize's aliases
  EXPECT_EQ(parse_quant_preset("q3_k"), QuantPreset::Q3_K_M);
  EXPECT_EQ(parse_quant_preset("Q5_K"), QuantPreset::Q5_K_M);
  EXPECT_EQ(parse_quant_preset("q4km"), std::nullopt);
  EXPECT_EQ(parse_quant_preset(""), std::nullopt);
  EXPECT_EQ(parse_quant_preset("IQ2_XXS"), std::nullopt);  // needs an importance matrix
  EXPECT_EQ(all_quant_presets().size(), 19u);
  for (QuantPreset p : all_quant_presets()) EXPECT_EQ(parse_quant_preset(preset_name(p)), p) << preset_name(p);
  // general.file_type values (include/llama.h).
  const std::map<QuantPreset, int> ftype = {
      {QuantPreset::F32, 0},     {QuantPreset::F16, 1},     {QuantPreset::Q4_0, 2},    {QuantPreset::Q4_1, 3},
      {QuantPreset::Q8_0, 7},    {QuantPreset::Q5_0, 8},    {QuantPreset::Q5_1, 9},    {QuantPreset::Q2_K, 10},
      {QuantPreset::Q3_K_S, 11}, {QuantPreset::Q3_K_M, 12}, {QuantPreset::Q3_K_L, 13}, {QuantPreset::Q4_K_S, 14},
      {QuantPreset::Q4_K_M, 15}, {QuantPreset::Q5_K_S, 16}, {QuantPreset::Q5_K_M, 17}, {QuantPreset::Q6_K, 18},
      {QuantPreset::IQ4_NL, 25}, {QuantPreset::IQ4_XS, 30}, {QuantPreset::BF16, 32}};
  for (const auto& [p, n] : ftype) EXPECT_EQ(preset_file_type(p), n) << preset_name(p);
  EXPECT_EQ(preset_default_type(QuantPreset::Q3_K_L), DType::Q3_K);
  EXPECT_EQ(preset_default_type(QuantPreset::Q5_K_S), DType::Q5_K);
}

TEST(QuantMix, NeverQuantized) {
  for (const char* n : {"blk.0.attn_norm.weight", "blk.0.ssm_norm.weight", "blk.3.attn_q_norm.weight", "output_norm.weight",
                        "blk.32.nextn.shared_head_norm.weight"})
    EXPECT_FALSE(tensor_allows_quantization(n, 2)) << n;  // *_norm.weight, whatever the shape
  EXPECT_FALSE(tensor_allows_quantization("blk.0.ssm_conv1d.weight", 2));
  EXPECT_FALSE(tensor_allows_quantization("blk.0.ssm_a", 2));        // does not end in "weight"
  EXPECT_FALSE(tensor_allows_quantization("blk.0.ssm_dt.bias", 2));
  EXPECT_FALSE(tensor_allows_quantization("blk.32.nextn.enorm.weight", 1));  // 1-D
  EXPECT_FALSE(tensor_allows_quantization("v.patch_embd.weight", 4));
  EXPECT_FALSE(tensor_allows_quantization("v.position_embd.weight", 2));
  EXPECT_TRUE(tensor_allows_quantization("blk.0.attn_qkv.weight", 2));
  EXPECT_TRUE(tensor_allows_quantization("blk.32.nextn.eh_proj.weight", 2));
  // Every one of them stays F32 in every preset.
  for (QuantPreset p : all_quant_presets()) {
    const std::map<std::string, DType> m = mix_9b(p, 1);
    int f32 = 0;
    for (const auto& [name, t] : m) f32 += t == DType::F32;
    EXPECT_EQ(f32, p == QuantPreset::F32 ? 442 : 184) << preset_name(p);
    EXPECT_EQ(m.at("blk.0.ssm_conv1d.weight"), DType::F32);
    EXPECT_EQ(m.at("blk.0.ssm_a"), DType::F32);
  }
}

TEST(QuantMix, Q4_K_M_9B) {
  for (int mtp : {0, 1}) {
    const std::map<std::string, DType> m = mix_9b(QuantPreset::Q4_K_M, mtp);
    const int n = 32 + mtp;
    EXPECT_EQ(m.at("output.weight"), DType::Q6_K);
    EXPECT_EQ(m.at("token_embd.weight"), DType::Q4_K);
    std::set<int> more_bits = kMoreBits32;
    if (mtp) more_bits.insert(32);  // use_more_bits(32, 33): the last eighth
    for (int i = 0; i < n; ++i) {
      const DType want = more_bits.count(i) ? DType::Q6_K : DType::Q4_K;
      const bool attention = i >= 32 || (i + 1) % 4 == 0;
      // One V-like tensor per layer: attn_v in attention layers, the DeltaNet attn_qkv elsewhere.
      EXPECT_EQ(m.at(blk(i, attention ? "attn_v.weight" : "attn_qkv.weight")), want) << "layer " << i;
      EXPECT_EQ(m.at(blk(i, "ffn_down.weight")), want) << "layer " << i;
      for (const char* rest : {"ffn_gate.weight", "ffn_up.weight"}) EXPECT_EQ(m.at(blk(i, rest)), DType::Q4_K) << blk(i, rest);
      if (attention) {
        for (const char* rest : {"attn_q.weight", "attn_k.weight", "attn_output.weight"})
          EXPECT_EQ(m.at(blk(i, rest)), DType::Q4_K) << blk(i, rest);
      } else {
        for (const char* rest : {"attn_gate.weight", "ssm_alpha.weight", "ssm_beta.weight", "ssm_out.weight"})
          EXPECT_EQ(m.at(blk(i, rest)), DType::Q4_K) << blk(i, rest);
      }
    }
    if (mtp) {
      EXPECT_EQ(m.at("blk.32.nextn.eh_proj.weight"), DType::Q4_K);
    }
  }
}

TEST(QuantMix, OtherPresetsFollowTheSpec) {
  const auto v_like = [](int i) { return blk(i, (i + 1) % 4 == 0 ? "attn_v.weight" : "attn_qkv.weight"); };
  {  // Q3_K_M: V-like first 2 Q5_K, ffn_down first n/16 = 2 Q5_K, both else Q4_K; attn_output Q4_K.
    const auto m = mix_9b(QuantPreset::Q3_K_M, 0);
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(m.at(v_like(i)), i < 2 ? DType::Q5_K : DType::Q4_K) << i;
      EXPECT_EQ(m.at(blk(i, "ffn_down.weight")), i < 2 ? DType::Q5_K : DType::Q4_K) << i;
      EXPECT_EQ(m.at(blk(i, "ffn_up.weight")), DType::Q3_K) << i;
    }
    EXPECT_EQ(m.at("blk.3.attn_output.weight"), DType::Q4_K);
    EXPECT_EQ(m.at("blk.3.attn_q.weight"), DType::Q3_K);
    EXPECT_EQ(m.at("token_embd.weight"), DType::Q3_K);
    EXPECT_EQ(m.at("output.weight"), DType::Q6_K);
  }
  {  // Q3_K_L: V-like, ffn_down and attn_output Q5_K.
    const auto m = mix_9b(QuantPreset::Q3_K_L, 0);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(m.at(v_like(i)), DType::Q5_K) << i;
    EXPECT_EQ(m.at("blk.20.ffn_down.weight"), DType::Q5_K);
    EXPECT_EQ(m.at("blk.7.attn_output.weight"), DType::Q5_K);
    EXPECT_EQ(m.at("blk.6.ssm_out.weight"), DType::Q3_K);
  }
  {  // Q2_K (n_gqa 4): V-like Q4_K, ffn_down Q3_K, attn_output Q3_K, the rest Q2_K.
    const auto m = mix_9b(QuantPreset::Q2_K, 0);
    EXPECT_EQ(m.at("blk.0.attn_qkv.weight"), DType::Q4_K);
    EXPECT_EQ(m.at("blk.3.attn_v.weight"), DType::Q4_K);
    EXPECT_EQ(m.at("blk.9.ffn_down.weight"), DType::Q3_K);
    EXPECT_EQ(m.at("blk.3.attn_output.weight"), DType::Q3_K);
    EXPECT_EQ(m.at("blk.0.ssm_out.weight"), DType::Q2_K);
    EXPECT_EQ(m.at("output.weight"), DType::Q6_K);
  }
  {  // Q4_K_S: V-like first 4 and ffn_down first n/8 = 4 Q5_K.
    const auto m = mix_9b(QuantPreset::Q4_K_S, 0);
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(m.at(v_like(i)), i < 4 ? DType::Q5_K : DType::Q4_K) << i;
      EXPECT_EQ(m.at(blk(i, "ffn_down.weight")), i < 4 ? DType::Q5_K : DType::Q4_K) << i;
    }
  }
  {  // Q5_K_M: the Q4_K_M pattern on a Q5_K base.
    const auto m = mix_9b(QuantPreset::Q5_K_M, 0);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(m.at(v_like(i)), kMoreBits32.count(i) ? DType::Q6_K : DType::Q5_K) << i;
    EXPECT_EQ(m.at("blk.4.ffn_down.weight"), DType::Q5_K);
    EXPECT_EQ(m.at("blk.6.ffn_down.weight"), DType::Q6_K);
  }
  for (QuantPreset p : {QuantPreset::IQ4_XS, QuantPreset::IQ4_NL}) {  // V-like Q5_K; ffn_down first 4 Q5_K
    const auto m = mix_9b(p, 0);
    const DType base = preset_default_type(p);
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(m.at(v_like(i)), DType::Q5_K) << i;
      EXPECT_EQ(m.at(blk(i, "ffn_down.weight")), i < 4 ? DType::Q5_K : base) << i;
    }
    EXPECT_EQ(m.at("blk.3.attn_output.weight"), base);
    EXPECT_EQ(m.at("output.weight"), DType::Q6_K);
  }
  for (QuantPreset p : {QuantPreset::Q8_0, QuantPreset::Q6_K, QuantPreset::Q5_K_S, QuantPreset::Q3_K_S, QuantPreset::Q4_0}) {
    // Uniform; the output matrix Q6_K (Q8_0 stays Q8_0).
    const auto m = mix_9b(p, 1);
    const DType base = preset_default_type(p);
    for (const auto& [name, t] : m) {
      if (t == DType::F32) continue;
      EXPECT_EQ(t, name == "output.weight" && base != DType::Q8_0 ? DType::Q6_K : base) << preset_name(p) << " " << name;
    }
  }
  for (QuantPreset p : {QuantPreset::F16, QuantPreset::BF16}) {  // every quantizable matrix, output included
    const auto m = mix_9b(p, 1);
    EXPECT_EQ(m.at("output.weight"), preset_default_type(p));
    EXPECT_EQ(m.at("token_embd.weight"), preset_default_type(p));
    EXPECT_EQ(m.at("blk.0.attn_qkv.weight"), preset_default_type(p));
    EXPECT_EQ(m.at("blk.0.attn_norm.weight"), DType::F32);
  }
}

TEST(QuantMix, TiedEmbeddingsTakeTheOutputType) {
  // 0.8B-4B have no output.weight: token_embd is quantized as the output matrix.
  TextConfig c = config_9b();
  c.tie_word_embeddings = true;
  const std::vector<GgufTensorShape> t = gguf_text_tensors(c, 0);
  const std::vector<DType> types = preset_tensor_types(QuantPreset::Q4_K_M, t, 32, 4);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_NE(t[i].name, "output.weight");
    if (t[i].name == "token_embd.weight") {
      EXPECT_EQ(types[i], DType::Q6_K);
    } else if (t[i].name == "blk.0.attn_qkv.weight") {
      EXPECT_EQ(types[i], DType::Q6_K);  // the V-like counter is unaffected
    } else if (t[i].name == "blk.4.attn_qkv.weight") {
      EXPECT_EQ(types[i], DType::Q4_K);
    }
  }
}

TEST(QuantMix, ShapeFallback) {
  QuantMixContext ctx;
  ctx.n_layers = 32;
  ctx.n_gqa = 4;
  ctx.n_attention_wv = 32;
  ctx.ne0 = 4096 + 32;  // tiles 32-element blocks, not 256-element ones
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "blk.4.ffn_up.weight", ctx), DType::Q5_0);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q5_K_S, "blk.4.ffn_up.weight", ctx), DType::Q5_1);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q6_K, "blk.4.ffn_up.weight", ctx), DType::Q8_0);
  EXPECT_EQ(preset_tensor_type(QuantPreset::IQ4_XS, "blk.4.ffn_up.weight", ctx), DType::IQ4_NL);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q2_K, "blk.4.ffn_up.weight", ctx), DType::Q4_0);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "output.weight", ctx), DType::Q8_0);  // output: Q8_0 directly
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_0, "blk.4.ffn_up.weight", ctx), DType::Q4_0);
  ctx.ne0 = 48;  // not even 32-element blocks
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "blk.4.ffn_up.weight", ctx), DType::F16);
  EXPECT_THROW(preset_tensor_type(QuantPreset::Q4_0, "blk.4.ffn_up.weight", ctx), Error);  // llama-quantize fails too
  EXPECT_EQ(preset_tensor_type(QuantPreset::BF16, "blk.4.ffn_up.weight", ctx), DType::BF16);
}

TEST(QuantMix, Sizes9BMatchStockLlamaQuantizeFiles) {
  const TextConfig c = config_9b();
  const std::vector<GgufTensorShape> t = gguf_text_tensors(c, 0);
  const auto bytes = [&](QuantPreset p) { return mix_bytes(t, preset_tensor_types(p, t, 32, 4)); };
  uint64_t f32 = 0;
  for (const GgufTensorShape& s : t)
    if (!tensor_allows_quantization(s.name, int(s.ne.size()))) f32 += uint64_t(s.elements()) * 4;
  // gguf.md section 6: ~5,614 MB of quantized weights, plus the F32 tensors.
  const double q4km = double(bytes(QuantPreset::Q4_K_M));
  EXPECT_NEAR(q4km, 5614e6 + double(f32), 0.01 * (5614e6 + double(f32)));
  // Files made by stock llama-quantize from Qwen3.5-9B (no MTP; gguf.md section 7.1). Every
  // tensor's data is a multiple of the 32-byte alignment here, so each file is the tensor data plus
  // the same header (metadata and the 248,320-token vocabulary): the difference must not depend on
  // the preset, which it would if any tensor's type differed.
  const std::pair<QuantPreset, uint64_t> files[] = {
      {QuantPreset::Q4_K_S, 5351629312}, {QuantPreset::Q4_K_M, 5629108736}, {QuantPreset::Q5_K_S, 6305309184},
      {QuantPreset::Q5_K_M, 6467969536}, {QuantPreset::Q6_K, 7359259136},   {QuantPreset::Q8_0, 9527501312}};
  const int64_t header = int64_t(files[0].second) - int64_t(bytes(files[0].first));
  EXPECT_GT(header, 5000000);  // the vocabulary alone is several MB
  EXPECT_LT(header, 20000000);
  for (const auto& [p, size] : files) EXPECT_EQ(int64_t(size) - int64_t(bytes(p)), header) << preset_name(p);
  std::printf("[ mix      ] 9B Q4_K_M: %llu bytes of tensor data (%llu of them F32); GGUF header %lld bytes\n",
              static_cast<unsigned long long>(q4km), static_cast<unsigned long long>(f32), static_cast<long long>(header));
}

// ---- mixture of experts ------------------------------------------------------------------------

struct MoeFile {
  std::string name;
  int n_layers, n_gqa, n_expert;
  std::vector<GgufTensorShape> tensors;
  // preset -> ggml type label per tensor; nullopt where llama-quantize refuses the preset
  std::map<std::string, std::optional<std::vector<std::string>>> types;
};

std::vector<MoeFile> moe_files() {
  const nlohmann::json j = nlohmann::json::parse(test::read_text_file(test::data_path("gguf/moe_quant_types.json")));
  std::vector<MoeFile> out;
  for (const nlohmann::json& m : j.at("models")) {
    MoeFile f{m.at("name").get<std::string>(), m.at("n_layers").get<int>(), m.at("n_gqa").get<int>(),
              m.at("n_expert").get<int>(), {}, {}};
    for (const nlohmann::json& t : m.at("tensors"))
      f.tensors.push_back({t.at(0).get<std::string>(), t.at(1).get<std::vector<int64_t>>()});
    for (const auto& [preset, types] : m.at("types").items())
      if (types.is_null()) f.types[preset] = std::nullopt;
      else f.types[preset] = types.get<std::vector<std::string>>();
    out.push_back(std::move(f));
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Tensors of `f` whose type under `p` differs from llama-quantize's, given the expert count.
int mismatches(const MoeFile& f, const std::string& preset, int n_expert, bool report) {
  const std::optional<QuantPreset> p = parse_quant_preset(preset);
  EXPECT_TRUE(p.has_value()) << preset;
  if (!p) return 0;
  const std::vector<DType> ours = preset_tensor_types(*p, f.tensors, f.n_layers, f.n_gqa, n_expert);
  const std::vector<std::string>& theirs = *f.types.at(preset);
  int bad = 0;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    if (std::string(dtype_name(ours[i])) == upper(theirs[i])) continue;
    ++bad;
    if (report) ADD_FAILURE() << f.name << " " << preset << " " << f.tensors[i].name << ": " << dtype_name(ours[i]) << ", llama-quantize " << theirs[i];
  }
  return bad;
}

// Every tensor of the tiny MoE (with and without its MTP block, hidden 64 so the K-quants fall
// back), of the first 8 layers of 35B-A3B at real shapes (256 experts), and of the same file read
// as an 8-expert model (llama.cpp's Mixtral rules), under every preset; and where llama-quantize
// refuses a preset (the tiny model's shared expert rows of 48 fit no 32-element block and those
// formats have no fallback), so do we.
TEST(QuantMix, MoeMixesAreLlamaQuantizes) {
  const std::vector<MoeFile> files = moe_files();
  ASSERT_EQ(files.size(), 4u);
  int checked = 0, dense_rules_differ = 0, refused = 0;
  for (const MoeFile& f : files) {
    ASSERT_EQ(f.types.size(), all_quant_presets().size()) << f.name;
    for (const auto& [preset, maybe_types] : f.types) {
      if (!maybe_types) {
        EXPECT_THROW(preset_tensor_types(*parse_quant_preset(preset), f.tensors, f.n_layers, f.n_gqa, f.n_expert), Error)
            << f.name << " " << preset;
        ++refused;
        continue;
      }
      const std::vector<std::string>& types = *maybe_types;
      ASSERT_EQ(types.size(), f.tensors.size()) << f.name << " " << preset;
      EXPECT_EQ(mismatches(f, preset, f.n_expert, true), 0) << f.name << " " << preset;
      checked += int(types.size());
      // The data tells the MoE rules from the dense ones (a test of the expert rules that the
      // dense rules also passed would prove nothing).
      dense_rules_differ += mismatches(f, preset, 0, false) > 0;
    }
  }
  EXPECT_GE(dense_rules_differ, 8);
  EXPECT_EQ(refused, 12);
  std::printf("[ mix      ] %d tensor types as llama-quantize chose them, %d refusals; the dense rules differ in %d file x preset cases\n",
              checked, refused, dense_rules_differ);
}

// The at-load path hands the mix each expert as a matrix of its own (E of one name): they get the
// 3-D tensor's type, so the counters and the layer rule are unaffected.
TEST(QuantMix, PerExpertMatricesTakeTheStackedTensorsType) {
  const MoeFile f = moe_files().at(2);  // 35B-A3B, 8 layers
  ASSERT_EQ(f.n_expert, 256);
  std::vector<GgufTensorShape> split;
  std::vector<size_t> from;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const GgufTensorShape& t = f.tensors[i];
    const int copies = t.ne.size() == 3 ? int(t.ne[2]) : 1;
    for (int e = 0; e < copies; ++e) {
      split.push_back({t.name, {t.ne[0], t.ne.size() > 1 ? t.ne[1] : 1}});
      if (t.ne.size() == 1) split.back().ne.pop_back();
      from.push_back(i);
    }
  }
  for (QuantPreset p : {QuantPreset::Q4_K_M, QuantPreset::Q5_K_M, QuantPreset::Q3_K_M, QuantPreset::Q4_K_S}) {
    const std::vector<DType> stacked = preset_tensor_types(p, f.tensors, f.n_layers, f.n_gqa, f.n_expert);
    const std::vector<DType> each = preset_tensor_types(p, split, f.n_layers, f.n_gqa, f.n_expert);
    for (size_t k = 0; k < split.size(); ++k) ASSERT_EQ(each[k], stacked[from[k]]) << preset_name(p) << " " << split[k].name;
  }
}

TEST(QuantMix, ExpertDownProjectionsNeedTheirLayer) {
  QuantMixContext ctx;
  ctx.n_layers = 8;
  ctx.n_expert = 256;
  ctx.ne0 = 512;
  ctx.n_dims = 3;
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "blk.0.ffn_down_exps.weight", ctx), DType::Q6_K);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "blk.2.ffn_down_exps.weight", ctx), DType::Q4_K);
  EXPECT_EQ(preset_tensor_type(QuantPreset::Q4_K_M, "blk.7.ffn_down_shexp.weight", ctx), DType::Q6_K);
  try {
    preset_tensor_type(QuantPreset::Q4_K_M, "blk.8.ffn_down_exps.weight", ctx);
    ADD_FAILURE() << "a layer past the model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 8 is not below the model's 8 blocks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preset_tensor_type(QuantPreset::Q4_K_M, "ffn_down_exps.weight", ctx), Error);
}

}  // namespace
}  // namespace qwen35
