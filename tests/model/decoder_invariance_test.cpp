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

// Continuous batching stands on this: several sequences' rows in one forward (prefill chunks,
// single decode tokens and verify blocks side by side) give every sequence the bits it gets
// alone, for every table and thread count, step after step.
TEST(DecoderInvariance, BatchedSequencesGiveTheBitsOfSoloRuns) {
  const Model& m = tiny_model();
  const TextConfig& cfg = m.config().text;
  const int64_t H = cfg.hidden_size;
  // Per step, per sequence: tokens fed and the delta rule's form (a sequence may sit a step out).
  struct Feed {
    int64_t n;
    DeltaRuleMode mode;
  };
  const std::vector<std::vector<Feed>> steps = {
      {{37, DeltaRuleMode::kAuto}, {0, DeltaRuleMode::kAuto}, {9, DeltaRuleMode::kAuto}},
      {{1, DeltaRuleMode::kAuto}, {70, DeltaRuleMode::kAuto}, {1, DeltaRuleMode::kAuto}},
      {{5, DeltaRuleMode::kRecurrent}, {1, DeltaRuleMode::kAuto}, {1, DeltaRuleMode::kAuto}},
      {{1, DeltaRuleMode::kAuto}, {4, DeltaRuleMode::kRecurrent}, {0, DeltaRuleMode::kAuto}},
  };
  const int n_seq = 3;
  std::vector<std::vector<int64_t>> ids;
  for (int q = 0; q < n_seq; ++q) ids.push_back(random_ids(m, 120, 10 + uint32_t(q)));

  // Embeddings and text positions of tokens [from, from + n) of sequence q.
  auto inputs = [&](int q, int64_t from, int64_t n, std::vector<float>& emb, std::vector<int32_t>& pos) {
    std::vector<int32_t> ids32(ids[size_t(q)].begin() + from, ids[size_t(q)].begin() + from + n);
    emb.resize(size_t(n * H));
    m.decoder().embed(ids32.data(), n, emb.data());
    pos.resize(size_t(3 * n));
    for (int a = 0; a < 3; ++a)
      for (int64_t t = 0; t < n; ++t) pos[size_t(a * n + t)] = int32_t(from + t);
  };

  ThreadPool one(1), three(3);
  for (const kernels::KernelTable* table : kernels::supported_tables())
    for (DType kv : {DType::F16}) {  // the serving default (the f32 cache's rows are as row-local)
      const std::string at = std::string(table->name) + " kv " + std::string(dtype_name(kv));
      // Solo: each sequence alone, on one thread.
      std::vector<std::vector<float>> solo(n_seq);
      std::vector<DecoderState> solo_state;
      {
        const kernels::Compute c{table, &one};
        for (int q = 0; q < n_seq; ++q) {
          solo_state.push_back(DecoderState::create(cfg, kv));
          DecoderWorkspace ws;
          int64_t fed = 0;
          for (const auto& step : steps) {
            const Feed f = step[size_t(q)];
            if (f.n == 0) continue;
            std::vector<float> emb, hidden(size_t(f.n * H));
            std::vector<int32_t> pos;
            inputs(q, fed, f.n, emb, pos);
            m.decoder().forward(c, emb.data(), pos.data(), f.n, solo_state.back(), ws, hidden.data(), f.mode);
            solo[size_t(q)].insert(solo[size_t(q)].end(), hidden.begin(), hidden.end());
            fed += f.n;
          }
        }
      }
      // Batched: all sequences of a step in one forward, on three threads.
      const kernels::Compute c{table, &three};
      std::vector<DecoderState> state;
      for (int q = 0; q < n_seq; ++q) state.push_back(DecoderState::create(cfg, kv));
      std::vector<std::vector<float>> batched(n_seq);
      std::vector<int64_t> fed(n_seq, 0);
      DecoderWorkspace ws;
      for (const auto& step : steps) {
        std::vector<DecoderSegment> segs;
        std::vector<float> emb_all;
        std::vector<std::vector<int32_t>> pos_of;
        int64_t total = 0;
        for (int q = 0; q < n_seq; ++q) {
          const Feed f = step[size_t(q)];
          segs.push_back({&state[size_t(q)], f.n, f.mode});
          std::vector<float> emb;
          std::vector<int32_t> pos;
          inputs(q, fed[size_t(q)], f.n, emb, pos);
          emb_all.insert(emb_all.end(), emb.begin(), emb.end());
          pos_of.push_back(pos);
          total += f.n;
        }
        std::vector<int32_t> pos_all(size_t(3 * total));
        for (int a = 0; a < 3; ++a) {
          int64_t row = 0;
          for (int q = 0; q < n_seq; ++q) {
            const int64_t n = step[size_t(q)].n;
            std::copy_n(pos_of[size_t(q)].begin() + a * n, n, pos_all.begin() + a * total + row);
            row += n;
          }
        }
        std::vector<float> hidden(size_t(total * H));
        m.decoder().forward_batch(c, emb_all.data(), pos_all.data(), segs, ws, hidden.data());
        int64_t row = 0;
        for (int q = 0; q < n_seq; ++q) {
          const int64_t n = step[size_t(q)].n;
          batched[size_t(q)].insert(batched[size_t(q)].end(), hidden.begin() + row * H, hidden.begin() + (row + n) * H);
          row += n;
          fed[size_t(q)] += n;
        }
      }
      for (int q = 0; q < n_seq; ++q) {
        EXPECT_TRUE(same_bits(batched[size_t(q)], solo[size_t(q)])) << at << " sequence " << q;
        EXPECT_EQ(state[size_t(q)].n_past, solo_state[size_t(q)].n_past);
        for (size_t l = 0; l < state[size_t(q)].deltanet.size(); ++l)
          EXPECT_TRUE(same_bits(state[size_t(q)].deltanet[l].recurrent, solo_state[size_t(q)].deltanet[l].recurrent))
              << at << " sequence " << q << " DeltaNet state " << l;
        for (size_t l = 0; l < state[size_t(q)].kv.size(); ++l)
          EXPECT_TRUE(same_bits(kv_as_heads_major(state[size_t(q)].kv[l], cfg.num_kv_heads, cfg.head_dim, true),
                                kv_as_heads_major(solo_state[size_t(q)].kv[l], cfg.num_kv_heads, cfg.head_dim, true)))
              << at << " sequence " << q << " keys " << l;
      }
    }
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
