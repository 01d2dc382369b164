// Every scale-search variant this CPU runs returns exactly what the one-candidate-at-a-time
// reference returns (scales, mins and quants, bit for bit), on inputs chosen to hit the search's
// corners: acceptances that move the minimum, rounding ties, all-positive and all-zero groups,
// tiny and huge magnitudes, and non-finite values (where the result is garbage, the same garbage).
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
    switch (kind % 13) {
      case 0: x[i] = normal(rng); break;
      case 1: x[i] = normal(rng) * 0.02f; break;                    // weight-sized
      case 2: x[i] = std::fabs(normal(rng)) + 0.1f; break;          // all positive: min clamps to 0
      case 3: x[i] = float(small_int(rng)) / 8; break;             // on a grid: rounding ties
      case 4: x[i] = i % 5 == 0 ? 0.0f : normal(rng) - 2; break;     // offset, exact zeros
      case 5: x[i] = normal(rng) * 1e-12f; break;                   // near kGroupMaxEps
      case 6: x[i] = normal(rng) * 3e4f; break;                     // huge
      case 7: x[i] = i == 3 ? 50.0f : normal(rng); break;            // one outlier
      case 8: x[i] = i == 5 ? INFINITY : normal(rng); break;        // non-finite: ggml's garbage, bit for bit
      case 9: x[i] = i == 7 ? NAN : normal(rng); break;
      case 10: x[i] = (i % 2 ? 3e38f : -3e38f) * (0.5f + 0.01f * float(i)); break;  // range overflows
      case 11: x[i] = normal(rng) * 1e-39f; break;                  // subnormal: reciprocals overflow
      default: x[i] = kind % 2 ? 0.0f : 0.75f; break;               // zero or constant
    }
  }
  return x;
}

// Batches of 1..9 groups (tails of every lockstep width), each group of a random shape, so the
// groups of one batch finish their searches at different times.
constexpr int kBatches = 1500;

std::vector<float> batch(int groups, int n, std::mt19937& rng) {
  std::vector<float> x;
  std::uniform_int_distribution<int> kind(0, 13);
  for (int j = 0; j < groups; ++j) {
    const std::vector<float> g = group(n, kind(rng), rng);
    x.insert(x.end(), g.begin(), g.end());
  }
  return x;
}

TEST(ScaleSearch, RefIsAlwaysSupportedAndFirst) {
  const auto all = supported_scale_searches();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front()->name, "ref");
}

TEST(ScaleSearch, SignedScaleVariantsMatchRef) {
  for (const ScaleSearchTable* t : supported_scale_searches()) {
    std::mt19937 rng(11);
    for (int it = 0; it < kBatches; ++it) {
      const int groups = 1 + it % 9;
      const std::vector<float> x = batch(groups, 16, rng);
      std::vector<int8_t> got(x.size());
      std::vector<float> scales(static_cast<size_t>(groups));
      t->fit_signed_scales(groups, 16, 32, x.data(), got.data(), scales.data());
      for (int j = 0; j < groups; ++j) {
        int8_t want[16];
        const float s_want = fit_signed_scale_ref(16, 32, x.data() + 16 * j, want);
        ASSERT_EQ(bits(scales[j]), bits(s_want)) << t->name << " batch " << it << " group " << j;
        ASSERT_EQ(0, std::memcmp(got.data() + 16 * j, want, 16)) << t->name << " batch " << it << " group " << j;
      }
    }
  }
}

TEST(ScaleSearch, AffineVariantsMatchRef) {
  // The grids of Q4_K, Q5_K (weights rms + |x|) and Q2_K (weights |x|, absolute error).
  const AffineGrid grids[] = {{15, -1.0f, 0.1f, 20, false}, {31, -0.5f, 0.1f, 15, false}, {3, -0.5f, 0.1f, 15, true}};
  for (const ScaleSearchTable* t : supported_scale_searches())
    for (const AffineGrid& g : grids) {
      const int n = g.nmax == 3 ? 16 : 32;
      std::mt19937 rng(12);
      for (int it = 0; it < kBatches; ++it) {
        const int groups = 1 + it % 9;
        const std::vector<float> x = batch(groups, n, rng);
        std::vector<float> w(x.size());
        for (int j = 0; j < groups; ++j) {
          float sum_x2 = 0;
          for (int i = 0; i < n; ++i) sum_x2 += x[size_t(j * n + i)] * x[size_t(j * n + i)];
          for (int i = 0; i < n; ++i) {
            const float v = std::fabs(x[size_t(j * n + i)]);
            w[size_t(j * n + i)] = g.abs_error ? v : std::sqrt(sum_x2 / float(n)) + v;
          }
        }
        std::vector<uint8_t> got(x.size());
        std::vector<AffineFit> fits(static_cast<size_t>(groups));
        t->fit_scales_and_mins(groups, n, x.data(), w.data(), g, got.data(), fits.data());
        for (int j = 0; j < groups; ++j) {
          uint8_t want[32];
          const AffineFit f = fit_scale_and_min_ref(n, x.data() + j * n, w.data() + j * n, g, want);
          ASSERT_EQ(bits(fits[j].scale), bits(f.scale)) << t->name << " nmax " << g.nmax << " batch " << it << " group " << j;
          ASSERT_EQ(bits(fits[j].neg_min), bits(f.neg_min)) << t->name << " nmax " << g.nmax << " batch " << it;
          ASSERT_EQ(0, std::memcmp(got.data() + j * n, want, size_t(n))) << t->name << " nmax " << g.nmax << " batch " << it;
        }
      }
    }
}

TEST(ScaleSearch, Iq4VariantsMatchRef) {
  for (const ScaleSearchTable* t : supported_scale_searches())
    for (int ntry : {7, 3}) {  // 7: the lanes; 3: the reference fallback
      std::mt19937 rng(13);
      for (int it = 0; it < kBatches; ++it) {
        const int groups = 1 + it % 9;
        const std::vector<float> x = batch(groups, 32, rng);
        std::vector<float> scales(static_cast<size_t>(groups));
        t->fit_iq4_scales(groups, 32, x.data(), ntry, scales.data());
        for (int j = 0; j < groups; ++j)
          ASSERT_EQ(bits(scales[j]), bits(fit_iq4_scale_ref(32, x.data() + 32 * j, ntry)))
              << t->name << " ntry " << ntry << " batch " << it << " group " << j;
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
