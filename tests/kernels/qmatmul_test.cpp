// Every kernel table this CPU supports against the scalar reference for block-format weights:
// activation quantization byte for byte, packing round trips, and matmuls bit for bit (the
// canonical integer dot makes every table, block size and row range give identical floats).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/compute.h"
#include "kernels/kernels.h"
#include "kernels/quant/quant_ref.h"
#include "quant_testing.h"

namespace qwen35::kernels {
namespace {

using testing::random_block_rows;
using testing::random_floats;
using testing::weight_block_formats;

// A matrix of block rows prepared for one table: plain (with a misaligned start) and, when the
// table packs this dtype, its packed copy.
struct Prepared {
  std::vector<uint8_t> plain_bytes, packed_bytes;
  WeightMatrix plain, used;
};

Prepared prepare(const KernelTable& table, DType t, int64_t rows, int64_t cols, const std::vector<uint8_t>& raw) {
  Prepared p;
  p.plain_bytes.assign(raw.size() + 1, 0);
  std::memcpy(p.plain_bytes.data() + 1, raw.data(), raw.size());  // misaligned rows
  p.plain = WeightMatrix{t, p.plain_bytes.data() + 1, rows, cols, dtype_bytes(t, size_t(cols))};
  p.used = p.plain;
  const PackedFormat& f = table.packing;
  if (f.layout != 0 && f.group_bytes(t, cols) != 0) {
    const int64_t groups = (rows + f.group_rows - 1) / f.group_rows;
    const size_t gb = f.group_bytes(t, cols);
    p.packed_bytes.assign(size_t(groups) * gb + 64, 0xAB);
    uint8_t* dst = p.packed_bytes.data() + 64 - (reinterpret_cast<uintptr_t>(p.packed_bytes.data()) % 64);
    f.pack(p.plain, 0, groups, dst);
    p.used = WeightMatrix{t, dst, rows, cols, 0, f.layout, gb};
  }
  return p;
}

Prepared prepare(const KernelTable& table, DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  return prepare(table, t, rows, cols, random_block_rows(t, rows, cols, rng));
}

std::vector<uint8_t> quantized_rows(const KernelTable& table, ActFormat fmt, const std::vector<float>& x, int64_t T,
                                    int64_t n, int64_t stride) {
  std::vector<uint8_t> out(size_t(T) * act_layout(fmt, n).row_bytes);
  table.quantize_act(fmt, x.data() + 1, T, stride, n, out.data());
  return out;
}

// The same rows with their token tiles as well (ActRows::tiles), as Activations makes them for the
// tables that read tiles; `storage` keeps the tile bytes.
ActRows with_tiles(const ActRows& rows, std::vector<uint8_t>& storage) {
  storage.assign(act_tile_bytes(rows.fmt, rows.T, rows.n) + 1, 0xCD);
  ActRows a = rows;
  a.tiles = storage.data() + 1;  // misaligned
  tile_act_rows(rows, 0, rows.T / kActTile, storage.data() + 1);
  return a;
}

std::vector<float> activations(int64_t T, int64_t n, int64_t stride, std::mt19937& rng) {
  std::vector<float> x = random_floats(size_t(T * stride + 1), rng, 2.0f);
  // Some structure: a zero block, a row of tiny values, a huge outlier.
  for (int64_t j = 0; j < std::min<int64_t>(32, n); ++j) x[size_t(1 + j)] = 0;
  if (T > 1)
    for (int64_t j = 0; j < n; ++j) x[size_t(1 + stride + j)] *= 1e-20f;
  if (T > 2) x[size_t(1 + 2 * stride + n / 2)] = 3e4f;
  return x;
}

TEST(QuantKernels, ActivationQuantizationIsIdenticalInEveryTable) {
  std::mt19937 rng(21);
  for (const KernelTable* table : supported_tables())
    for (ActFormat fmt : {ActFormat::kQ8x32, ActFormat::kQ8x256})
      for (int64_t n : {256, 512, 1280}) {
        const int64_t T = 5, stride = n + 7;
        std::vector<float> x = activations(T, n, stride, rng);
        EXPECT_EQ(quantized_rows(*table, fmt, x, T, n, stride), quantized_rows(ref_table(), fmt, x, T, n, stride))
            << table->name << " fmt " << int(fmt) << " n " << n;
      }
}

// No vector table leaves a block format to the scalar reference (the kernels below would then
// be tested against themselves).
TEST(QuantKernels, EveryVectorTableHasItsOwnBlockKernels) {
  for (const KernelTable* table : supported_tables()) {
    if (table == &ref_table()) continue;
    EXPECT_NE(table->quantize_act, ref_table().quantize_act) << table->name;
    for (DType t : weight_block_formats()) {
      EXPECT_NE(table->qmatmul[size_t(t)], ref_table().qmatmul[size_t(t)]) << table->name << " " << dtype_name(t);
      ASSERT_NE(table->packing.layout, 0) << table->name;
      EXPECT_NE(table->packing.group_bytes(t, 512), 0u) << table->name << " " << dtype_name(t);
    }
  }
}

TEST(QuantKernels, PackingRoundTrips) {
  std::mt19937 rng(22);
  for (const KernelTable* table : supported_tables()) {
    if (table->packing.layout == 0) continue;
    for (DType t : weight_block_formats()) {
      const int64_t B = int64_t(dtype_info(t).block_elems), rows = 21, cols = 2 * B;
      Prepared p = prepare(*table, t, rows, cols, rng);
      if (p.used.layout == 0) continue;
      std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        quant::dequantize_row(t, p.plain.row(r), want.data(), cols);
        weight_row_to_f32(p.used, r, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << table->name << " " << dtype_name(t) << " row " << r;
      }
    }
  }
}

TEST(QuantKernels, EveryTableMatchesTheReferenceBitForBit) {
  std::mt19937 rng(23);
  for (const KernelTable* table : supported_tables()) {
    for (DType t : weight_block_formats()) {
      const int64_t B = int64_t(dtype_info(t).block_elems);
      const ActFormat fmt = act_format_for(t);
      // Token counts cover the small-block kernels (every remainder of a tile of 8), full and
      // partial AMX tiles, and (with 300 tokens) more than one token chunk; 48 rows of 3 blocks,
      // the AMX 2 x 2 tiles of blocks of 32 with a group and token tiles left over; 19 blocks, the
      // steps of eight blocks that few-token kernels take, with a pair and a block left over.
      for (auto [rows, nblocks, Ts] : std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>>{
               {1, 1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 16, 17}},
               {16, 2, {1, 4, 9, 16, 33}},
               {17, 3, {1, 2, 5, 8, 17, 40}},
               {40, 1, {3, 16, 300}},
               {48, 3, {32, 45, 64}},
               {5, 4, {1, 7, 19}},
               {17, 19, {1, 2, 3, 4, 5, 9}}}) {
        const int64_t cols = nblocks * B;
        Prepared p = prepare(*table, t, rows, cols, rng);
        for (int64_t T : Ts) {
          const int64_t stride = cols + 3;
          std::vector<float> x = activations(T, cols, stride, rng);
          std::vector<uint8_t> qa = quantized_rows(ref_table(), fmt, x, T, cols, stride);
          const ActRows rows_only{fmt, T, cols, qa.data(), act_layout(fmt, cols)};
          std::vector<uint8_t> tile_storage;
          const ActRows tiled = with_tiles(rows_only, tile_storage);
          const int64_t ys = rows + 2;
          std::vector<float> want(size_t(T * ys), -1.0f);
          ref_table().qmatmul[size_t(t)](rows_only, p.plain, 0, rows, want.data(), ys);
          ASSERT_TRUE(table->qmatmul[size_t(t)]) << table->name << " " << dtype_name(t);
          for (const ActRows* a : {&rows_only, &tiled}) {
            const char* form = a->tiles ? "tiles" : "rows";
            std::vector<float> got(size_t(T * ys), -1.0f);
            table->qmatmul[size_t(t)](*a, p.used, 0, rows, got.data(), ys);
            for (size_t i = 0; i < want.size(); ++i)
              ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
                  << table->name << " " << dtype_name(t) << " " << rows << "x" << cols << " T=" << T << " (" << form
                  << ") at t=" << i / size_t(ys) << " o=" << i % size_t(ys) << ": " << got[i] << " vs " << want[i];
            // A row range starting at a group boundary leaves the rows before it untouched.
            const int64_t q = p.used.layout ? table->packing.group_rows : 1;
            if (rows > q) {
              std::vector<float> part(size_t(T * ys), -7.0f);
              table->qmatmul[size_t(t)](*a, p.used, q, rows, part.data(), ys);
              for (int64_t tt = 0; tt < T; ++tt) {
                for (int64_t o = 0; o < q; ++o) ASSERT_EQ(part[size_t(tt * ys + o)], -7.0f) << form;
                for (int64_t o = q; o < rows; ++o) ASSERT_EQ(part[size_t(tt * ys + o)], want[size_t(tt * ys + o)]) << form;
                for (int64_t o = rows; o < ys; ++o) ASSERT_EQ(part[size_t(tt * ys + o)], -7.0f) << form;
              }
            }
          }
        }
      }
    }
  }
}

// Every byte pattern of a block at its extremes (all bits set, none, sign bits, alternating)
// against activations at +-127 with the signs that make the integer sums largest: the bounds the
// kernels rely on (no vpmaddubsw saturation, int16 partial sums that fit) are tested at their
// edges, which random data rarely reaches.
TEST(QuantKernels, ExtremeQuantsAndActivationsMatchTheReference) {
  const uint8_t patterns[] = {0x00, 0xff, 0x80, 0x7f, 0x88, 0x77, 0x0f, 0xf0, 0x55, 0xaa, 0x33, 0xcc, 0x08, 0x01, 0xfe, 0x11};
  for (const KernelTable* table : supported_tables()) {
    for (DType t : weight_block_formats()) {
      const DTypeInfo& info = dtype_info(t);
      const int64_t rows = 16, cols = 2 * int64_t(info.block_elems), nb = cols / int64_t(info.block_elems);
      std::vector<uint8_t> raw(size_t(rows * nb) * info.block_bytes);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < nb; ++b) {
          uint8_t* blk = raw.data() + size_t(r * nb + b) * info.block_bytes;
          std::memset(blk, patterns[r], info.block_bytes);
          for (size_t off : testing::f16_fields(t)) {
            const uint16_t h = f32_to_f16(b % 2 ? -0.03f : 0.02f);
            std::memcpy(blk + off, &h, 2);
          }
        }
      Prepared p = prepare(*table, t, rows, cols, raw);
      // Activation rows: all +1, all -1, pairs of +1 -1, quads of -1 +1, and a ramp; each block
      // quantizes its extremes to +-127.
      const int64_t T = 9;
      std::vector<float> x(size_t(T * cols) + 1);
      for (int64_t tt = 0; tt < T; ++tt)
        for (int64_t j = 0; j < cols; ++j) {
          float v = 0;
          switch (tt % 5) {
            case 0: v = 1; break;
            case 1: v = -1; break;
            case 2: v = (j / 2) % 2 ? -1.0f : 1.0f; break;
            case 3: v = (j / 4) % 2 ? 1.0f : -1.0f; break;
            default: v = float(j % 255) / 127.0f - 1.0f; break;
          }
          x[size_t(1 + tt * cols + j)] = tt >= 5 ? -v : v;
        }
      const ActFormat fmt = act_format_for(t);
      std::vector<uint8_t> qa = quantized_rows(ref_table(), fmt, x, T, cols, cols);
      for (int64_t T1 : {int64_t(1), int64_t(4), T}) {  // the small-block kernels and (T = 9) AMX
        const ActRows rows_only{fmt, T1, cols, qa.data(), act_layout(fmt, cols)};
        std::vector<uint8_t> tile_storage;
        const ActRows tiled = with_tiles(rows_only, tile_storage);
        std::vector<float> want(size_t(T1 * rows));
        ref_table().qmatmul[size_t(t)](rows_only, p.plain, 0, rows, want.data(), rows);
        for (const ActRows* a : {&rows_only, &tiled}) {
          std::vector<float> got(size_t(T1 * rows));
          table->qmatmul[size_t(t)](*a, p.used, 0, rows, got.data(), rows);
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
                << table->name << " " << dtype_name(t) << " T=" << T1 << (a->tiles ? " (tiles)" : " (rows)")
                << " t=" << i / size_t(rows) << " row pattern 0x" << std::hex << int(patterns[i % size_t(rows)])
                << std::dec << ": " << got[i] << " vs " << want[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace qwen35::kernels
