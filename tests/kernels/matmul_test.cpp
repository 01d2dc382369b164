// Every kernel table this CPU supports against the scalar reference, on random, odd-sized and
// misaligned inputs, for every weight dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

struct WeightBuffer {
  std::vector<uint8_t> bytes;
  WeightMatrix m;
};

// Random weights stored as `dtype`, starting `offset` bytes into the buffer (misalignment).
WeightBuffer make_weights(DType dtype, int64_t rows, int64_t cols, size_t offset, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  WeightBuffer w;
  const size_t row_bytes = dtype_bytes(dtype, size_t(cols));
  w.bytes.resize(offset + row_bytes * size_t(rows));
  uint8_t* base = w.bytes.data() + offset;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = dist(rng);
      uint8_t* p = base + size_t(r) * row_bytes;
      if (dtype == DType::F32) std::memcpy(p + c * 4, &v, 4);
      else {
        uint16_t h = dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
        std::memcpy(p + c * 2, &h, 2);
      }
    }
  w.m = WeightMatrix{dtype, base, rows, cols, row_bytes};
  return w;
}

TEST(Matmul, EveryTableMatchesReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const KernelTable& ref = ref_table();
  for (const KernelTable* table : supported_tables()) {
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      for (auto [rows, cols, T] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {1, 1, 1}, {3, 7, 1}, {17, 33, 2}, {64, 64, 5}, {5, 129, 9}, {40, 200, 4}, {9, 1000, 3}}) {
        WeightBuffer w = make_weights(dtype, rows, cols, 2, rng);
        std::vector<float> xbuf(size_t(T * (cols + 3)) + 1);
        for (float& v : xbuf) v = dist(rng);
        const float* x = xbuf.data() + 1;  // misaligned, strided rows
        const int64_t xs = cols + 3, ys = rows + 2;
        std::vector<float> want(size_t(T * ys), -1.0f), got(size_t(T * ys), -1.0f);
        ref.matmul[size_t(dtype)](x, T, xs, w.m, 0, rows, want.data(), ys);
        table->matmul[size_t(dtype)](x, T, xs, w.m, 0, rows, got.data(), ys);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t o = 0; o < ys; ++o) {
            const float a = got[size_t(t * ys + o)], b = want[size_t(t * ys + o)];
            // Only summation order differs: error bounded by a few ulps of the sum of |terms|.
            EXPECT_NEAR(a, b, 1e-5f * float(cols) + 1e-5f * std::fabs(b))
                << table->name << " " << dtype_name(dtype) << " " << rows << "x" << cols << " T=" << T << " t=" << t
                << " o=" << o;
          }
        // A sub-range of output rows leaves the others untouched.
        std::vector<float> part(size_t(T * ys), -7.0f);
        table->matmul[size_t(dtype)](x, T, xs, w.m, rows / 2, rows, part.data(), ys);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t o = 0; o < rows / 2; ++o) EXPECT_EQ(part[size_t(t * ys + o)], -7.0f);
      }
    }
  }
}

// A token's outputs must not depend on how many tokens share its block (prompt lookup
// verification compares a block against single-token decoding bit for bit): large blocks take
// another code path, so compare them with one-token calls exactly.
TEST(Matmul, ResultsDoNotDependOnTheBlockSize) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const KernelTable* table : supported_tables()) {
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      for (auto [rows, cols, T] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {70, 1000, 40}, {33, 1536, 17}, {9, 15, 20}, {64, 4096, 70}}) {
        WeightBuffer w = make_weights(dtype, rows, cols, 0, rng);
        std::vector<float> x(size_t(T * cols));
        for (float& v : x) v = dist(rng);
        std::vector<float> block(static_cast<size_t>(T * rows)), one(static_cast<size_t>(rows));
        table->matmul[size_t(dtype)](x.data(), T, cols, w.m, 0, rows, block.data(), rows);
        for (int64_t t = 0; t < T; ++t) {
          table->matmul[size_t(dtype)](x.data() + t * cols, 1, cols, w.m, 0, rows, one.data(), rows);
          ASSERT_EQ(0, std::memcmp(one.data(), block.data() + t * rows, size_t(rows) * sizeof(float)))
              << table->name << " " << dtype_name(dtype) << " " << rows << "x" << cols << " T=" << T << " t=" << t;
        }
        // And against the reference, within summation-order rounding.
        std::vector<float> ref(size_t(T * rows));
        ref_table().matmul[size_t(dtype)](x.data(), T, cols, w.m, 0, rows, ref.data(), rows);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(block[i], ref[i], 1e-5f * float(cols) + 1e-5f * std::fabs(ref[i]));
      }
    }
  }
}

TEST(Matmul, DotAndAxpyMatchReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const KernelTable* table : supported_tables()) {
    for (int64_t n : {0, 1, 5, 16, 17, 31, 64, 129}) {
      std::vector<float> a(size_t(n) + 1), b(size_t(n) + 1), y1(size_t(n) + 1), y2;
      for (auto* v : {&a, &b, &y1})
        for (float& x : *v) x = dist(rng);
      y2 = y1;
      EXPECT_NEAR(table->dot(a.data() + 1, b.data() + 1, n), ref_table().dot(a.data() + 1, b.data() + 1, n), 1e-4f);
      table->axpy(0.5f, a.data() + 1, y1.data() + 1, n);
      ref_table().axpy(0.5f, a.data() + 1, y2.data() + 1, n);
      for (int64_t i = 0; i <= n; ++i) EXPECT_NEAR(y1[size_t(i)], y2[size_t(i)], 1e-5f) << table->name;
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
