// What prompt lookup decoding, prefix reuse and batching stand on, for every
// kernel table on the tiny dense and MoE models (float weights): a block run with the
// recurrent delta rule gives the bits of token-by-token decoding (attention
// rows and delta rule steps computed as for one token), and no result depends
// on the number of threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
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

// Embeddings and text positions ([3, n]) of tokens [from, from + n) of ids.
void text_inputs(const Model& m, const std::vector<int64_t>& ids, int64_t from, int64_t n, std::vector<float>& emb,
                 std::vector<int32_t>& pos) {
  std::vector<int32_t> ids32(ids.begin() + from, ids.begin() + from + n);
  emb.resize(size_t(n * m.config().text.hidden_size));
  m.decoder().embed(ids32.data(), n, emb.data());
  pos.resize(size_t(3 * n));
  for (int a = 0; a < 3; ++a)
    for (int64_t t = 0; t < n; ++t) pos[size_t(a * n + t)] = int32_t(from + t);
}

// Every test runs on the dense and on the mixture-of-experts tiny model.
class DecoderInvariance : public ::testing::TestWithParam<std::string> {};

RunResult run(const Model &m, const std::vector<int64_t> &ids, int64_t block,
              DeltaRuleMode mode, const kernels::KernelTable &table,
              ThreadPool &pool, DType kv = DType::F32) {
  const kernels::Compute c{&table, &pool};
  DecoderState state = DecoderState::create(m.config().text, kv);
  return run_tokens(m, ids, state, block, mode, &c);
}

TEST_P(DecoderInvariance,
     RecurrentBlocksGiveTheBitsOfSingleTokensOnAnyThreadCount) {
  const Model &m = bundled_model(GetParam());
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
TEST_P(DecoderInvariance, HalfPrecisionCacheStaysCloseToTheF32Cache) {
  const Model &m = bundled_model(GetParam());
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
TEST_P(DecoderInvariance, BatchedSequencesGiveTheBitsOfSoloRuns) {
  const Model& m = bundled_model(GetParam());
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

  auto inputs = [&](int q, int64_t from, int64_t n, std::vector<float>& emb, std::vector<int32_t>& pos) {
    text_inputs(m, ids[size_t(q)], from, n, emb, pos);
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

// A block may go through the decoder a few layers per call (the server spreads a prompt block
// over several decode steps of the others): the pieces, in any row order and batched with other
// sequences' rows, give the bits and states of one pass.
TEST_P(DecoderInvariance, BlocksSplitOverLayersGiveTheBitsOfOnePass) {
  const Model& m = bundled_model(GetParam());
  const TextConfig& cfg = m.config().text;
  const int64_t H = cfg.hidden_size;
  const int L = cfg.num_layers;
  ASSERT_GE(L, 8);
  struct Piece {
    int q;
    int64_t n;  // tokens of the block (a block's pieces all give its n)
    int first, end;
  };
  const int n_seq = 3;
  const std::vector<std::vector<Piece>> steps = {
      {{0, 70, 0, 1}, {1, 1, 0, L}, {2, 20, 0, L}},
      {{1, 1, 0, L}, {0, 70, 1, 4}, {2, 9, 0, 6}},
      {{0, 70, 4, 5}, {2, 9, 6, L}, {1, 1, 0, L}},
      {{2, 1, 0, L}, {0, 70, 5, L}, {1, 1, 0, L}},
  };
  std::vector<std::vector<int64_t>> ids;
  for (int q = 0; q < n_seq; ++q) ids.push_back(random_ids(m, 80, 30 + uint32_t(q)));
  auto inputs = [&](int q, int64_t from, int64_t n, std::vector<float>& emb, std::vector<int32_t>& pos) {
    text_inputs(m, ids[size_t(q)], from, n, emb, pos);
  };
  ThreadPool one(1), three(3);
  for (const kernels::KernelTable* table : kernels::supported_tables()) {
    const std::string at(table->name);
    // Solo: each block in one pass, on one thread.
    std::vector<std::vector<float>> solo(n_seq);
    std::vector<DecoderState> solo_state;
    {
      const kernels::Compute c{table, &one};
      for (int q = 0; q < n_seq; ++q) {
        solo_state.push_back(DecoderState::create(cfg, DType::F16));
        DecoderWorkspace ws;
        int64_t fed = 0;
        for (const auto& step : steps)
          for (const Piece& p : step) {
            if (p.q != q || p.end != L) continue;
            std::vector<float> emb, hidden(size_t(p.n * H));
            std::vector<int32_t> pos;
            inputs(q, fed, p.n, emb, pos);
            m.decoder().forward(c, emb.data(), pos.data(), p.n, solo_state.back(), ws, hidden.data());
            solo[size_t(q)].insert(solo[size_t(q)].end(), hidden.begin(), hidden.end());
            fed += p.n;
          }
      }
    }
    // Pieces: each step's in one batched call, on three threads; a block's rows between its
    // pieces are the residual stream the last piece left.
    const kernels::Compute c{table, &three};
    std::vector<DecoderState> state;
    for (int q = 0; q < n_seq; ++q) state.push_back(DecoderState::create(cfg, DType::F16));
    std::vector<std::vector<float>> pieces(n_seq), rows(n_seq);
    std::vector<std::vector<int32_t>> block_pos(n_seq);
    std::vector<int64_t> fed(n_seq, 0);
    DecoderWorkspace ws;
    for (const auto& step : steps) {
      std::vector<DecoderSegment> segs;
      std::vector<float> in_all;
      int64_t total = 0;
      for (const Piece& p : step) {
        if (p.first == 0) inputs(p.q, fed[size_t(p.q)], p.n, rows[size_t(p.q)], block_pos[size_t(p.q)]);
        segs.push_back({&state[size_t(p.q)], p.n, DeltaRuleMode::kAuto, nullptr, p.first, p.end});
        in_all.insert(in_all.end(), rows[size_t(p.q)].begin(), rows[size_t(p.q)].end());
        total += p.n;
      }
      std::vector<int32_t> pos_all(size_t(3 * total));
      int64_t row = 0;
      for (const Piece& p : step) {
        for (int a = 0; a < 3; ++a)
          std::copy_n(block_pos[size_t(p.q)].begin() + a * p.n, p.n, pos_all.begin() + a * total + row);
        row += p.n;
      }
      m.decoder().forward_batch(c, in_all.data(), pos_all.data(), segs, ws, in_all.data());  // in place
      row = 0;
      for (const Piece& p : step) {
        std::copy_n(in_all.begin() + row * H, p.n * H, rows[size_t(p.q)].begin());
        if (p.end == L) {
          pieces[size_t(p.q)].insert(pieces[size_t(p.q)].end(), rows[size_t(p.q)].begin(), rows[size_t(p.q)].end());
          fed[size_t(p.q)] += p.n;
        }
        row += p.n;
      }
    }
    for (int q = 0; q < n_seq; ++q) {
      EXPECT_TRUE(same_bits(pieces[size_t(q)], solo[size_t(q)])) << at << " sequence " << q;
      EXPECT_EQ(state[size_t(q)].n_past, solo_state[size_t(q)].n_past) << at << " sequence " << q;
      for (size_t l = 0; l < state[size_t(q)].deltanet.size(); ++l) {
        EXPECT_TRUE(same_bits(state[size_t(q)].deltanet[l].recurrent, solo_state[size_t(q)].deltanet[l].recurrent))
            << at << " sequence " << q << " DeltaNet state " << l;
        EXPECT_TRUE(same_bits(state[size_t(q)].deltanet[l].conv, solo_state[size_t(q)].deltanet[l].conv))
            << at << " sequence " << q << " conv state " << l;
      }
      for (size_t l = 0; l < state[size_t(q)].kv.size(); ++l)
        for (bool keys : {true, false})
          EXPECT_TRUE(same_bits(kv_as_heads_major(state[size_t(q)].kv[l], cfg.num_kv_heads, cfg.head_dim, keys),
                                kv_as_heads_major(solo_state[size_t(q)].kv[l], cfg.num_kv_heads, cfg.head_dim, keys)))
              << at << " sequence " << q << (keys ? " keys " : " values ") << l;
    }
  }
}

TEST_P(DecoderInvariance, ALayerRangeOutsideTheDecoderIsAnError) {
  const Model& m = bundled_model(GetParam());
  const TextConfig& cfg = m.config().text;
  DecoderState state = DecoderState::create(cfg);
  DecoderWorkspace ws;
  ThreadPool one(1);
  const kernels::Compute c{kernels::supported_tables().front(), &one};
  std::vector<float> emb(size_t(cfg.hidden_size)), out(emb.size());
  const int32_t ids[1] = {1}, pos[3] = {0, 0, 0};
  m.decoder().embed(ids, 1, emb.data());
  for (auto [first, end] : {std::pair{0, 0}, std::pair{3, 2}, std::pair{0, cfg.num_layers + 1}, std::pair{-1, 2}}) {
    const DecoderSegment seg{&state, 1, DeltaRuleMode::kAuto, nullptr, first, end};
    EXPECT_THROW(m.decoder().forward_batch(c, emb.data(), pos, std::span<const DecoderSegment>(&seg, 1), ws, out.data()),
                 qwen35::Error)
        << first << ".." << end;
  }
  EXPECT_EQ(state.n_past, 0);
}

TEST_P(DecoderInvariance, ChunkedPrefillDoesNotDependOnThreadCount) {
  const Model &m = bundled_model(GetParam());
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

INSTANTIATE_TEST_SUITE_P(Models, DecoderInvariance, ::testing::Values("tiny-qwen35", "tiny-qwen35-moe"),
                         [](const auto& info) { return info.param == "tiny-qwen35" ? "dense" : "moe"; });

} // namespace
} // namespace qwen35::test
