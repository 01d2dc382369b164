// Activations quantized to int8 for the integer dot products of the block formats. Each input row
// is quantized once and shared by every matrix that reads it (kernels::Activations).
//
// Two formats, each with one f32 scale per block of the row:
//   kQ8x32   blocks of 32 (partner of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), like ggml's Q8_0/Q8_1;
//   kQ8x256  blocks of 256 (partner of the K-quants and IQ4_XS), like ggml's Q8_K.
// A row is stored as sections, each 64-byte aligned within the row:
//   q    [n] int8           the quants, contiguous (SIMD and AMX tiles read them directly)
//   d    [nb] f32           block scales: value = d * q
//   s32  [n/32] int32       sums of q per 32 elements (kQ8x32)
//   s16  [n/16] int16       sums of q per 16 elements (kQ8x256)
//   h32  [n/32] int16       sums of q per 32 elements (kQ8x256; int16 so that two neighbours
//                           load as one pair for a 16-bit multiply-add)
//
// Quantization is defined exactly (every kernel table produces the same bytes): per block,
// amax = max |x|; a block with amax < 1e-30 (or empty) has d = 0 and q = 0; a block with a
// non-finite value has d = NaN and q = 0; otherwise d = amax / 127, id = 1 / d and
// q = round-half-even(x * id), which lies in [-127, 127].
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace qwen35::kernels {

enum class ActFormat : uint8_t { kF32, kQ8x32, kQ8x256 };

// The activation format a weight dtype's kernels read (kF32 for the plain float types).
ActFormat act_format_for(DType weight);
constexpr int64_t act_block(ActFormat f) { return f == ActFormat::kQ8x256 ? 256 : 32; }

struct ActLayout {
  size_t q = 0, d = 0, s32 = 0, s16 = 0, h32 = 0;  // section offsets within a row (0: absent)
  size_t row_bytes = 0;
};
// n must be a multiple of act_block(fmt).
ActLayout act_layout(ActFormat fmt, int64_t n);

// Token tiles: the same values for kernels that run kActTile tokens against each block of weights.
// Rows 8i .. 8i + 7 are interleaved block by block, so such a kernel finds everything it needs
// for a block of the tile behind one pointer at fixed offsets, rather than juggling eight row
// pointers per section (which spilled to vector registers and cost the AVX-512 tile kernels about
// a tenth of their speed on Zen 5). Per block of a tile, token t's:
//   q     [8][B] int8          at q + B * t
//   d     [8] f32              at d + 4 * t
//   ns32  [8] int32            at ns32 + 4 * t: minus the sum of q per 32 (kQ8x32), so that the
//                              offset a kernel subtracts is one shift of a broadcast
//   h32   [8][B / 32] int16    at h32 + 2 * (B / 32) * t (kQ8x256)
//   s16   [8][B / 16] int16    at s16 + 2 * (B / 16) * t (kQ8x256)
constexpr int kActTile = 8;
struct ActTileLayout {
  size_t q = 0, d = 0, ns32 = 0, h32 = 0, s16 = 0;  // offsets within a block of a tile
  size_t block_bytes = 0;
};
constexpr ActTileLayout act_tile_layout(ActFormat fmt) {
  const size_t B = fmt == ActFormat::kQ8x256 ? 256 : 32, K = kActTile;
  ActTileLayout l;
  l.d = K * B;
  if (fmt == ActFormat::kQ8x256) {
    l.h32 = l.d + K * 4;
    l.s16 = l.h32 + K * (B / 32) * 2;
    l.block_bytes = l.s16 + K * (B / 16) * 2;
  } else {
    l.ns32 = l.d + K * 4;
    l.block_bytes = l.ns32 + K * 4;
  }
  return l;
}

// Bytes from one tile of rows of n values to the next.
constexpr size_t act_tile_stride(ActFormat fmt, int64_t n) {
  return size_t(n / act_block(fmt)) * act_tile_layout(fmt).block_bytes;
}

// T quantized rows, row_bytes apart; optionally also as tiles of their first T / kActTile * kActTile
// rows (tile i at tiles + i * (n / B) * block_bytes), for the tables that read them.
struct ActRows {
  ActFormat fmt = ActFormat::kQ8x32;
  int64_t T = 0, n = 0;
  const uint8_t* data = nullptr;
  ActLayout layout;
  const uint8_t* tiles = nullptr;

  const uint8_t* row(int64_t t) const { return data + size_t(t) * layout.row_bytes; }
  const int8_t* q(int64_t t) const { return reinterpret_cast<const int8_t*>(row(t) + layout.q); }
  const float* d(int64_t t) const { return reinterpret_cast<const float*>(row(t) + layout.d); }
  const int32_t* s32(int64_t t) const { return reinterpret_cast<const int32_t*>(row(t) + layout.s32); }
  const int16_t* s16(int64_t t) const { return reinterpret_cast<const int16_t*>(row(t) + layout.s16); }
  const int16_t* h32(int64_t t) const { return reinterpret_cast<const int16_t*>(row(t) + layout.h32); }
  // Tile i (rows kActTile * i ...), or nullptr when the rows have no tiles.
  const uint8_t* tile(int64_t i) const {
    return tiles ? tiles + size_t(i) * act_tile_stride(fmt, n) : nullptr;
  }
};

// Bytes of the tiles of T rows of n values (full tiles only).
size_t act_tile_bytes(ActFormat fmt, int64_t T, int64_t n);
// Writes tiles [i0, i1) of `rows` (which must hold their rows) into out, laid out as ActRows::tiles.
void tile_act_rows(const ActRows& rows, int64_t i0, int64_t i1, uint8_t* out);

// Fills a row's sum sections from its quants (for rows whose q and d were written elsewhere).
void compute_act_sums(ActFormat fmt, int64_t n, uint8_t* row);

// The exact quantization above, scalar (the oracle; tables provide faster twins).
void quantize_act_ref(ActFormat fmt, const float* x, int64_t T, int64_t x_stride, int64_t n, uint8_t* out);

}  // namespace qwen35::kernels
