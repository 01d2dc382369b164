// The LayerNorm row kernel (the vision tower's) of every table against the scalar reference on
// random rows of odd and real lengths, misaligned, with large offsets (where the mean dominates),
// in place, and against a double-precision LayerNorm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

constexpr double kEps = 1e-6;

struct Row {
  std::vector<float> x, w, b;
};

// n values at offset `off` of their buffers (misaligned for off % 16 != 0).
Row random_row(int64_t n, float scale, float shift, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Row r;
  for (int64_t i = 0; i < n; ++i) {
    r.x.push_back(shift + scale * nd(rng));
    r.w.push_back(1.0f + 0.3f * nd(rng));
    r.b.push_back(0.1f * nd(rng));
  }
  return r;
}

// The rounding a row can see: the mean and 1/sigma each within an ulp or so of the reference's
// (double sums in another order), then the same float steps.
double tolerance(const Row& r, size_t i, double mean, double inv) {
  return 4e-7 * ((std::fabs(r.x[i]) + std::fabs(mean)) * inv * std::fabs(r.w[i]) + std::fabs(r.b[i])) + 1e-30;
}

TEST(LayerNorm, EveryTableMatchesTheReference) {
  uint32_t seed = 1;
  for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 33, 100, 1152, 1153, 4608})
    for (const auto& [scale, shift] : {std::pair{1.0f, 0.0f}, std::pair{0.01f, 3.0f}, std::pair{50.0f, -20.0f}})
      for (int64_t off : {0, 1, 5}) {
        const Row r = random_row(n, scale, shift, seed++);
        std::vector<float> x(size_t(n + off)), want(size_t(n + off)), got(size_t(n + off));
        std::copy(r.x.begin(), r.x.end(), x.begin() + off);
        ref_table().layer_norm(x.data() + off, r.w.data(), r.b.data(), kEps, want.data() + off, n);
        double mean = 0, var = 0;
        for (float v : r.x) mean += v / double(n);
        for (float v : r.x) var += (v - mean) * (v - mean) / double(n);
        const double inv = 1.0 / std::sqrt(var + kEps);
        for (int64_t i = 0; i < n; ++i) {  // the reference against double
          const double exact = (r.x[size_t(i)] - mean) * inv * r.w[size_t(i)] + r.b[size_t(i)];
          ASSERT_NEAR(want[size_t(off + i)], exact, 4 * tolerance(r, size_t(i), mean, inv)) << "n " << n << " i " << i;
        }
        for (const KernelTable* t : supported_tables()) {
          t->layer_norm(x.data() + off, r.w.data(), r.b.data(), kEps, got.data() + off, n);
          for (int64_t i = 0; i < n; ++i)
            EXPECT_NEAR(got[size_t(off + i)], want[size_t(off + i)], tolerance(r, size_t(i), mean, inv))
                << t->name << " n " << n << " offset " << off << " i " << i;
          std::vector<float> inplace = x;  // y aliasing x gives the same values
          t->layer_norm(inplace.data() + off, r.w.data(), r.b.data(), kEps, inplace.data() + off, n);
          EXPECT_EQ(std::memcmp(inplace.data() + off, got.data() + off, size_t(n) * 4), 0) << t->name << " n " << n;
        }
      }
}

// A row's result is its own: the same values give the same bits wherever they sit.
TEST(LayerNorm, ResultDoesNotDependOnTheAddress) {
  const Row r = random_row(1153, 2.0f, 1.0f, 77);
  for (const KernelTable* t : supported_tables()) {
    std::vector<float> first(r.x.size());
    t->layer_norm(r.x.data(), r.w.data(), r.b.data(), kEps, first.data(), int64_t(r.x.size()));
    for (int64_t off : {1, 3, 8, 15}) {
      std::vector<float> x(r.x.size() + size_t(off)), y(x.size());
      std::copy(r.x.begin(), r.x.end(), x.begin() + off);
      t->layer_norm(x.data() + off, r.w.data(), r.b.data(), kEps, y.data() + off, int64_t(r.x.size()));
      EXPECT_EQ(std::memcmp(y.data() + off, first.data(), first.size() * 4), 0) << t->name << " offset " << off;
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
