#include "qwen35/bench.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/sequence.h"

namespace qwen35 {
namespace {

std::vector<int32_t> random_ids(const EngineImpl& e, int64_t n, uint64_t& seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  const uint64_t vocab = uint64_t(e.tokenizer ? std::min<int64_t>(e.text_config().vocab_size, 150000)
                                              : e.text_config().vocab_size);
  for (int32_t& id : ids) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    id = int32_t((seed >> 33) % vocab);
  }
  return ids;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void feed_blocks(const EngineImpl& e, Sequence& seq, const std::vector<int32_t>& ids, std::vector<float>& logits) {
  const int64_t n = int64_t(ids.size());
  for (int64_t t0 = 0; t0 < n; t0 += e.options.prefill_block) {
    const int64_t k = std::min<int64_t>(e.options.prefill_block, n - t0);
    seq.feed_text(ids.data() + t0, k, DeltaRuleMode::kAuto, t0 + k == n ? 1 : 0, logits.data());
  }
}

}  // namespace

BenchRun bench_prompt(const Engine& engine, int64_t n, int64_t depth, uint64_t seed) {
  const EngineImpl& e = engine.impl();
  Sequence seq(e);
  std::vector<float> logits(size_t(e.text_config().vocab_size));
  feed_blocks(e, seq, random_ids(e, depth, seed), logits);
  const std::vector<int32_t> ids = random_ids(e, n, seed);
  BenchRun r;
  const uint64_t s0 = e.pool->sync_count();
  const double t0 = now();
  feed_blocks(e, seq, ids, logits);
  r.seconds = now() - t0;
  r.sync_points = e.pool->sync_count() - s0;
  r.tokens = n;
  return r;
}

BenchRun bench_generate(const Engine& engine, int64_t n, int64_t depth, uint64_t seed) {
  const EngineImpl& e = engine.impl();
  Sequence seq(e);
  std::vector<float> logits(size_t(e.text_config().vocab_size));
  feed_blocks(e, seq, random_ids(e, depth, seed), logits);
  const std::vector<int32_t> ids = random_ids(e, n, seed);
  BenchRun r;
  const uint64_t s0 = e.pool->sync_count();
  const double t0 = now();
  for (int64_t i = 0; i < n; ++i) seq.feed_text(&ids[size_t(i)], 1, DeltaRuleMode::kAuto, 1, logits.data());
  r.seconds = now() - t0;
  r.sync_points = e.pool->sync_count() - s0;
  r.tokens = n;
  return r;
}

double measure_read_bandwidth(int threads) {
  const size_t bytes = size_t(1) << 30;
  std::vector<uint8_t> buf(bytes, 1);  // every page touched
  const kernels::KernelTable& k = kernels::active_table();
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    std::vector<std::thread> ts;
    std::vector<uint64_t> sums(size_t(threads), 0);
    const size_t per = bytes / size_t(threads) / 256 * 256;
    const double t0 = now();
    for (int i = 0; i < threads; ++i) ts.emplace_back([&, i] { sums[size_t(i)] = k.stream_read(buf.data() + size_t(i) * per, per); });
    for (std::thread& t : ts) t.join();
    best = std::max(best, double(per) * double(threads) / (now() - t0) / 1e9);
  }
  return best;
}

void bench_set_threads(const Engine& engine, int n) { engine.impl().pool->set_limit(n); }

size_t decode_weight_bytes(const Engine& engine) {
  const TextWeights& w = engine.impl().model->text_weights();
  const size_t embed_table = w.embed.row_bytes * size_t(w.embed.rows);
  const bool tied_view = w.lm_head.data == w.embed.data;
  size_t bytes = engine.impl().model->weight_bytes();
  // The embedding is read one row per token (unless the head reads the very same bytes); the
  // vision tower not at all.
  if (!tied_view) bytes = bytes - embed_table + w.embed.row_bytes;
  return bytes - engine.impl().model->vision_weight_bytes();
}

}  // namespace qwen35
