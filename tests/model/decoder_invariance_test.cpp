// What prompt lookup decoding, prefix reuse and batching stand on, for every
// kernel table on the tiny model (float weights): a block run with the
// recurrent delta rule gives the bits of token-by-token decoding (attention
// rows and delta rule steps computed as for one token), and no result depends
// on the number of threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "decoder_harness.h"
#include "kernels/kernels.h"

namespace qwen35::test {
namespace {

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int64_t> random_ids(const Model &m, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(0, m.config().text.vocab_size - 1);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t &x : ids)
    x = d(rng);
  return ids;
}

RunResult run(const Model &m, const std::vector<int64_t> &ids, int64_t block,
              DeltaRuleMode mode, const kernels::KernelTable &table,
              ThreadPool &pool, DType kv = DType::F32) {
  const kernels::Compute c{&table, &pool};
  DecoderState state = DecoderState::create(m.config().text, kv);
  return run_tokens(m, ids, state, block, mode, &c);
}

TEST(DecoderInvariance,
     RecurrentBlocksGiveTheBitsOfSingleTokensOnAnyThreadCount) {
  const Model &m = tiny_model();
  const std::vector<int64_t> ids = random_ids(m, 40, 1);
  ThreadPool one(1), two(2), three(3);
  for (const kernels::KernelTable *table : kernels::supported_tables())
    for (DType kv : {DType::F32, DType::F16}) {
      const RunResult steps =
          run(m, ids, 1, DeltaRuleMode::kAuto, *table, one, kv);
      for (int64_t block : {7, 16, 40})
        for (ThreadPool *pool : {&two, &three}) {
          const RunResult blocks =
              run(m, ids, block, DeltaRuleMode::kRecurrent, *table, *pool, kv);
          const std::string at = std::string(table->name) + " kv " +
                                 std::string(dtype_name(kv)) + " block " +
                                 std::to_string(block) + " threads " +
                                 std::to_string(pool->size());
          EXPECT_TRUE(same_bits(blocks.logits, steps.logits)) << at;
          EXPECT_TRUE(same_bits(blocks.final_norm, steps.final_norm)) << at;
        }
    }
}

// The f16 cache rounds every key and value once; the logits move by about that
// rounding, far less than the distance between two different prompts' logits.
TEST(DecoderInvariance, HalfPrecisionCacheStaysCloseToTheF32Cache) {
  const Model &m = tiny_model();
  const std::vector<int64_t> ids = random_ids(m, 40, 3);
  ThreadPool two(2);
  const kernels::KernelTable &table = *kernels::supported_tables().back();
  const RunResult f32 =
      run(m, ids, 40, DeltaRuleMode::kAuto, table, two, DType::F32);
  const RunResult f16 =
      run(m, ids, 40, DeltaRuleMode::kAuto, table, two, DType::F16);
  ASSERT_EQ(f32.logits.size(), f16.logits.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < f32.logits.size(); ++i) {
    num +=
        double(f32.logits[i] - f16.logits[i]) * (f32.logits[i] - f16.logits[i]);
    den += double(f32.logits[i]) * f32.logits[i];
  }
  const double rel = std::sqrt(num / den);
  EXPECT_GT(rel, 0.0) << "the f16 cache rounded nothing";
  EXPECT_LT(rel, 2e-3) << "relative rms of the logits' difference";
}

TEST(DecoderInvariance, ChunkedPrefillDoesNotDependOnThreadCount) {
  const Model &m = tiny_model();
  const std::vector<int64_t> ids =
      random_ids(m, 150, 2); // chunks of 64 and a partial one
  ThreadPool one(1), three(3);
  for (const kernels::KernelTable *table : kernels::supported_tables())
    for (int64_t block : {150, 37}) {
      const RunResult a =
          run(m, ids, block, DeltaRuleMode::kChunked, *table, one);
      const RunResult b =
          run(m, ids, block, DeltaRuleMode::kChunked, *table, three);
      EXPECT_TRUE(same_bits(a.logits, b.logits))
          << table->name << " block " << block;
    }
}

} // namespace
} // namespace qwen35::test
