// The MoE router (moe_route) against values worked out by hand and in double: the softmax over all
// experts, torch.topk's order (best first; equal probabilities lower id first), the renormalised
// weights; and on random logits, the chosen experts are the k best.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/moe_route.h"

namespace qwen35::kernels {
namespace {

struct Route {
  std::vector<float> probs, weights;
  std::vector<int32_t> ids;
};

Route route(const std::vector<float>& logits, int k) {
  Route r{std::vector<float>(logits.size()), std::vector<float>(size_t(k)), std::vector<int32_t>(size_t(k))};
  moe_route(logits.data(), int64_t(logits.size()), k, r.probs.data(), r.ids.data(), r.weights.data());
  return r;
}

TEST(MoeRoute, SoftmaxTopKAndRenormalisedWeights) {
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 1.5f, 2.0f, -3.0f, 0.25f, 1.0f};
  const Route r = route(logits, 3);
  // 2.0 twice (ids 2 and 4: the lower id first), then 1.5.
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 4, 3}));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l));
  for (size_t e = 0; e < logits.size(); ++e) EXPECT_NEAR(r.probs[e], std::exp(double(logits[e])) / sum, 1e-7);
  const double chosen = 2 * std::exp(2.0) + std::exp(1.5);
  EXPECT_NEAR(r.weights[0], std::exp(2.0) / chosen, 1e-7);
  EXPECT_EQ(r.weights[0], r.weights[1]);
  EXPECT_NEAR(r.weights[2], std::exp(1.5) / chosen, 1e-7);
  EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2], 1.0, 1e-6);
}

TEST(MoeRoute, AllExpertsAndLargeLogits) {
  // k = n gives every expert, best first; huge logits do not overflow (the max is subtracted).
  const Route r = route({1000.0f, 999.0f, 1001.0f}, 3);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_NEAR(r.weights[0], 1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  const Route one = route({3.0f, 3.0f, 3.0f, 3.0f}, 1);
  EXPECT_EQ(one.ids, (std::vector<int32_t>{0}));
  EXPECT_EQ(one.weights[0], 1.0f);
}

TEST(MoeRoute, RandomLogitsChooseTheKBest) {
  std::mt19937 rng(44);
  std::normal_distribution<float> d(0.0f, 1.6f);
  for (int n : {16, 128, 256})
    for (int k : {1, 4, 8}) {
      std::vector<float> logits(static_cast<size_t>(n));
      for (float& l : logits) l = d(rng);
      const Route a = route(logits, k);
      // Best first, and no unchosen expert beats the last chosen one.
      for (int j = 1; j < k; ++j) EXPECT_GE(a.probs[size_t(a.ids[size_t(j - 1)])], a.probs[size_t(a.ids[size_t(j)])]);
      for (int e = 0; e < n; ++e) {
        bool chosen = false;
        for (int32_t id : a.ids) chosen |= id == e;
        if (!chosen) {
          EXPECT_LE(a.probs[size_t(e)], a.probs[size_t(a.ids[size_t(k - 1)])]);
        }
      }
      float sum = 0;
      for (float w : a.weights) sum += w;
      EXPECT_NEAR(sum, 1.0f, 1e-6f);
    }
}

}  // namespace
}  // namespace qwen35::kernels
