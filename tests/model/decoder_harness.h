// Runs the tiny model's text decoder through the library for the decoder tests.
#pragma once

#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"

namespace qwen35::test {

// The tiny model, loaded once per test binary.
const Model& tiny_model();
kernels::Compute test_compute();

struct RunResult {
  std::vector<float> logits;                 // [T, V]
  std::vector<float> final_norm;             // [T, H]
  std::vector<std::vector<float>> hidden;    // per layer [T, H]
};

// Feeds `ids` in blocks of `block` tokens (text positions continue from state.n_past) and
// records everything. `state` may already hold earlier tokens.
RunResult run_tokens(const Model& m, const std::vector<int64_t>& ids, DecoderState& state, int64_t block,
                     DeltaRuleMode mode = DeltaRuleMode::kAuto, const kernels::Compute* compute = nullptr);

// [n_kv, T, hd] copy of a KV cache, the golden layout.
std::vector<float> kv_as_heads_major(const KvCache& kv, int n_kv, int hd, bool keys);

}  // namespace qwen35::test
