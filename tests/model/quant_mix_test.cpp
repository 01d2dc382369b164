// llama-quantize's per-tensor type choice for Qwen3.5 (shared/spec/gguf.md section 6, llama.cpp
// src/llama-quant.cpp at 3f545be), checked against the spec's statements and against the sizes of
// files stock llama-quantize made from Qwen3.5-9B (gguf.md section 7.1).
#include <gtest/gtest.h>

#include <map>
#include <set>

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

}  // namespace
}  // namespace qwen35
