// Speed measurement of an Engine, llama-bench style: prompt processing and token generation on
// random token ids, below the chat layer (no template, no sampling, no stop). For `qwen35 bench`.
#pragma once

#include <cstdint>
#include <vector>

#include "qwen35/engine.h"

namespace qwen35 {

struct BenchRun {
  double seconds = 0;       // wall time of the measured part
  int64_t tokens = 0;       // tokens processed in it
  uint64_t sync_points = 0; // parallel loops that used more than one thread
  uint64_t steps = 0;       // model passes (batched ones count once)
  // One stream's decode: the wall time of each step. On a shared host a few steps run at half
  // speed beside another tenant's traffic; the fastest steps show what the code does undisturbed.
  std::vector<double> step_seconds;
};

// Processes `depth` random tokens (not timed), then `n` more in prefill blocks (timed), with the
// logits of the last one, as llama-bench's pp test does.
BenchRun bench_prompt(const Engine& engine, int64_t n, int64_t depth, uint64_t seed);
// Processes `depth` random tokens (not timed), then `n` single-token steps with full logits
// (timed), as llama-bench's tg test does.
BenchRun bench_generate(const Engine& engine, int64_t n, int64_t depth, uint64_t seed);

// The same for `streams` sequences decoding at once, as the server batches conversations: each
// makes n steps, every step of all of them one batched pass (tokens: n * streams).
BenchRun bench_generate_parallel(const Engine& engine, int64_t n, int64_t depth, int streams, uint64_t seed);

// The machine's read bandwidth in GB/s with `threads` threads streaming a buffer much larger than
// the caches (best of a few passes), read with the engine's kernels.
double measure_read_bandwidth(int threads);

// A plain read of the weights one decode step streams, each matrix in equal parts for `threads`
// threads (best of three passes), in GB/s: what the memory they sit in gives a loop that only
// loads, the ceiling of a decode on this run's pages.
double measure_weights_read_bandwidth(const Engine& engine, int threads);

// Bytes of weights one decode step reads: every matrix, the embedding only for one row.
size_t decode_weight_bytes(const Engine& engine);

}  // namespace qwen35
