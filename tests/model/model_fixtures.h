// Fixtures the dense and the mixture-of-experts model tests share: a bundled tiny model written
// as GGUF and loaded back, and the quantized-at-load model with its dequantized twin.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "decoder_harness.h"
#include "model/model.h"
#include "model/weight_prep.h"

namespace qwen35::test {

// A bundled tiny model ("tiny-qwen35", "tiny-qwen35-moe") written as GGUF with every matrix of
// `type`, its vision tower as an mmproj beside it when `with_mmproj`, then loaded from the file
// (which finds the mmproj); made once per test binary.
struct ConvertedGguf {
  std::string dir, text, mmproj;  // mmproj: empty when not written
  std::unique_ptr<Model> model;
};
const ConvertedGguf& converted_gguf(const std::string& folder, DType type, bool with_mmproj);

// The quantized-model tests' helpers for one bundled model folder.
struct DequantizedModel {
  std::unique_ptr<Model> model;
  WeightStore store;
};
struct QuantizedFixture {
  std::string folder;  // "tiny-qwen35", "tiny-qwen35-moe"

  // The prompt the tests run: text, special tokens and ids from all over the vocabulary.
  static const std::vector<int64_t>& ids();
  // The folder quantized at load with `weights` ("" for its own types), prepared for `table`
  // (whose packed layout only that table reads).
  std::unique_ptr<Model> load(const std::string& weights, const kernels::KernelTable& table, ThreadPool& pool) const;
  // ids() through the model in blocks of `block` tokens on `table` and `pool`.
  RunResult run(const Model& m, const kernels::KernelTable& table, ThreadPool& pool, int64_t block,
                DeltaRuleMode mode = DeltaRuleMode::kAuto) const;
  // The folder loaded with `preset` (plain rows, the ref table), its matrices then dequantized to
  // f32 in place: the quantized model's weights, run with float activations.
  std::unique_ptr<DequantizedModel> dequantized(const std::string& preset, ThreadPool& pool) const;
  // How far weight rounding alone moves this random model's logits: `preset`'s weights dequantized
  // against the folder's own. A tiny random model amplifies any perturbation (about 0.2% per
  // weight becomes ~18% of the logits' range), so differences that come from rounding elsewhere
  // are judged against this yardstick, not against a fixed number.
  double weight_rounding_divergence(const std::string& preset, ThreadPool& pool) const;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace qwen35::test
