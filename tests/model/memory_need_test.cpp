// What a GGUF model needs in memory before it is loaded (model/memory_need): the tiny MoE file's
// weights with every expert, its caches from the engine's own state layout, and serve's verdict
// against a machine's memory: the need said, a context that fits offered, too small a machine for
// the weights told to use a smaller type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "decoder_harness.h"
#include "io/gguf.h"
#include "model/memory_need.h"
#include "model_fixtures.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

using ::testing::HasSubstr;

const std::string& tiny_moe_gguf() { return converted_gguf("tiny-qwen35-moe", DType::BF16, false).text; }

TEST(MemoryNeed, CountsEveryExpertAndTheCaches) {
  const TextConfig& cfg = tiny_moe_model().config().text;
  const MemoryNeed n = gguf_memory_need(tiny_moe_gguf(), 0, DType::F16);
  const std::unique_ptr<GgufFile> f = GgufFile::open(tiny_moe_gguf());
  EXPECT_EQ(n.weights, f->tensor_bytes());
  // Every expert of every layer (and the MTP block's): 3 matrices of I x H BF16 values each.
  const uint64_t experts = uint64_t(cfg.num_layers + 1) * uint64_t(cfg.num_experts) * 3 *
                           uint64_t(cfg.moe_intermediate_size * cfg.hidden_size) * 2;
  EXPECT_GT(n.weights, experts);
  EXPECT_EQ(n.experts, 16);
  EXPECT_EQ(n.layers, 8);
  EXPECT_EQ(n.context, std::min<int64_t>(cfg.max_position_embeddings, 32768));
  // A key and a value row of F16 per attention layer and token.
  EXPECT_EQ(n.per_token, uint64_t(cfg.num_attention_layers()) * 2 * uint64_t(cfg.num_kv_heads * cfg.head_dim) * 2);
  const uint64_t deltanet =
      uint64_t(cfg.num_deltanet_layers()) *
      uint64_t(cfg.conv_dim() * cfg.conv_kernel + int64_t(cfg.linear_value_heads) * cfg.linear_key_dim * cfg.linear_value_dim) * 4;
  EXPECT_EQ(n.state, deltanet);
  EXPECT_EQ(n.total(), n.weights + n.state + n.per_token * uint64_t(n.context));
  const MemoryNeed f32 = gguf_memory_need(tiny_moe_gguf(), 4096, DType::F32);
  EXPECT_EQ(f32.context, 4096);
  EXPECT_EQ(f32.per_token, 2 * n.per_token);
}

TEST(MemoryNeed, TheVerdictSaysTheNeedAndWhatToDo) {
  MemoryNeed n;
  n.name = "big-moe.gguf";
  n.weights = uint64_t(20) << 30;
  n.state = uint64_t(60) << 20;
  n.per_token = 20480;
  n.context = 32768;
  n.layers = 40;
  n.experts = 256;
  const uint64_t gib = uint64_t(1) << 30;

  MemoryVerdict v = memory_verdict(n, 24 * gib, 1);
  EXPECT_TRUE(v.fits) << v.message;
  EXPECT_THAT(v.message, HasSubstr("big-moe.gguf needs about 20.7 GiB of memory: 20.0 GiB of weights (all 256 experts "
                                   "of each of its 40 layers"));
  EXPECT_THAT(v.message, HasSubstr("0.7 GiB of caches for a 32768-token context; this process can use 24.0 GiB."));
  v = memory_verdict(n, 24 * gib, 8);
  EXPECT_TRUE(v.fits);
  EXPECT_THAT(v.message, HasSubstr("8 parallel conversations at the full context would need 25.5 GiB"));

  // Weights fit, the context does not: a --ctx that fits, in whole thousands.
  n.context = 262144;
  v = memory_verdict(n, 24 * gib, 1);
  EXPECT_FALSE(v.fits);
  EXPECT_THAT(v.message, HasSubstr("too little for that context: use --ctx "));
  const int64_t ctx = std::stoll(v.message.substr(v.message.find("--ctx ") + 6));
  EXPECT_EQ(ctx % 1024, 0);
  MemoryNeed at = n;
  at.context = ctx;
  EXPECT_TRUE(memory_verdict(at, 24 * gib, 1).fits);
  at.context = ctx + 1024;
  EXPECT_FALSE(memory_verdict(at, 24 * gib, 1).fits);

  // The weights alone do not fit.
  v = memory_verdict(n, 16 * gib, 1);
  EXPECT_FALSE(v.fits);
  EXPECT_THAT(v.message, HasSubstr("too little for its weights: use a smaller quantization"));

  // A dense model says no experts; an unknown memory refuses nothing.
  n.experts = 0;
  v = memory_verdict(n, 0, 1);
  EXPECT_TRUE(v.fits);
  EXPECT_THAT(v.message, ::testing::Not(HasSubstr("experts")));
  EXPECT_GT(usable_memory_bytes(), uint64_t(0));
}

}  // namespace
}  // namespace qwen35::test
