// linear_each (several matrices, each over inputs of its own, in one pass: a decoded token's expert
// down projections) gives every output the bits linear() gives it alone, on every table, for
// float and block-format weights of mixed shapes, in a single synchronisation of the pool.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/compute.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

struct Case {
  DType dtype;
  int64_t rows, cols, T;
};

TEST(LinearEach, EachOutputIsItsOwnLinear) {
  // Mixed types, row counts that are not whole packed groups, a 2-row input beside 1-row ones.
  const Case cases[] = {{DType::Q4_K, 80, 512, 1}, {DType::Q8_0, 48, 96, 1},  {DType::F32, 33, 64, 1},
                        {DType::BF16, 17, 64, 2},  {DType::Q6_K, 64, 256, 1}, {DType::Q4_0, 160, 512, 1}};
  std::mt19937 rng(45);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightMatrix> plain;
  std::vector<std::vector<float>> xs;
  for (const Case& k : cases) {
    if (is_block_format(k.dtype)) {
      bytes.push_back(testing::random_block_rows(k.dtype, k.rows, k.cols, rng));
    } else {
      const std::vector<float> f = testing::random_floats(size_t(k.rows * k.cols), rng, 0.1f);
      bytes.emplace_back(dtype_bytes(k.dtype, size_t(k.rows * k.cols)));
      if (k.dtype == DType::F32) std::memcpy(bytes.back().data(), f.data(), f.size() * 4);
      else
        for (size_t i = 0; i < f.size(); ++i) {
          const uint16_t h = f32_to_bf16(f[i]);
          std::memcpy(bytes.back().data() + 2 * i, &h, 2);
        }
    }
    plain.push_back(WeightMatrix{k.dtype, bytes.back().data(), k.rows, k.cols, dtype_bytes(k.dtype, size_t(k.cols))});
    xs.push_back(testing::random_floats(size_t(k.T * k.cols), rng));
  }
  ThreadPool pool(2);
  for (const KernelTable* table : supported_tables()) {
    const Compute c{table, &pool};
    // The table's own layout where it packs the format, as weight_prep leaves it.
    std::vector<std::vector<uint8_t>> packed(plain.size());
    std::vector<WeightMatrix> w = plain;
    for (size_t i = 0; i < w.size(); ++i) {
      const PackedFormat& pf = table->packing;
      const size_t gb = pf.layout != 0 && is_block_format(w[i].dtype) ? pf.group_bytes(w[i].dtype, w[i].cols) : 0;
      if (gb == 0) continue;
      const int64_t groups = (w[i].rows + pf.group_rows - 1) / pf.group_rows;
      packed[i].resize(gb * size_t(groups));
      pf.pack(plain[i], 0, groups, packed[i].data());
      w[i] = WeightMatrix{w[i].dtype, packed[i].data(), w[i].rows, w[i].cols, 0, pf.layout, gb};
    }
    std::vector<Activations> in(w.size());
    std::vector<Activations*> in_ptr;
    std::vector<std::vector<float>> want(w.size()), got(w.size());
    std::vector<LinearOut> outs;
    for (size_t i = 0; i < w.size(); ++i) {
      const int64_t T = cases[i].T;
      want[i].assign(size_t(T * w[i].rows), 0.0f);
      got[i].assign(size_t(T * w[i].rows), -1.0f);
      Activations alone;
      alone.bind(xs[i].data(), T, w[i].cols);
      linear(c, alone, w[i], want[i].data(), w[i].rows);
      in[i].bind(xs[i].data(), T, w[i].cols);
      in_ptr.push_back(&in[i]);
      outs.push_back({&w[i], got[i].data(), w[i].rows});
    }
    const uint64_t before = pool.sync_count();
    linear_each(c, in_ptr, outs);
    EXPECT_EQ(pool.sync_count() - before, 1u) << table->name << ": one pass for all outputs";
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_EQ(0, std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4)) << table->name << " output " << i;
  }
}

}  // namespace
}  // namespace qwen35::kernels
