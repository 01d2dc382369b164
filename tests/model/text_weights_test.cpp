// Binding the text decoder's weights: the tiny model loads (tied, untied, sharded, "model."
// prefix), and a checkpoint with a missing, misshapen or mistyped tensor gives a qwen35::Error
// naming the tensor with expected vs got.
#include "model/text_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using json = nlohmann::json;

const std::string kP = "model.language_model.";

// Decides what goes into the copy for one tiny-model tensor: add it as is, changed, or not at all.
using TensorEdit = std::function<void(SafetensorsWriter& w, const std::string& name, const TensorView& v)>;

void keep(SafetensorsWriter& w, const std::string& name, const TensorView& v) {
  w.add(name, v.dtype, v.shape, v.data, v.nbytes);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

json tiny_config() { return json::parse(test::read_text_file(test::tiny_model_dir() + "/config.json")); }

void set_tied(json& config, bool tied) {
  config["tie_word_embeddings"] = tied;
  config["text_config"]["tie_word_embeddings"] = tied;
}

class TextWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("text-weights"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes config.json and model.safetensors into dir_: every tiny-model tensor passed through
  // `edit`, then whatever `extra` adds.
  void write_copy(const json& config, const TensorEdit& edit = keep,
                  const std::function<void(SafetensorsWriter&)>& extra = {}) {
    write_text(dir_ + "/config.json", config.dump(2));
    SafetensorsWriter w;
    for (const auto& [name, view] : tiny().tensors()) edit(w, name, view);
    if (extra) extra(w);
    w.write(dir_ + "/model.safetensors");
  }

  // The message of the qwen35::Error that Model::load(dir_) raises.
  std::string load_error() {
    try {
      Model::load(dir_);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "Model::load did not throw";
    return "";
  }

  static const SafetensorsFile& tiny() {
    static const SafetensorsFile file(test::tiny_model_dir() + "/model.safetensors");
    return file;
  }

  std::string dir_;
};

TEST_F(TextWeightsTest, TinyModelBindsEveryLayer) {
  auto model = Model::load(test::tiny_model_dir());
  const TextConfig& c = model->config().text;
  const TextWeights& w = model->text_weights();
  const Checkpoint& ck = model->checkpoint();
  ASSERT_EQ(w.layers.size(), 8u);
  EXPECT_EQ(w.embed.rows, 248320);
  EXPECT_EQ(w.embed.cols, 64);
  EXPECT_EQ(w.embed.dtype, DType::BF16);
  EXPECT_EQ(w.embed.data, ck.get(kP + "embed_tokens.weight").data);
  // Tied: the head is the embedding itself, not a copy.
  EXPECT_EQ(w.lm_head.data, w.embed.data);
  EXPECT_EQ(w.lm_head.rows, w.embed.rows);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w.layers[size_t(i)].kind, c.layer_kinds[size_t(i)]) << i;
  EXPECT_EQ(w.layers[3].kind, LayerKind::kAttention);

  // Norms are stored as w and applied as (1 + w); the DeltaNet gated norm is a plain multiplier;
  // A_log (F32 in the checkpoint) becomes -exp(A_log).
  const std::vector<float> final_norm = to_f32(ck.get(kP + "norm.weight"));
  ASSERT_EQ(w.final_norm.size(), 64u);
  EXPECT_FLOAT_EQ(w.final_norm[5], 1.0f + final_norm[5]);
  const DeltaNetWeights& d = w.layers[0].deltanet;
  const TensorView& a_log = ck.get(kP + "layers.0.linear_attn.A_log");
  EXPECT_EQ(a_log.dtype, DType::F32);
  ASSERT_EQ(d.neg_a.size(), 4u);
  EXPECT_FLOAT_EQ(d.neg_a[1], -std::exp(a_log.as<float>()[1]));
  EXPECT_EQ(d.norm, to_f32(ck.get(kP + "layers.0.linear_attn.norm.weight")));
  EXPECT_EQ(d.in_qkv.rows, c.conv_dim());
  EXPECT_EQ(d.conv.size(), size_t(c.conv_dim() * c.conv_kernel));
  const AttentionWeights& a = w.layers[3].attention;
  EXPECT_EQ(a.q.rows, 4 * 64 * 2);  // query and gate per head
  EXPECT_EQ(a.k.rows, 2 * 64);
  EXPECT_EQ(a.o.cols, 4 * 64);
}

TEST_F(TextWeightsTest, UntiedHeadIsBoundSeparately) {
  json config = tiny_config();
  set_tied(config, false);
  const TensorView& embed = tiny().get(kP + "embed_tokens.weight");
  std::vector<uint8_t> head(embed.nbytes);
  for (size_t i = 0; i < head.size(); ++i) head[i] = uint8_t(i * 13);
  write_copy(config, keep, [&](SafetensorsWriter& w) {
    w.add("lm_head.weight", DType::BF16, embed.shape, head.data(), head.size());
  });
  auto model = Model::load(dir_);
  const TextWeights& w = model->text_weights();
  EXPECT_FALSE(model->config().text.tie_word_embeddings);
  EXPECT_NE(w.lm_head.data, w.embed.data);
  EXPECT_EQ(w.lm_head.data, model->checkpoint().get("lm_head.weight").data);
  EXPECT_EQ(w.lm_head.rows, 248320);
  EXPECT_EQ(w.lm_head.cols, 64);
  EXPECT_EQ(std::memcmp(w.lm_head.data, head.data(), head.size()), 0);
}

TEST_F(TextWeightsTest, UntiedWithoutLmHead) {
  json config = tiny_config();
  set_tied(config, false);
  write_copy(config);
  EXPECT_THAT(load_error(), HasSubstr("tie_word_embeddings is false but the checkpoint has no lm_head.weight"));
}

TEST_F(TextWeightsTest, LmHeadWithTheWrongShape) {
  json config = tiny_config();
  set_tied(config, false);
  std::vector<uint8_t> head(size_t(248320) * 32 * 2);
  write_copy(config, keep, [&](SafetensorsWriter& w) {
    w.add("lm_head.weight", DType::BF16, Shape{248320, 32}, head.data(), head.size());
  });
  EXPECT_THAT(load_error(), HasSubstr("tensor 'lm_head.weight': expected shape [248320, 64], got [248320, 32]"));
}

TEST_F(TextWeightsTest, MissingTensor) {
  const std::string gone = kP + "layers.3.self_attn.k_proj.weight";
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name != gone) keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("missing tensor '" + gone + "'"));
}

TEST_F(TextWeightsTest, MissingEmbedding) {
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name.find("embed_tokens") == std::string::npos) keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("checkpoint has no embedding table (looked for "
                                      "model.language_model.embed_tokens.weight and model.embed_tokens.weight)"));
}

TEST_F(TextWeightsTest, WrongShape) {
  const std::string gate = kP + "layers.0.mlp.gate_proj.weight";
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name == gate) w.add(name, v.dtype, Shape{64, 128}, v.data, v.nbytes);  // transposed
    else keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("tensor '" + gate + "': expected shape [128, 64], got [64, 128]"));

  const std::string conv = kP + "layers.1.linear_attn.conv1d.weight";
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name == conv) w.add(name, v.dtype, Shape{256, 4}, v.data, v.nbytes);  // channel dim dropped
    else keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("tensor '" + conv + "': expected shape [256, 1, 4], got [256, 4]"));
}

TEST_F(TextWeightsTest, WrongDtype) {
  const std::string norm = kP + "layers.1.input_layernorm.weight";
  const std::vector<int64_t> zeros(size_t(128) * 64, 0);
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name == norm) w.add_i64(name, v.shape, zeros.data());
    else keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("tensor '" + norm + "': expected dtype F32, F16 or BF16, got I64"));

  const std::string up = kP + "layers.2.mlp.up_proj.weight";
  write_copy(tiny_config(), [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name == up) w.add_i64(name, v.shape, zeros.data());
    else keep(w, name, v);
  });
  EXPECT_THAT(load_error(), HasSubstr("tensor '" + up + "': expected dtype F32, F16 or BF16, got I64"));
}

TEST_F(TextWeightsTest, ConfigThatDisagreesWithTheTensors) {
  json config = tiny_config();
  config["text_config"]["intermediate_size"] = 96;
  write_copy(config);
  EXPECT_THAT(load_error(), HasSubstr("tensor '" + kP + "layers.0.mlp.gate_proj.weight': expected shape [96, 64], got [128, 64]"));
}

TEST_F(TextWeightsTest, ShardedCopyLoadsTheSameWeights) {
  write_text(dir_ + "/config.json", tiny_config().dump(2));
  SafetensorsWriter shards[2];
  json weight_map = json::object();
  int i = 0;
  for (const auto& [name, view] : tiny().tensors()) {
    const int s = i++ % 2;
    keep(shards[s], name, view);
    weight_map[name] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
  }
  shards[0].write(dir_ + "/model-00001-of-00002.safetensors");
  shards[1].write(dir_ + "/model-00002-of-00002.safetensors");
  write_text(dir_ + "/model.safetensors.index.json", json{{"weight_map", weight_map}}.dump());

  auto sharded = Model::load(dir_);
  auto single = Model::load(test::tiny_model_dir());
  const TextWeights& a = sharded->text_weights();
  const TextWeights& b = single->text_weights();
  EXPECT_EQ(std::memcmp(a.embed.data, b.embed.data, size_t(b.embed.rows) * b.embed.row_bytes), 0);
  const WeightMatrix& qa = a.layers[7].attention.q;
  const WeightMatrix& qb = b.layers[7].attention.q;
  EXPECT_EQ(std::memcmp(qa.data, qb.data, size_t(qb.rows) * qb.row_bytes), 0);
  EXPECT_EQ(a.layers[4].deltanet.neg_a, b.layers[4].deltanet.neg_a);
  EXPECT_EQ(a.final_norm, b.final_norm);
}

TEST_F(TextWeightsTest, TextOnlyCheckpointWithModelPrefix) {
  // A text-only export: config.json in the qwen3_5_text schema and tensors under "model.".
  json config = tiny_config()["text_config"];
  write_copy(config, [&](SafetensorsWriter& w, const std::string& name, const TensorView& v) {
    if (name.rfind(kP, 0) == 0) keep(w, "model." + name.substr(kP.size()), v);
  });
  auto model = Model::load(dir_);
  EXPECT_FALSE(model->config().vision.present);
  EXPECT_EQ(model->text_weights().layers.size(), 8u);
  EXPECT_EQ(model->text_weights().embed.data, model->checkpoint().get("model.embed_tokens.weight").data);
}

}  // namespace
}  // namespace qwen35
