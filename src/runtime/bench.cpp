#include "qwen35/bench.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <exception>
#include <memory>
#include <mutex>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>

#include "core/page_buffer.h"
#include "model/text_weights.h"
#include "runtime/batch_gate.h"
#include "runtime/engine_internal.h"
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
  const EngineImpl& e = impl_of(engine);
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
  const EngineImpl& e = impl_of(engine);
  Sequence seq(e);
  std::vector<float> logits(size_t(e.text_config().vocab_size));
  feed_blocks(e, seq, random_ids(e, depth, seed), logits);
  const std::vector<int32_t> ids = random_ids(e, n, seed);
  BenchRun r;
  const uint64_t s0 = e.pool->sync_count();
  r.step_seconds.reserve(size_t(n));
  const double t0 = now();
  double last = t0;
  for (int64_t i = 0; i < n; ++i) {
    seq.feed_text(&ids[size_t(i)], 1, DeltaRuleMode::kAuto, 1, logits.data());
    const double t = now();
    r.step_seconds.push_back(t - last);
    last = t;
  }
  r.seconds = last - t0;
  r.sync_points = e.pool->sync_count() - s0;
  r.tokens = n;
  r.steps = uint64_t(n);
  return r;
}

BenchRun bench_generate_parallel(const Engine& engine, int64_t n, int64_t depth, int streams, uint64_t seed) {
  if (streams <= 1) return bench_generate(engine, n, depth, seed);
  const EngineImpl& e = impl_of(engine);
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::vector<float>> logits(size_t(streams), std::vector<float>(size_t(e.text_config().vocab_size)));
  std::vector<std::vector<int32_t>> ids;
  for (int s = 0; s < streams; ++s) {
    seqs.push_back(std::make_unique<Sequence>(e));
    feed_blocks(e, *seqs.back(), random_ids(e, depth, seed), logits[size_t(s)]);
    ids.push_back(random_ids(e, n, seed));
  }
  // The server's path: each sequence steps on a thread of its own and the gate runs their steps
  // as one batched pass.
  BatchGate gate(e);
  gate.begin_round(streams);
  std::barrier start(streams + 1);
  // Each stream clocks its own start: the waiting main thread would wake late on a busy core.
  std::vector<double> started(static_cast<size_t>(streams));
  std::vector<std::thread> ts;
  std::exception_ptr error;
  std::mutex error_mu;
  for (int s = 0; s < streams; ++s)
    ts.emplace_back([&, s] {
      const BatchGate::Participant participant(gate);
      start.arrive_and_wait();
      started[size_t(s)] = now();
      try {
        for (int64_t i = 0; i < n; ++i)
          seqs[size_t(s)]->feed_text(&ids[size_t(s)][size_t(i)], 1, DeltaRuleMode::kAuto, 1, logits[size_t(s)].data(),
                                     /*traced=*/false, &gate);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  BenchRun r;
  const uint64_t s0 = e.pool->sync_count();
  start.arrive_and_wait();
  for (std::thread& t : ts) t.join();
  r.seconds = now() - *std::min_element(started.begin(), started.end());
  if (error) std::rethrow_exception(error);
  r.sync_points = e.pool->sync_count() - s0;
  r.tokens = n * streams;
  r.steps = gate.batches();
  return r;
}

namespace {

// Bytes over the fastest of `passes` passes, in GB/s. In a pass each of `threads` threads (started
// once) runs read(i); a pass lasts from the first thread's start to the last one's end, as each
// thread clocks itself (a waiting thread that clocked the start would wake late).
template <class Read>
double best_pass_GBps(int threads, int passes, double bytes, const Read& read) {
  std::barrier sync(threads);
  std::vector<double> start(size_t(threads) * size_t(passes)), end(start.size());
  std::atomic<uint64_t> sink{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] {
      for (int pass = 0; pass < passes; ++pass) {
        sync.arrive_and_wait();
        const size_t k = size_t(pass) * size_t(threads) + size_t(i);
        start[k] = now();
        sink += read(i);
        end[k] = now();
      }
    });
  for (std::thread& t : ts) t.join();
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto first = start.begin() + pass * threads, last = end.begin() + pass * threads;
    const double seconds = *std::max_element(last, last + threads) - *std::min_element(first, first + threads);
    best = std::max(best, bytes / seconds / 1e9);
  }
  return best;
}

}  // namespace

double measure_read_bandwidth(int threads) {
  // Like the weights: huge-page advised engine memory, threads that already exist, and the best
  // of several passes.
  const size_t per = (size_t(1) << 30) / size_t(threads) / 256 * 256;
  PageBuffer buf(per * size_t(threads));
  std::memset(buf.data(), 1, buf.size());
  const kernels::KernelTable& k = kernels::active_table();
  return best_pass_GBps(threads, 6, double(buf.size()),
                        [&](int i) { return k.stream_read(buf.data() + size_t(i) * per, per); });
}

double measure_weights_read_bandwidth(const Engine& engine, int threads) {
  const std::vector<const kernels::WeightMatrix*> mats = decode_matrices(impl_of(engine).model->text_weights());
  const kernels::KernelTable& k = kernels::active_table();
  auto part = [&](const kernels::WeightMatrix* w) { return w->bytes() / size_t(threads) / 256 * 256; };
  double bytes = 0;
  for (const kernels::WeightMatrix* w : mats) bytes += double(part(w) * size_t(threads));
  return best_pass_GBps(threads, 3, bytes, [&](int i) {
    uint64_t sum = 0;
    for (const kernels::WeightMatrix* w : mats) {
      const size_t per = part(w);
      sum += k.stream_read(static_cast<const uint8_t*>(w->data) + size_t(i) * per, per);
    }
    return sum;
  });
}

size_t decode_weight_bytes(const Engine& engine) {
  const TextWeights& w = impl_of(engine).model->text_weights();
  const size_t embed_table = w.embed.row_bytes * size_t(w.embed.rows);
  const bool tied_view = w.lm_head.data == w.embed.data;
  size_t bytes = impl_of(engine).model->weight_bytes();
  // The embedding is read one row per token (unless the head reads the very same bytes); the
  // vision tower not at all.
  if (!tied_view) bytes = bytes - embed_table + w.embed.row_bytes;
  // A token reads k of a mixture-of-experts layer's E routed experts (the same number of bytes
  // whichever k: every expert of a layer has the same shapes and types).
  for (const LayerWeights& L : w.layers) {
    if (!L.is_moe()) continue;
    size_t experts = 0;
    for (int e = 0; e < L.moe.num_experts(); ++e) experts += L.moe.gate[size_t(e)].bytes() + L.moe.up[size_t(e)].bytes() + L.moe.down[size_t(e)].bytes();
    bytes -= experts - experts / size_t(L.moe.num_experts()) * size_t(L.moe.top_k);
  }
  return bytes - impl_of(engine).model->vision_weight_bytes();
}

}  // namespace qwen35
