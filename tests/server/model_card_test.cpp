// /v1/models' "meta" for a GGUF model: the file's format, type and size.
#include "server/openai/response.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_data.h"

namespace qwen35::server {
namespace {

TEST(ModelCard, GgufModelShowsItsFileTypeAndSize) {
  EngineOptions o;
  o.model_dir = test::data_path("gguf/llama-quantize/small-h64-Q4_K_M.gguf");
  o.threads = 1;
  Status st;
  auto engine = Engine::load(o, &st);
  ASSERT_TRUE(engine) << st.message;
  const ModelInfo& info = engine->info();
  EXPECT_EQ(info.name, "small-h64-Q4_K_M");
  const nlohmann::json m = model_meta(info);
  EXPECT_EQ(m["format"], "gguf");
  EXPECT_EQ(m["file_type"], "Q4_K_M");
  EXPECT_EQ(m["file_bytes"].get<uint64_t>(), std::filesystem::file_size(o.model_dir));
  EXPECT_GT(m["weight_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(m["has_vision"], false);
  EXPECT_EQ(m["has_mtp"], false);
  EXPECT_EQ(m["vocab_size"], 1024);
  EXPECT_TRUE(info.warnings.empty()) << info.warnings[0];  // the official template came with the file
}

TEST(ModelCard, FolderModelShowsSafetensors) {
  EngineOptions o;
  o.model_dir = test::tiny_model_dir();
  o.threads = 1;
  Status st;
  auto engine = Engine::load(o, &st);
  ASSERT_TRUE(engine) << st.message;
  const nlohmann::json m = model_meta(engine->info());
  EXPECT_EQ(m["format"], "safetensors");
  EXPECT_EQ(m["file_type"], "BF16");
  EXPECT_EQ(m["has_vision"], true);
  EXPECT_EQ(m["has_mtp"], true);  // mtp.* tensors in the folder
}

}  // namespace
}  // namespace qwen35::server
