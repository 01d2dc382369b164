// Every scale-search variant this CPU runs returns exactly what the one-candidate-at-a-time
// reference returns (scales, mins and quants, bit for bit), on inputs chosen to hit the search's
// corners: acceptances that move the minimum, rounding ties, all-positive and all-zero groups,
// tiny and huge magnitudes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant/scale_search.h"

namespace qwen35::kernels::quant {
namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// One group of n values in one of several shapes.
std::vector<float> group(int n, int kind, std::mt19937& rng) {
  std::normal_distribution<float> normal(0, 1);
  std::uniform_int_distribution<int> small_int(-40, 40);
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    switch (kind % 9) {
      case 0: x[i] = normal(rng); break;
      case 1: x[i] = normal(rng) * 0.02f; break;                    // weight-sized
      case 2: x[i] = std::fabs(normal(rng)) + 0.1f; break;          // all positive: min clamps to 0
      case 3: x[i] = float(small_int(rng)) / 8; break;             // on a grid: rounding ties
      case 4: x[i] = i % 5 == 0 ? 0.0f : normal(rng) - 2; break;     // offset, exact zeros
      case 5: x[i] = normal(rng) * 1e-12f; break;                   // near kGroupMaxEps
      case 6: x[i] = normal(rng) * 3e4f; break;                     // huge
      case 7: x[i] = i == 3 ? 50.0f : normal(rng); break;            // one outlier
      default: x[i] = kind % 2 ? 0.0f : 0.75f; break;               // zero or constant
    }
  }
  return x;
}

constexpr int kGroupsPerKind = 1000;

TEST(ScaleSearch, RefIsAlwaysSupportedAndFirst) {
  const auto all = supported_scale_searches();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front()->name, "ref");
}

TEST(ScaleSearch, SignedScaleVariantsMatchRef) {
  const ScaleSearchTable& ref = *supported_scale_searches().front();
  for (const ScaleSearchTable* t : supported_scale_searches()) {
    std::mt19937 rng(11);
    for (int kind = 0; kind < 10; ++kind)
      for (int it = 0; it < kGroupsPerKind; ++it) {
        const std::vector<float> x = group(16, kind, rng);
        int8_t want[16], got[16];
        const float s_want = ref.fit_signed_scale(16, 32, x.data(), want);
        const float s_got = t->fit_signed_scale(16, 32, x.data(), got);
        ASSERT_EQ(bits(s_got), bits(s_want)) << t->name << " kind " << kind << " it " << it;
        ASSERT_EQ(0, std::memcmp(got, want, 16)) << t->name << " kind " << kind << " it " << it;
      }
  }
}

TEST(ScaleSearch, AffineVariantsMatchRef) {
  // The grids of Q4_K, Q5_K (weights rms + |x|) and Q2_K (weights |x|, absolute error).
  const AffineGrid grids[] = {{15, -1.0f, 0.1f, 20, false}, {31, -0.5f, 0.1f, 15, false}, {3, -0.5f, 0.1f, 15, true}};
  const ScaleSearchTable& ref = *supported_scale_searches().front();
  for (const ScaleSearchTable* t : supported_scale_searches())
    for (const AffineGrid& g : grids) {
      const int n = g.nmax == 3 ? 16 : 32;
      std::mt19937 rng(12);
      for (int kind = 0; kind < 10; ++kind)
        for (int it = 0; it < kGroupsPerKind; ++it) {
          const std::vector<float> x = group(n, kind, rng);
          std::vector<float> w(static_cast<size_t>(n));
          float sum_x2 = 0;
          for (float v : x) sum_x2 += v * v;
          for (int i = 0; i < n; ++i) w[i] = g.abs_error ? std::fabs(x[i]) : std::sqrt(sum_x2 / n) + std::fabs(x[i]);
          uint8_t want[32], got[32];
          const AffineFit f_want = ref.fit_scale_and_min(n, x.data(), w.data(), g, want);
          const AffineFit f_got = t->fit_scale_and_min(n, x.data(), w.data(), g, got);
          ASSERT_EQ(bits(f_got.scale), bits(f_want.scale)) << t->name << " nmax " << g.nmax << " kind " << kind;
          ASSERT_EQ(bits(f_got.neg_min), bits(f_want.neg_min)) << t->name << " nmax " << g.nmax << " kind " << kind;
          ASSERT_EQ(0, std::memcmp(got, want, size_t(n))) << t->name << " nmax " << g.nmax << " kind " << kind;
        }
    }
}

TEST(ScaleSearch, Iq4VariantsMatchRef) {
  const ScaleSearchTable& ref = *supported_scale_searches().front();
  for (const ScaleSearchTable* t : supported_scale_searches()) {
    std::mt19937 rng(13);
    for (int kind = 0; kind < 10; ++kind)
      for (int it = 0; it < kGroupsPerKind; ++it) {
        const std::vector<float> x = group(32, kind, rng);
        ASSERT_EQ(bits(t->fit_iq4_scale(32, x.data(), 7)), bits(ref.fit_iq4_scale(32, x.data(), 7)))
            << t->name << " kind " << kind << " it " << it;
      }
  }
}

TEST(ScaleSearch, Iq4NearestIndexFollowsTheCodeBook) {
  // Midpoints between neighbours go to the upper entry; the ends saturate.
  EXPECT_EQ(iq4_nearest_index(-1000.0f), 0);
  EXPECT_EQ(iq4_nearest_index(1000.0f), 15);
  EXPECT_EQ(iq4_nearest_index(0.0f), 8);
  EXPECT_EQ(iq4_nearest_index(-4.5f), 8);   // midpoint of -10 and 1
  EXPECT_EQ(iq4_nearest_index(-4.6f), 7);
  EXPECT_EQ(iq4_nearest_index(101.0f), 15);  // midpoint of 89 and 113
  EXPECT_EQ(iq4_nearest_index(100.9f), 14);
}

TEST(ScaleSearch, RoundNearestIsGgmlsTrick) {
  EXPECT_EQ(round_nearest(2.5f), 2);  // ties to even
  EXPECT_EQ(round_nearest(3.5f), 4);
  EXPECT_EQ(round_nearest(-2.5f), -2);
  EXPECT_EQ(round_nearest(-0.4f), 0);
  EXPECT_EQ(round_nearest(4194303.0f), 4194303);
}

}  // namespace
}  // namespace qwen35::kernels::quant
