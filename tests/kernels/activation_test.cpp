// Elementwise activations of every table against the scalar reference (std::exp), on ordinary,
// extreme and special inputs, and the same value giving the same result at any index.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

std::vector<float> inputs() {
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 4.0f);
  std::vector<float> x;
  for (int i = 0; i < 997; ++i) x.push_back(n(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 20.0f, -20.0f, 50.0f, -50.0f, 87.0f, -87.0f, 88.5f, -88.5f, 100.0f,
                  -100.0f, 1e10f, -1e10f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  return x;
}

// Relative error with a floor for results that underflow towards 0.
void expect_close(float got, float want, const char* what, const KernelTable& t, float x) {
  if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what << " " << t.name << " x=" << x;
    return;
  }
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " " << t.name << " x=" << x;
    return;
  }
  EXPECT_NEAR(got, want, 4e-7f * std::fabs(want) + 1e-30f) << what << " " << t.name << " x=" << x;
}

TEST(Activations, EveryTableMatchesTheReference) {
  const std::vector<float> x = inputs();
  std::vector<float> u(x.size());
  for (size_t i = 0; i < u.size(); ++i) u[i] = float(i % 7) - 3.0f;
  const KernelTable& ref = ref_table();
  std::vector<float> want(x.size()), got(x.size());
  for (const KernelTable* t : supported_tables()) {
    ref.silu(x.data(), want.data(), int64_t(x.size()));
    t->silu(x.data(), got.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) expect_close(got[i], want[i], "silu", *t, x[i]);
    ref.sigmoid(x.data(), want.data(), int64_t(x.size()));
    t->sigmoid(x.data(), got.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) expect_close(got[i], want[i], "sigmoid", *t, x[i]);
    ref.swiglu(x.data(), u.data(), want.data(), int64_t(x.size()));
    t->swiglu(x.data(), u.data(), got.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) expect_close(got[i], want[i], "swiglu", *t, x[i]);
  }
}

TEST(Activations, ResultDoesNotDependOnTheIndex) {
  const std::vector<float> x = inputs();
  for (const KernelTable* t : supported_tables()) {
    std::vector<float> all(x.size());
    t->silu(x.data(), all.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); i += 37) {
      float one;
      t->silu(&x[i], &one, 1);  // alone, as a tail of one element
      EXPECT_EQ(std::memcmp(&one, &all[i], 4), 0) << t->name << " index " << i;
    }
    std::vector<float> inplace = x;  // aliasing input and output
    t->silu(inplace.data(), inplace.data(), int64_t(inplace.size()));
    EXPECT_EQ(std::memcmp(inplace.data(), all.data(), all.size() * 4), 0) << t->name;
  }
}

}  // namespace
}  // namespace qwen35::kernels
