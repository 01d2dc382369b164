// A row range of a weight matrix (kernels::weight_rows) computes exactly the rows the whole matrix
// computes, for plain rows of every float dtype and for every block format in each table's own
// packed layout: the draft step's reduced LM head relies on it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/compute.h"
#include "kernels/weight_rows.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

using testing::random_block_rows;
using testing::random_floats;

struct Matrix {
  std::vector<uint8_t> plain_bytes, packed_bytes;
  WeightMatrix used;  // as `table` reads it: packed when the table packs this dtype
};

Matrix make(const KernelTable& table, DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  const size_t row_bytes = dtype_bytes(t, size_t(cols));
  if (is_block_format(t)) {
    m.plain_bytes = random_block_rows(t, rows, cols, rng);
  } else {
    const std::vector<float> v = random_floats(size_t(rows * cols), rng);
    m.plain_bytes.resize(row_bytes * size_t(rows));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::F32) std::memcpy(m.plain_bytes.data() + 4 * i, &v[i], 4);
      const uint16_t h = t == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      if (t != DType::F32) std::memcpy(m.plain_bytes.data() + 2 * i, &h, 2);
    }
  }
  m.used = WeightMatrix{t, m.plain_bytes.data(), rows, cols, row_bytes};
  const PackedFormat& f = table.packing;
  if (is_block_format(t) && f.layout != 0 && f.group_bytes(t, cols) != 0) {
    const int64_t groups = (rows + f.group_rows - 1) / f.group_rows;
    const size_t gb = f.group_bytes(t, cols);
    m.packed_bytes.assign(size_t(groups) * gb, 0);
    f.pack(m.used, 0, groups, m.packed_bytes.data());
    m.used = WeightMatrix{t, m.packed_bytes.data(), rows, cols, 0, f.layout, gb};
  }
  return m;
}

TEST(WeightRows, ARowRangeComputesTheRowsOfTheWholeMatrixBitForBit) {
  std::mt19937 rng(41);
  ThreadPool pool(2);
  const int64_t rows = 83, cols = 512;
  for (const KernelTable* table : supported_tables()) {
    const Compute c{table, &pool};
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
      const Matrix m = make(*table, t, rows, cols, rng);
      const int64_t g = layout_group_rows(m.used.layout);
      if (m.used.layout != 0) {
        EXPECT_EQ(g, table->packing.group_rows);
      }
      for (int64_t T : {1, 3}) {
        const std::vector<float> x = random_floats(size_t(T * cols), rng);
        std::vector<float> whole(size_t(T * rows));
        linear(c, x.data(), T, m.used, whole.data());
        // Ranges that start on a group, end inside one or at the matrix's end, and (plain rows only)
        // start anywhere.
        std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 16}, {16, 48}, {32, rows - 32}, {64, 5}, {80, 3}};
        if (g == 1) ranges.push_back({7, 29});
        for (auto [row0, n] : ranges) {
          const WeightMatrix v = weight_rows(m.used, row0, n);
          EXPECT_EQ(v.rows, n);
          std::vector<float> part(size_t(T * n), -1.0f);
          linear(c, x.data(), T, v, part.data());
          for (int64_t tt = 0; tt < T; ++tt)
            for (int64_t o = 0; o < n; ++o)
              ASSERT_EQ(std::memcmp(&part[size_t(tt * n + o)], &whole[size_t(tt * rows + row0 + o)], 4), 0)
                  << table->name << " " << dtype_name(t) << " rows [" << row0 << ", " << row0 + n << ") T=" << T
                  << " t=" << tt << " o=" << o;
        }
      }
      if (g > 1) {
        EXPECT_THROW(weight_rows(m.used, g / 2, 4), Error) << table->name;
      }
      EXPECT_THROW(weight_rows(m.used, 80, 4), Error);
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
