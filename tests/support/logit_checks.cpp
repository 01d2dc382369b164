#include "support/logit_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace qwen35::test {

double logsumexp(const float* row, int64_t n) {
  double m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(row[i]));
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(row[i]) - m);
  return m + std::log(s);
}

int64_t argmax(const float* row, int64_t n) { return int64_t(std::max_element(row, row + n) - row); }

double expect_logits_match(const Golden& g, const std::string& p, const std::vector<float>& logits, int64_t T,
                           int64_t V) {
  double worst = 0;
  auto check = [&](double got, double want, const std::string& what, int64_t t) {
    double d = std::fabs(got - want);
    worst = std::max(worst, d);
    EXPECT_LE(d, kLogitTol) << p << "." << what << " at position " << t << ": got " << got << ", want " << want;
  };
  const auto lse = g.f32(p + ".lse");
  const auto top_ids = g.i64(p + ".top_ids");
  const auto top_vals = g.f32(p + ".top_vals");
  // Some goldens store no subset (golden_video's image_video); the other records still apply.
  const bool has_subset = g.has(p + ".subset");
  const auto subset = has_subset ? g.f32(p + ".subset") : std::vector<float>{};
  const auto vocab_subset = has_subset ? g.i64("vocab_subset") : std::vector<int64_t>{};
  const auto amax = g.i64(p + ".argmax");
  const int64_t K = g.shape(p + ".top_ids")[1], S = int64_t(vocab_subset.size());
  EXPECT_EQ(int64_t(lse.size()), T);
  for (int64_t t = 0; t < T; ++t) {
    const float* row = logits.data() + t * V;
    check(logsumexp(row, V), lse[size_t(t)], "lse", t);
    for (int64_t j = 0; j < K; ++j) check(row[top_ids[size_t(t * K + j)]], top_vals[size_t(t * K + j)], "top_vals", t);
    for (int64_t j = 0; j < S; ++j) check(row[vocab_subset[size_t(j)]], subset[size_t(t * S + j)], "subset", t);
    const double gap = double(top_vals[size_t(t * K)]) - double(top_vals[size_t(t * K + 1)]);
    const int64_t got = argmax(row, V);
    if (gap >= kLogitTol) {
      EXPECT_EQ(got, amax[size_t(t)]) << p << ".argmax at position " << t;
    } else {  // near tie: either of the two best is right
      EXPECT_TRUE(got == top_ids[size_t(t * K)] || got == top_ids[size_t(t * K + 1)]) << p << ".argmax near tie at " << t;
    }
  }
  const auto last = g.f32(p + ".last_full");
  const float* row = logits.data() + (T - 1) * V;
  double last_err = 0;
  for (int64_t v = 0; v < V; ++v) last_err = std::max(last_err, std::fabs(double(row[v]) - last[size_t(v)]));
  worst = std::max(worst, last_err);
  EXPECT_LE(last_err, kLogitTol) << p << ".last_full";
  return worst;
}

double expect_step_logits_match(const Golden& g, const std::string& p, int64_t step, const float* row, int64_t V) {
  double worst = 0;
  auto check = [&](double got, double want, const char* what) {
    double d = std::fabs(got - want);
    worst = std::max(worst, d);
    EXPECT_LE(d, kLogitTol) << p << what << " at step " << step << ": got " << got << ", want " << want;
  };
  check(logsumexp(row, V), g.f32(p + "step_lse")[size_t(step)], "step_lse");
  const auto ids = g.i64(p + "step_top_ids");
  const auto vals = g.f32(p + "step_top_vals");
  const int64_t K = g.shape(p + "step_top_ids")[1];
  for (int64_t j = 0; j < K; ++j) check(row[ids[size_t(step * K + j)]], vals[size_t(step * K + j)], "step_top_vals");
  if (g.has(p + "step_subset")) {
    const auto subset = g.f32(p + "step_subset");
    const auto vocab_subset = g.i64("vocab_subset");
    const int64_t S = int64_t(vocab_subset.size());
    for (int64_t j = 0; j < S; ++j) check(row[vocab_subset[size_t(j)]], subset[size_t(step * S + j)], "step_subset");
  }
  return worst;
}

}  // namespace qwen35::test
