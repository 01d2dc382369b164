// The MTP head's weights through the load-time preparation: under a llama-quantize preset its
// matrices get the types of the head bundled as one more block, the trunk's types do not change,
// and the head shares the trunk's prepared embedding and LM head.
#include <gtest/gtest.h>

#include "decoder_harness.h"
#include "model/model.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

std::unique_ptr<Model> load(const std::string& weights) {
  static ThreadPool pool(2);
  ModelLoadOptions o;
  o.weights = weights;
  o.pool = &pool;
  return Model::load(test::tiny_model_dir(), o);
}

std::vector<DType> head_types(const Model& m) {
  MtpWeights& w = const_cast<MtpWeights&>(m.mtp()->weights());
  std::vector<DType> out;
  for (const NamedMatrix& nm : mtp_named_matrices(w, m.config().text.num_layers, m.text_weights()))
    out.push_back(nm.w->dtype);
  return out;
}

TEST(MtpWeights, PreparedUnderAPresetBesideAnUnchangedTrunk) {
  const auto plain = load("");
  ASSERT_NE(plain->mtp(), nullptr);
  const DType stored = plain->mtp()->weights().fc.dtype;
  for (DType t : head_types(*plain)) EXPECT_EQ(t, stored);

  const auto q8 = load("q8_0");
  for (DType t : head_types(*q8)) EXPECT_EQ(t, DType::Q8_0);
  EXPECT_EQ(q8->mtp()->weights().lm_head.data, q8->text_weights().lm_head.data);  // the trunk's, prepared
  EXPECT_EQ(q8->mtp()->weights().embed.data, q8->text_weights().embed.data);
  EXPECT_EQ(q8->mtp()->weights().lm_head.dtype, q8->text_weights().lm_head.dtype);

  // Q4_K_M on the tiny model: rows of 64 and 128 fit no 256-element blocks, so Q4_K falls back to
  // Q5_0 (attn_output's rows of 256 keep Q4_K); attn_v and ffn_down of the last block (the head)
  // get Q6_K, which falls back to Q8_0.
  const auto q4 = load("q4_k_m");
  const std::vector<DType> want = {DType::Q5_0, DType::Q5_0, DType::Q8_0, DType::Q4_K,
                                   DType::Q5_0, DType::Q5_0, DType::Q8_0, DType::Q5_0};
  EXPECT_EQ(head_types(*q4), want);
  // The trunk's mix is that of a file without the head: the types chosen for the float trunk alone.
  TextWeights& a = const_cast<TextWeights&>(q4->text_weights());
  std::vector<NamedMatrix> trunk = named_matrices(a, nullptr);
  WeightModelShape shape;
  shape.n_layers = q4->config().text.num_layers;
  shape.n_gqa = q4->config().text.num_heads / q4->config().text.num_kv_heads;
  shape.tied_embeddings = q4->config().text.tie_word_embeddings;
  const auto fresh = Model::load(test::tiny_model_dir(), {});
  TextWeights& f = const_cast<TextWeights&>(fresh->text_weights());
  std::vector<NamedMatrix> float_trunk = named_matrices(f, nullptr);
  float_trunk.insert(float_trunk.begin(), NamedMatrix{"token_embd.weight", &f.embed, true});
  const std::vector<DType> types = choose_weight_types("q4_k_m", float_trunk, shape);
  for (size_t i = 0; i < trunk.size(); ++i) EXPECT_EQ(trunk[i].w->dtype, types[i + 1]) << trunk[i].name;
}

}  // namespace
}  // namespace qwen35
