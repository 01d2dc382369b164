// The HF <-> GGUF tensor-name table and the decoder's tensor inventory (spec gguf.md sections
// 2-3, qwen35-model.md section 11.2).
#include <gtest/gtest.h>

#include <set>

#include "model/config.h"
#include "model/tensor_names.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

TextConfig config_9b() {
  return ModelConfig::parse(test::read_text_file(test::data_path("configs/qwen3.5-9b.json")), "9b").text;
}

TEST(TensorNames, HfToGguf) {
  const struct {
    const char* hf;
    const char* gguf;
  } cases[] = {
      {"model.language_model.embed_tokens.weight", "token_embd.weight"},
      {"model.language_model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.language_model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.language_model.layers.0.post_attention_layernorm.weight", "blk.0.post_attention_norm.weight"},
      {"model.language_model.layers.5.linear_attn.in_proj_qkv.weight", "blk.5.attn_qkv.weight"},
      {"model.language_model.layers.5.linear_attn.in_proj_z.weight", "blk.5.attn_gate.weight"},
      {"model.language_model.layers.5.linear_attn.in_proj_b.weight", "blk.5.ssm_beta.weight"},
      {"model.language_model.layers.5.linear_attn.in_proj_a.weight", "blk.5.ssm_alpha.weight"},
      {"model.language_model.layers.5.linear_attn.conv1d.weight", "blk.5.ssm_conv1d.weight"},
      {"model.language_model.layers.5.linear_attn.dt_bias", "blk.5.ssm_dt.bias"},
      {"model.language_model.layers.5.linear_attn.A_log", "blk.5.ssm_a"},
      {"model.language_model.layers.5.linear_attn.norm.weight", "blk.5.ssm_norm.weight"},
      {"model.language_model.layers.5.linear_attn.out_proj.weight", "blk.5.ssm_out.weight"},
      {"model.language_model.layers.31.self_attn.q_proj.weight", "blk.31.attn_q.weight"},
      {"model.language_model.layers.31.self_attn.k_proj.weight", "blk.31.attn_k.weight"},
      {"model.language_model.layers.31.self_attn.v_proj.weight", "blk.31.attn_v.weight"},
      {"model.language_model.layers.31.self_attn.o_proj.weight", "blk.31.attn_output.weight"},
      {"model.language_model.layers.31.self_attn.q_norm.weight", "blk.31.attn_q_norm.weight"},
      {"model.language_model.layers.31.self_attn.k_norm.weight", "blk.31.attn_k_norm.weight"},
      {"model.language_model.layers.7.mlp.gate_proj.weight", "blk.7.ffn_gate.weight"},
      {"model.language_model.layers.7.mlp.up_proj.weight", "blk.7.ffn_up.weight"},
      {"model.language_model.layers.7.mlp.down_proj.weight", "blk.7.ffn_down.weight"},
      {"mtp.fc.weight", "blk.32.nextn.eh_proj.weight"},
      {"mtp.pre_fc_norm_embedding.weight", "blk.32.nextn.enorm.weight"},
      {"mtp.pre_fc_norm_hidden.weight", "blk.32.nextn.hnorm.weight"},
      {"mtp.norm.weight", "blk.32.nextn.shared_head_norm.weight"},
      {"mtp.layers.0.self_attn.v_proj.weight", "blk.32.attn_v.weight"},
      {"mtp.layers.0.mlp.down_proj.weight", "blk.32.ffn_down.weight"},
      {"mtp.layers.0.input_layernorm.weight", "blk.32.attn_norm.weight"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(gguf_tensor_name(c.hf, 32), std::optional<std::string>(c.gguf)) << c.hf;
    EXPECT_EQ(hf_tensor_name(c.gguf, 32), std::optional<std::string>(c.hf)) << c.gguf;
  }
  // The short text prefix of some checkpoints (the tiny test model).
  EXPECT_EQ(gguf_tensor_name("model.layers.2.mlp.up_proj.weight", 4), std::optional<std::string>("blk.2.ffn_up.weight"));
  EXPECT_EQ(gguf_tensor_name("model.embed_tokens.weight", 4), std::optional<std::string>("token_embd.weight"));
}

TEST(TensorNames, UnknownNamesAreNotMapped) {
  for (const char* hf : {"model.visual.blocks.0.attn.qkv.weight", "model.language_model.layers.x.mlp.up_proj.weight",
                         "model.language_model.layers.3.mlp.bogus.weight", "mtp.layers.0.bogus", "lm_head.bias", ""})
    EXPECT_EQ(gguf_tensor_name(hf, 32), std::nullopt) << hf;
  for (const char* gguf : {"v.blk.0.attn_qkv.weight", "blk.3.bogus.weight", "blk.31.nextn.eh_proj.weight", "blk..attn_q.weight"})
    EXPECT_EQ(hf_tensor_name(gguf, 32), std::nullopt) << gguf;
}

TEST(TensorNames, InventoryOf9BMatchesTheConverter) {
  const TextConfig c = config_9b();
  for (int mtp : {0, 1}) {
    const std::vector<GgufTensorShape> t = gguf_text_tensors(c, mtp);
    EXPECT_EQ(t.size(), mtp ? 442u : 427u);
    int one_dim = 0;
    std::set<std::string> names;
    for (const GgufTensorShape& s : t) {
      names.insert(s.name);
      one_dim += s.ne.size() == 1;
      // Every name maps back to an HF tensor.
      EXPECT_TRUE(hf_tensor_name(s.name, c.num_layers).has_value()) << s.name;
    }
    EXPECT_EQ(names.size(), t.size());
    // 1-D: output_norm; per DeltaNet layer two norms, ssm_dt.bias, ssm_a, ssm_norm; per attention
    // layer two norms and q/k norms; the MTP block adds its four norms and enorm/hnorm/shared_head_norm.
    EXPECT_EQ(one_dim, mtp ? 160 : 153);
  }
  // Shapes in ggml order (ne0 = HF in-features).
  const std::vector<GgufTensorShape> t = gguf_text_tensors(c, 1);
  const auto shape_of = [&](const std::string& n) {
    for (const GgufTensorShape& s : t)
      if (s.name == n) return s.ne;
    return std::vector<int64_t>{};
  };
  EXPECT_EQ(shape_of("token_embd.weight"), (std::vector<int64_t>{4096, 248320}));
  EXPECT_EQ(shape_of("blk.0.attn_qkv.weight"), (std::vector<int64_t>{4096, 8192}));
  EXPECT_EQ(shape_of("blk.0.ssm_conv1d.weight"), (std::vector<int64_t>{4, 8192}));
  EXPECT_EQ(shape_of("blk.0.ssm_alpha.weight"), (std::vector<int64_t>{4096, 32}));
  EXPECT_EQ(shape_of("blk.0.ssm_out.weight"), (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(shape_of("blk.3.attn_q.weight"), (std::vector<int64_t>{4096, 8192}));
  EXPECT_EQ(shape_of("blk.3.attn_k.weight"), (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(shape_of("blk.3.ffn_down.weight"), (std::vector<int64_t>{12288, 4096}));
  EXPECT_EQ(shape_of("blk.32.nextn.eh_proj.weight"), (std::vector<int64_t>{8192, 4096}));
}

TEST(TensorNames, LlamaQuantizeOrder) {
  // Non-layer tensors first (by name), then by layer number (10 after 9), by name within a layer.
  std::vector<GgufTensorShape> t = {{"blk.10.attn_qkv.weight", {}}, {"blk.9.ffn_up.weight", {}}, {"token_embd.weight", {}},
                                    {"blk.9.attn_norm.weight", {}}, {"output.weight", {}},       {"blk.0.ssm_a", {}},
                                    {"output_norm.weight", {}}};
  sort_like_llama_quantize(t);
  std::vector<std::string> names;
  for (const GgufTensorShape& s : t) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"output.weight", "output_norm.weight", "token_embd.weight", "blk.0.ssm_a",
                                             "blk.9.attn_norm.weight", "blk.9.ffn_up.weight", "blk.10.attn_qkv.weight"}));
  EXPECT_EQ(gguf_layer_index("blk.12.ffn_down.weight"), 12);
  EXPECT_EQ(gguf_layer_index("output.weight"), -1);
}

}  // namespace
}  // namespace qwen35
