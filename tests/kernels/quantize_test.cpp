// Properties of the quantizers that hold whatever ggml does: bounded round-trip error, exact
// handling of zero, constant, huge and tiny rows, idempotence of the closed-form formats, rows
// independent of their neighbours and alignment, and the f16 rounding of the scales.
// (Byte equality with ggml itself: quantize_golden_test.cpp.)
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/quant/quant_ref.h"
#include "kernels/quant/quantize.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

using testing::random_floats;
using testing::weight_block_formats;

std::vector<uint8_t> quantized(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_bytes(t, x.size()));
  quant::quantize_row(t, x.data(), q.data(), int64_t(x.size()));
  return q;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  const std::vector<uint8_t> q = quantized(t, x);
  std::vector<float> y(x.size());
  quant::dequantize_row(t, q.data(), y.data(), int64_t(x.size()));
  return y;
}

double relative_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

// Relative rms error of a Gaussian row: measured values (seed 1) plus ~25%. Ordered by bits per
// weight, so a quantizer that silently degrades to a coarser grid fails.
double error_bound(DType t) {
  switch (t) {
    case DType::Q8_0: return 0.007;
    case DType::Q6_K: return 0.023;
    case DType::Q5_K: return 0.045;
    case DType::Q5_1: return 0.048;
    case DType::Q5_0: return 0.054;
    case DType::Q4_K: return 0.09;
    case DType::Q4_1: return 0.098;
    case DType::IQ4_NL:
    case DType::IQ4_XS: return 0.096;
    case DType::Q4_0: return 0.108;
    case DType::Q3_K: return 0.19;
    case DType::Q2_K: return 0.37;
    default: return 0;
  }
}

TEST(Quantize, GaussianRoundTripErrorIsBounded) {
  std::mt19937 rng(1);
  const std::vector<float> x = random_floats(256 * 64, rng);
  for (DType t : weight_block_formats()) {
    const double err = relative_rms_error(x, round_trip(t, x));
    EXPECT_LT(err, error_bound(t)) << dtype_name(t);
    EXPECT_GT(err, error_bound(t) / 4) << dtype_name(t) << ": suspiciously exact";
  }
}

TEST(Quantize, ZeroRowsDequantizeToZero) {
  const std::vector<float> x(512, 0.0f);
  for (DType t : weight_block_formats())
    for (float y : round_trip(t, x)) ASSERT_EQ(y, 0.0f) << dtype_name(t);
  // The closed-form formats store all-zero blocks.
  for (DType t : {DType::Q8_0, DType::Q4_1, DType::Q5_1})
    for (uint8_t b : quantized(t, x)) ASSERT_EQ(b, 0) << dtype_name(t);
}

TEST(Quantize, ConstantRowsAreNearlyExact) {
  for (float c : {0.37f, -2.5f, 0.05f}) {
    const std::vector<float> x(512, c);
    for (DType t : weight_block_formats()) {
      const std::vector<float> y = round_trip(t, x);
      // One value per block: only the f16 scale and the grid step rounding remain.
      const double tol = t == DType::Q2_K || t == DType::Q3_K ? 0.05 : 0.01;
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], c, tol * std::fabs(c)) << dtype_name(t) << " c=" << c << " i=" << i;
    }
  }
}

TEST(Quantize, HugeAndTinyValuesStayFinite) {
  std::mt19937 rng(2);
  // Scales of 2^-24 .. 65504 keep their precision for rows of about 1e-2 .. 1e4; below that
  // they round on the f16 subnormal grid (step 2^-24) or flush to zero.
  const double subnormal_step = std::ldexp(1.0, -24);
  for (float scale : {1e4f, 1e-2f, 1e-4f, 1e-8f, 1e-20f, 1e-38f}) {
    std::vector<float> x = random_floats(512, rng, scale);
    for (DType t : weight_block_formats()) {
      const std::vector<float> y = round_trip(t, x);
      double amax = 0;
      for (float v : x) amax = std::max(amax, double(std::fabs(v)));
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(t) << " scale " << scale;
        // The quants come from the unrounded scale, so a scale rounded up to the subnormal grid
        // can overshoot by up to 128 of its steps; never more.
        ASSERT_LE(std::fabs(y[i]), 1.5 * amax + 128 * subnormal_step) << dtype_name(t) << " scale " << scale;
      }
      if (scale >= 1e-2f) {
        EXPECT_LT(relative_rms_error(x, y), error_bound(t) * 1.5) << dtype_name(t) << " scale " << scale;
      }
    }
  }
}

TEST(Quantize, ClosedFormFormatsAreIdempotent) {
  // Their dequantized values lie on the block's grid, and requantizing a grid point returns it.
  std::mt19937 rng(3);
  const std::vector<float> x = random_floats(256 * 16, rng);
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1})
    EXPECT_EQ(quantized(t, round_trip(t, x)), quantized(t, x)) << dtype_name(t);
}

TEST(Quantize, Q8_0RoundsHalfAwayFromZeroLikeRoundf) {
  // A block whose scale is exactly 1 (amax 127), so the quants are roundf of the inputs.
  std::vector<float> x(32);
  const float values[] = {0.5f, -0.5f, 1.5f, -2.5f, 0.49999997f, -0.49999997f, 126.5f, 2.5000002f};
  for (int j = 0; j < 32; ++j) x[size_t(j)] = j < 8 ? values[j] : (j == 31 ? 127.0f : 0.25f * float(j - 16));
  const std::vector<uint8_t> q = quantized(DType::Q8_0, x);
  ASSERT_EQ(f16_to_f32(uint16_t(q[0] | (q[1] << 8))), 1.0f);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(int8_t(q[size_t(2 + j)]), int8_t(std::roundf(x[size_t(j)]))) << "x=" << x[size_t(j)];
}

TEST(Quantize, RowsAreIndependentOfNeighboursAndAlignment) {
  std::mt19937 rng(4);
  const int64_t rows = 5, cols = 768;
  const std::vector<float> x = random_floats(size_t(rows * cols), rng);
  for (DType t : weight_block_formats()) {
    const size_t row_bytes = dtype_bytes(t, cols);
    std::vector<uint8_t> all(rows * row_bytes);
    quant::quantize_rows(t, x.data(), rows, cols, all.data());
    for (int64_t r = 0; r < rows; ++r) {
      // A misaligned copy of the row in, a misaligned buffer out.
      std::vector<float> shifted(size_t(cols) + 1);
      std::memcpy(shifted.data() + 1, x.data() + r * cols, size_t(cols) * 4);
      std::vector<uint8_t> one(row_bytes + 3);
      quant::quantize_row(t, shifted.data() + 1, one.data() + 3, cols);
      ASSERT_EQ(0, std::memcmp(one.data() + 3, all.data() + r * row_bytes, row_bytes)) << dtype_name(t) << " row " << r;
    }
  }
}

TEST(Quantize, RejectsBadShapesAndFormats) {
  std::vector<float> x(256);
  std::vector<uint8_t> out(1024);
  EXPECT_THROW(quant::quantize_row(DType::Q4_K, x.data(), out.data(), 128), Error);
  EXPECT_THROW(quant::quantize_row(DType::Q8_0, x.data(), out.data(), 33), Error);
  EXPECT_THROW(quant::quantize_row(DType::BF16, x.data(), out.data(), 256), Error);
  EXPECT_THROW(quant::quantize_row(DType::Q8_K, x.data(), out.data(), 256), Error);
  EXPECT_FALSE(quant::can_quantize(DType::F32));
  for (DType t : weight_block_formats()) EXPECT_TRUE(quant::can_quantize(t)) << dtype_name(t);
}

// ggml stores every scale with GGML_FP32_TO_FP16, which rounds to nearest even, with subnormals,
// and NaN as 0x7e00 with its sign. The CPU's own conversion (F16C) is an independent oracle for
// everything but NaN payloads.
__attribute__((target("f16c"))) uint16_t hardware_f16(float f) {
  return uint16_t(_cvtss_sh(f, 0));  // 0: round to nearest even
}

TEST(Quantize, ScalesRoundToF16LikeGgml) {
  // Edges: overflow, the last finite value, ties to even at the bottom of the subnormals.
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -24)), 0x0002);
  EXPECT_EQ(f32_to_f16(std::ldexp(2.5f, -24)), 0x0002);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  ASSERT_TRUE(__builtin_cpu_supports("f16c")) << "the F16C comparison needs an x86-64 CPU with F16C";
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 4093) {
    float f;
    const uint32_t b = uint32_t(bits);
    std::memcpy(&f, &b, 4);
    const uint16_t want = std::isnan(f) ? uint16_t(((b >> 16) & 0x8000u) | 0x7e00u) : hardware_f16(f);
    ASSERT_EQ(f32_to_f16(f), want) << std::hex << b;
  }
}

}  // namespace
}  // namespace qwen35::kernels
