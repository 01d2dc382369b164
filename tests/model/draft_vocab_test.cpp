// The MTP draft's reduced vocabulary: its ranges, and its argmax against a direct computation
// (the full head's logits restricted to the subset), with the weights as stored (bf16 rows) and
// quantized to Q4_K_M (the head in Q6_K, packed for the kernel table in use).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "decoder_harness.h"
#include "model/draft_vocab.h"
#include "model/mtp.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

const std::vector<int32_t> kExtra = {248044, 248050, 248319, 5, -3, 1 << 30};  // the last two: not ids

TEST(DraftVocab, RangesCoverTheFirstIdsAndTheGroupsOfTheExtraIds) {
  const kernels::WeightMatrix& head = tiny_model().mtp()->weights().lm_head;
  const int64_t V = head.rows;
  ASSERT_EQ(V, 248320);
  const DraftVocab d = DraftVocab::subset(head, 200, kExtra);
  ASSERT_EQ(d.ranges().size(), 3u);
  EXPECT_EQ(d.ranges()[0].begin, 0);
  EXPECT_EQ(d.ranges()[0].end, 208);  // 200 rounded up to a group of 16
  EXPECT_EQ(d.ranges()[1].begin, 248032);
  EXPECT_EQ(d.ranges()[1].end, 248064);  // 248044's and 248050's groups, merged
  EXPECT_EQ(d.ranges()[2].begin, 248304);  // 248319's group, the last
  EXPECT_EQ(d.ranges()[2].end, V);
  EXPECT_FALSE(d.is_full());
  EXPECT_EQ(d.rows(), 208 + 32 + 16);
  EXPECT_TRUE(d.contains(207));
  EXPECT_FALSE(d.contains(208));
  EXPECT_TRUE(d.contains(248044));
  EXPECT_FALSE(d.contains(248064));
  for (int64_t first : {int64_t(0), int64_t(-5), V, int64_t(1) << 30}) {
    const DraftVocab f = DraftVocab::subset(head, first, kExtra);
    EXPECT_TRUE(f.is_full()) << first;
    EXPECT_EQ(f.rows(), V) << first;
  }
  EXPECT_TRUE(DraftVocab::full(head).is_full());
}

void expect_argmax_of_the_restricted_full_logits(const Model& m, const kernels::Compute& c, const char* what) {
  const MtpHead& head = *m.mtp();
  const int64_t H = m.config().text.hidden_size, V = m.config().text.vocab_size;
  const DraftVocab sub = DraftVocab::subset(head.weights().lm_head, 1000, kExtra);
  const DraftVocab full = DraftVocab::full(head.weights().lm_head);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  kernels::Activations in;
  int differs_from_full = 0;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<float> h(static_cast<size_t>(H));
    for (float& x : h) x = dist(rng);
    std::vector<float> logits(static_cast<size_t>(V));
    head.logits(c, h.data(), 1, logits.data());
    int64_t want = -1, want_full = 0;
    for (int64_t v = 0; v < V; ++v) {
      if (logits[v] > logits[want_full]) want_full = v;
      if (sub.contains(int32_t(v)) && (want < 0 || logits[v] > logits[want])) want = v;
    }
    const float sentinel = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> got_logits(size_t(V), sentinel);
    EXPECT_EQ(sub.argmax(c, h.data(), got_logits.data(), in), want) << what << " trial " << trial;
    for (int64_t v = 0; v < V; ++v) {
      if (sub.contains(int32_t(v)))
        ASSERT_EQ(std::memcmp(&got_logits[v], &logits[v], 4), 0) << what << " id " << v << ": the head's own logit";
      else
        ASSERT_TRUE(std::isnan(got_logits[v])) << what << " id " << v << " is outside the subset and not written";
    }
    EXPECT_EQ(full.argmax(c, h.data(), got_logits.data(), in), want_full) << what << " trial " << trial;
    differs_from_full += want != want_full;
  }
  EXPECT_GT(differs_from_full, 0) << what << ": the subset never changed the draft, so nothing was tested";
}

TEST(DraftVocab, ArgmaxIsTheFullHeadsArgmaxRestrictedToTheSubset) {
  expect_argmax_of_the_restricted_full_logits(tiny_model(), test_compute(), "stored weights");
  ThreadPool pool(2);
  ModelLoadOptions o;
  o.weights = "q4_k_m";
  o.table = &kernels::active_table();
  o.pool = &pool;
  const std::unique_ptr<Model> q = Model::load(tiny_model_dir(), o);
  ASSERT_NE(q->mtp(), nullptr);
  EXPECT_NE(q->mtp()->weights().lm_head.dtype, DType::BF16);
  EXPECT_EQ(q->mtp()->weights().lm_head.layout, kernels::active_table().packing.layout);  // the packed views
  expect_argmax_of_the_restricted_full_logits(*q, kernels::Compute{&kernels::active_table(), &pool}, "q4_k_m");
}

}  // namespace
}  // namespace qwen35::test
