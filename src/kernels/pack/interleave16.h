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
//   Q6_K    scales @0 (byte 16s + r: row r's int8 scale of sub-block s) | sub-block s's 16 quants as
//           3 vectors A, B, C @256 + 192s | d @3328. Vector k of sub-block s holds, per row, the
//           unsigned quants u = q + 32 of elements 16s + 4k + j in bits 0-5 of byte j and bits
//           2k, 2k + 1 of element 16s + 12 + j's quant in bits 6-7: the fourth quad is put together
//           from the three tops. So a sub-block's four weight vectors cost three masks and one
//           shift-and-merge of the tops, where ggml's split into 4 low and 2 high bits, rearranged
//           by rows, cost every vector a shift, two masks and a merge (q6k_unpack, int512.h)
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

// Q6_K: byte offsets in a packed block of the scales, sub-block s's three vectors and d.
constexpr size_t kQ6kScales = 0, kQ6kSubBlocks = 256, kQ6kSubBlock = 192, kQ6kD = 3328, kQ6kBlock = 3360;
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
