// The norms, elementwise steps, RoPE and the causal conv against the scalar reference on odd
// shapes, at the CPU tables' tolerances (tests/kernels/row_ops_test.cpp, activation_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_testing.h"
#include "kernels/ref/ref_ops.h"
#include "vk_testing.h"

namespace qwen35::vk {
namespace {

using kernels::testing::random_floats;
using testing::from_device;
using testing::to_device;
using testing::zeros;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + abs) << what << " i=" << i;
}

TEST(VulkanRowOps, NormsMatchTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(1);
  const int64_t n = 301, rows = 5, xs = 307, zs = 311, ys = 303;
  const auto x = random_floats(size_t(rows * xs), rng, 3.0f);
  const auto z = random_floats(size_t(rows * zs), rng);
  const auto w = random_floats(size_t(n), rng);
  auto xd = to_device(*dev, x), zd = to_device(*dev, z), wd = to_device(*dev, w);
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<float> want(size_t(rows * ys), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * xs;
      float* yr = want.data() + r * ys;
      if (mode == 0) kernels::ref::rms_norm(xr, w.data(), 1e-6f, yr, n);
      if (mode == 1) kernels::ref::gated_rms_norm(xr, w.data(), z.data() + r * zs, 1e-6f, yr, n);
      if (mode == 2) kernels::ref::l2_norm(xr, 0.25f, 1e-6f, yr, n);
    }
    auto y = zeros<float>(*dev, want.size());
    Pass p(*dev);
    if (mode == 0) rms_norm(p, xd->address(), xs, wd->address(), 1e-6f, y->address(), ys, n, rows);
    if (mode == 1) gated_rms_norm(p, xd->address(), xs, wd->address(), zd->address(), zs, 1e-6f, y->address(), ys, n, rows);
    if (mode == 2) l2_norm(p, xd->address(), xs, 0.25f, 1e-6f, y->address(), ys, n, rows);
    p.run();
    expect_close(from_device<float>(*dev, *y, want.size()), want, 1e-5, 1e-7, "mode " + std::to_string(mode));
  }
}

TEST(VulkanRowOps, ElementwiseMatchTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(2);
  const int64_t n = 1037;
  auto a = random_floats(size_t(n), rng, 4.0f);
  a[0] = 30.0f;  // far ends of the exponentials
  a[1] = -30.0f;
  const auto b = random_floats(size_t(n), rng, 4.0f);
  const auto y0 = random_floats(size_t(n), rng, 4.0f);
  const kernels::KernelTable& ref = kernels::ref_table();
  auto ad = to_device(*dev, a), bd = to_device(*dev, b);
  for (int op = 0; op < 7; ++op) {
    std::vector<float> want = y0;
    auto y = to_device(*dev, y0);
    Pass p(*dev);
    switch (op) {
      case 0: ref.add(a.data(), want.data(), n); add(p, ad->address(), y->address(), n); break;
      case 1: ref.swiglu(a.data(), b.data(), want.data(), n); swiglu(p, ad->address(), bd->address(), y->address(), n); break;
      case 2: ref.silu(a.data(), want.data(), n); silu(p, ad->address(), y->address(), n); break;
      case 3: ref.sigmoid(a.data(), want.data(), n); sigmoid(p, ad->address(), y->address(), n); break;
      case 4: ref.sigmoid_gate(a.data(), want.data(), n); sigmoid_gate(p, ad->address(), y->address(), n); break;
      case 5: ref.decay_gate(a.data(), b.data(), want.data(), n); decay_gate(p, ad->address(), bd->address(), y->address(), n); break;
      case 6: ref.axpy(0.37f, a.data(), want.data(), n); axpy(p, 0.37f, ad->address(), y->address(), n); break;
    }
    p.run();
    // 4e-7 relative is the CPU tables' e^x tolerance; a product of two such terms doubles it.
    expect_close(from_device<float>(*dev, *y, size_t(n)), want, 1e-6, 1e-30, "op " + std::to_string(op));
  }
}

TEST(VulkanRowOps, RopeMatchesTheReferencePerToken) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(3);
  const int64_t T = 3, heads = 5, head_stride = 26, token_stride = heads * head_stride + 3;
  const int half = 11;  // a partial rotary dimension: the rest of the head is untouched
  const auto x = random_floats(size_t(T * token_stride), rng);
  std::vector<float> cos(size_t(T * half)), sin(size_t(T * half));
  for (size_t i = 0; i < cos.size(); ++i) {
    cos[i] = std::cos(0.37f * float(i));
    sin[i] = std::sin(0.37f * float(i));
  }
  std::vector<float> want = x;
  for (int64_t t = 0; t < T; ++t)
    kernels::ref::rope(want.data() + t * token_stride, heads, head_stride, half, cos.data() + t * half,
                       sin.data() + t * half);
  auto xd = to_device(*dev, x), cd = to_device(*dev, cos), sd = to_device(*dev, sin);
  Pass p(*dev);
  RopeArgs a;
  a.x = xd->address();
  a.cos = cd->address();
  a.sin = sd->address();
  a.T = T;
  a.heads = heads;
  a.head_stride = head_stride;
  a.token_stride = token_stride;
  a.cs_stride = half;
  a.half = half;
  rope(p, a);
  p.run();
  const auto got = from_device<float>(*dev, *xd, x.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;  // products and sums as written
}

// The conv over a block equals the reference, and decoding the same rows one at a time equals the block.
TEST(VulkanRowOps, CausalConvMatchesTheReference) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(4);
  for (int64_t T : {1, 2, 7}) {
    const int64_t C = 77;
    const int K = 4;
    const auto x = random_floats(size_t(T * C), rng);
    const auto taps = random_floats(size_t(K * C), rng);
    const auto state0 = random_floats(size_t(C * K), rng);
    std::vector<float> want_y(size_t(T * C)), want_state = state0;
    kernels::ConvArgs ca;
    ca.x = x.data();
    ca.T = T;
    ca.C = C;
    ca.K = K;
    ca.taps = taps.data();
    ca.state = want_state.data();
    ca.y = want_y.data();
    ca.c0 = 0;
    ca.c1 = C;
    kernels::ref::causal_conv(ca);
    auto xd = to_device(*dev, x), td = to_device(*dev, taps), sd = to_device(*dev, state0);
    auto y = zeros<float>(*dev, size_t(T * C));
    Pass p(*dev);
    causal_conv(p, {xd->address(), td->address(), sd->address(), y->address(), T, C, K});
    p.run();
    // Taps summed in the reference's order: only SiLU's e^x differs.
    expect_close(from_device<float>(*dev, *y, size_t(T * C)), want_y, 1e-6, 1e-30, "y T=" + std::to_string(T));
    EXPECT_EQ(from_device<float>(*dev, *sd, size_t(C * K)), want_state) << "T=" << T;
  }
}

TEST(VulkanRowOps, ToF16GivesTheHostConversionsBits) {
  QWEN35_NEED_VULKAN();
  std::mt19937 rng(5);
  std::vector<float> x = random_floats(998, rng, 100.0f);
  for (float v : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 1e-8f, -6.1e-5f, 5.9604645e-8f, 2.9802322e-8f,
                  8.940697e-8f, 1.0009766f, 1.0004883f, std::nanf(""), INFINITY, -INFINITY})
    x.push_back(v);
  std::uniform_real_distribution<float> tiny(-1e-4f, 1e-4f);  // the f16 subnormal range
  for (int i = 0; i < 200; ++i) x.push_back(tiny(rng));
  auto xd = to_device(*dev, x);
  auto yd = zeros<uint16_t>(*dev, x.size());
  Pass p(*dev);
  to_f16(p, xd->address(), yd->address(), int64_t(x.size()));
  p.run();
  const auto got = from_device<uint16_t>(*dev, *yd, x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], f32_to_f16(x[i])) << "x=" << x[i];
}

}  // namespace
}  // namespace qwen35::vk
