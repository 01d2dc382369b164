// linear_each (several matrices, each over inputs of its own, in one pass: a decoded token's expert
// down projections) gives every output the bits linear() gives it alone, on every table, for
// float and block-format weights of mixed shapes, in a single synchronisation of the pool.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/compute.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

struct Case {
  DType dtype;
  int64_t rows, cols, T;
};

// Random weights of each case's type and shape (plain rows, as a file stores them).
struct Weights {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightMatrix> plain;
};
Weights random_weights(std::span<const Case> cases, std::mt19937& rng) {
  Weights out;
  for (const Case& k : cases) {
    if (is_block_format(k.dtype)) {
      out.bytes.push_back(testing::random_block_rows(k.dtype, k.rows, k.cols, rng));
    } else {
      const std::vector<float> f = testing::random_floats(size_t(k.rows * k.cols), rng, 0.1f);
      out.bytes.emplace_back(dtype_bytes(k.dtype, size_t(k.rows * k.cols)));
      if (k.dtype == DType::F32) std::memcpy(out.bytes.back().data(), f.data(), f.size() * 4);
      else
        for (size_t i = 0; i < f.size(); ++i) {
          const uint16_t h = f32_to_bf16(f[i]);
          std::memcpy(out.bytes.back().data() + 2 * i, &h, 2);
        }
    }
    out.plain.push_back(
        WeightMatrix{k.dtype, out.bytes.back().data(), k.rows, k.cols, dtype_bytes(k.dtype, size_t(k.cols))});
  }
  return out;
}

// The weights in the table's own layout where it packs the format, as weight_prep leaves them.
std::vector<WeightMatrix> packed_for(const KernelTable& table, const std::vector<WeightMatrix>& plain,
                                     std::vector<std::vector<uint8_t>>& packed) {
  packed.assign(plain.size(), {});
  std::vector<WeightMatrix> w = plain;
  for (size_t i = 0; i < w.size(); ++i) {
    const PackedFormat& pf = table.packing;
    const size_t gb = pf.layout != 0 && is_block_format(w[i].dtype) ? pf.group_bytes(w[i].dtype, w[i].cols) : 0;
    if (gb == 0) continue;
    const int64_t groups = (w[i].rows + pf.group_rows - 1) / pf.group_rows;
    packed[i].resize(gb * size_t(groups));
    pf.pack(plain[i], 0, groups, packed[i].data());
    w[i] = WeightMatrix{w[i].dtype, packed[i].data(), w[i].rows, w[i].cols, 0, pf.layout, gb};
  }
  return w;
}

TEST(LinearEach, EachOutputIsItsOwnLinear) {
  // Mixed types, row counts that are not whole packed groups, a 2-row input beside 1-row ones.
  const Case cases[] = {{DType::Q4_K, 80, 512, 1}, {DType::Q8_0, 48, 96, 1},  {DType::F32, 33, 64, 1},
                        {DType::BF16, 17, 64, 2},  {DType::Q6_K, 64, 256, 1}, {DType::Q4_0, 160, 512, 1}};
  std::mt19937 rng(45);
  const Weights ws = random_weights(cases, rng);
  std::vector<std::vector<float>> xs;
  for (const Case& k : cases) xs.push_back(testing::random_floats(size_t(k.T * k.cols), rng));
  ThreadPool pool(2);
  for (const KernelTable* table : supported_tables()) {
    const Compute c{table, &pool};
    std::vector<std::vector<uint8_t>> packed;
    const std::vector<WeightMatrix> w = packed_for(*table, ws.plain, packed);
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

// A block's experts: each output over a range of one gathered input (ranges starting a token tile,
// of fewer rows than a tile, of several tiles and a remainder, empty), beside an output over a
// second input of its own, gives the bits linear() gives over those rows bound alone. All inputs
// quantize in one pass and all outputs run in another.
TEST(LinearEach, RowRangesAreTheirOwnLinear) {
  const Case cases[] = {{DType::Q4_K, 80, 256, 0}, {DType::Q4_K, 48, 256, 0}, {DType::Q8_0, 64, 256, 0},
                        {DType::Q6_K, 32, 256, 0}, {DType::BF16, 17, 256, 0}, {DType::F32, 16, 256, 0},
                        {DType::Q4_0, 40, 128, 0}};
  const RowRange ranges[] = {{0, 11}, {16, 3}, {24, 13}, {8, 0}, {40, 9}, {0, 49}, {0, 20}};
  std::mt19937 rng(46);
  const Weights ws = random_weights(cases, rng);
  const std::vector<float> gathered = testing::random_floats(size_t(49 * 256), rng);
  const std::vector<float> other = testing::random_floats(size_t(20 * 128), rng);
  ThreadPool pool(2);
  for (const KernelTable* table : supported_tables()) {
    const Compute c{table, &pool};
    std::vector<std::vector<uint8_t>> packed;
    const std::vector<WeightMatrix> w = packed_for(*table, ws.plain, packed);
    Activations in, in2;
    in.bind(gathered.data(), 49, 256);
    in2.bind(other.data(), 20, 128);
    std::vector<Activations*> xs;
    std::vector<std::vector<float>> want(w.size()), got(w.size());
    std::vector<LinearOut> outs;
    for (size_t i = 0; i < w.size(); ++i) {
      const RowRange r = ranges[i];
      const bool last = i + 1 == w.size();
      const float* x = (last ? other.data() : gathered.data()) + r.r0 * w[i].cols;
      want[i].assign(size_t(r.n * w[i].rows), 0.0f);
      got[i].assign(size_t(r.n * w[i].rows), -1.0f);
      Activations alone;
      alone.bind(x, r.n, w[i].cols);
      linear(c, alone, w[i], want[i].data(), w[i].rows);
      xs.push_back(last ? &in2 : &in);
      outs.push_back({&w[i], got[i].data(), w[i].rows});
    }
    const uint64_t before = pool.sync_count();
    linear_each(c, xs, ranges, outs);
    EXPECT_EQ(pool.sync_count() - before, 2u) << table->name << ": one quantization pass, one matmul pass";
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_EQ(0, std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4)) << table->name << " output " << i;

    // Ranges outside the input, or (where the table reads token tiles) not starting one.
    const RowRange past[] = {{40, 10}};
    EXPECT_THROW(linear_each(c, std::span(xs.data(), 1), past, std::span(outs.data(), 1)), Error);
    const RowRange mid_tile[] = {{3, 9}};
    if (table->act_tiles) {
      EXPECT_THROW(linear_each(c, std::span(xs.data(), 1), mid_tile, std::span(outs.data(), 1)), Error);
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
