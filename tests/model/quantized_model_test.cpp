// The tiny model quantized at load (--weights): every kernel table gives the same logits bit for
// bit, a block of tokens equals token-by-token decoding bit for bit (what prompt lookup and prefix
// reuse stand on), and the quantized model tracks a run of its own dequantized weights in f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "decoder_harness.h"
#include "kernels/compute.h"
#include "model/model.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

const std::vector<int64_t> kIds = {9707, 11, 1879, 0, 248045, 872, 198, 9419, 1052, 30, 77, 4321, 17, 5, 248046,
                                   198, 3, 1000, 20000, 248068, 45, 46, 47};

std::unique_ptr<Model> load(const std::string& weights, const kernels::KernelTable& table, ThreadPool& pool) {
  ModelLoadOptions o;
  o.weights = weights;
  o.table = &table;
  o.pool = &pool;
  return Model::load(test::tiny_model_dir(), o);
}

test::RunResult run(const Model& m, const kernels::KernelTable& table, ThreadPool& pool, int64_t block,
                    DeltaRuleMode mode = DeltaRuleMode::kAuto) {
  const kernels::Compute c{&table, &pool};
  DecoderState state = DecoderState::create(m.config().text);
  return test::run_tokens(m, kIds, state, block, mode, &c);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const char* const kPresets[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"};

TEST(QuantizedModel, EveryTableGivesTheSameLogits) {
  ThreadPool pool(2);
  for (const char* preset : kPresets) {
    std::unique_ptr<Model> ref_model = load(preset, kernels::ref_table(), pool);
    const std::vector<float> want = run(*ref_model, kernels::ref_table(), pool, 7).logits;
    for (const kernels::KernelTable* table : kernels::supported_tables()) {
      std::unique_ptr<Model> m = load(preset, *table, pool);
      EXPECT_TRUE(same_bits(run(*m, *table, pool, 7).logits, want)) << preset << " on " << table->name;
    }
  }
}

TEST(QuantizedModel, ABlockEqualsTokenByTokenDecoding) {
  ThreadPool pool(2), one(1);
  const kernels::KernelTable& table = kernels::active_table();
  for (const char* preset : kPresets) {
    std::unique_ptr<Model> m = load(preset, table, pool);
    const test::RunResult steps = run(*m, table, one, 1);
    // The recurrent delta rule over a whole block is what verification runs; every matmul row is
    // computed as for a single token, on any thread.
    for (int64_t block : {int64_t(kIds.size()), int64_t(9), int64_t(16)}) {
      const test::RunResult blocks = run(*m, table, pool, block, DeltaRuleMode::kRecurrent);
      EXPECT_TRUE(same_bits(blocks.logits, steps.logits)) << preset << " block " << block;
      EXPECT_TRUE(same_bits(blocks.final_norm, steps.final_norm)) << preset << " block " << block;
    }
  }
}

// The quantized model against a run whose weights are its own quantized weights dequantized to
// f32 (float activations): they differ only by the int8 activation quantization of the kernels.
TEST(QuantizedModel, TracksItsDequantizedWeights) {
  ThreadPool pool(2);
  const kernels::KernelTable& table = kernels::active_table();
  for (const char* preset : kPresets) {
    std::unique_ptr<Model> q = load(preset, kernels::ref_table(), pool);  // plain rows, so they can be re-read
    // A second model: the same quantized bytes, each matrix dequantized to f32.
    std::unique_ptr<Model> f = load(preset, kernels::ref_table(), pool);
    TextWeights& fw = const_cast<TextWeights&>(f->text_weights());
    WeightStore store;
    WeightPrepOptions o;
    o.rule = weight_type_rule("f32");
    o.pool = &pool;
    o.table = &kernels::ref_table();
    std::vector<NamedMatrix> mats = named_matrices(fw, nullptr);
    const bool tied = f->config().text.tie_word_embeddings;
    mats.push_back(NamedMatrix{"output.weight", &fw.lm_head, false});
    mats.push_back(NamedMatrix{"token_embd.weight", &fw.embed, true});
    prepare_weights(mats, store, o);
    ASSERT_EQ(fw.layers[0].mlp.gate.dtype, DType::F32);
    if (tied) ASSERT_EQ(fw.lm_head.dtype, DType::F32);
    const std::vector<float> a = run(*q, table, pool, 7).logits, b = run(*f, table, pool, 7).logits;
    const double rel = test::max_rel_error(a, b);
    // Activations quantized per block of 32 to int8 change each dot product by about 0.3% of its
    // terms' magnitude; through 8 layers the logits stay within a few percent of their range.
    EXPECT_LT(rel, 0.05) << preset;
    EXPECT_GT(rel, 0.0) << preset << ": identical results would mean the activations were not quantized";
    // Most argmaxes agree.
    const int64_t V = q->config().text.vocab_size;
    int agree = 0;
    for (size_t t = 0; t < kIds.size(); ++t) {
      auto argmax = [&](const std::vector<float>& l) {
        return std::max_element(l.begin() + int64_t(t) * V, l.begin() + int64_t(t + 1) * V) - l.begin();
      };
      agree += argmax(a) == argmax(b);
    }
    EXPECT_GE(agree, int(kIds.size()) * 8 / 10) << preset;
    std::printf("%s: max rel logit difference vs dequantized f32 %.3g, argmax agreement %d/%zu\n", preset, rel, agree,
                kIds.size());
  }
}

}  // namespace
}  // namespace qwen35
