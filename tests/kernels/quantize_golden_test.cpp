// Our block formats against ggml itself (tests/data/quant/README.md: ggml at llama.cpp 3f545be,
// the quantized bytes of X from ggml_quantize_chunk without an importance matrix, their
// to_float, the CPU backend's activation rows of Y and its vec_dot):
//   - quantize_row(X) gives ggml's bytes, row by row, for every format;
//   - dequantize_row(ggml's bytes) gives ggml's floats bit for bit (ggml's dequantizers, like its
//     quantizers, live in libggml-base, built without FMA, so there is no contraction to allow for);
//   - the canonical dot of ggml's weight rows with ggml's own activation rows gives vec_dot up to
//     float summation order; with our activation quantizer it stays within 1e-4 .. 3e-3 of the
//     dot's magnitude (ours keeps an f32 block scale and rounds half to even; ggml's Q8_0/Q8_1
//     store an f16 scale, Q8_1 an f16 sum, and Q8_K scales by -127/max, so the activation
//     integers and scales differ slightly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "kernels/quant/act_format.h"
#include "kernels/quant/quant_ref.h"
#include "kernels/quant/quantize.h"
#include "quant_testing.h"
#include "support/test_data.h"

namespace qwen35::kernels {
namespace {

constexpr int64_t kRows = 24, kActRows = 6, kCols = 768;

const test::Golden& golden() {
  static const test::Golden g("quant/ggml_quant_goldens.safetensors");
  return g;
}

std::string key(DType t, const char* what) {
  std::string name(dtype_name(t));
  for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  return name + "." + what;
}

const uint8_t* bytes(const std::string& name, size_t expected) {
  const TensorView& v = golden().view(name);
  EXPECT_EQ(v.nbytes, expected) << name;
  return v.as<uint8_t>();
}

double squared_error(const float* a, const float* x, int64_t n) {
  double e = 0;
  for (int64_t j = 0; j < n; ++j) e += (double(a[j]) - x[j]) * (double(a[j]) - x[j]);
  return e;
}

bool is_closed_form(DType t) {
  return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1;
}

TEST(QuantizeGolden, InputsHaveTheDocumentedShapes) {
  EXPECT_EQ(golden().shape("X"), (Shape{kRows, kCols}));
  EXPECT_EQ(golden().shape("Y"), (Shape{kActRows, kCols}));
  for (DType t : testing::weight_block_formats()) {
    EXPECT_EQ(golden().shape(key(t, "quant")), (Shape{kRows, int64_t(dtype_bytes(t, kCols))})) << dtype_name(t);
    EXPECT_EQ(golden().shape(key(t, "dot")), (Shape{kRows, kActRows})) << dtype_name(t);
  }
}

TEST(QuantizeGolden, BytesAreGgmls) {
  const std::vector<float> x = golden().f32("X");
  for (DType t : testing::weight_block_formats()) {
    const size_t row_bytes = dtype_bytes(t, kCols);
    const uint8_t* want = bytes(key(t, "quant"), row_bytes * kRows);
    std::vector<uint8_t> got(row_bytes * kRows);
    quant::quantize_rows(t, x.data(), kRows, kCols, got.data());
    int identical = 0;
    std::vector<float> ours(kCols), theirs(kCols);
    for (int64_t r = 0; r < kRows; ++r) {
      const bool same = std::memcmp(got.data() + r * row_bytes, want + r * row_bytes, row_bytes) == 0;
      identical += same;
      // The weaker promise for the searched formats: never a worse reconstruction than ggml's.
      quant::dequantize_row(t, got.data() + r * row_bytes, ours.data(), kCols);
      quant::dequantize_row(t, want + r * row_bytes, theirs.data(), kCols);
      const float* xr = x.data() + r * kCols;
      EXPECT_LE(squared_error(ours.data(), xr, kCols), squared_error(theirs.data(), xr, kCols))
          << dtype_name(t) << " row " << r;
      // Closed forms must be identical; the searched ones are too (same searches, same order).
      EXPECT_TRUE(same) << dtype_name(t) << " row " << r << (is_closed_form(t) ? " (closed form)" : " (searched)");
    }
    std::printf("[ golden   ] %-6s %2d of %lld rows byte-identical to ggml\n", std::string(dtype_name(t)).c_str(),
                identical, static_cast<long long>(kRows));
  }
}

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(QuantizeGolden, DequantizationIsGgmlsBitForBit) {
  for (DType t : testing::weight_block_formats()) {
    const size_t row_bytes = dtype_bytes(t, kCols);
    const uint8_t* q = bytes(key(t, "quant"), row_bytes * kRows);
    const std::vector<float> want = golden().f32(key(t, "dequant"));
    std::vector<float> got(size_t(kRows * kCols));
    for (int64_t r = 0; r < kRows; ++r) quant::dequantize_row(t, q + r * row_bytes, got.data() + r * kCols, kCols);
    int64_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (float_bits(got[i]) != float_bits(want[i]) && mismatches++ < 3)
        ADD_FAILURE() << dtype_name(t) << " element " << i << ": " << got[i] << " vs ggml " << want[i];
    EXPECT_EQ(mismatches, 0) << dtype_name(t);
  }
}

// ggml's activation row (Q8_0: f16 d + 32 int8; Q8_1: f16 d, f16 s + 32 int8; Q8_K: f32 d + 256
// int8 + 16 int16 sums) rewritten in our activation layout: the same integers and scales.
std::vector<uint8_t> ggml_act_as_ours(DType weight, const uint8_t* rows, ActLayout& layout) {
  const ActFormat fmt = act_format_for(weight);
  layout = act_layout(fmt, kCols);
  const bool q8_1 = weight == DType::Q4_1 || weight == DType::Q5_1;
  const int64_t B = act_block(fmt);
  const size_t block_bytes = fmt == ActFormat::kQ8x256 ? 292 : (q8_1 ? 36 : 34);
  std::vector<uint8_t> out(size_t(kActRows) * layout.row_bytes, 0);
  for (int64_t t = 0; t < kActRows; ++t) {
    const uint8_t* src = rows + size_t(t) * size_t(kCols / B) * block_bytes;
    uint8_t* row = out.data() + size_t(t) * layout.row_bytes;
    auto* q = reinterpret_cast<int8_t*>(row + layout.q);
    auto* d = reinterpret_cast<float*>(row + layout.d);
    for (int64_t b = 0; b < kCols / B; ++b) {
      const uint8_t* blk = src + size_t(b) * block_bytes;
      if (fmt == ActFormat::kQ8x256) {
        std::memcpy(&d[b], blk, 4);
        std::memcpy(q + b * B, blk + 4, size_t(B));
      } else {
        uint16_t h;
        std::memcpy(&h, blk, 2);
        d[b] = f16_to_f32(h);
        std::memcpy(q + b * B, blk + (q8_1 ? 4 : 2), size_t(B));
      }
    }
    compute_act_sums(fmt, kCols, row);
  }
  return out;
}

// sum_j |w_j a_j|: the scale of a dot's rounding.
double magnitude(const float* w, const float* a) {
  double m = 0;
  for (int64_t j = 0; j < kCols; ++j) m += std::fabs(double(w[j]) * a[j]);
  return m;
}

TEST(QuantizeGolden, CanonicalDotWithGgmlsActivationsIsVecDot) {
  for (DType t : testing::weight_block_formats()) {
    const size_t row_bytes = dtype_bytes(t, kCols);
    const uint8_t* w = bytes(key(t, "quant"), row_bytes * kRows);
    const std::vector<float> wf = golden().f32(key(t, "dequant"));
    const std::vector<float> dots = golden().f32(key(t, "dot"));
    ActLayout layout;
    const std::vector<uint8_t> act = ggml_act_as_ours(t, golden().view(key(t, "act")).as<uint8_t>(), layout);
    const ActRows a{act_format_for(t), kActRows, kCols, act.data(), layout};
    // Same integers and scales; only the float summation order differs (ggml sums SIMD partials).
    // Q4_1/Q5_1: ggml's min term uses Q8_1's f16 s = f16(d * sum q), ours d * sum q exactly.
    const bool f16_sum = t == DType::Q4_1 || t == DType::Q5_1;
    const double tol = f16_sum ? 2e-3 : 1e-5;
    double worst = 0;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kActRows; ++j) {
        std::vector<float> af(kCols);
        for (int64_t i = 0; i < kCols; ++i) af[size_t(i)] = a.d(j)[i / act_block(a.fmt)] * float(a.q(j)[i]);
        const double mag = magnitude(wf.data() + r * kCols, af.data());
        const float got = quant::dot_row(t, w + r * row_bytes, a, j);
        const float want = dots[size_t(r * kActRows + j)];
        if (mag > 0) worst = std::max(worst, std::fabs(double(got) - want) / mag);
        EXPECT_NEAR(got, want, tol * mag + 1e-30) << dtype_name(t) << " row " << r << " act " << j;
      }
    std::printf("[ golden   ] %-6s dot with ggml's activations: worst |ours - vec_dot| / magnitude %.2e\n",
                std::string(dtype_name(t)).c_str(), worst);
  }
}

TEST(QuantizeGolden, CanonicalDotWithOurActivationsIsCloseToVecDot) {
  const std::vector<float> y = golden().f32("Y");
  for (DType t : testing::weight_block_formats()) {
    const size_t row_bytes = dtype_bytes(t, kCols);
    const uint8_t* w = bytes(key(t, "quant"), row_bytes * kRows);
    const std::vector<float> wf = golden().f32(key(t, "dequant"));
    const std::vector<float> dots = golden().f32(key(t, "dot"));
    const ActFormat fmt = act_format_for(t);
    const ActLayout layout = act_layout(fmt, kCols);
    std::vector<uint8_t> act(size_t(kActRows) * layout.row_bytes);
    quantize_act_ref(fmt, y.data(), kActRows, kCols, kCols, act.data());
    const ActRows a{fmt, kActRows, kCols, act.data(), layout};
    // Measured worst cases: 1.3e-6 (Q8_K partners: ggml's -127/max scale rarely changes an
    // integer), 1.4e-4 (Q8_0 partners: f16 vs f32 block scale), 1.1e-3 (Q4_1/Q5_1: also Q8_1's
    // f16 sum). The bounds keep a margin of 3x or more over those.
    const double tol = fmt == ActFormat::kQ8x256 ? 1e-4 : (t == DType::Q4_1 || t == DType::Q5_1 ? 3e-3 : 1e-3);
    double worst = 0;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kActRows; ++j) {
        const double mag = magnitude(wf.data() + r * kCols, y.data() + j * kCols);
        const float got = quant::dot_row(t, w + r * row_bytes, a, j);
        const float want = dots[size_t(r * kActRows + j)];
        if (mag > 0) worst = std::max(worst, std::fabs(double(got) - want) / mag);
        EXPECT_NEAR(got, want, tol * mag + 1e-30) << dtype_name(t) << " row " << r << " act " << j;
      }
    std::printf("[ golden   ] %-6s dot with our activations: worst |ours - vec_dot| / magnitude %.2e\n",
                std::string(dtype_name(t)).c_str(), worst);
  }
}

}  // namespace
}  // namespace qwen35::kernels
