// The scalar reference of the block formats: decoding agrees with dequantization, the canonical
// dot equals the exact dot of the dequantized operands up to float rounding, and the activation
// quantizer follows its written rules.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/quant/act_format.h"
#include "kernels/quant/quant_ref.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

using testing::random_block_rows;
using testing::random_floats;
using testing::weight_block_formats;

std::vector<float> dequantized_act(const ActRows& a, int64_t t) {
  std::vector<float> out(size_t(a.n));
  const int64_t B = act_block(a.fmt);
  for (int64_t j = 0; j < a.n; ++j) out[size_t(j)] = a.d(t)[j / B] * float(a.q(t)[j]);
  return out;
}

TEST(QuantRef, DotIsTheDotOfDequantizedOperands) {
  std::mt19937 rng(3);
  for (DType t : weight_block_formats()) {
    const int64_t rows = 5, cols = 512;
    std::vector<uint8_t> w = random_block_rows(t, rows, cols, rng);
    const ActFormat fmt = act_format_for(t);
    const int64_t T = 3;
    std::vector<float> x = random_floats(size_t(T * cols), rng);
    std::vector<uint8_t> abuf(size_t(T) * act_layout(fmt, cols).row_bytes);
    quantize_act_ref(fmt, x.data(), T, cols, cols, abuf.data());
    ActRows a{fmt, T, cols, abuf.data(), act_layout(fmt, cols)};
    const size_t row_bytes = dtype_bytes(t, size_t(cols));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> wf(static_cast<size_t>(cols));
      quant::dequantize_row(t, w.data() + size_t(r) * row_bytes, wf.data(), cols);
      for (int64_t tt = 0; tt < T; ++tt) {
        std::vector<float> af = dequantized_act(a, tt);
        double exact = 0, mag = 0;
        for (int64_t j = 0; j < cols; ++j) {
          exact += double(wf[size_t(j)]) * double(af[size_t(j)]);
          mag += std::fabs(double(wf[size_t(j)]) * double(af[size_t(j)]));
        }
        const float got = quant::dot_row(t, w.data() + size_t(r) * row_bytes, a, tt);
        EXPECT_NEAR(got, exact, 1e-5 * mag + 1e-30) << dtype_name(t) << " row " << r << " token " << tt;
      }
    }
  }
}

TEST(QuantRef, ActivationQuantizerRules) {
  for (ActFormat fmt : {ActFormat::kQ8x32, ActFormat::kQ8x256}) {
    const int64_t n = 512, B = act_block(fmt);
    std::vector<float> x;
    std::mt19937 rng(5);
    x = random_floats(size_t(n), rng, 3.0f);
    for (int64_t j = 0; j < B; ++j) x[size_t(j)] = 0;          // block 0: all zero
    x[size_t(B)] = std::numeric_limits<float>::infinity();   // block 1: not finite
    const ActLayout l = act_layout(fmt, n);
    std::vector<uint8_t> buf(l.row_bytes);
    quantize_act_ref(fmt, x.data(), 1, n, n, buf.data());
    ActRows a{fmt, 1, n, buf.data(), l};
    EXPECT_EQ(a.d(0)[0], 0.0f);
    EXPECT_TRUE(std::isnan(a.d(0)[1]));
    for (int64_t j = 0; j < 2 * B; ++j) EXPECT_EQ(a.q(0)[j], 0);
    for (int64_t b = 2; b < n / B; ++b) {
      float amax = 0;
      for (int64_t j = 0; j < B; ++j) amax = std::max(amax, std::fabs(x[size_t(b * B + j)]));
      ASSERT_EQ(a.d(0)[b], amax / 127.0f);
      for (int64_t j = 0; j < B; ++j) {
        const float v = x[size_t(b * B + j)] * (1.0f / a.d(0)[b]);
        EXPECT_EQ(a.q(0)[b * B + j], int8_t(std::nearbyint(v)));
        EXPECT_LE(std::abs(int(a.q(0)[b * B + j])), 127);
      }
    }
    for (int64_t g = 0; g < n / 32; ++g) {
      int s = 0;
      for (int j = 0; j < 32; ++j) s += a.q(0)[g * 32 + j];
      EXPECT_EQ(fmt == ActFormat::kQ8x32 ? a.s32(0)[g] : a.h32(0)[g], s);
    }
    if (fmt == ActFormat::kQ8x256)
      for (int64_t g = 0; g < n / 16; ++g) {
        int s = 0;
        for (int j = 0; j < 16; ++j) s += a.q(0)[g * 16 + j];
        EXPECT_EQ(a.s16(0)[g], s);
      }
  }
}

}  // namespace
}  // namespace qwen35::kernels
