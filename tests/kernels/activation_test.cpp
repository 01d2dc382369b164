// Elementwise activations of every table against the scalar reference (std::exp), on ordinary,
// extreme and special inputs, and the same value giving the same result at any index, offset or
// length.
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
    ref.gelu_tanh(x.data(), want.data(), int64_t(x.size()));
    t->gelu_tanh(x.data(), got.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) expect_close(got[i], want[i], "gelu_tanh", *t, x[i]);
  }
}

TEST(Activations, ResultDoesNotDependOnTheIndex) {
  const std::vector<float> x = inputs();
  for (const KernelTable* t : supported_tables())
    for (const auto& [name, f] : {std::pair{"silu", t->silu}, std::pair{"gelu_tanh", t->gelu_tanh}}) {
      std::vector<float> all(x.size());
      f(x.data(), all.data(), int64_t(x.size()));
      for (size_t i = 0; i < x.size(); i += 37) {
        float one;
        f(&x[i], &one, 1);  // alone, as a tail of one element
        EXPECT_EQ(std::memcmp(&one, &all[i], 4), 0) << name << " " << t->name << " index " << i;
      }
      for (size_t off : {1, 3, 17}) {  // misaligned, odd lengths
        std::vector<float> part(x.size() - off);
        f(x.data() + off, part.data(), int64_t(part.size()));
        EXPECT_EQ(std::memcmp(part.data(), all.data() + off, part.size() * 4), 0) << name << " " << t->name << " offset " << off;
      }
      std::vector<float> inplace = x;  // aliasing input and output
      f(inplace.data(), inplace.data(), int64_t(inplace.size()));
      EXPECT_EQ(std::memcmp(inplace.data(), all.data(), all.size() * 4), 0) << name << " " << t->name;
    }
}

// torch's gelu_pytorch_tanh as written, 0.5 x (1 + tanh(u)), in double: the table kernels' form
// x / (1 + e^-2u) is the same function. (Below x = -5 the written form cancels even in double.)
TEST(Activations, GeluTanhIsTorchsFormula) {
  for (float x : inputs()) {
    if (!(std::fabs(x) <= 5.0f)) continue;
    const double v = x, u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    const double want = 0.5 * v * (1.0 + std::tanh(u));
    float got;
    ref_table().gelu_tanh(&x, &got, 1);
    // u in float carries a few roundings, which e^-2u turns into |2u| times as much relative
    // error: the same for any float evaluation of the function.
    EXPECT_NEAR(got, want, 4e-7 * (1.0 + 2.0 * std::fabs(u)) * std::fabs(want) + 1e-30) << "x=" << x;
  }
}

}  // namespace
}  // namespace qwen35::kernels
