// config.json: the tiny and the real 9B configs parse with the expected derived sizes, the
// text-only schema works, and every unsupported or invalid value gives a message naming the key.
#include "model/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json config_9b() { return json::parse(test::read_text_file(test::data_path("configs/qwen3.5-9b.json"))); }

ModelConfig parse(const json& j) { return ModelConfig::parse(j.dump(), "cfg.json"); }

// The message of the qwen35::Error that parsing `text` raises.
std::string parse_error(const std::string& text) {
  try {
    ModelConfig::parse(text, "cfg.json");
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cfg.json"));
    return e.what();
  }
  ADD_FAILURE() << "parsing did not throw: " << text.substr(0, 200);
  return "";
}

// The 9B config with one edit applied, parsed; returns the error message.
std::string error_9b(const std::function<void(json&)>& edit) {
  json j = config_9b();
  edit(j);
  return parse_error(j.dump());
}

std::vector<int> attention_layers(const TextConfig& t) {
  std::vector<int> out;
  for (int i = 0; i < t.num_layers; ++i)
    if (t.layer_kinds[size_t(i)] == LayerKind::kAttention) out.push_back(i);
  return out;
}

TEST(ConfigTest, TinyModel) {
  const ModelConfig c = ModelConfig::load(test::tiny_model_dir());
  const TextConfig& t = c.text;
  EXPECT_EQ(t.vocab_size, 248320);
  EXPECT_EQ(t.hidden_size, 64);
  EXPECT_EQ(t.intermediate_size, 128);
  EXPECT_EQ(t.num_layers, 8);
  EXPECT_EQ(attention_layers(t), (std::vector<int>{3, 7}));
  EXPECT_EQ(t.num_deltanet_layers(), 6);
  EXPECT_EQ(t.num_attention_layers(), 2);
  EXPECT_EQ(t.num_heads, 4);
  EXPECT_EQ(t.num_kv_heads, 2);
  EXPECT_EQ(t.head_dim, 64);
  EXPECT_EQ(t.rotary_dim, 16);
  EXPECT_EQ(t.mrope_section, (std::array<int, 3>{3, 3, 2}));
  EXPECT_EQ(t.conv_dim(), 2 * 2 * 32 + 4 * 32);
  EXPECT_TRUE(t.tie_word_embeddings);
  EXPECT_FLOAT_EQ(t.rms_norm_eps, 1e-6f);
  EXPECT_TRUE(c.vision.present);
  EXPECT_EQ(c.vision.depth, 2);
  EXPECT_EQ(c.vision.num_position_embeddings, 64);
  EXPECT_EQ(c.vision.out_hidden_size, 64);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{248044}));
}

json config_moe() { return json::parse(test::read_text_file(test::data_path("tiny-qwen35-moe/config.json"))); }

std::string error_moe(const std::function<void(json&)>& edit) {
  json j = config_moe();
  edit(j);
  return parse_error(j.dump());
}

TEST(ConfigTest, TinyMoeModel) {
  const ModelConfig c = ModelConfig::load(test::tiny_moe_model_dir());
  const TextConfig& t = c.text;
  EXPECT_TRUE(t.is_moe());
  EXPECT_EQ(t.num_experts, 16);
  EXPECT_EQ(t.num_experts_per_tok, 4);
  EXPECT_EQ(t.moe_intermediate_size, 32);
  EXPECT_EQ(t.shared_expert_intermediate_size, 48);
  EXPECT_EQ(t.intermediate_size, 0);
  EXPECT_EQ(t.hidden_size, 64);
  EXPECT_EQ(t.num_layers, 8);
  EXPECT_EQ(attention_layers(t), (std::vector<int>{3, 7}));
  EXPECT_EQ(t.mtp_num_hidden_layers, 1);
  EXPECT_TRUE(c.vision.present);
  EXPECT_FALSE(ModelConfig::load(test::tiny_model_dir()).text.is_moe());

  // The text-only schema of the same model.
  json text = config_moe()["text_config"];
  const ModelConfig tc = parse(text);
  EXPECT_EQ(tc.text.num_experts, 16);
  EXPECT_FALSE(tc.vision.present);
}

TEST(ConfigTest, MoeKeysAreChecked) {
  EXPECT_THAT(error_moe([](json& j) { j["text_config"].erase("num_experts"); }),
              HasSubstr("text_config.num_experts is missing"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"]["num_experts_per_tok"] = 17; }),
              HasSubstr("num_experts_per_tok (17) exceeds num_experts (16)"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"]["moe_intermediate_size"] = 0; }),
              HasSubstr("text_config.moe_intermediate_size must be positive"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"].erase("shared_expert_intermediate_size"); }),
              HasSubstr("shared_expert_intermediate_size is missing"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"]["norm_topk_prob"] = false; }),
              HasSubstr("norm_topk_prob = false is not supported"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"]["decoder_sparse_step"] = 2; }),
              HasSubstr("decoder_sparse_step must be 1"));
  EXPECT_THAT(error_moe([](json& j) { j["text_config"]["mlp_only_layers"] = json::array({0}); }),
              HasSubstr("mlp_only_layers is not empty"));
  // A dense config needs its intermediate_size; an MoE one ignores a stray one.
  EXPECT_THAT(error_9b([](json& j) { j["text_config"].erase("intermediate_size"); }),
              HasSubstr("text_config.intermediate_size is missing"));
  json j = config_moe();
  j["text_config"]["norm_topk_prob"] = true;
  EXPECT_EQ(parse(j).text.num_experts_per_tok, 4);
}

TEST(ConfigTest, Real9B) {
  const std::string path = test::data_path("configs/qwen3.5-9b.json");
  const ModelConfig c = ModelConfig::parse(test::read_text_file(path), path);
  const TextConfig& t = c.text;
  EXPECT_EQ(t.vocab_size, 248320);
  EXPECT_EQ(t.hidden_size, 4096);
  EXPECT_EQ(t.intermediate_size, 12288);
  EXPECT_EQ(t.num_layers, 32);
  EXPECT_EQ(attention_layers(t), (std::vector<int>{3, 7, 11, 15, 19, 23, 27, 31}));
  EXPECT_EQ(t.num_deltanet_layers(), 24);
  EXPECT_EQ(t.max_position_embeddings, 262144);
  EXPECT_EQ(t.num_heads, 16);
  EXPECT_EQ(t.num_kv_heads, 4);
  EXPECT_EQ(t.head_dim, 256);
  EXPECT_TRUE(t.attn_output_gate);
  EXPECT_EQ(t.rotary_dim, 64);
  EXPECT_DOUBLE_EQ(t.rope_theta, 1e7);
  EXPECT_EQ(t.mrope_section, (std::array<int, 3>{11, 11, 10}));
  EXPECT_EQ(t.conv_kernel, 4);
  EXPECT_EQ(t.linear_key_heads, 16);
  EXPECT_EQ(t.linear_value_heads, 32);
  EXPECT_EQ(t.linear_key_dim, 128);
  EXPECT_EQ(t.linear_value_dim, 128);
  EXPECT_EQ(t.conv_dim(), 8192);
  EXPECT_EQ(t.deltanet_value_size(), 4096);
  EXPECT_FALSE(t.tie_word_embeddings);
  const VisionConfig& v = c.vision;
  EXPECT_TRUE(v.present);
  EXPECT_EQ(v.depth, 27);
  EXPECT_EQ(v.hidden_size, 1152);
  EXPECT_EQ(v.num_heads, 16);
  EXPECT_EQ(v.intermediate_size, 4304);
  EXPECT_EQ(v.patch_size, 16);
  EXPECT_EQ(v.temporal_patch_size, 2);
  EXPECT_EQ(v.spatial_merge_size, 2);
  EXPECT_EQ(v.num_position_embeddings, 2304);
  EXPECT_EQ(v.out_hidden_size, 4096);
  EXPECT_EQ(c.image_token_id, 248056);
  EXPECT_EQ(c.video_token_id, 248057);
  EXPECT_EQ(c.vision_start_token_id, 248053);
  EXPECT_EQ(c.vision_end_token_id, 248054);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{248044}));
}

TEST(ConfigTest, DefaultsMatchTheShippedValues) {
  // Without layer_types, partial_rotary_factor and mrope_section the HF defaults give the same model.
  json j = config_9b();
  j["text_config"].erase("layer_types");
  j["text_config"].erase("partial_rotary_factor");
  j["text_config"]["rope_parameters"].erase("partial_rotary_factor");
  j["text_config"]["rope_parameters"].erase("mrope_section");
  const TextConfig t = parse(j).text;
  EXPECT_EQ(attention_layers(t), (std::vector<int>{3, 7, 11, 15, 19, 23, 27, 31}));
  EXPECT_EQ(t.rotary_dim, 64);
  EXPECT_EQ(t.mrope_section, (std::array<int, 3>{11, 11, 10}));
  j["text_config"]["full_attention_interval"] = 8;
  EXPECT_EQ(attention_layers(parse(j).text), (std::vector<int>{7, 15, 23, 31}));
  // The older flat rope keys.
  j["text_config"].erase("rope_parameters");
  j["text_config"]["rope_theta"] = 5e6;
  EXPECT_DOUBLE_EQ(parse(j).text.rope_theta, 5e6);
}

TEST(ConfigTest, TextOnlySchema) {
  json j = config_9b()["text_config"];
  j["tie_word_embeddings"] = true;
  const ModelConfig c = parse(j);
  EXPECT_FALSE(c.vision.present);
  EXPECT_EQ(c.text.num_layers, 32);
  EXPECT_EQ(c.text.conv_dim(), 8192);
  EXPECT_EQ(c.text.rotary_dim, 64);
  EXPECT_TRUE(c.text.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{248044}));
  j["model_type"] = "qwen3_next";
  EXPECT_THAT(parse_error(j.dump()),
              HasSubstr("model_type 'qwen3_next' is not supported (expected 'qwen3_5', 'qwen3_5_moe', 'qwen3_5_text'"));
}

TEST(ConfigTest, NotJsonOrNotAnObject) {
  EXPECT_THAT(parse_error("{\"model_type\": "), HasSubstr("cfg.json: not valid JSON"));
  EXPECT_THAT(parse_error(""), HasSubstr("not valid JSON"));
  EXPECT_THAT(parse_error("[1, 2]"), HasSubstr("cfg.json: expected a JSON object"));
  const std::string dir = test::temp_dir("config");
  try {
    ModelConfig::load(dir + "/nope");
    ADD_FAILURE() << "loading a missing folder did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("nope/config.json"));
  }
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, UnsupportedModelType) {
  EXPECT_THAT(error_9b([](json& j) { j["model_type"] = "qwen3_vl"; }),
              HasSubstr("model_type 'qwen3_vl' is not supported (expected 'qwen3_5' or 'qwen3_5_moe')"));
  EXPECT_THAT(error_9b([](json& j) { j.erase("model_type"); }), HasSubstr("model_type '' is not supported"));
  EXPECT_THAT(error_9b([](json& j) { j["model_type"] = 35; }), HasSubstr("cfg.json.model_type has the wrong type (35)"));
  EXPECT_THAT(error_9b([](json& j) { j.erase("text_config"); }), HasSubstr("cfg.json: text_config is missing or not an object"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"] = "x"; }), HasSubstr("text_config is missing or not an object"));
}

TEST(ConfigTest, UnsupportedTextValues) {
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["hidden_act"] = "gelu"; }),
              HasSubstr("cfg.json: text_config.hidden_act 'gelu' is not supported (Qwen3.5 uses 'silu')"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["attention_bias"] = true; }),
              HasSubstr("text_config.attention_bias = true is not supported"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["rope_type"] = "yarn"; }),
              HasSubstr("text_config.rope_parameters.rope_type 'yarn' is not supported (expected 'default')"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_interleaved"] = false; }),
              HasSubstr("mrope_interleaved = false is not supported"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"] = 1; }),
              HasSubstr("text_config.rope_parameters must be an object"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["linear_conv_kernel_dim"] = 17; }),
              HasSubstr("linear_conv_kernel_dim 17 is larger than the supported 16"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rms_norm_eps"] = 0; }),
              HasSubstr("text_config.rms_norm_eps must be positive, got 0"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["rope_theta"] = -1; }),
              HasSubstr("rope_theta must be positive, got -1"));
}

TEST(ConfigTest, LayerTypes) {
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["layer_types"].erase(0); }),
              HasSubstr("text_config.layer_types has 31 entries but num_hidden_layers is 32"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["num_hidden_layers"] = 33; }),
              HasSubstr("layer_types has 32 entries but num_hidden_layers is 33"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["layer_types"][5] = "sliding_attention"; }),
              HasSubstr("text_config.layer_types: unknown layer type 'sliding_attention' (expected linear_attention or full_attention)"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["layer_types"][5] = 1; }), HasSubstr("unknown layer type '1'"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["layer_types"] = "full_attention"; }),
              HasSubstr("text_config.layer_types must be an array"));
}

TEST(ConfigTest, HeadCountsAndRotaryDims) {
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["num_key_value_heads"] = 3; }),
              HasSubstr("num_attention_heads (16) must be a multiple of num_key_value_heads (3)"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["linear_num_value_heads"] = 24; }),
              HasSubstr("linear_num_value_heads (24) must be a multiple of linear_num_key_heads (16)"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["partial_rotary_factor"] = 0.3; }),
              HasSubstr("partial_rotary_factor 0.3 * head_dim 256 must give an even number of rotary dims"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["partial_rotary_factor"] = 1.5; }),
              HasSubstr("must give an even number of rotary dims"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_section"] = {11, 11, 11}; }),
              HasSubstr("text_config.rope_parameters.mrope_section sums to 33 but the rotary dims need 32 slots"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_section"] = {16, 16}; }),
              HasSubstr("mrope_section must have 3 entries, got [16,16]"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_section"] = {-1, 22, 11}; }),
              HasSubstr("mrope_section has a bad entry [-1,22,11]"));
  EXPECT_THAT(error_9b([](json& j) {
                j["text_config"].erase("head_dim");
                j["text_config"]["hidden_size"] = 8;
              }),
              HasSubstr("head_dim 0 (hidden_size / num_attention_heads when absent) must be in [1, 1048576]"));
  // 2^32 + 11 must not wrap to 11.
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_section"] = {4294967307ll, 11, 10}; }),
              HasSubstr("mrope_section has a bad entry"));
}

TEST(ConfigTest, MissingKeysAndWrongTypes) {
  EXPECT_THAT(error_9b([](json& j) { j["text_config"].erase("hidden_size"); }),
              HasSubstr("cfg.json: text_config.hidden_size is missing"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"].erase("linear_key_head_dim"); }),
              HasSubstr("text_config.linear_key_head_dim is missing"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["vocab_size"] = nullptr; }),
              HasSubstr("text_config.vocab_size is missing"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["hidden_size"] = "4096"; }),
              HasSubstr("text_config.hidden_size has the wrong type (\"4096\")"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["hidden_size"] = 4096.5; }),
              HasSubstr("text_config.hidden_size has the wrong type (4096.5)"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["attention_bias"] = "no"; }),
              HasSubstr("text_config.attention_bias has the wrong type"));
  EXPECT_THAT(error_9b([](json& j) { j["tie_word_embeddings"] = 0; }),
              HasSubstr("cfg.json.tie_word_embeddings has the wrong type (0)"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["rope_parameters"]["mrope_interleaved"] = "yes"; }),
              HasSubstr("rope_parameters.mrope_interleaved has the wrong type"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["hidden_size"] = -4096; }),
              HasSubstr("text_config.hidden_size must be positive, got -4096"));
  EXPECT_THAT(error_9b([](json& j) { j["text_config"]["num_attention_heads"] = 0; }),
              HasSubstr("text_config.num_attention_heads must be positive, got 0"));
}

TEST(ConfigTest, CountsTooLargeForTheirTypeAreRejected) {
  // Each of these once wrapped when narrowed to int: to 0 (a division by zero) or to a valid value.
  for (const char* key : {"num_attention_heads", "num_key_value_heads", "num_hidden_layers", "head_dim",
                          "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                          "linear_conv_kernel_dim", "full_attention_interval"}) {
    for (int64_t v : {int64_t(1) << 32, (int64_t(1) << 32) + 32}) {
      EXPECT_THAT(error_9b([&](json& j) {
                    j["text_config"][key] = v;
                    if (std::string(key) == "full_attention_interval") j["text_config"].erase("layer_types");
                  }),
                  HasSubstr(std::string("text_config.") + key + " = " + std::to_string(v) + " is too large"))
          << key;
    }
  }
  for (const char* key : {"depth", "num_heads", "patch_size", "spatial_merge_size", "num_position_embeddings"}) {
    EXPECT_THAT(error_9b([&](json& j) { j["vision_config"][key] = int64_t(1) << 32; }),
                HasSubstr(std::string("vision_config.") + key + " = 4294967296 is too large"))
        << key;
  }
}

TEST(ConfigTest, VisionValues) {
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"]["num_position_embeddings"] = 2305; }),
              HasSubstr("cfg.json: vision_config.num_position_embeddings (2305) must be a square"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"]["deepstack_visual_indexes"] = {8, 16, 24}; }),
              HasSubstr("vision_config.deepstack_visual_indexes is not empty: DeepStack is not part of Qwen3.5"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"]["hidden_act"] = "gelu"; }),
              HasSubstr("vision_config.hidden_act 'gelu' is not supported (expected gelu_pytorch_tanh)"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"]["num_heads"] = 7; }),
              HasSubstr("vision_config: hidden_size must be a multiple of num_heads"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"]["out_hidden_size"] = 2048; }),
              HasSubstr("vision_config.out_hidden_size (2048) must equal text hidden_size (4096)"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"].erase("depth"); }), HasSubstr("vision_config.depth is missing"));
  EXPECT_THAT(error_9b([](json& j) { j["vision_config"] = {1, 2}; }), HasSubstr("cfg.json: vision_config must be an object"));
  // An empty deepstack list is what the real config has; null means absent.
  json j = config_9b();
  j["vision_config"]["deepstack_visual_indexes"] = nullptr;
  EXPECT_TRUE(parse(j).vision.present);
  j.erase("vision_config");
  EXPECT_FALSE(parse(j).vision.present);
}

}  // namespace
}  // namespace qwen35
