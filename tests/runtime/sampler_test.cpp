#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace qwen35 {
namespace {

SamplingParams greedy_params() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

SamplingParams seeded(float temperature, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

std::vector<float> random_logits(int64_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// The textbook definition, written independently of the sampler: softmax(logits / T) in double,
// then top_k, top_p and min_p on a full sort, each renormalising.
std::vector<double> reference_probs(const std::vector<float>& logits, const SamplingParams& p) {
  const size_t n = logits.size();
  std::vector<double> prob(n);
  double max_s = -INFINITY;
  for (size_t i = 0; i < n; ++i) max_s = std::max(max_s, double(logits[i]) / p.temperature);
  for (size_t i = 0; i < n; ++i) prob[i] = std::exp(double(logits[i]) / p.temperature - max_s);
  auto normalise = [&] {
    const double z = std::accumulate(prob.begin(), prob.end(), 0.0);
    for (double& x : prob) x /= z;
  };
  normalise();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prob[a] > prob[b]; });
  if (p.top_k > 0) {
    for (size_t r = size_t(p.top_k); r < n; ++r) prob[order[r]] = 0;
    normalise();
  }
  if (p.top_p < 1.0f) {
    double cum = 0;
    size_t r = 0;
    for (; r < n; ++r) {
      cum += prob[order[r]];
      if (cum >= p.top_p) break;
    }
    for (++r; r < n; ++r) prob[order[r]] = 0;
    normalise();
  }
  if (p.min_p > 0.0f) {
    const double pmax = prob[order[0]];
    for (double& x : prob) {
      if (x < p.min_p * pmax) x = 0;
    }
    normalise();
  }
  return prob;
}

// Upper 0.1% points of the chi-square distribution, by degrees of freedom.
double chi2_critical_001(size_t df) {
  static const double table[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88};
  if (df >= sizeof(table) / sizeof(table[0])) ADD_FAILURE() << "no critical value for df=" << df;
  return table[std::min(df, sizeof(table) / sizeof(table[0]) - 1)];
}

struct ChiSquare {
  double statistic = 0;
  size_t df = 0;
  bool outside_support = false;  // a token with reference probability 0 was drawn
};

ChiSquare chi_square(const std::vector<int64_t>& counts, const std::vector<double>& prob, int64_t draws) {
  ChiSquare r;
  size_t cells = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = prob[i] * double(draws);
    if (prob[i] == 0) {
      if (counts[i] != 0) r.outside_support = true;
      continue;
    }
    EXPECT_GE(expected, 5.0) << "cell " << i << ": too small for the chi-square approximation";
    r.statistic += (double(counts[i]) - expected) * (double(counts[i]) - expected) / expected;
    ++cells;
  }
  r.df = cells - 1;
  return r;
}

std::vector<int64_t> draw_counts(const std::vector<float>& logits, const SamplingParams& p, int64_t draws) {
  Sampler s(p, int64_t(logits.size()));
  std::vector<float> buf = logits;
  std::vector<int64_t> counts(logits.size(), 0);
  for (int64_t d = 0; d < draws; ++d) counts[size_t(s.sample(buf.data(), nullptr))]++;
  return counts;
}

const std::vector<float> kSmallLogits = {1.2f, 0.3f, -0.4f, 2.0f, 0.9f, -1.1f, 0.0f, 1.6f};
constexpr int64_t kDraws = 20000;

// ---------------------------------------------------------------------------------------------
// Greedy

TEST(Sampler, GreedyIsArgmax) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::vector<float> logits = random_logits(1000, seed);
    const auto expected = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    Sampler s(greedy_params(), 1000);
    EXPECT_TRUE(s.greedy());
    EXPECT_EQ(s.sample(logits.data(), nullptr), expected);
  }
}

TEST(Sampler, GreedyTiesGoToTheLowestId) {
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 3.0f, 2.9f};
  Sampler s(greedy_params(), 6);
  EXPECT_EQ(s.sample(logits.data(), nullptr), 1);
  std::vector<float> flat(100, -2.0f);
  Sampler wide(greedy_params(), 100);
  EXPECT_EQ(wide.sample(flat.data(), nullptr), 0);
  flat[99] = -1.0f;
  EXPECT_EQ(wide.sample(flat.data(), nullptr), 99);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  SamplingParams p = seeded(5.0f, 7);
  p.top_k = 1;
  Sampler s(p, 8);
  EXPECT_TRUE(s.greedy());
  std::vector<float> logits = kSmallLogits;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.sample(logits.data(), nullptr), 3);
  EXPECT_FALSE(Sampler(seeded(1.0f, 7), 8).greedy());
}

// ---------------------------------------------------------------------------------------------
// Reproducibility

std::vector<int32_t> sequence(const SamplingParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p, int64_t(logits.size()));
  std::vector<float> buf = logits;
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(buf.data(), nullptr));
  return out;
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedsDiffer) {
  const std::vector<float> logits = random_logits(2000, 3, 1.0f);
  for (float t : {0.7f, 1.0f}) {
    for (float top_p : {1.0f, 0.9f}) {
      SamplingParams p = seeded(t, 1234);
      p.top_p = top_p;
      const auto a = sequence(p, logits, 300);
      EXPECT_EQ(a, sequence(p, logits, 300));
      p.seed = 1235;
      EXPECT_NE(a, sequence(p, logits, 300));
    }
  }
}

TEST(Sampler, DrawUsesTheRawGeneratorBitsAsSpecified) {
  EXPECT_EQ(Sampler::to_unit(0), 0.0);
  EXPECT_EQ(Sampler::to_unit(~uint64_t(0)), 1.0 - 0x1.0p-53);
  EXPECT_EQ(Sampler::to_unit(uint64_t(1) << 63), 0.5);
  // Eight equal logits have weight exactly 1 each, so the draw is floor(8 * u) with u from the
  // standard-defined mt19937_64 stream: the sequence is fixed on every platform.
  std::vector<float> flat(8, 0.25f);
  Sampler s(seeded(1.0f, 20240601), 8);
  std::mt19937_64 ref(20240601);
  for (int i = 0; i < 1000; ++i) {
    const auto expected = int32_t(std::floor(Sampler::to_unit(ref()) * 8.0));
    ASSERT_EQ(s.sample(flat.data(), nullptr), expected) << "draw " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// Distribution: chi-square goodness of fit with fixed seeds (alpha = 0.001)

struct FitCase {
  const char* name;
  float temperature;
  int top_k;
  float top_p;
  float min_p;
};

TEST(Sampler, ChiSquareMatchesTheFilteredSoftmax) {
  const FitCase cases[] = {
      {"T=0.5", 0.5f, 0, 1.0f, 0.0f},
      {"T=1", 1.0f, 0, 1.0f, 0.0f},
      {"T=1.5", 1.5f, 0, 1.0f, 0.0f},
      {"T=3", 3.0f, 0, 1.0f, 0.0f},
      {"top_k=3", 1.0f, 3, 1.0f, 0.0f},
      {"top_k=5 T=1.5", 1.5f, 5, 1.0f, 0.0f},
      {"top_p=0.8", 1.0f, 0, 0.8f, 0.0f},
      {"top_p=0.8 T=1.5", 1.5f, 0, 0.8f, 0.0f},
      {"min_p=0.3", 1.0f, 0, 1.0f, 0.3f},
      {"min_p=0.1 T=0.5", 0.5f, 0, 1.0f, 0.1f},
      {"top_k=6 top_p=0.9 min_p=0.4 T=1.5", 1.5f, 6, 0.9f, 0.4f},
  };
  uint64_t seed = 100;
  for (const FitCase& c : cases) {
    SamplingParams p = seeded(c.temperature, ++seed);
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    const std::vector<double> prob = reference_probs(kSmallLogits, p);
    const ChiSquare r = chi_square(draw_counts(kSmallLogits, p, kDraws), prob, kDraws);
    std::printf("[ chi2     ] %-36s chi2 = %7.3f  df = %zu  critical(0.001) = %.2f\n", c.name, r.statistic,
                r.df, chi2_critical_001(r.df));
    EXPECT_FALSE(r.outside_support) << c.name;
    EXPECT_LT(r.statistic, chi2_critical_001(r.df)) << c.name;
  }
}

TEST(Sampler, ChiSquareRejectsAWrongDistribution) {
  // The test above can fail: draws at T = 1 do not fit softmax(logits / 1.25), nor a top_p set
  // that is one token too large.
  const ChiSquare wrong_t =
      chi_square(draw_counts(kSmallLogits, seeded(1.0f, 5), kDraws), reference_probs(kSmallLogits, seeded(1.25f, 0)),
                 kDraws);
  std::printf("[ chi2     ] T=1 draws vs T=1.25 softmax: chi2 = %.1f (df %zu)\n", wrong_t.statistic, wrong_t.df);
  EXPECT_GT(wrong_t.statistic, chi2_critical_001(wrong_t.df));

  SamplingParams narrow = seeded(1.0f, 6);
  narrow.top_p = 0.8f;  // keeps 4 tokens
  SamplingParams wide = narrow;
  wide.top_p = 0.85f;   // keeps 5
  const ChiSquare wrong_p =
      chi_square(draw_counts(kSmallLogits, narrow, kDraws), reference_probs(kSmallLogits, wide), kDraws);
  EXPECT_GT(wrong_p.statistic, chi2_critical_001(wrong_p.df));
}

TEST(Sampler, LargeCandidateSetsUseTheSelectionPaths) {
  // 2000 tokens with distinct logits in a shuffled order, and filters that keep hundreds of
  // them: top_k above the heap limit goes through quickselect, and a wide nucleus
  // through several rounds of the mass quickselect. Check the support exactly, and the
  // distribution over rank deciles of the kept set with chi-square.
  const int64_t n = 2000;
  const int64_t draws = 10000;
  std::vector<int32_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(11));
  std::vector<float> logits(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) logits[size_t(perm[size_t(r)])] = -0.002f * float(r);  // rank r

  const FitCase cases[] = {
      {"top_p=0.6", 1.0f, 0, 0.6f, 0.0f},
      {"top_k=1000", 1.0f, 1000, 1.0f, 0.0f},
      {"top_k=1500 top_p=0.8 T=0.8", 0.8f, 1500, 0.8f, 0.0f},
      {"top_k=200 top_p=0.9", 1.0f, 200, 0.9f, 0.0f},
      {"top_p=0.7 min_p=0.3", 1.0f, 0, 0.7f, 0.3f},
  };
  uint64_t seed = 70;
  for (const FitCase& c : cases) {
    SamplingParams p = seeded(c.temperature, ++seed);
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    const std::vector<double> prob = reference_probs(logits, p);
    int64_t kept = 0;
    for (double x : prob) kept += x > 0;
    ASSERT_GE(kept, 100) << c.name;

    const std::vector<int64_t> counts = draw_counts(logits, p, draws);
    std::vector<int64_t> bin_counts(10, 0);
    std::vector<double> bin_prob(10, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      const size_t id = size_t(perm[size_t(r)]);
      if (prob[id] == 0) {
        ASSERT_EQ(counts[id], 0) << c.name << ": rank " << r << " is outside the " << kept << " kept";
        continue;
      }
      const size_t bin = size_t(r * 10 / kept);
      bin_counts[bin] += counts[id];
      bin_prob[bin] += prob[id];
    }
    const ChiSquare fit = chi_square(bin_counts, bin_prob, draws);
    std::printf("[ chi2     ] %-28s 2000 tokens, %5lld kept, rank deciles: chi2 = %6.3f  df = %zu\n", c.name,
                (long long)kept, fit.statistic, fit.df);
    EXPECT_LT(fit.statistic, chi2_critical_001(fit.df)) << c.name;
  }
}

std::vector<int32_t> support(const std::vector<double>& prob) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] > 0) ids.push_back(int32_t(i));
  }
  return ids;
}

TEST(Sampler, FilteredDistributionMatchesTheReferenceExactly) {
  // The distribution the draw uses, compared exactly (support) and to float precision
  // (probabilities) with the textbook filters, over many random rows and settings: vocabularies
  // from 2 to 3000 tokens, logits with and without ties, every filter on and off.
  std::mt19937 rng(5);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  int checked = 0, borderline = 0;
  for (int iter = 0; iter < 600; ++iter) {
    const int64_t vocab = std::uniform_int_distribution<int64_t>(2, 3000)(rng);
    std::vector<float> logits = random_logits(vocab, uint32_t(1000 + iter), float(uniform(0.5, 3.0)));
    if (iter % 3 == 0) {
      for (float& x : logits) x = std::round(x * 4.0f) / 4.0f;  // many exact ties
    }
    SamplingParams p = seeded(float(uniform(0.5, 2.0)), uint64_t(iter));
    if (iter % 2 == 0) p.top_k = int(std::uniform_int_distribution<int64_t>(1, vocab + 3)(rng));
    if (iter % 4 < 2) p.top_p = float(uniform(0.02, 1.0));
    if (iter % 5 < 2) p.min_p = float(uniform(0.0, 0.5));

    const std::vector<double> ref = reference_probs(logits, p);
    // Skip settings within float rounding of a boundary: there either answer is right.
    bool stable = true;
    for (double f : {1.0 - 1e-5, 1.0 + 1e-5}) {
      SamplingParams q = p;
      q.top_p = p.top_p < 1.0f ? float(std::min(1.0, p.top_p * f)) : 1.0f;
      q.min_p = float(p.min_p * f);
      stable = stable && support(reference_probs(logits, q)) == support(ref);
    }
    if (!stable) {
      ++borderline;
      continue;
    }
    Sampler s(p, vocab);
    std::vector<float> buf = logits;
    auto got = s.distribution(buf.data());
    std::sort(got.begin(), got.end());
    std::vector<int32_t> got_ids;
    for (const auto& [id, prob] : got) got_ids.push_back(id);
    ASSERT_EQ(got_ids, support(ref)) << "iteration " << iter << " vocab " << vocab << " T " << p.temperature
                                     << " top_k " << p.top_k << " top_p " << p.top_p << " min_p " << p.min_p;
    for (const auto& [id, prob] : got) ASSERT_NEAR(prob, ref[size_t(id)], 1e-6 + 1e-4 * ref[size_t(id)]);
    ASSERT_EQ(buf, logits);
    ++checked;
  }
  std::printf("[ exact    ] %d settings checked, %d skipped as borderline\n", checked, borderline);
  EXPECT_GT(checked, 500);
}

// ---------------------------------------------------------------------------------------------
// Penalties

TEST(Sampler, PenaltiesChangeLogitsExactlyAsSpecified) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f};
  SamplingParams p = greedy_params();
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.4f;
  p.presence_penalty = 0.25f;
  Sampler s(p, 6);
  for (int32_t t : {0, 0, 1, 3, 0, -1, 6, 1000}) s.accept(t);  // the last three are ignored
  std::vector<float> got = logits;
  s.penalize(got.data());
  // Repetition (HF) first, then frequency * count, then presence once.
  EXPECT_FLOAT_EQ(got[0], 2.0f / 1.3f - 0.4f * 3 - 0.25f);
  EXPECT_FLOAT_EQ(got[1], -1.0f * 1.3f - 0.4f * 1 - 0.25f);
  EXPECT_FLOAT_EQ(got[2], 0.5f);
  EXPECT_FLOAT_EQ(got[3], 3.0f / 1.3f - 0.4f - 0.25f);
  EXPECT_FLOAT_EQ(got[4], -2.0f);
  EXPECT_FLOAT_EQ(got[5], 0.0f);
}

TEST(Sampler, EachPenaltyAlone) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f};
  auto penalized = [&](float presence, float frequency, float repetition) {
    SamplingParams p = greedy_params();
    p.presence_penalty = presence;
    p.frequency_penalty = frequency;
    p.repetition_penalty = repetition;
    Sampler s(p, 3);
    for (int32_t t : {0, 1, 1}) s.accept(t);
    std::vector<float> v = logits;
    s.penalize(v.data());
    return v;
  };
  EXPECT_EQ(penalized(0.5f, 0, 1), (std::vector<float>{1.5f, -1.5f, 0.5f}));
  EXPECT_EQ(penalized(0, 0.5f, 1), (std::vector<float>{1.5f, -2.0f, 0.5f}));
  EXPECT_EQ(penalized(0, 0, 2.0f), (std::vector<float>{1.0f, -2.0f, 0.5f}));
  EXPECT_EQ(penalized(0, 0, 0.5f), (std::vector<float>{4.0f, -0.5f, 0.5f}));  // < 1 rewards
  EXPECT_EQ(penalized(0, 0, 1), logits);
}

TEST(Sampler, PenaltiesSteerTheChoiceAndLeaveTheBufferIntact) {
  std::vector<float> logits = {1.0f, 3.0f, 2.5f};
  const std::vector<float> original = logits;
  SamplingParams p = greedy_params();
  p.presence_penalty = 1.0f;
  Sampler s(p, 3);
  EXPECT_EQ(s.sample(logits.data(), nullptr), 1);
  s.accept(1);
  EXPECT_EQ(s.sample(logits.data(), nullptr), 2);  // 3 - 1 < 2.5
  s.accept(2);
  EXPECT_EQ(s.sample(logits.data(), nullptr), 1);  // 2 vs 1.5
  EXPECT_EQ(logits, original);

  SamplingParams none = greedy_params();
  Sampler plain(none, 3);
  plain.accept(1);
  EXPECT_EQ(plain.sample(logits.data(), nullptr), 1);  // no penalty configured: no effect
}

// ---------------------------------------------------------------------------------------------
// Log-probabilities

std::vector<double> log_softmax(const std::vector<float>& logits) {
  double m = -INFINITY;
  for (float x : logits) m = std::max(m, double(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - m);
  std::vector<double> out;
  for (float x : logits) out.push_back(double(x) - m - std::log(sum));
  return out;
}

TEST(Sampler, LogprobsAreTheRawLogSoftmaxWithSortedAlternatives) {
  std::vector<float> logits = random_logits(300, 9, 2.0f);
  logits[17] = logits[42] = 9.0f;  // a tie at the top: lower id first
  const std::vector<double> ref = log_softmax(logits);
  std::vector<int32_t> by_rank(logits.size());
  std::iota(by_rank.begin(), by_rank.end(), 0);
  std::stable_sort(by_rank.begin(), by_rank.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });

  for (bool greedy : {true, false}) {
    SamplingParams p = greedy ? greedy_params() : seeded(1.3f, 3);
    p.top_logprobs = 5;
    p.top_k = greedy ? 0 : 50;
    p.presence_penalty = 2.0f;  // penalties must not leak into the reported logprobs
    p.repetition_penalty = 1.5f;
    Sampler s(p, int64_t(logits.size()));
    s.accept(17);
    s.accept(by_rank[3]);
    for (int i = 0; i < 20; ++i) {
      TokenLogprob lp;
      lp.text = "kept";
      const int32_t tok = s.sample(logits.data(), &lp);
      ASSERT_EQ(lp.token, tok);
      EXPECT_EQ(lp.text, "kept");
      EXPECT_NEAR(lp.logprob, ref[size_t(tok)], 1e-5);
      ASSERT_EQ(lp.top.size(), 5u);
      for (size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(lp.top[j].first, by_rank[j]);
        EXPECT_NEAR(lp.top[j].second, ref[size_t(by_rank[j])], 1e-5);
        if (j > 0) {
          EXPECT_GE(lp.top[j - 1].second, lp.top[j].second);
        }
      }
      if (greedy && i == 0) {
        EXPECT_EQ(tok, 42);  // 17 is penalized, 42 ties it unpenalized
      }
      s.accept(tok);
    }
  }
}

TEST(Sampler, NoAlternativesWhenNotAsked) {
  std::vector<float> logits = kSmallLogits;
  Sampler s(greedy_params(), 8);
  TokenLogprob lp;
  lp.top = {{1, 0.0f}};
  EXPECT_EQ(s.sample(logits.data(), &lp), 3);
  EXPECT_TRUE(lp.top.empty());
  EXPECT_NEAR(lp.logprob, log_softmax(kSmallLogits)[3], 1e-6);
}

// ---------------------------------------------------------------------------------------------
// Full vocabulary

TEST(Sampler, FullVocabularySmoke) {
  const int64_t vocab = 248320;
  std::vector<float> logits = random_logits(vocab, 2024, 2.5f);
  logits[123456] = 30.0f;
  const std::vector<float> original = logits;

  struct Config {
    const char* name;
    float temperature;
    int top_k;
    float top_p;
    float min_p;
  };
  const Config configs[] = {
      {"greedy", 0.0f, 0, 1.0f, 0.0f},
      {"T=1 (no filters)", 1.0f, 0, 1.0f, 0.0f},
      {"T=0.6 top_k=20 top_p=0.95", 0.6f, 20, 0.95f, 0.0f},
      {"T=1 top_p=0.9", 1.0f, 0, 0.9f, 0.0f},
      {"T=2 top_p=0.5 (wide nucleus)", 2.0f, 0, 0.5f, 0.0f},
      {"T=1 min_p=0.05", 1.0f, 0, 1.0f, 0.05f},
  };
  for (const Config& c : configs) {
    SamplingParams p = seeded(c.temperature, 99);
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.presence_penalty = 0.5f;
    p.top_logprobs = 5;
    Sampler s(p, vocab);
    const int steps = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      TokenLogprob lp;
      const int32_t tok = s.sample(logits.data(), &lp);
      ASSERT_GE(tok, 0);
      ASSERT_LT(tok, vocab);
      ASSERT_EQ(lp.top.size(), 5u);
      EXPECT_EQ(lp.top[0].first, 123456);
      s.accept(tok);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
    std::printf("[ vocab    ] %-30s %.3f ms/token (with logprobs)\n", c.name, ms);
    if (c.temperature == 0.0f) {
      // The spike stays the argmax: -0.5 presence penalty does not beat a 30-logit lead.
      EXPECT_EQ(s.sample(logits.data(), nullptr), 123456);
    }
  }
  EXPECT_EQ(logits, original);
}

}  // namespace
}  // namespace qwen35
