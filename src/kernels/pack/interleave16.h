// The packed weight layout of the x86 tables ("interleave16"): rows in groups of 16, and within a
// group, block by block, the 16 rows' fields side by side so that one 64-byte vector holds the
// same field of all 16 rows (lane r = row r). Quants are interleaved in 4-byte units: vector k of
// a block holds bytes 4k..4k+3 of each row's quant bytes, which is both what vpdpbusd wants (one
// int32 lane per row, 4 products per lane) and the B-tile layout of AMX (K/4 rows of 16 x 4 bytes).
// The packed bytes are a permutation of the plain ones: a group takes exactly 16 rows' bytes.
//
// Packed block of 16 rows, by format (offsets in bytes; "xN" = N vectors of 64 bytes):
//   Q8_0    d[16] f16 @0 | qs x8 @32 (int8 as stored)
//   Q4_0    d @0 | qs x4 @32 (each byte: element j low nibble, j+16 high nibble, as in ggml)
//   IQ4_NL  as Q4_0 (nibbles are code-book indices)
//   Q4_1    d @0 | m @32 | qs x4 @64
//   Q5_0    d @0 | qh x1 @32 | qs x4 @96
//   Q5_1    d @0 | m @32 | qh x1 @64 | qs x4 @128
//           qh byte j of row r, bit k = fifth bit of element 4k + j (rearranged from ggml's u32)
//   Q4_K    d @0 | dmin @32 | scales x3 @64 (ggml's 12 packed bytes) | qs x32 @256
//           (qs vector 8c + m: bytes 32c + 4m.. of the row: low nibbles sub-block 2c, high 2c + 1)
//   Q5_K    d @0 | dmin @32 | scales x3 @64 | qh x8 @256 | qs x32 @768
//           (qh vector m: bytes 4m.. of the row's qh; bit s of byte j = fifth bit of element 32s + 4m + j)
//   Q6_K    scales x4 @0 | 4 chunks of 12 vectors @256 + 768c | d @3328
//           (chunk c = 2h + g, g = m / 4, for ql vector 16h + 8p + m: bytes 64h + 32p + 4m.. and qh
//           vector 8h + m: bytes 32h + 4m..; a chunk holds ql p = 0 x4, ql p = 1 x4, qh x4 for
//           m = 4g..4g+3: q6k_ql / q6k_qh below. The kernels read a block front to back: on Zen 4
//           the three streams of the plain order (ql A, ql B, qh) read from memory at 11 GB/s a
//           core where one stream reads at 28)
//   Q2_K    d @0 | dmin @32 | scales x4 @64 (ggml's bytes: low nibble scale, high nibble min) | qs x16 @320
//           (qs vector 8h + m: bytes 32h + 4m..; shift 2k gives elements 128h + 32k + 4m + j,
//           sub-block 8h + 2k + m / 4)
//   Q3_K    hmask x8 @0 | qs x16 @512 | scales x3 @1536 (ggml's 12 packed bytes) | d @1728
//           (qs as Q2_K; hmask vector m: bytes 4m..; the high bit of element 128h + 32k + 4m + j
//           is bit {2, 3, 6, 7, 0, 1, 4, 5}[4h + k] of byte j, rearranged from ggml's bit 4h + k)
//   IQ4_XS  d @0 | scales_h[16] u16 @32 | scales_l x1 @64 | qs x32 @128
//           (qs vector 4s + m: bytes 16s + 4m.. of the row: sub-block s, nibbles as IQ4_NL's)
// The AVX2 tables read the same bytes as two 8-row halves: rows 0..7 in the low 32 bytes of each
// vector (and the low 16 bytes of each f16 array), rows 8..15 in the high ones.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace qwen35::kernels::interleave16 {

constexpr uint8_t kLayout = 1;

// Q6_K: byte offsets in a packed block of ql vector v (0..31) and qh vector v (0..15). Static: the
// ISA-flagged kernel files include them, and each must keep its own copy.
constexpr size_t kQ6kScales = 0, kQ6kChunks = 256, kQ6kD = 3328, kQ6kBlock = 3360;
static constexpr size_t q6k_ql(int v) {
  return kQ6kChunks + 768 * size_t(2 * (v / 16) + v % 8 / 4) + 256 * size_t(v % 16 / 8) + 64 * size_t(v % 4);
}
static constexpr size_t q6k_qh(int v) {
  return kQ6kChunks + 768 * size_t(2 * (v / 8) + v % 8 / 4) + 512 + 64 * size_t(v % 4);
}
constexpr int64_t kRows = 16;

// Bytes of one packed block of 16 rows (0: not packed).
size_t block_bytes(DType dtype);
size_t group_bytes(DType dtype, int64_t cols);
void pack(const WeightMatrix& plain, int64_t g0, int64_t g1, uint8_t* dst);
void row_to_f32(const WeightMatrix& packed, int64_t r, float* out);
// Row r's plain bytes back from a packed matrix (the inverse of pack; tests and row_to_f32).
void unpack_row(const WeightMatrix& packed, int64_t r, uint8_t* plain_row);

PackedFormat format();

}  // namespace qwen35::kernels::interleave16
