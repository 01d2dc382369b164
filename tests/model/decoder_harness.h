// Runs the tiny model's text decoder through the library for the decoder tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/gguf_export.h"
#include "model/model.h"

namespace qwen35::test {

// The tiny model, loaded once per test binary.
const Model& tiny_model();
// The tiny mixture-of-experts model (tests/data/tiny-qwen35-moe), loaded once per test binary.
const Model& tiny_moe_model();
// A bundled model by its folder under tests/data ("tiny-qwen35", "tiny-qwen35-moe").
const Model& bundled_model(const std::string& folder);
kernels::Compute test_compute();
// Export options that write every matrix as `type` and label the file with llama.cpp's file type
// for it (F32 0, F16 1, BF16 32, else Q8_0's 7).
GgufExportOptions uniform_gguf_options(DType type);

// One MoE layer's routing decisions over the rows of a run, in the order they were fed.
struct LayerRoutes {
  std::vector<float> logits;       // [T, E] router logits
  std::vector<int32_t> ids;        // [T, k] best first
  std::vector<float> weights;      // [T, k]
  std::vector<float> shared_gate;  // [T] sigmoid values
  void append(const MoeRouting& r);
};

struct RunResult {
  std::vector<float> logits;                 // [T, V]
  std::vector<float> final_norm;             // [T, H]
  std::vector<std::vector<float>> hidden;    // per layer [T, H]
  std::vector<LayerRoutes> routes;           // per layer (MoE models)
};

// Appends a run's routes (per layer) to those of earlier runs of the same sequence.
void append_routes(std::vector<LayerRoutes>& all, const RunResult& r);

// Feeds `ids` in blocks of `block` tokens (text positions continue from state.n_past) and
// records everything. `state` may already hold earlier tokens.
RunResult run_tokens(const Model& m, const std::vector<int64_t>& ids, DecoderState& state, int64_t block,
                     DeltaRuleMode mode = DeltaRuleMode::kAuto, const kernels::Compute* compute = nullptr);

// [n_kv, T, hd] copy of a KV cache, the golden layout.
std::vector<float> kv_as_heads_major(const KvCache& kv, int n_kv, int hd, bool keys);

}  // namespace qwen35::test
